"""Peak memory of ``activestream replay``: a file replayed as a stream (``--in-order``) against the
same file held in memory (one shuffled pass), and against the command's start-up alone.

One command writes ``benchmarks/results/replay_memory.md``::

    python -m benchmarks.replay_memory      # --repeats 3 by default

Inputs, built in a temporary directory: a8a repeated ten times (325,610 rows, 123 features; plain
and ``.xz``) and the synthetic rows of :mod:`benchmarks.throughput` (10⁶ over 2²⁰ dimensions,
``--synthetic-rows``). Each command is one process measured from outside with GNU time (peak RSS,
wall, user+sys CPU), the kernels compiled ahead of time (``python -m learners.aot``; compiled first
if missing) and Python's modules from their bytecode cache; the table shows medians.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.paa_data import datasets_dir
from benchmarks.startup import TEN_ROWS
from benchmarks.throughput import BIN, RESULTS, build_inputs, compile_ahead_of_time, timed

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay_memory", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--synthetic-rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=RESULTS / "replay_memory.md")
    args = parser.parse_args(argv)
    # Python's bytecode cache on, as an installed package has it (an environment may turn it off)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    activestream = str(BIN / "activestream")
    compile_ahead_of_time()
    rows = []
    with tempfile.TemporaryDirectory(prefix="activestream-memory-") as tmpdir:
        tmp = Path(tmpdir)
        print("building inputs ...", flush=True)
        a8a = lzma.decompress((datasets_dir() / "a8a.xz").read_bytes()) * 10
        (tmp / "a8a10.svm").write_bytes(a8a)
        (tmp / "a8a10.svm.xz").write_bytes(lzma.compress(a8a, preset=1))
        synthetic = next(iter(build_inputs(tmp, args.synthetic_rows, 0, ["synthetic"]).values()))[0]
        (tmp / "ten.svm").write_bytes(TEN_ROWS)
        # each input with the dimension and classes it declares for a stream read once
        inputs = [("10 rows", tmp / "ten.svm", 0), ("a8a×10", tmp / "a8a10.svm", 123),
                  ("a8a×10, .xz", tmp / "a8a10.svm.xz", 123),
                  (f"synthetic {args.synthetic_rows:,}×2²⁰", synthetic, 2**20)]
        replay = [activestream, "replay", "--learner", "paa-1", "--param", "delta=0.125", "--json"]
        timed([*replay, "--data", str(tmp / "ten.svm"), "--in-order"])  # Python's bytecode cache filled
        for name, path, dimension in inputs:
            modes = [("stream (`--in-order`)", ["--in-order"])]
            if name != "10 rows":
                modes += [("stream, dimension and classes given (read once)",
                           ["--in-order", "--param", f"n_features={dimension}", "--param", "classes=[-1,1]"]),
                          ("in memory (one shuffled pass)", [])]
            for mode, flags in modes:
                runs = [timed([*replay, "--data", str(path), *flags]) for _ in range(args.repeats)]
                report = json.loads(runs[0].stdout)
                rows.append(dict(data=name, mode=mode, examples=report["examples"], mb=path.stat().st_size / 1e6,
                                 rss=statistics.median(r.peak_rss_mb for r in runs),
                                 wall=statistics.median(r.wall_s for r in runs),
                                 cpu=statistics.median(r.cpu_s for r in runs), query=report["query_ratio"]))
                print(f"{name}, {mode}: {rows[-1]['rss']:.0f} MB, {rows[-1]['wall']:.2f} s", flush=True)
    command = ("python -m benchmarks.replay_memory " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    lines = [
        "# Peak memory of `activestream replay`: a stream against the data in memory",
        "",
        f"Command: `{command}`. `activestream replay --learner paa-1 --param delta=0.125 --json --data FILE`, "
        f"with `--in-order` (read and replayed as a stream: a first pass finds the dimension and classes, unless "
        "`--param n_features=… --param classes=[-1,1]` gives them) or without (one shuffled pass, which needs every "
        f"row at hand). Each figure is one process measured from outside with GNU time, the median of {args.repeats} "
        "runs on the shared 2-core machine; the kernels are compiled ahead of time (`python -m learners.aot`), "
        "Python's modules come from their bytecode cache. The 10-row file is the "
        "start-up alone (interpreter, libraries, compiled kernels).",
        "",
        "| data | rows | file MB | replay | peak RSS MB | above start-up MB | wall s | CPU s | query ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = rows[0]["rss"]
    for r in rows:
        lines.append(f"| {r['data']} | {r['examples']:,} | {r['mb']:.1f} | {r['mode']} | {r['rss']:.0f} | "
                     f"{r['rss'] - base:.0f} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['query']:.4f} |")
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
