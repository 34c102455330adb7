"""Where River's scaled sampler gets its edge on the dense binary sets: what its scaler learns from.

    python -m benchmarks.river_scaler            # the leaderboard's 10 permutations, 4 dense sets
    python -m benchmarks.river_scaler --quick    # 3 permutations, svmguide1 only

On svmguide1, magic04, splice and spambase River's ``StandardScaler() | LogisticRegression()`` inside
``EntropySampler`` is the peer the binary default loses to (docs/leaderboard.md). River's pipeline
updates the scaler in ``learn_one``, which the sampler calls only for the rows it asks about, so
the scaler's mean and deviation are those of the *labelled* rows, the uncertain ones near the
boundary, not of the stream. This runs that sampler as the leaderboard does (its discount landed
on the first permutation, then corrected over every permutation) both ways: as River's pipeline
runs it, and under ``compose.learn_during_predict()``, where the scaler also learns from every row
it scores, as our ``scale="standard"`` does (:mod:`learners.scaling`). Our default,
``lr-ada-entropy``, runs beside it online. Written to ``river_scaler.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks import leaderboard as lb
from benchmarks import peers, reproduce
from learners.defaults import DEFAULT_LEARNERS

__all__ = ["SETS", "Cell", "main", "river_scaled"]

RESULTS = Path(__file__).resolve().parent / "results"
SETS = ("svmguide1", "magic04", "splice", "spambase")
BUDGETS = (0.05, 0.10)
PERMUTATIONS, QUICK_PERMUTATIONS = lb.PERMUTATIONS, 3
OURS = DEFAULT_LEARNERS["binary"]  # the binary default on rows as narrow as these sets
SOURCES = {"labelled": "the labelled rows (River's pipeline)", "every": "every scored row (learn_during_predict)"}


@dataclass
class Cell:
    dataset: str
    entry: str  # river-scaler-labelled | river-scaler-every | the default learner
    budget: float
    mean: float
    std: float
    query: float
    knob: float  # River's discount; the target for ours


def river_scaled(data, classes, target: float, seeds: Sequence[int], source: str,
                 rows: list[dict[int, float]] | None = None) -> peers.PeerRun:
    """River's ``EntropySampler(StandardScaler() | LogisticRegression())`` landed on ``target`` as
    the leaderboard lands it, its scaler learning from ``source`` ("labelled" or "every")."""
    from river import compose

    rows = rows if rows is not None else peers.dict_rows(data)
    enc = peers.Encoded.of(data, classes, False)

    def one(discount: float, seed: int):
        perm = peers.order(len(rows), seed)
        codes = enc.codes[perm]
        model = peers.river_model("lr", False, discount, seed, scaled=True)
        if source == "every":
            with compose.learn_during_predict():
                y_pred, asked, seconds = peers.river_rounds(model, rows, perm, codes, False)
        else:
            y_pred, asked, seconds = peers.river_rounds(model, rows, perm, codes, False)
        return enc.metrics(codes, y_pred, asked), seconds

    return peers.landed_on_first(f"river-scaler-{source}", "discount", one, target, seeds, bounds=peers.RIVER_BOUNDS,
                                 rising=False, tol=lb.tolerance(target) / 2, params={},
                                 corrections=lb.PEER_CORRECTIONS, land=lb.tolerance(target))


def measure(dataset: str, permutations: int) -> list[Cell]:
    spec = lb.DATASETS[dataset]
    data = spec.load()
    classes = spec.classes(data)
    seeds, rows = list(range(permutations)), peers.dict_rows(data)
    cells = []
    for target in BUDGETS:
        for source in SOURCES:
            found = river_scaled(data, classes, target, seeds, source, rows)
            f1 = [m.f1 for m in found.metrics]
            cells.append(Cell(dataset, found.name, target, float(np.mean(f1)), float(np.std(f1)),
                              float(np.mean([m.query_ratio for m in found.metrics])), found.value))
        name = OURS
        [row] = lb.measure_ours(name, data, classes, {}, target, permutations, regime="defaults", dataset=dataset,
                                metric="f1", offline=False)
        cells.append(Cell(dataset, name, target, row.mean, row.std, row.query, target))
    return cells


def markdown(cells: Sequence[Cell], meta: dict) -> str:
    ours = OURS
    lines = ["# River's scaled sampler: its scaler's statistics from the labelled rows or from every row", "",
             f"{meta['date']}, commit `{meta['commit']}`, {meta['permutations']} permutations (the leaderboard's "
             f"evaluated ones), {meta['minutes']:.1f} min on this machine. Command: `{meta['command']}`", "",
             "F1 of the positive class ± its standard deviation over the permutations, the realised query ratio "
             "in brackets. River: `EntropySampler(StandardScaler() | LogisticRegression())`, the discount landed "
             "as on the leaderboard; its scaler learning from " + " or from ".join(SOURCES.values()) + ". "
             f"Ours: `{ours}`, the binary default, online (the budget controller, no look-ahead).", "",
             f"| dataset | budget | River, scaler from labelled rows | River, scaler from every row | {ours} |",
             "|---|---|---|---|---|"]
    index = {(c.dataset, c.budget, c.entry): c for c in cells}
    for dataset in dict.fromkeys(c.dataset for c in cells):
        for budget in BUDGETS:
            shown = [index.get((dataset, budget, e)) for e in ("river-scaler-labelled", "river-scaler-every", ours)]
            lines.append(f"| {dataset} | {budget:.0%} | " + " | ".join(
                "" if c is None else f"{c.mean:.4f} ± {c.std:.4f} ({c.query:.3f})" for c in shown) + " |")
    return "\n".join([*lines, ""])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.river_scaler", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PERMUTATIONS} permutations, svmguide1 only")
    parser.add_argument("--datasets", nargs="+", choices=list(SETS))
    parser.add_argument("--permutations", type=int)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    chosen = args.datasets or (["svmguide1"] if args.quick else list(SETS))
    permutations = args.permutations or (QUICK_PERMUTATIONS if args.quick else PERMUTATIONS)
    command = "python -m benchmarks.river_scaler " + " ".join(argv if argv is not None else sys.argv[1:])
    commit, started = reproduce.commit(), time.perf_counter()
    cells: list[Cell] = []
    for dataset in chosen:
        for cell in measure(dataset, permutations):
            cells.append(cell)
            print(f"{dataset:10s} {cell.entry:22s} {cell.budget:4.0%} {cell.mean:.4f} ({cell.query:.3f})", flush=True)
    meta = reproduce.run_meta(command, commit, started, permutations=permutations)
    reproduce.write_results(args.out, "river_scaler", markdown(cells, meta), meta, "cells", cells)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
