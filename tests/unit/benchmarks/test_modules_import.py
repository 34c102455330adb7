"""Every benchmark module imports: a name one of them takes from another cannot go missing unnoticed
(most run only by hand or through ``python -m benchmarks.reproduce``)."""

import importlib
from pathlib import Path

import pytest

import benchmarks

MODULES = sorted(p.stem for p in Path(benchmarks.__file__).parent.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", MODULES)
def test_benchmark_module_imports(name):
    module = importlib.import_module(f"benchmarks.{name}")
    assert callable(getattr(module, "main", None)) or module.__doc__
