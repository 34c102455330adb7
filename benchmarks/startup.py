"""Start-up of ``activestream replay``: where the time goes before and around the first row.

One command writes ``benchmarks/results/startup.md``::

    python -m benchmarks.startup            # --repeats 5 by default

It replays a 10-row LIBSVM file with ``paa-1 --in-order``, its kernels compiled ahead of time
(``python -m learners.aot``, compiled first if missing) and, beside it, compiled by numba at run
time (``ACTIVESTREAM_AOT=0``: taken from numba's on-disk cache), Python's modules from their
bytecode cache (one replay before timing fills both caches; the timed processes run without
``PYTHONDONTWRITEBYTECODE``, as an installed package does), and reports the median of ``--repeats``
runs of:

* the whole command both ways, with the default learner (no ``--learner``, ahead of time) and
  ``activestream --help``, each one process measured from outside
  (wall; user+sys CPU and peak RSS from GNU time), and ``python -c pass`` (the interpreter alone);
* the same replay in a probe process (``python -X importtime``), both ways, that times its phases:
  the imports the command needs (by package, from ``-X importtime``), at run time loading the
  compiled kernels (numba imported, which the library does when it makes its first kernel; every
  ``Dispatcher.compile``, which loads from the cache; before the first, numba's array
  implementations are imported and the first load sets up numba's CPU target, importing its
  implementation registries), and the replay itself (read, learn, evaluate, print).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from benchmarks.throughput import BIN, RESULTS, compile_ahead_of_time, timed
from learners.defaults import default_learner

__all__ = ["main"]

TEN_ROWS = b"""+1 3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1
-1 3:1 6:1 17:1 27:1 35:1 40:1 57:1 63:1 69:1 73:1 74:1 76:1 81:1 103:1
-1 4:1 6:1 15:1 21:1 35:1 40:1 57:1 63:1 67:1 73:1 74:1 77:1 80:1 83:1
+1 5:1 6:1 15:1 22:1 36:0.5 41:1 47:1 66:1 67:1 72:1 74:1 76:1 80:1 83:1
-1 2:1 6:1 16:1 22:1 36:1 40:1 54:1 63:1 67:1 73:1 75:1 76:1 80:1 83:1
-1 2:1 6:1 18:1 19:1 39:1 40:1 52:1 61:1 71:1 72:1 74:1 76:1 80:1 95:1
+1 1:1 6:1 14:1 22:1 36:1 42:1 49:1 64:1 67:1 72:1 74:1 77:1 80:1 83:1
-1 1:1 6:1 17:1 19:1 39:1 40:1 51:1 63:1 67:1 73:1 74:1 76:1 80:1 83:1
-1 5:1 6:1 14:1 22:1 36:1 42:1 55:1 63:1 67:1 73:1 74:1 76:1 78:1 83:1
+1 2:1 8:1 18:1 20:1 37:-0.25 42:1 49:1 64:1 67:1 72:1 75:1 76:1 80:1 83:1
"""

MARKER = "activestream-startup: imports done"

# The probe, run as ``python -X importtime -c PROBE ARGV...``: it imports what ``replay`` imports,
# then runs it, with every numba compile (here: a load from the on-disk cache) timed when numba
# runs the kernels (ACTIVESTREAM_AOT=0), and prints its phases as JSON on the last line of stdout.
PROBE = f"""
import os, sys, time, json
w0, c0 = time.perf_counter(), time.process_time()
import numpy, orjson
import consumer.cli, learners, learners.datasets, learners.registry, learners.replay
w1, c1 = time.perf_counter(), time.process_time()
print({MARKER!r}, file=sys.stderr, flush=True)
loads = []
if os.environ.get("ACTIVESTREAM_AOT") == "0":
    w, c = time.perf_counter(), time.process_time()  # numba, imported when the first kernel is made
    from numba.core.dispatcher import Dispatcher
    loads.append(("numba imported", time.perf_counter() - w, time.process_time() - c))
    compile_ = Dispatcher.compile
    def timed_compile(self, sig):
        w, c = time.perf_counter(), time.process_time()
        try:
            return compile_(self, sig)
        finally:
            loads.append((self.py_func.__module__ + "." + self.py_func.__name__,
                          time.perf_counter() - w, time.process_time() - c))
    Dispatcher.compile = timed_compile
    import learners.kernels
    set_up = learners.kernels._defer_numba_blas_probe
    def timed_set_up():  # numba's array implementations imported before the first load, part of its set-up
        w, c = time.perf_counter(), time.process_time()
        try:
            return set_up()
        finally:
            loads.append(("numba's array implementations", time.perf_counter() - w, time.process_time() - c))
    learners.kernels._defer_numba_blas_probe = timed_set_up
consumer.cli.main(sys.argv[1:])
w2, c2 = time.perf_counter(), time.process_time()
print(json.dumps(dict(imports=[w1 - w0, c1 - c0], run=[w2 - w1, c2 - c1], loads=loads)))
"""


def _width(text: bytes) -> int:
    """The rows' width as a replay finds it: the largest (1-based) feature index."""
    return max(int(token.split(b":")[0]) for line in text.splitlines() for token in line.split()[1:])


def _package(module: str) -> str:
    top = module.split(".")[0]
    if top in ("numpy", "scipy", "learners", "consumer", "orjson"):
        return top
    if top in ("numba", "llvmlite"):
        return "numba + llvmlite"
    return "standard library and others"


def importtime_by_package(stderr: str) -> tuple[dict[str, float], dict[str, float]]:
    """Self seconds of each import by package: (before the command runs, while it runs)."""
    before: dict[str, float] = defaultdict(float)
    during: dict[str, float] = defaultdict(float)
    into = before
    for line in stderr.splitlines():
        if line == MARKER:
            into = during
        elif line.startswith("import time:"):
            self_us, _, name = (part.strip() for part in line[len("import time:"):].split("|"))
            if self_us.isdigit():  # not the header
                into[_package(name)] += int(self_us) / 1e6
    return dict(before), dict(during)


def probe(argv: Sequence[str], *, ahead_of_time: bool) -> dict:
    env = {**os.environ, "ACTIVESTREAM_AOT": "1" if ahead_of_time else "0"}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", PROBE, *argv], capture_output=True, text=True,
                          check=True, env=env)
    phases = json.loads(proc.stdout.strip().splitlines()[-1])
    phases["imports_by_package"], phases["imports_while_running"] = importtime_by_package(proc.stderr)
    return phases


_SET_UP = ("numba imported", "numba's array implementations")


def _through_first_kernel(loads: list) -> list:
    """The probe's timed steps up to and including the first kernel's load."""
    first = next(i for i, (name, _, _) in enumerate(loads) if name not in _SET_UP)
    return loads[: first + 1]


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def markdown(rows: list[tuple[str, str, str, str]], repeats: int, command: str, loads: list[str]) -> str:
    lines = [
        "# Start-up of `activestream replay`",
        "",
        f"Command: `{command}`. `activestream replay --learner paa-1 --data TEN --in-order --json` on a 10-row "
        f"LIBSVM file, its kernels compiled ahead of time (`python -m learners.aot`) or by numba at run time "
        f"(`ACTIVESTREAM_AOT=0`: loaded from numba's on-disk cache), Python's modules from their bytecode "
        f"cache (both caches filled by one replay before timing); "
        f"each figure is the median of {repeats} runs on the shared 2-core machine (medians of the parts need "
        "not add up to the median of the whole). Whole commands are measured from outside (wall; user+sys CPU "
        "and peak RSS from GNU time); the parts come from a probe process running the same replay under "
        "`python -X importtime` (imports: wall time of each module's own code, by package).",
        "",
        "| part | wall s | CPU s | peak RSS MB |",
        "|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
        "",
        f"Kernels loaded, in order: {', '.join(f'`{k}`' for k in loads)}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "startup.md")
    args = parser.parse_args(argv)
    # Python's bytecode cache on, as an installed package has it (an environment may turn it off)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    activestream = str(BIN / "activestream")
    compile_ahead_of_time()
    at_run_time = ["env", "ACTIVESTREAM_AOT=0"]
    with tempfile.TemporaryDirectory(prefix="activestream-startup-") as tmpdir:
        ten = Path(tmpdir) / "ten.svm"
        ten.write_bytes(TEN_ROWS)
        replay = ["replay", "--learner", "paa-1", "--data", str(ten), "--in-order", "--json"]
        by_default = ["replay", "--data", str(ten), "--in-order", "--json"]  # the default learner of its rows
        timed([*at_run_time, activestream, *replay])  # fills numba's on-disk cache: no timed run compiles
        timed([activestream, *by_default])
        whole, whole_default, whole_jit, helps, bare, probes, probes_jit = [], [], [], [], [], [], []
        for _ in range(args.repeats):  # interleaved, so a burst of load on the machine hits every kind
            whole.append(timed([activestream, *replay]))
            whole_default.append(timed([activestream, *by_default]))
            whole_jit.append(timed([*at_run_time, activestream, *replay]))
            helps.append(timed([activestream, "--help"]))
            bare.append(timed([sys.executable, "-c", "pass"]))
            probes.append(probe(replay, ahead_of_time=True))
            probes_jit.append(probe(replay, ahead_of_time=False))
    packages = sorted({k for p in probes for k in p["imports_by_package"]},
                      key=lambda k: -_median([p["imports_by_package"].get(k, 0.0) for p in probes]))
    during = {k for p in probes_jit for k in p["imports_while_running"]}
    kernel_w = [sum(w for _, w, _ in p["loads"]) for p in probes_jit]
    kernel_c = [sum(c for _, _, c in p["loads"]) for p in probes_jit]
    # the first kernel's load and what ran before it (numba's import, its array implementations):
    # numba's one-time set-up
    first_w = [sum(w for _, w, _ in _through_first_kernel(p["loads"])) for p in probes_jit]
    first_c = [sum(c for _, _, c in _through_first_kernel(p["loads"])) for p in probes_jit]
    kernels = [name for name, _, _ in probes_jit[0]["loads"] if name not in _SET_UP]
    f = "{:.3f}".format

    def whole_row(label: str, runs: list) -> tuple[str, str, str, str]:
        return (label, f(_median([t.wall_s for t in runs])), f(_median([t.cpu_s for t in runs])),
                f"{_median([t.peak_rss_mb for t in runs]):.0f}")

    rows = [whole_row("interpreter alone (`python -c pass`)", bare),
            ("imports the command needs, in-process", f(_median([p["imports"][0] for p in probes])),
             f(_median([p["imports"][1] for p in probes])), "")]
    rows += [(f"&nbsp;&nbsp;{k}", f(_median([p["imports_by_package"].get(k, 0.0) for p in probes])), "", "")
             for k in packages]
    rows += [("**kernels compiled ahead of time** (`python -m learners.aot`): the replay itself (read, learn, "
              "evaluate, print)", f(_median([p["run"][0] for p in probes])),
              f(_median([p["run"][1] for p in probes])), ""),
             whole_row("&nbsp;&nbsp;**whole command** `activestream replay …`, from outside", whole),
             whole_row(f"&nbsp;&nbsp;**whole command with the default learner** (no `--learner`: "
                       f"`{default_learner(2, _width(TEN_ROWS))}` for these rows), from outside", whole_default),
             (f"**kernels compiled by numba at run time** (`ACTIVESTREAM_AOT=0`): loading {len(kernels)} "
              "kernels from numba's cache", f(_median(kernel_w)), f(_median(kernel_c)), ""),
             ("&nbsp;&nbsp;the first: numba imported and its CPU target set up", f(_median(first_w)),
              f(_median(first_c)), "")]
    rows += [(f"&nbsp;&nbsp;&nbsp;&nbsp;its imports: {k}",
              f(_median([p["imports_while_running"].get(k, 0.0) for p in probes_jit])), "", "")
             for k in sorted(during, key=lambda k: -_median([p["imports_while_running"].get(k, 0.0)
                                                              for p in probes_jit]))]
    rows += [("&nbsp;&nbsp;the replay itself (read, learn, evaluate, print)",
              f(_median([p["run"][0] - w for p, w in zip(probes_jit, kernel_w, strict=True)])),
              f(_median([p["run"][1] - c for p, c in zip(probes_jit, kernel_c, strict=True)])), ""),
             whole_row("&nbsp;&nbsp;**whole command** `activestream replay …`, from outside", whole_jit),
             whole_row("`activestream --help`, from outside", helps)]
    command = ("python -m benchmarks.startup " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    text = markdown(rows, args.repeats, command, kernels)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
