"""The budget controller's warm-up: off, every record, or boosted, on the leaderboard's sets.

    python -m benchmarks.budget_warmup            # 4 tuning permutations, 14 sets, 6 learners
    python -m benchmarks.budget_warmup --quick    # 2 permutations, 5 % and 10 % only

A controller that spends its budget evenly from the first record leaves a fresh model guessing
longest. The warm-up (:class:`learners.budget.BudgetController`, step 4) spends part of the budget
first and repays it afterwards at half the rate. Each variant runs online (no look-ahead) at the
same target:

* ``off``: no warm-up;
* ``every``: q = 1 for the first N requests;
* ``boost k``: the controller aims at k × the target through the query strategy for the first N
  requests;

with N = :func:`learners.budget.backtest_warmup` (half the pass's budget; ``--share``).
The learners are the two leaders of each kind on the leaderboard and the defaults; the
permutations are the leaderboard's tuning permutations (seeds from 10,000), never its evaluated
ones, so a default chosen here is not chosen on the numbers the leaderboard reports. Written to
``budget_warmup.md`` and ``.json``: per cell the metric and realised ratio of each variant, and per
variant the cells it improves on ``off``, the summed gain and the largest ratio error.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks import leaderboard as lb
from benchmarks import reproduce
from learners.budget import BACKTEST_WARMUP_SHARE, BudgetController, backtest_warmup
from learners.replay import run

__all__ = ["VARIANTS", "Cell", "main", "measure"]

RESULTS = Path(__file__).resolve().parent / "results"
SETS = ("svmguide1", "mushrooms", "a8a", "spambase", "splice", "w8a", "magic04", "BASEHOCK", "PCMAC",
        "dna", "satimage", "usps", "letter", "shuttle")
LEARNERS = {False: ("lr-ada-entropy", "d-amd", "paa-1"), True: ("mlr-ada-entropy", "md-amd", "mpaa-1")}
BUDGETS, QUICK_BUDGETS = (0.01, 0.05, 0.10, 0.20), (0.05, 0.10)
PERMUTATIONS, QUICK_PERMUTATIONS = 4, 2
VARIANTS: dict[str, float | None] = {"every": None, "boost 2": 2.0, "boost 4": 4.0, "boost 8": 8.0, "boost 16": 16.0}


@dataclass
class Cell:
    dataset: str
    learner: str
    budget: float
    variant: str  # off | every | boost k
    warmup: int  # requests of the warm-up
    mean: float
    std: float
    query: float


def measure(data, classes, name: str, target: float, variant: str, permutations: int, metric: str,
            dataset: str, share: float = BACKTEST_WARMUP_SHARE) -> Cell:
    """One learner at ``target``, online, with the warm-up ``variant`` of ``share`` of the budget, over
    the tuning permutations."""
    learner = lb.build(name, data, classes, lb.untuned(name))
    warmup = 0 if variant == "off" else backtest_warmup(target, data.n, share=share)
    learner.budget = BudgetController(target=target, warmup=warmup,
                                      warmup_boost=None if variant == "off" else VARIANTS[variant])
    result = run(learner, data, permutations=permutations, seed=lb.TUNING_SEED)
    return Cell(dataset, name, target, variant, warmup, result.mean(metric), result.std(metric),
                result.mean("query_ratio"))


def summary(cells: list[Cell]) -> list[str]:
    base = {(c.dataset, c.learner, c.budget): c for c in cells if c.variant == "off"}
    out = ["| variant | cells better than off | summed gain | mean gain | largest realised / target |",
           "|---|---|---|---|---|"]
    for variant in ("off", *VARIANTS):
        mine = [c for c in cells if c.variant == variant]
        if not mine:
            continue
        gains = [c.mean - base[(c.dataset, c.learner, c.budget)].mean for c in mine]
        worst = max(c.query / c.budget for c in mine)
        better = sum(g > 0 for g in gains)
        out.append(f"| {variant} | {better} of {len(mine)} | {sum(gains):+.3f} | {sum(gains) / len(mine):+.4f} | "
                   f"{worst:.3f} |")
    return out


def per_cell(cells: list[Cell]) -> list[str]:
    variants = [v for v in ("off", *VARIANTS) if any(c.variant == v for c in cells)]
    out = ["| dataset | learner | budget | N | " + " | ".join(variants) + " |",
           "|---|---|---|---|" + "---|" * len(variants)]
    index = {(c.dataset, c.learner, c.budget, c.variant): c for c in cells}
    for key in dict.fromkeys((c.dataset, c.learner, c.budget) for c in cells):
        shown = [index.get((*key, v)) for v in variants]
        n = next((c.warmup for c in shown if c is not None and c.warmup), 0)
        out.append(f"| {key[0]} | {key[1]} | {key[2]:.0%} | {n} | "
                   + " | ".join("" if c is None else f"{c.mean:.4f} ({c.query:.3f})" for c in shown) + " |")
    return out


def markdown(cells: list[Cell], meta: dict) -> str:
    lines = ["# The budget controller's warm-up: off, every record, boosted", "",
             f"{meta['date']}, commit `{meta['commit']}`, {meta['permutations']} tuning permutations (seeds from "
             f"{lb.TUNING_SEED:,}), {meta['minutes']:.1f} min on this machine. Command: `{meta['command']}`", "",
             "Online (`BudgetController(target, warmup=N, warmup_boost=k)`, no look-ahead), each learner's defaults. "
             f"N = {meta['share']:g} of the pass's budget (`backtest_warmup`). F1 (binary) or "
             "accuracy (multiclass); the realised query ratio in brackets.", "",
             "## Against no warm-up", "", *summary(cells), ""]
    for kind, multiclass in (("Binary", False), ("Multiclass", True)):
        mine = [c for c in cells if lb.DATASETS[c.dataset].multiclass == multiclass]
        if mine:
            lines += [f"### {kind}", "", *summary(mine), ""]
    lines += ["## Per cell", "", *per_cell(cells), ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.budget_warmup", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_PERMUTATIONS} permutations, budgets {', '.join(map(str, QUICK_BUDGETS))}")
    parser.add_argument("--datasets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--budgets", nargs="+", type=float)
    parser.add_argument("--permutations", type=int)
    parser.add_argument("--share", type=float, default=BACKTEST_WARMUP_SHARE,
                        help=f"the warm-up's share of the pass's budget (default {BACKTEST_WARMUP_SHARE:g})")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    budgets = args.budgets or list(QUICK_BUDGETS if args.quick else BUDGETS)
    permutations = args.permutations or (QUICK_PERMUTATIONS if args.quick else PERMUTATIONS)
    command = "python -m benchmarks.budget_warmup " + " ".join(argv if argv is not None else sys.argv[1:])
    commit, started = reproduce.commit(), time.perf_counter()
    cells: list[Cell] = []
    for name in args.datasets:
        spec = lb.DATASETS[name]
        data = spec.load()
        classes = spec.classes(data)
        metric = "accuracy" if spec.multiclass else "f1"
        for learner in LEARNERS[spec.multiclass]:
            if lb.skip_reason(learner, data):
                continue
            for target in budgets:
                for variant in ("off", *args.variants):
                    cell = measure(data, classes, learner, target, variant, permutations, metric, name, args.share)
                    cells.append(cell)
                    print(f"{name:10s} {learner:16s} {target:5.0%} {variant:8s} N={cell.warmup:5d} "
                          f"{cell.mean:.4f} ({cell.query:.4f})", flush=True)
    meta = reproduce.run_meta(command, commit, started, permutations=permutations, budgets=budgets, share=args.share)
    reproduce.write_results(args.out, "budget_warmup", markdown(cells, meta), meta, "cells", cells)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
