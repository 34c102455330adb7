"""The label budget held online: the budget controller against δ bisected offline over the whole stream.

For every dataset × learner × target rate, three runs over the same permutations and coins:

* **online**: the learner with :class:`learners.budget.BudgetController` (``target``), no look-ahead,
  as ``activestream replay --budget-rate R`` runs it: realised query rate, the largest query ratio
  over windows of 1,000 records after the first, mean F1;
* **offline**: the same learner with its knob bisected over the whole stream
  (:func:`learners.replay.find_budget`, as ``--query-rate R``) to land the rate the online run
  realised: mean F1 at the same realised rate;
* **cold start**: a fresh model whose labels come 2,000 records late: requests in its first 2,000
  records (the goal is at most 1.2 × target × 2,000).

Datasets: the six of Tables 2-3 of Lu, Zhao & Hoi 2016 (prepared by :mod:`benchmarks.paa_data`),
ijcnn1, a8a with labels 2,000 records late, the drifting stream of :func:`learners.synthetic.synthetic_shift`
(binary: paa-1, soal, d-amd), and letter and usps (multiclass: mpaa-2, F1 is macro-F1). Learners use
the registry defaults. Writes ``benchmarks/results/budget.md``, ``.json`` and ``budget.png``::

    python -m benchmarks.budget                  # 10 permutations
    python -m benchmarks.budget --quick          # 3 permutations
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from benchmarks.paa_data import DATASETS as PAA
from benchmarks.paa_data import datasets_dir
from benchmarks.paa_multiclass import DATASETS as MULTICLASS
from learners import make
from learners.budget import BudgetController
from learners.datasets import Dataset, read_libsvm
from learners.replay import _orders, find_budget, replay, run
from learners.synthetic import synthetic_shift

__all__ = ["main"]

RESULTS = Path(__file__).resolve().parent / "results"
TARGETS = (0.01, 0.05, 0.10, 0.20)
BINARY = ("paa-1", "soal", "d-amd")
COLD = 2000  # records of the cold-start check, and how late its labels come


@dataclass(frozen=True)
class Stream:
    """A dataset as the grid runs it: how it is loaded, its positive label, its label delay."""

    name: str
    load: Callable[[], Dataset]
    positive: object = None
    delay: int = 0
    learners: tuple[str, ...] = BINARY


def streams() -> list[Stream]:
    out = [Stream(d.name, d.load, d.positive) for d in PAA.values()]
    out.append(Stream("ijcnn1", lambda: read_libsvm(datasets_dir() / "ijcnn1.xz"), 1.0))
    out.append(Stream("a8a-late", PAA["a8a"].load, PAA["a8a"].positive, delay=2000))
    out.append(Stream("drift", lambda: synthetic_shift(n=10_000, d=50, switch=500, seed=0), 1))
    for name in ("letter", "usps"):
        out.append(Stream(name, MULTICLASS[name][0], learners=("mpaa-2",)))
    return out


@dataclass
class Cell:
    data: str
    learner: str
    target: float
    delay: int
    rate: float
    rate_std: float
    max_window: float
    f1: float
    f1_std: float
    offline_rate: float
    offline_knob: float
    offline_f1: float
    offline_f1_std: float
    cold_max: int
    online_speed: float
    offline_speed: float
    offline_max_window: float  # the same measures for the offline knob, which holds no budget per window
    offline_cold_max: int

    @property
    def goals(self) -> dict[str, bool | None]:
        """Each goal met, or None where it cannot be measured (no full window after the first)."""
        return {
            "rate": abs(self.rate - self.target) <= 0.1 * self.target,
            "window": None if self.max_window != self.max_window else self.max_window <= 1.5 * self.target,
            "f1": self.f1 >= self.offline_f1 - 0.01,
            "cold": self.cold_max <= 1.2 * self.target * COLD,
        }


def learner_for(name: str, data: Dataset, positive: object):
    probe = make(name)
    classes = data.classes() if probe.multiclass else list(data.binary_classes(positive))
    return make(name, n_features=data.rows.n_features, classes=classes)


def cold_start(base, data: Dataset, target: float | None, permutations: int) -> int:
    """Most requests any permutation's fresh model makes in its first ``COLD`` records, labels ``COLD``
    late; with the controller at ``target``, or (None) with the learner's own knob."""
    worst = 0
    for k, order in enumerate(_orders(data.n, permutations, 0, not data.ordered)):
        fresh = base.clone(seed=base.seed + k)
        fresh.budget = None if target is None else BudgetController(target=target)
        trace = replay(fresh, data, order=order[:COLD], delay=COLD)
        worst = max(worst, int(trace.queried.sum()))
    return worst


def measure(stream: Stream, data: Dataset, name: str, target: float, permutations: int) -> Cell:
    base = learner_for(name, data, stream.positive)
    online_learner = base.clone()
    online_learner.budget = BudgetController(target=target)
    online = run(online_learner, data, permutations=permutations, delay=stream.delay)
    realised = online.mean("query_ratio")
    tuned, offline = find_budget(base, data, realised, permutations=permutations, delay=stream.delay,
                                 tol=0.01 * realised)
    knob = tuned.query.budget_param
    speed = lambda r: float(np.mean(data.n / np.asarray(r.seconds)))  # noqa: E731
    return Cell(stream.name, name, target, stream.delay, realised, online.std("query_ratio"),
                _largest(online.window_ratios), online.mean("f1"), online.std("f1"),
                offline.mean("query_ratio"), float(getattr(tuned.query, knob)), offline.mean("f1"), offline.std("f1"),
                cold_start(base, data, target, permutations), speed(online), speed(offline),
                _largest(offline.window_ratios), cold_start(tuned, data, None, permutations))


def _largest(ratios: list[float]) -> float:
    """The largest window ratio of the passes; NaN when no pass has a full window after the first."""
    kept = [r for r in ratios if r == r]
    return max(kept) if kept else float("nan")


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def table(cells: list[Cell]) -> list[str]:
    mark = lambda ok: " ✗" if ok is False else ""  # noqa: E731
    window = lambda w, t: "—" if w != w else f"{w / t:.2f}"  # noqa: E731
    lines = ["| data | learner | target | realised rate | rate / target | max window / target | F1 online | "
             "F1 offline δ (rate) | ΔF1 | cold start (limit) | offline: max window / target, cold start |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        g = c.goals
        lines.append(
            f"| {c.data} | {c.learner} | {c.target:.0%} | {c.rate:.4f} ± {c.rate_std:.4f} | "
            f"{c.rate / c.target:.3f}{mark(g['rate'])} | {window(c.max_window, c.target)}{mark(g['window'])} | "
            f"{c.f1:.4f} ± {c.f1_std:.4f} | {c.offline_f1:.4f} ({c.offline_rate:.4f}) | "
            f"{c.f1 - c.offline_f1:+.4f}{mark(g['f1'])} | "
            f"{c.cold_max} ({1.2 * c.target * COLD:.0f}){mark(g['cold'])} | "
            f"{window(c.offline_max_window, c.target)}, {c.offline_cold_max} |")
    return lines


def summary(cells: list[Cell]) -> list[str]:
    n = len(cells)
    met = {k: sum(c.goals[k] is True for c in cells) for k in ("rate", "window", "f1", "cold")}
    measured = sum(c.goals["window"] is not None for c in cells)
    rel = np.array([c.rate / c.target for c in cells])
    windows = np.array([c.max_window / c.target for c in cells if c.max_window == c.max_window])
    offline_windows = np.array([c.offline_max_window / c.target for c in cells
                                if c.offline_max_window == c.offline_max_window])
    offline_cold = sum(c.offline_cold_max > 1.2 * c.target * COLD for c in cells)
    dF1 = np.array([c.f1 - c.offline_f1 for c in cells])
    on, off = np.array([c.online_speed for c in cells]), np.array([c.offline_speed for c in cells])
    return [
        f"- Realised rate within ±10 % of the target: {met['rate']}/{n} cells "
        f"(rate / target {rel.min():.3f} - {rel.max():.3f}).",
        f"- Max window ratio ≤ 1.5 × target: {met['window']}/{measured} cells with a full window after the first "
        f"(max window / target {_span(windows)}; by target: "
        + ", ".join(f"{t:.0%}: {_span(np.array([c.max_window / c.target for c in cells if c.target == t]))}"
                    for t in TARGETS)
        + f"). The offline knob: {_span(offline_windows)}.",
        f"- F1 within 0.01 of (or above) the offline-bisected knob at the same rate: {met['f1']}/{n} "
        f"(ΔF1 {dF1.min():+.4f} - {dF1.max():+.4f}, median {np.median(dF1):+.4f}).",
        f"- Cold start (fresh model, labels {COLD:,} records late) ≤ 1.2 × target × {COLD:,}: {met['cold']}/{n}; "
        f"the offline knob goes over it in {offline_cold}/{n}.",
        f"- Replay speed, median over cells: {np.median(on):,.0f} records/s with the controller, "
        f"{np.median(off):,.0f} with the knob fixed (ratio {np.median(on / off):.2f}).",
    ]


def _span(values: np.ndarray) -> str:
    """'min - max' of the values that are not NaN, or '—'."""
    values = values[~np.isnan(values)] if values.size else values
    return f"{values.min():.2f} - {values.max():.2f}" if values.size else "—"


def plot(cells: list[Cell], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    colours = {t: c for t, c in zip(TARGETS, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=True)}
    for c in cells:
        col = colours[c.target]
        axes[0].scatter(c.target, c.rate / c.target, color=col, s=14)
        if c.max_window == c.max_window:  # NaN: too short a stream for a window after the first
            axes[1].scatter(c.target, c.max_window / c.target, color=col, s=14)
        axes[2].scatter(c.offline_f1, c.f1, color=col, s=14)
    for t, col in colours.items():
        axes[2].scatter([], [], color=col, label=f"target {t:.0%}")
    axes[0].axhspan(0.9, 1.1, color="0.9", zorder=0)  # behind the points
    axes[0].set(xscale="log", xlabel="target", ylabel="realised rate / target", title="overall rate")
    axes[1].axhline(1.5, color="0.5", ls="--")
    axes[1].set(xscale="log", xlabel="target", ylabel="max window ratio / target", title="windows of 1,000 records")
    lims = [min(min(c.f1, c.offline_f1) for c in cells) - 0.02, 1.0]
    axes[2].plot(lims, lims, color="0.5", lw=0.8)
    axes[2].plot(lims, [x - 0.01 for x in lims], color="0.5", lw=0.8, ls="--")
    axes[2].set(xlabel="F1, knob bisected offline", ylabel="F1, online controller", title="same realised rate")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 permutations instead of 10")
    parser.add_argument("--permutations", type=int, help="permutations per cell (default 10, 3 with --quick)")
    parser.add_argument("--datasets", nargs="*", help="only these streams")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--plot-only", action="store_true", help="redraw budget.png from budget.json, run nothing")
    args = parser.parse_args(argv)
    if args.plot_only:
        saved = json.loads((args.out / "budget.json").read_text())["cells"]
        plot([Cell(**{k: v for k, v in c.items() if k != "goals"}) for c in saved], args.out / "budget.png")
        return 0
    permutations = args.permutations or (3 if args.quick else 10)
    commit = _commit()  # the code that runs, read before the run (a commit made meanwhile is not it)
    started = time.perf_counter()
    cells: list[Cell] = []
    for stream in streams():
        if args.datasets and stream.name not in args.datasets:
            continue
        data = stream.load()
        for name in stream.learners:
            for target in TARGETS:
                cell = measure(stream, data, name, target, permutations)
                cells.append(cell)
                print(table([cell])[-1], flush=True)
    minutes = (time.perf_counter() - started) / 60
    command = "python -m benchmarks.budget " + " ".join(argv if argv is not None else sys.argv[1:])
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    header = [
        "# The label budget held online",
        "",
        f"{date}, commit `{commit}`, {permutations} permutations per cell"
        + (" (`--quick`: fewer than the 10 of the full grid)" if permutations < 10 else "")
        + f", {minutes:.0f} min on this machine.",
        f"Command: `{command.strip()}`",
        "",
        "Online: `BudgetController(target)` (no look-ahead; `activestream replay --budget-rate`). Offline: the knob "
        "bisected over the whole stream to the rate the online run realised (`--query-rate`). Cold start: a fresh "
        f"model, labels {COLD:,} records late, requests in its first {COLD:,} records (most over the permutations). "
        "Max window: the largest query ratio over windows of 1,000 records after the first, over all permutations. "
        "✗ marks a missed goal (rate within ±10 %, window ≤ 1.5 × target, ΔF1 ≥ −0.01, cold start ≤ 1.2 × "
        "target × 2,000). Learners use the registry defaults; F1 of letter and usps is macro-F1.",
        "",
        "## Summary",
        "",
        *summary(cells),
        "",
        "## Cells",
        "",
        *table(cells),
        "",
        "![rate, windows and F1](budget.png)",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "budget.md").write_text("\n".join(header))
    (args.out / "budget.json").write_text(json.dumps(
        {"date": date, "commit": commit, "command": command.strip(), "permutations": permutations,
         "cells": [{**asdict(c), "goals": c.goals} for c in cells]}, indent=1))
    plot(cells, args.out / "budget.png")
    print("\n".join(summary(cells)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
