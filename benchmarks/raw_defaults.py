"""The default learners with no flags, on the sets as distributed and as prepared: scale ``"auto"``
against no scale, River's best from the leaderboard beside them.

    python -m benchmarks.raw_defaults            # 5 permutations, 5 % and 10 % labels
    python -m benchmarks.raw_defaults --quick    # 3 permutations, 10 % only

What a user gets from ``activestream replay --data FILE --budget-rate B``: the registry's default for
the set's classes and width (:func:`learners.defaults.default_learner`), the online budget
controller with replay's warm-up (:func:`learners.budget.backtest_controller`), over permutations
0 … P−1. Each runs with its registered ``scale="auto"`` (:func:`learners.scaling.choose_mode` picks the
mode from the stream's shape) and with ``scale="none"``, the rule seeing the rows as they are. The raw
sets are :mod:`benchmarks.leaderboard_scaling`'s (svmguide1, spambase, magic04, satimage, read as
distributed); the prepared ones the leaderboard's (:data:`benchmarks.leaderboard.DATASETS`, the large
sets left out). River's best ``EntropySampler`` pipeline on each prepared set and budget is read from
the committed ``leaderboard.json`` (it does not depend on our code). Written to ``raw_defaults.md``
and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks import leaderboard as lb
from benchmarks import leaderboard_scaling as lbs
from benchmarks import reproduce
from learners.budget import backtest_controller
from learners.defaults import default_learner
from learners.replay import run

__all__ = ["Cell", "board_sets", "main", "measure"]

RESULTS = Path(__file__).resolve().parent / "results"
BUDGETS, QUICK_BUDGETS = (0.05, 0.10), (0.10,)
PERMUTATIONS, QUICK_PERMUTATIONS = 5, 3
SCALES = ("auto", "none")


@dataclass(frozen=True, slots=True)
class Cell:
    regime: str  # "raw" (as distributed) or "prepared"
    dataset: str
    learner: str
    scale: str
    budget: float
    metric: str
    mean: float
    std: float
    query: float
    mode: str  # what the scale ran as ("auto": the mode it chose)


def board_sets() -> list[tuple[str, lb.BoardData]]:
    """(regime, set): the raw sets, then the prepared ones but the large."""
    return [("raw", s) for s in lbs.SETS.values()] + [("prepared", s) for s in lb.DATASETS.values() if not s.large]


def measure(spec: lb.BoardData, data, scale: str, budget: float, permutations: int, regime: str) -> Cell:
    """The default learner for ``data`` with ``scale``, online at ``budget``."""
    classes = spec.classes(data)
    name = default_learner(len(classes), data.rows.n_features)
    learner = lb.build(name, data, classes, {"scale": scale})
    learner.budget = backtest_controller(budget, data.n)
    metric = "accuracy" if spec.multiclass else "f1"
    result = run(learner, data, permutations=permutations, seed=0)
    probe = learner.clone()
    probe._resolve_scale(data.rows, True)
    return Cell(regime, spec.name, name, scale, budget, metric, result.mean(metric), result.std(metric),
                result.mean("query_ratio"), probe.scale_mode)


def river_best(dataset: str, budget: float) -> float | None:
    """River's best landed pipeline on a prepared set, from the committed leaderboard."""
    made = json.loads((RESULTS / "leaderboard.json").read_text())
    rows = [dict(zip(made["rows"]["columns"], v, strict=True)) for v in made["rows"]["values"]]
    best = lb.river_best([lb.Row(**r) for r in rows if r["dataset"] == dataset], dataset, budget)
    return None if best is None else best.mean


def table(cells: Sequence[Cell], regime: str) -> list[str]:
    index = {(c.dataset, c.budget, c.scale): c for c in cells if c.regime == regime}
    river = regime == "prepared"
    out = ["| dataset | learner | budget | auto chose | auto | none | Δ" + (" | River's best | auto − River" if river
                                                                         else "") + " |",
           "|---|---|---|---|---|---|---|" + ("---|---|" if river else "")]
    for dataset, budget in dict.fromkeys((c.dataset, c.budget) for c in cells if c.regime == regime):
        auto, none = index.get((dataset, budget, "auto")), index.get((dataset, budget, "none"))
        if auto is None or none is None:
            continue
        line = (f"| {dataset} | {auto.learner} | {budget:.0%} | {auto.mode} | {auto.mean:.4f} ± {auto.std:.4f} | "
                f"{none.mean:.4f} | {auto.mean - none.mean:+.4f}")
        if river:
            best = river_best(dataset, budget)
            line += " | – | –" if best is None else f" | {best:.4f} | {auto.mean - best:+.4f}"
        out.append(line + " |")
    return out


def markdown(cells: Sequence[Cell], meta: dict) -> str:
    lines = ["# The default learners on raw and prepared sets: scale auto against none", "",
             f"{meta['date']}, commit `{meta['commit']}`, {meta['permutations']} permutations, "
             f"{meta['minutes']:.1f} min on this machine. Command: `{meta['command']}`", "",
             "The registry's default for each set's classes and width, online (`backtest_controller`, replay's "
             "warm-up), F1 (binary) or accuracy (multiclass), mean ± std over the permutations. *auto chose*: the "
             "mode `scale=\"auto\"` took from the stream's shape.", "",
             "## As distributed (raw columns)", "", *table(cells, "raw"), "",
             "## Prepared (the leaderboard's files)", "", *table(cells, "prepared"), ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.raw_defaults", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_PERMUTATIONS} permutations, budgets {', '.join(map(str, QUICK_BUDGETS))}")
    parser.add_argument("--permutations", type=int)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    budgets = QUICK_BUDGETS if args.quick else BUDGETS
    permutations = args.permutations or (QUICK_PERMUTATIONS if args.quick else PERMUTATIONS)
    command = "python -m benchmarks.raw_defaults " + " ".join(argv if argv is not None else sys.argv[1:])
    commit, started = reproduce.commit(), time.perf_counter()
    cells: list[Cell] = []
    for regime, spec in board_sets():
        data = spec.load()
        for budget in budgets:
            for scale in SCALES:
                cell = measure(spec, data, scale, budget, permutations, regime)
                cells.append(cell)
                print(f"{regime:8s} {spec.name:10s} {budget:4.0%} {scale:5s} ({cell.mode:8s}) {cell.mean:.4f} "
                      f"({cell.query:.3f})", flush=True)
    meta = reproduce.run_meta(command, commit, started, permutations=permutations, budgets=list(budgets))
    reproduce.write_results(args.out, "raw_defaults", markdown(cells, meta), meta, "cells", cells)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
