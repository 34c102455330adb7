"""End-to-end throughput: ``activestream replay`` against Vowpal Wabbit's command line.

One command builds two inputs in a temporary directory, each as an uncompressed LIBSVM file and
the same rows in VW text format:

* **a8a×10**: the 32,561 rows of a8a repeated ten times (325,610 rows, 123 features);
* **synthetic**: :func:`learners.datasets.synthetic_sparse` with 10⁶ rows over 2²⁰ dimensions
  (values written with 4 decimals),

then times, one after another, each command as a whole (interpreter start included) and reads
its CPU time and peak RSS with GNU ``/usr/bin/time``:

* ``activestream replay --learner paa-1 --data FILE --in-order --param delta=… --json``, whose
  JSON also reports the in-process ``read_seconds`` (read + parse) and ``total_seconds`` (read +
  parse + learn + evaluate, i.e. excluding interpreter start and imports);
* ``python -m vowpalwabbit -d FILE.vw --loss_function hinge -b B --quiet`` (the wheel has no
  ``vw`` binary; this runs the same C++ driver), and ``python -c "import vowpalwabbit"`` so the
  start-up can be subtracted.

Before timing, one replay of a tiny file loads every compiled kernel once, so the timed runs take
their numba code from the on-disk cache (no JIT compilation is timed). Each command runs
``--repeats`` times (default 3); the table shows the median wall time and that run's CPU time::

    python -m benchmarks.throughput            # writes benchmarks/results/throughput.md
"""

from __future__ import annotations

import argparse
import json
import lzma
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.paa_data import datasets_dir
from learners.datasets import synthetic_sparse

__all__ = ["main"]

RESULTS = Path(__file__).resolve().parent / "results"
BIN = Path(sys.executable).parent
TIME = "/usr/bin/time"  # GNU time: peak RSS (%M) of exactly one command


@dataclass(frozen=True, slots=True)
class Timed:
    """One finished command: wall and CPU seconds, peak RSS, its stdout."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    stdout: str


def timed(cmd: Sequence[str]) -> Timed:
    """Run ``cmd`` to completion under GNU time: wall seconds (ours), user+sys CPU and peak RSS of
    that command alone. (The kernel's rusage of a child forked from this process would count the
    parent's pages in its peak RSS, so the command is started from ``/usr/bin/time``'s small
    process instead.)"""
    with tempfile.NamedTemporaryFile() as stats, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        code = subprocess.call([TIME, "-f", "%U %S %M", "-o", stats.name, *cmd], stdout=out, stderr=err)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
        user, system, rss_kb = Path(stats.name).read_text().split()[-3:]
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({code}): {stderr[-2000:]}")
    return Timed(wall, float(user) + float(system), float(rss_kb) / 1024.0, stdout)


def median_run(cmd: Sequence[str], repeats: int) -> tuple[Timed, list[float]]:
    runs = [timed(cmd) for _ in range(repeats)]
    walls = [r.wall_s for r in runs]
    return sorted(runs, key=lambda r: r.wall_s)[len(runs) // 2], walls


def write_libsvm_and_vw(rows_text: bytes, libsvm: Path, vw: Path) -> None:
    """The same LIBSVM rows as a LIBSVM file and as VW text (``label |f idx:val ...``)."""
    libsvm.write_bytes(rows_text)
    lines = rows_text.split(b"\n")
    with vw.open("wb") as f:
        for line in lines:
            if line:
                label, _, features = line.partition(b" ")
                f.write(label + b" |f " + features + b"\n")


def synthetic_text(n: int, d: int, seed: int) -> bytes:
    """:func:`synthetic_sparse` rows as LIBSVM text (1-based indices, 4-decimal values)."""
    data = synthetic_sparse(n=n, d=d, seed=seed)
    r = data.rows
    tokens = np.char.add(np.char.add((r.indices + 1).astype(str), ":"), np.char.mod("%.4f", r.data))
    out = []
    for i in range(r.n):
        out.append(f"{int(data.labels[i])} " + " ".join(tokens[r.indptr[i]:r.indptr[i + 1]].tolist()))
    return ("\n".join(out) + "\n").encode()


def build_inputs(tmp: Path, synthetic_rows: int) -> dict[str, tuple[Path, Path, int, int]]:
    """name → (LIBSVM path, VW path, rows, VW hash bits)."""
    a8a = lzma.decompress((datasets_dir() / "a8a.xz").read_bytes())
    inputs = {}
    write_libsvm_and_vw(a8a * 10, tmp / "a8a10.svm", tmp / "a8a10.vw")
    inputs["a8a×10"] = (tmp / "a8a10.svm", tmp / "a8a10.vw", 10 * a8a.count(b"\n"), 18)
    text = synthetic_text(synthetic_rows, 2**20, seed=0)
    write_libsvm_and_vw(text, tmp / "synthetic.svm", tmp / "synthetic.vw")
    inputs["synthetic 10⁶×2²⁰"] = (tmp / "synthetic.svm", tmp / "synthetic.vw", synthetic_rows, 20)
    return inputs


def markdown(rows: list[dict], vw_import: Timed, ours_startup: Timed, delta: float, repeats: int,
             command: str) -> str:
    lines = [
        "# Throughput: `activestream replay` against Vowpal Wabbit's command line",
        "",
        f"Command: `{command}`. Every figure is one process measured from outside (wall clock; user+sys CPU and "
        f"peak RSS from GNU time); the median of {repeats} runs, one after another, on the shared 2-core machine. "
        f"`python -c \"import vowpalwabbit\"` takes {vw_import.wall_s:.3f} s (subtracted for VW's 'excluding "
        f"start-up'). Ours 'excluding start-up' is the in-process `total_seconds` (read + parse + learn + "
        f"evaluate); our start-up alone (`activestream replay` on a 2-row file: interpreter, imports, compiled "
        f"kernels loaded from the on-disk cache) takes {ours_startup.wall_s:.3f} s wall, {ours_startup.cpu_s:.3f} s "
        f"CPU, {ours_startup.peak_rss_mb:.0f} MB. paa-1 runs with δ = {delta:g}; numba kernels come from the "
        f"on-disk cache (warmed before timing: no JIT compilation is timed).",
        "",
        "| data | rows | file MB (LIBSVM / VW) | command | wall s | CPU s | rows/s (whole) | excl. start-up s | "
        "rows/s (excl. start-up) | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['data']} | {r['rows']:,} | {r['mb_svm']:.1f} / {r['mb_vw']:.1f} | {r['command']} | "
            f"{r['wall']:.3f} | {r['cpu']:.3f} | {r['rows'] / r['wall']:,.0f} | {r['inner']:.3f} | "
            f"{r['rows'] / r['inner']:,.0f} | {r['rss']:.0f} |"
        )
    lines += ["", "| data | speed-up over VW, whole command | speed-up over VW, excluding start-up | "
              "ours: read+parse s / learn+evaluate s | ours: query ratio |", "|---|---|---|---|---|"]
    for name in dict.fromkeys(r["data"] for r in rows):
        ours = next(r for r in rows if r["data"] == name and r["command"].startswith("activestream"))
        vw = next(r for r in rows if r["data"] == name and r["command"].startswith("vw"))
        lines.append(f"| {name} | {vw['wall'] / ours['wall']:.2f}× | {vw['inner'] / ours['inner']:.2f}× | "
                     f"{ours['read']:.3f} / {ours['inner'] - ours['read']:.3f} | {ours['query']:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.throughput", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--delta", type=float, default=0.125, help="paa-1's δ (default 0.125, the registry's)")
    parser.add_argument("--synthetic-rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=RESULTS / "throughput.md")
    args = parser.parse_args(argv)
    activestream = str(BIN / "activestream")
    with tempfile.TemporaryDirectory(prefix="activestream-throughput-") as tmpdir:
        tmp = Path(tmpdir)
        print("building inputs ...", flush=True)
        inputs = build_inputs(tmp, args.synthetic_rows)
        (tmp / "warm.svm").write_bytes(b"1 1:0.5 3:1\n-1 2:1\n")
        tiny = [activestream, "replay", "--learner", "paa-1", "--data", str(tmp / "warm.svm"), "--in-order", "--json"]
        timed(tiny)  # loads every kernel once, so the timed runs read them from the on-disk cache
        ours_startup, _ = median_run(tiny, args.repeats)
        vw_import, _ = median_run([sys.executable, "-c", "import vowpalwabbit"], args.repeats)
        rows = []
        for name, (svm, vw, n, bits) in inputs.items():
            sizes = dict(rows=n, mb_svm=svm.stat().st_size / 1e6, mb_vw=vw.stat().st_size / 1e6, data=name)
            ours_cmd = [activestream, "replay", "--learner", "paa-1", "--data", str(svm), "--in-order",
                        "--param", f"delta={args.delta}", "--json"]
            run, walls = median_run(ours_cmd, args.repeats)
            report = json.loads(run.stdout)
            assert report["examples"] == n, report["examples"]
            ours_text = f"activestream replay --learner paa-1 --in-order --param delta={args.delta:g}"
            rows.append(dict(sizes, command=ours_text,
                             wall=run.wall_s, cpu=run.cpu_s, rss=run.peak_rss_mb, inner=report["total_seconds"],
                             read=report["read_seconds"], query=report["query_ratio"], walls=walls))
            print(f"{name}: ours {run.wall_s:.3f} s whole (runs {', '.join(f'{w:.2f}' for w in walls)}), "
                  f"{report['total_seconds']:.3f} s in-process (read {report['read_seconds']:.3f}), "
                  f"{run.peak_rss_mb:.0f} MB", flush=True)
            vw_cmd = [sys.executable, "-m", "vowpalwabbit", "-d", str(vw), "--loss_function", "hinge", "-b", str(bits),
                      "--quiet"]
            run, walls = median_run(vw_cmd, args.repeats)
            rows.append(dict(sizes, command=f"vw (python -m vowpalwabbit) --loss_function hinge -b {bits}",
                             wall=run.wall_s, cpu=run.cpu_s, rss=run.peak_rss_mb,
                             inner=run.wall_s - vw_import.wall_s, read=float("nan"), query=1.0, walls=walls))
            print(f"{name}: VW {run.wall_s:.3f} s whole (runs {', '.join(f'{w:.2f}' for w in walls)}), "
                  f"{run.peak_rss_mb:.0f} MB", flush=True)
    command = "python -m benchmarks.throughput " + " ".join(sys.argv[1:] if argv is None else argv)
    text = markdown(rows, vw_import, ours_startup, args.delta, args.repeats, command.strip())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
