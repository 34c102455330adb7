"""End-to-end throughput: ``activestream replay`` against Vowpal Wabbit's command line.

One command builds three inputs in a temporary directory, each as an uncompressed LIBSVM file and
the same rows in VW text format:

* **a8a×30**: the 32,561 rows of a8a repeated thirty times (976,830 rows, 123 features);
* **synthetic**: 10⁷ rows over 2²⁰ dimensions drawn as :func:`learners.synthetic.synthetic_sparse`
  draws them (Zipf-like ids, unit-norm rows, one w*, 5 % of labels flipped), generated and written
  a million rows at a time (values with 4 decimals);
* **news20**: the 15,935 rows of news20 (62,061 term counts, 20 classes), multiclass,

then times each command as a whole (interpreter start included) and reads its CPU time and peak
RSS with GNU ``/usr/bin/time``:

* ``activestream replay --learner paa-1 --data FILE --in-order --param delta=… --param n_features=…
  --param classes=… --json`` (``mpaa-1`` on news20; the dimension and classes given, as VW is given
  its ``-b`` and ``--oaa``, so the file is read once), whose JSON also reports the in-process
  ``read_seconds`` (read + parse) and ``total_seconds`` (read + parse + learn + evaluate, i.e.
  excluding interpreter start and imports);
* ``python -m vowpalwabbit -d FILE.vw --loss_function hinge -b B --quiet`` (``--oaa 20`` on news20;
  the wheel has no ``vw`` binary; this runs the same C++ driver), and ``python -c "import
  vowpalwabbit"`` so the start-up can be subtracted.

Our kernels are compiled ahead of time first (``python -m learners.aot``, as an installation does;
compiled now if missing), so no JIT compilation is timed and no numba runs in our processes, and
one replay of a tiny file fills Python's bytecode cache before timing. Each pair of commands runs
``--repeats`` times (default 5), ours and VW's in turn and in alternate order, so that a slow spell
of the shared machine falls on both, after one untimed run of each (the inputs are fresh files, and
the first runs over them were the slowest of both commands); the table shows each command's median
wall time and that run's CPU time::

    python -m benchmarks.throughput            # writes benchmarks/results/throughput.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
from numba import njit

from benchmarks.paa_data import datasets_dir
from learners.datasets import read_libsvm
from learners.inputs import Rows
from learners.synthetic import synthetic_sparse

__all__ = ["main"]

RESULTS = Path(__file__).resolve().parent / "results"
INPUTS = ("a8a", "synthetic", "news20")
BIN = Path(sys.executable).parent
TIME = "/usr/bin/time"  # GNU time: peak RSS (%M) of exactly one command


@dataclass(frozen=True, slots=True)
class Timed:
    """One finished command: wall and CPU seconds, peak RSS, its stdout."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    stdout: str


def compile_ahead_of_time() -> None:
    """Compile the replay's kernels ahead of time (``python -m learners.aot``) if they are missing
    or stale, as an installation does: the commands measured then run them, without numba."""
    from learners import aot, compiled

    if not compiled.available():
        print("compiling the kernels ahead of time first (python -m learners.aot)", file=sys.stderr)
        aot.build()


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


def paired_runs(first: Sequence[str], second: Sequence[str], repeats: int,
                ) -> tuple[tuple[Timed, list[float]], tuple[Timed, list[float]]]:
    """The median runs of two commands run in turn ``repeats`` times each, the first one first on
    even repeats and second on odd ones."""
    runs: tuple[list[Timed], list[Timed]] = ([], [])
    for k in range(repeats):
        for j in ((0, 1) if k % 2 == 0 else (1, 0)):
            runs[j].append(timed((first, second)[j]))
    return _median(runs[0]), _median(runs[1])


def _median(runs: list[Timed]) -> tuple[Timed, list[float]]:
    """The run of median wall time, and every run's wall time in order."""
    return sorted(runs, key=lambda r: r.wall_s)[len(runs) // 2], [r.wall_s for r in runs]


@njit(cache=True)
def _digits(out, at, value):
    """Write the decimal digits of a non-negative integer at ``out[at:]``; returns the end."""
    if value == 0:
        out[at] = 48
        return at + 1
    start = at
    while value > 0:
        out[at] = 48 + value % 10
        value //= 10
        at += 1
    out[start:at] = out[start:at][::-1].copy()
    return at


@njit(cache=True)
def _text(indptr, indices, data, labels, vw):
    """Rows as LIBSVM text (1-based indices, values with 4 decimals), or as VW text with ``vw``
    (``label |f idx:val ...``): one pass, bytes."""
    n = indptr.size - 1
    out = np.empty(n * 32 + indptr[-1] * 32, dtype=np.uint8)
    at = 0
    for i in range(n):
        label = labels[i]
        if label < 0:
            out[at] = 45  # '-'
            at += 1
            label = -label
        at = _digits(out, at, label)
        if vw:
            out[at:at + 3] = np.array([32, 124, 102], dtype=np.uint8)  # ' |f'
            at += 3
        for j in range(indptr[i], indptr[i + 1]):
            out[at] = 32
            at = _digits(out, at + 1, indices[j] + 1)
            out[at] = 58  # ':'
            value = data[j]
            if value < 0:
                out[at + 1] = 45
                at += 1
                value = -value
            scaled = int(value * 10000.0 + 0.5)
            at = _digits(out, at + 1, scaled // 10000)
            out[at] = 46  # '.'
            frac = scaled % 10000
            for k in range(4):
                out[at + 4 - k] = 48 + frac % 10
                frac //= 10
            at += 5
        out[at] = 10
        at += 1
    return out[:at]


def write_libsvm_and_vw(rows: Rows, labels: np.ndarray, libsvm: BinaryIO, vw: BinaryIO) -> None:
    """Append the same rows to a LIBSVM file and to a VW text file."""
    for out, as_vw in ((libsvm, False), (vw, True)):
        out.write(_text(rows.indptr, rows.indices, rows.data, labels.astype(np.int64), as_vw).tobytes())


def synthetic_chunks(n: int, d: int, seed: int, chunk: int = 1_000_000) -> Iterator[tuple[Rows, np.ndarray]]:
    """``n`` rows drawn as :func:`synthetic_sparse` draws them, ``chunk`` at a time, labelled by one
    w* (each chunk's rows from their own seed: no chunk repeats another)."""
    w_star = np.random.default_rng(seed).standard_normal(d)
    flip = np.random.default_rng(seed + 1)
    for k, start in enumerate(range(0, n, chunk)):
        rows = synthetic_sparse(n=min(chunk, n - start), d=d, seed=seed + 1000 + k).rows
        margin = np.add.reduceat(w_star[rows.indices] * rows.data, rows.indptr[:-1])
        labels = np.where(margin >= 0, 1, -1)
        labels[flip.random(rows.n) < 0.05] *= -1
        yield rows, labels


def declared(n_features: int, classes: list) -> list[str]:
    """``--param`` arguments giving the model's dimension and classes."""
    return ["--param", f"n_features={n_features}", "--param", f"classes={json.dumps([int(c) for c in classes])}"]


def build_inputs(tmp: Path, synthetic_rows: int, a8a_copies: int, names: Sequence[str],
                 ) -> dict[str, tuple[Path, Path, int, int, bool, list[str]]]:
    """name → (LIBSVM path, VW path, rows, VW hash bits, multiclass, our declared dimension and classes:
    what VW is told by ``-b`` and ``--oaa``, so that neither reads the file before learning)."""
    inputs = {}
    if "a8a" in names:
        a8a = read_libsvm(datasets_dir() / "a8a.xz")
        svm, vw = tmp / "a8a.svm", tmp / "a8a.vw"
        with svm.open("wb") as f_svm, vw.open("wb") as f_vw:
            for _ in range(a8a_copies):
                write_libsvm_and_vw(a8a.rows, a8a.labels, f_svm, f_vw)
        inputs[f"a8a×{a8a_copies}"] = (svm, vw, a8a_copies * a8a.n, 18, False, declared(a8a.rows.n_features, [-1, 1]))
    if "synthetic" in names:
        svm, vw = tmp / "synthetic.svm", tmp / "synthetic.vw"
        with svm.open("wb") as f_svm, vw.open("wb") as f_vw:
            for rows, labels in synthetic_chunks(synthetic_rows, 2**20, seed=0):
                write_libsvm_and_vw(rows, labels, f_svm, f_vw)
        inputs[f"synthetic {synthetic_rows:.0e}×2²⁰".replace("e+0", "e")] = (svm, vw, synthetic_rows, 20, False,
                                                                                      declared(2**20, [-1, 1]))
    if "news20" in names:
        news = read_libsvm(datasets_dir() / "news20.xz")
        svm, vw = tmp / "news20.svm", tmp / "news20.vw"
        with svm.open("wb") as f_svm, vw.open("wb") as f_vw:
            write_libsvm_and_vw(news.rows, news.labels, f_svm, f_vw)
        inputs["news20"] = (svm, vw, news.n, 18, True, declared(news.rows.n_features, news.classes()))
    return inputs


def markdown(rows: list[dict], vw_import: Timed, ours_startup: Timed, delta: float, repeats: int,
             command: str) -> str:
    lines = [
        "# Throughput: `activestream replay` against Vowpal Wabbit's command line",
        "",
        f"Command: `{command}`. Every figure is one process measured from outside (wall clock; user+sys CPU and "
        f"peak RSS from GNU time); the median of {repeats} runs, ours and VW's in turn (alternate orders), after "
        f"one untimed run of each, on the "
        f"shared 2-core machine. "
        f"`python -c \"import vowpalwabbit\"` takes {vw_import.wall_s:.3f} s (subtracted for VW's 'excluding "
        f"start-up'). Ours 'excluding start-up' is the in-process `total_seconds` (read + parse + learn + "
        f"evaluate); our start-up alone (`activestream replay` on a 2-row file: interpreter, imports) takes "
        f"{ours_startup.wall_s:.3f} s wall, {ours_startup.cpu_s:.3f} s CPU, {ours_startup.peak_rss_mb:.0f} MB. paa-1 "
        f"runs with δ = {delta:g} (mpaa-1 with its defaults on news20, against VW's one-against-all); our kernels are "
        f"compiled ahead of time (`python -m learners.aot`), so no numba runs in our processes and no JIT "
        f"compilation is timed.",
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
    lines += ["", "Every run's wall time, in the order run (s):", ""]
    for r in rows:
        who = "ours" if r["command"].startswith("activestream") else "VW"
        lines.append(f"- {r['data']}, {who}: {', '.join(f'{w:.2f}' for w in r['walls'])}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.throughput", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--delta", type=float, default=0.125, help="paa-1's δ (default 0.125, the registry's)")
    parser.add_argument("--synthetic-rows", type=int, default=10_000_000)
    parser.add_argument("--a8a-copies", type=int, default=30)
    parser.add_argument("--inputs", nargs="+", choices=INPUTS, default=list(INPUTS))
    parser.add_argument("--out", type=Path, default=RESULTS / "throughput.md")
    args = parser.parse_args(argv)
    # Python's bytecode cache on, as an installed package has it: with it off, every command would
    # compile the modules changed since their cache was written
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    activestream = str(BIN / "activestream")
    compile_ahead_of_time()
    with tempfile.TemporaryDirectory(prefix="activestream-throughput-") as tmpdir:
        tmp = Path(tmpdir)
        print("building inputs ...", flush=True)
        inputs = build_inputs(tmp, args.synthetic_rows, args.a8a_copies, args.inputs)
        os.sync()  # the inputs' gigabytes written out now, not by the kernel's writeback during the timed runs
        (tmp / "warm.svm").write_bytes(b"1 1:0.5 3:1\n-1 2:1\n")
        tiny = [activestream, "replay", "--learner", "paa-1", "--data", str(tmp / "warm.svm"), "--in-order", "--json"]
        timed(tiny)  # Python's bytecode cache filled before timing
        (ours_startup, _), (vw_import, _) = paired_runs(tiny, [sys.executable, "-c", "import vowpalwabbit"],
                                                        args.repeats)
        rows = []
        for name, (svm, vw, n, bits, multiclass, given) in inputs.items():
            sizes = dict(rows=n, mb_svm=svm.stat().st_size / 1e6, mb_vw=vw.stat().st_size / 1e6, data=name)
            learner = ["mpaa-1"] if multiclass else ["paa-1", "--param", f"delta={args.delta}"]
            ours_cmd = [activestream, "replay", "--learner", *learner, "--data", str(svm), "--in-order", *given,
                        "--json"]
            classes = ["--oaa", "20"] if multiclass else []
            vw_cmd = [sys.executable, "-m", "vowpalwabbit", "-d", str(vw), *classes, "--loss_function", "hinge",
                      "-b", str(bits), "--quiet"]
            timed(ours_cmd), timed(vw_cmd)  # untimed: each command's first read of its fresh file
            (run, walls), vw_timed = paired_runs(ours_cmd, vw_cmd, args.repeats)
            report = json.loads(run.stdout)
            assert report["examples"] == n, report["examples"]
            shown = "mpaa-1" if multiclass else f"paa-1 --param delta={args.delta:g}"
            ours_text = f"activestream replay --learner {shown} --in-order --param n_features=… --param classes=…"
            rows.append(dict(sizes, command=ours_text,
                             wall=run.wall_s, cpu=run.cpu_s, rss=run.peak_rss_mb, inner=report["total_seconds"],
                             read=report["read_seconds"], query=report["query_ratio"], walls=walls))
            print(f"{name}: ours {run.wall_s:.3f} s whole (runs {', '.join(f'{w:.2f}' for w in walls)}), "
                  f"{report['total_seconds']:.3f} s in-process (read {report['read_seconds']:.3f}), "
                  f"{run.peak_rss_mb:.0f} MB", flush=True)
            run, walls = vw_timed
            vw_text = "vw (python -m vowpalwabbit) " + " ".join([*classes, "--loss_function", "hinge", "-b", str(bits)])
            rows.append(dict(sizes, command=vw_text,
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
