"""The kernels compiled ahead of time (:mod:`learners.aot`), found at run time.

:func:`kernel`, :func:`replay_rows` and :func:`budget_replay_rows` return the compiled twin of a
kernel or of a replay driver with a learner's kernels in it, or None: when the modules were not
compiled, were compiled from other sources (the digest of the library's sources is stored beside
them), or ``ACTIVESTREAM_AOT=0`` turns them off. The caller then runs the code numba compiles at run
time, which gives the same numbers. This module imports nothing of numba or of the library.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["META", "MODULE", "available", "budget_replay_rows", "compiled", "driver_name", "enabled", "kernel",
           "kernel_name", "kernels_of", "replay_rows", "source_digest"]

MODULE = "_compiled"  # the modules are _compiled0, _compiled1, … (compiled at once, one per process)
PACKAGE = Path(__file__).resolve().parent
META = PACKAGE / f"{MODULE}.json"


def _hash(data: bytes) -> str:
    """64 bits of the interpreter's own source hash (SipHash), in hex: a replay loads no OpenSSL
    (hashlib's), whose library alone is a few MB of its memory."""
    return importlib.util.source_hash(data).hex()


def source_digest() -> str:
    """A digest of every module of the library (their bytes): a compiled module made from other
    sources is not used."""
    parts = (path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes()
             for path in sorted(PACKAGE.rglob("*.py")))
    return _hash(b"\0".join(parts))


def enabled() -> bool:
    """Whether compiled twins may be used (``ACTIVESTREAM_AOT=0`` turns them off)."""
    return os.environ.get("ACTIVESTREAM_AOT", "1").strip().lower() not in ("0", "false", "no", "off")


@functools.cache
def _functions() -> dict[str, Callable]:
    """The compiled twins by export name, if the modules exist and were compiled from these
    sources; else none."""
    if not enabled():
        return {}
    try:
        meta = json.loads(META.read_text())
        if meta.get("digest") != source_digest():
            return {}
        modules = {name: _load(name) for name in meta["modules"]}
    except (OSError, ValueError, KeyError, ImportError):
        return {}
    return {export: getattr(modules[name], export) for name, names in meta["modules"].items() for export in names}


def _load(name: str) -> Any:
    """The extension module ``name`` beside :data:`META` (the package's own directory, unless a
    test compiled some elsewhere)."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = META.parent / f"{name}{suffix}"
        if path.exists():
            spec = importlib.util.spec_from_file_location(f"learners.{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise ImportError(f"no compiled module {name} in {META.parent}")


def available() -> bool:
    """Whether compiled twins of these sources are there to be used."""
    return bool(_functions())


def compiled(name: str) -> Callable | None:
    """The compiled twin exported as ``name``, or None."""
    return _functions().get(name)


def kernel_name(module: str, name: str) -> str:
    """The export name of kernel ``module.name``."""
    return f"{module.rsplit('.', 1)[-1]}_{name.lstrip('_')}"


def kernel(kernel: Any) -> Callable | None:
    """The compiled twin of a :func:`learners.jit.kernel`, or None."""
    return compiled(kernel_name(kernel.__module__, kernel.__name__))


def kernels_of(learner: Any) -> tuple[Any, ...]:
    """A learner's five kernels: its rule's score and update, its query's three."""
    rule, query = type(learner.rule), type(learner.query)
    return (rule.score_kernel, rule.update_kernel, query.probability_kernel, query.round_kernel,
            query.label_kernel)


def driver_name(driver: str, kernels: Iterable[Any]) -> str:
    """The export name of ``driver`` compiled with ``kernels``."""
    names = "|".join(f"{k.__module__}.{k.__qualname__}" for k in kernels)
    return f"{driver}_{_hash(names.encode())[:12]}"


def replay_rows(learner: Any) -> Callable | None:
    """:func:`learners.drivers.plain.replay_rows` compiled with ``learner``'s kernels (its arguments
    without the five kernels), or None."""
    return compiled(driver_name("replay_rows", kernels_of(learner)))


def budget_replay_rows(learner: Any) -> Callable | None:
    """:func:`learners.drivers.budgeted.replay_rows` (the online controller's) compiled with ``learner``'s
    kernels (its arguments without the five kernels), or None."""
    return compiled(driver_name("budget_replay_rows", kernels_of(learner)))
