"""Kernels compiled ahead of time: an offline replay with no numba in the process.

``python -m learners.aot`` compiles, with numba's ahead-of-time compiler (``numba.pycc``), what
``activestream replay`` runs into extension modules of the package (``learners._compiled0``, …):

- the LIBSVM reader's kernels (:mod:`learners.datasets`);
- for each (update rule, query strategy) pair of the registry, the replay drivers (the plain one,
  :func:`learners.drivers.plain.replay_rows`, and the online budget controller's,
  :func:`learners.drivers.budgeted.replay_rows`) with that pair's kernels compiled into them: direct calls the
  compiler can inline, where the JIT drivers call them through function pointers.

Beside them it writes ``_compiled.json``: the digest of the library's sources they were compiled
from and what each exports. At run time a kernel or driver whose compiled twin exists, in modules
compiled from these very sources, runs it; anything else is compiled by numba on first use, as
before. Both are the same Python source compiled by the same compiler, and give the same numbers
(``tests/unit/learners/test_aot.py``). ``ACTIVESTREAM_AOT=0`` turns the modules off.

The functions release the GIL, as the JIT kernels do (``nogil``): the reader parses the next chunk
in a second thread while the replay runs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from learners.compiled import META, MODULE, driver_name, kernel_name, kernels_of, source_digest

__all__ = ["DRIVERS", "KERNELS", "Export", "build", "exports", "main"]

# the kernels compiled on their own: what the LIBSVM reader, the AUC-ROC and the random Fourier
# features run, (module, name)
KERNELS = (("learners.datasets", "_count"), ("learners.datasets", "_parse"), ("learners.datasets", "_scan"),
           ("learners.evaluation", "_twice_u"),
           ("learners.evaluation", "_split_by_class"),
           ("learners.features", "_omega_rows"), ("learners.features", "_beta"), ("learners.features", "_project"))

# the drivers compiled once per (rule, query) pair: export prefix → (module, name)
DRIVERS = {"replay_rows": ("learners.drivers.plain", "replay_rows"),
           "budget_replay_rows": ("learners.drivers.budgeted", "replay_rows")}
# a driver's parameters that take the kernels, in the order of kernels_of
_KERNEL_PARAMETERS = ("score", "update", "probability", "after_round", "after_label")


def _pairs(learners: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
    """The kernels of every (rule, query) pair of the registry's learners (or of ``learners``)."""
    from learners.registry import ALGORITHMS, make

    return list({kernels_of(make(name, n_features=2)): None for name in learners or ALGORITHMS})


class Export(NamedTuple):
    """A function of the compiled modules: its signature, its code, and whether it runs with numba's
    runtime (as declared: :func:`learners.jit.kernel`)."""

    signature: Any
    function: Callable
    nrt: bool


def _specialised(driver: Callable, kernels: tuple[Any, ...], nrt: bool) -> Callable:
    """``driver``'s code with ``kernels`` in place of its five kernel parameters: a function of its
    other parameters whose calls to them are direct (and inlinable), with numba's runtime if ``nrt``."""
    from learners.jit import jit, resolved

    params = list(inspect.signature(driver).parameters)
    kept = [p for p in params if p not in _KERNEL_PARAMETERS]
    source = (f"def specialised({', '.join(kept)}):\n"
              f"    return body({', '.join(params)})\n")
    scope = {"body": jit(cache=False, _nrt=nrt)(driver), **dict(zip(_KERNEL_PARAMETERS, kernels, strict=True))}
    exec(source, scope)  # numba compiles a function of fixed parameters, not one taking *args
    return resolved(scope["specialised"])


def _without_functions(signature: str) -> Any:
    """A driver's signature without its ``FunctionType(...)`` arguments."""
    from numba.core import types

    from learners.jit import parse_signature

    sig = parse_signature(signature)
    return sig.return_type(*[a for a in sig.args if not isinstance(a, types.FunctionType)])


def exports(learners: Sequence[str] | None = None) -> dict[str, Export]:
    """What the compiled modules export, by name; ``learners``: the drivers of those learners' pairs
    alone (default: every pair of the registry)."""
    from learners.jit import parse_signature, resolved

    out: dict[str, Export] = {}
    for module, name in KERNELS:
        declared = getattr(importlib.import_module(module), name)
        out[kernel_name(module, name)] = Export(parse_signature(declared.signature), resolved(declared.py_func),
                                                declared.nrt)
    pairs = _pairs(learners)
    for prefix, (module, name) in DRIVERS.items():
        driver = getattr(importlib.import_module(module), name)._kernel
        signature = _without_functions(driver.signature)
        for kernels in pairs:
            out[driver_name(prefix, kernels)] = Export(signature, _specialised(driver.py_func, kernels, driver.nrt),
                                                       driver.nrt)
    return out


@contextlib.contextmanager
def _pycc_flags(without_runtime: set[Callable]) -> Iterator[None]:
    """numba.pycc's compiler as the exports need it: every wrapper releasing the GIL, and the
    functions ``without_runtime`` compiled without numba's runtime (pycc compiles every export with
    one set of flags)."""
    import numba.pycc.compiler as pycc_compiler
    from numba.core.compiler import Flags

    class _ReleasingTheGil(Flags):
        # pycc's wrappers hold the GIL through the call unless their flags say otherwise
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compile_extra, flags_class = pycc_compiler.compile_extra, pycc_compiler.Flags

    def compiled(typing: Any, target: Any, func: Callable, args: Any, result: Any, flags: Any, **kw: Any) -> Any:
        if func in without_runtime:
            flags = flags.copy()
            flags.nrt = False
        return compile_extra(typing, target, func, args, result, flags, **kw)

    pycc_compiler.compile_extra, pycc_compiler.Flags = compiled, _ReleasingTheGil
    try:
        yield
    finally:
        pycc_compiler.compile_extra, pycc_compiler.Flags = compile_extra, flags_class


def _compile_part(module: str, names: list[str], out_dir: str, learners: Sequence[str] | None) -> None:
    """Compile the exports ``names`` into the extension module ``module`` (in a process of its own)."""
    import shutil
    import tempfile

    # numba's on-disk cache of its own: the build compiles everything from source, and the package's
    # cache, written by every other numba process of the installation (and by the other parts at
    # once), once made the build fail on an index it could not write back
    cache = tempfile.mkdtemp(prefix="activestream-aot-")
    os.environ["NUMBA_CACHE_DIR"] = cache  # read when numba is first imported, below
    try:
        _compile(module, names, out_dir, learners)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def _compile(module: str, names: list[str], out_dir: str, learners: Sequence[str] | None) -> None:
    import warnings

    from numba.pycc import CC

    todo = exports(learners)
    cc = CC(module)
    cc.output_dir = out_dir
    cc.target_cpu = "host"  # this machine's instructions, as numba's JIT uses: the generic x86-64 reads slower
    for name in names:
        cc.export(name, todo[name].signature)(todo[name].function)
    without_runtime = {todo[name].function for name in names if not todo[name].nrt}
    with _pycc_flags(without_runtime), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc's pending-deprecation notice
        cc.compile()


def build(out_dir: Path = META.parent, *, jobs: int = 2, learners: Sequence[str] | None = None,
          log: Callable[[str], None] = print) -> dict[str, list[str]]:
    """Compile every export (``learners``: theirs alone) into ``jobs`` extension modules
    ``_compiled0`` … in ``out_dir`` (each in a process of its own, at once), then write the record
    that lets them be used; returns the exports by module."""
    names = sorted(exports(learners))
    parts = {f"{MODULE}{i}": names[i::jobs] for i in range(jobs)}
    start = time.perf_counter()
    (Path(out_dir) / META.name).unlink(missing_ok=True)  # stale until the new modules are all written
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_compile_part, module, part, str(out_dir), learners) for module, part in parts.items()]
        for future in futures:
            future.result()
    (Path(out_dir) / META.name).write_text(json.dumps({"digest": source_digest(), "modules": parts}, indent=1) + "\n")
    log(f"compiled {len(names)} functions into {jobs} modules in {out_dir} in {time.perf_counter() - start:.0f} s")
    return parts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m learners.aot", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="modules compiled at once")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    build(jobs=args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
