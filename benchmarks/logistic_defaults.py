"""The defaults of the AdaGrad logistic learners: their step η, AdaGrad's δ and unit-norm rows.

    python -m benchmarks.logistic_defaults            # 3 tuning permutations, every small board set
    python -m benchmarks.logistic_defaults --quick    # 1 permutation, 3 sets of each kind

``lr-ada-entropy`` (binary), ``mlr-ada-entropy`` and ``mlr-factored-entropy`` (multiclass) are
candidates for the default learners, so their defaults are what a user with no tuning gets. Each runs
online (the budget controller, no look-ahead) at 5 % and 10 % labels over η ∈ {2⁻⁵, …, 2²} ×
``damping`` (AdaGrad's δ) ∈ {0, 0.1, 0.3, 1} × ``normalize`` off / on, on the leaderboard's tuning
permutations (seeds from :data:`benchmarks.leaderboard.TUNING_SEED`), never its evaluated ones, on
every leaderboard set of fewer than 100,000 rows of the learner's kind.

The setting to register is the one with the best mean rank over the (set, budget) cells among those
that lose no cell to the registered setting by more than :data:`HARM`: a default that ranks better
on average but costs one kind of data several points (unit-norm rows on a few dense features whose
row norm carries information, say) is not a better default for a user who has that data. Written
to ``logistic_defaults.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks import leaderboard as lb
from benchmarks import reproduce
from learners import make
from learners.budget import backtest_controller
from learners.replay import run

__all__ = ["HARM", "LEARNERS", "Cell", "best", "chosen", "harmless", "main", "mean_ranks", "measure"]

RESULTS = Path(__file__).resolve().parent / "results"
LEARNERS = {False: ("lr-ada-entropy",), True: ("mlr-ada-entropy", "mlr-factored-entropy")}
ETAS = tuple(2.0**k for k in range(-5, 3))
DAMPINGS = (0.0, 0.1, 0.3, 1.0)
BUDGETS = (0.05, 0.10)
PERMUTATIONS, QUICK_PERMUTATIONS = 3, 1
QUICK_SETS = ("svmguide1", "a8a", "PCMAC", "dna", "satimage", "news20")
HARM = 0.01  # F1 or accuracy a new default may lose to the registered one on any cell


Setting = tuple[float, bool, float]  # (η, normalize, damping)


@dataclass
class Cell:
    dataset: str
    learner: str
    eta: float
    normalize: bool
    budget: float
    mean: float
    query: float
    damping: float = 0.0

    @property
    def setting(self) -> Setting:
        return self.eta, self.normalize, self.damping


def sets(multiclass: bool) -> list[str]:
    """The leaderboard's sets of this kind that are not run under the large-set protocol."""
    return [d.name for d in lb.DATASETS.values() if d.multiclass == multiclass and not d.large]


def measure(data, classes, name: str, setting: Setting, target: float, permutations: int,
            metric: str, dataset: str) -> Cell:
    """One setting at ``target``, online, over the tuning permutations."""
    eta, normalize, damping = setting
    learner = lb.build(name, data, classes, {"eta": eta, "normalize": normalize, "damping": damping,
                                             **lb.untuned(name)})
    learner.budget = backtest_controller(target, data.n)
    result = run(learner, data, permutations=permutations, seed=lb.TUNING_SEED)
    return Cell(dataset, name, eta, normalize, target, result.mean(metric), result.mean("query_ratio"), damping)


def mean_ranks(cells: Sequence[Cell]) -> dict[Setting, float]:
    """Each setting's mean rank over the (dataset, budget) cells (1: best; ties share the mean rank)."""
    groups: dict[tuple[str, float], list[Cell]] = {}
    for c in cells:
        groups.setdefault((c.dataset, c.budget), []).append(c)
    ranks: dict[Setting, list[float]] = {}
    for group in groups.values():
        for c, r in zip(group, lb.average_ranks([c.mean for c in group]), strict=True):
            ranks.setdefault(c.setting, []).append(r)
    return {s: sum(r) / len(r) for s, r in ranks.items()}


def best(cells: Sequence[Cell]) -> Setting:
    """The setting with the best mean rank."""
    ranks = mean_ranks(cells)
    return min(ranks, key=ranks.__getitem__)


def harmless(cells: Sequence[Cell], current: Setting) -> list[Setting]:
    """The settings that lose no cell to ``current`` by more than :data:`HARM` (``current`` among them)."""
    base = {(c.dataset, c.budget): c.mean for c in cells if c.setting == current}
    worst: dict[Setting, float] = {}
    for c in cells:
        worst[c.setting] = max(worst.get(c.setting, 0.0), base[(c.dataset, c.budget)] - c.mean)
    return [s for s, loss in worst.items() if loss <= HARM]


def chosen(cells: Sequence[Cell], current: Setting) -> Setting:
    """The setting to register: the best mean rank among the :func:`harmless` ones."""
    ranks = mean_ranks(cells)
    return min(harmless(cells, current), key=ranks.__getitem__)


def registered(name: str) -> Setting:
    params = make(name).get_params()
    return float(params["eta"]), bool(params["normalize"]), float(params["damping"])


def _label(setting: Setting) -> str:
    eta, normalize, damping = setting
    return f"η = {eta:g}, δ = {damping:g}, normalize {'on' if normalize else 'off'}"


def section(cells: Sequence[Cell], name: str) -> list[str]:
    ranks, current = mean_ranks(cells), registered(name)
    top, pick, safe = best(cells), chosen(cells, current), set(harmless(cells, current))
    datasets = list(dict.fromkeys(c.dataset for c in cells))
    index = {(c.dataset, c.budget, c.setting): c for c in cells}
    out = [f"## `{name}`", "",
           f"To register: **{_label(pick)}**; registered: {_label(current)}"
           f"{' (the same)' if pick == current else ''}. Best mean rank: {_label(top)}"
           + ("." if top == pick else f", which loses a cell to the registered setting by more than {HARM:g}.")
           + " Settings in *italics* lose a cell by more than that.", "",
           "| η | δ | normalize | mean rank | " + " | ".join(f"{d} {b:.0%}" for d in datasets for b in BUDGETS) + " |",
           "|---|---|---|---|" + "---|" * (len(datasets) * len(BUDGETS))]
    for setting in sorted(ranks, key=ranks.__getitem__):
        marks = (" (to register)" if setting == pick else "") + (" (registered)" if setting == current else "")
        eta = f"{setting[0]:g}" if setting in safe else f"*{setting[0]:g}*"
        shown = [index.get((d, b, setting)) for d in datasets for b in BUDGETS]
        out.append(f"| {eta}{marks} | {setting[2]:g} | {'on' if setting[1] else 'off'} | {ranks[setting]:.2f} | "
                   + " | ".join("" if c is None else f"{c.mean:.4f} ({c.query:.3f})" for c in shown) + " |")
    return [*out, ""]


def markdown(cells: Sequence[Cell], meta: dict) -> str:
    lines = ["# The AdaGrad logistic learners' defaults: step, AdaGrad's δ and unit-norm rows", "",
             f"{meta['date']}, commit `{meta['commit']}`, {meta['permutations']} tuning permutations (seeds from "
             f"{lb.TUNING_SEED:,}), {meta['minutes']:.1f} min on this machine. Command: `{meta['command']}`", "",
             "Online (`BudgetController(target)` with the boosted warm-up, no look-ahead), at 5 % and 10 % labels. "
             "F1 (binary) or accuracy (multiclass), the realised query ratio in brackets; ranks within each "
             "(set, budget) cell, best first.", ""]
    for name in (name for multiclass in (False, True) for name in LEARNERS[multiclass]):
        mine = [c for c in cells if c.learner == name]
        if mine:
            lines += section(mine, name)
    return "\n".join(lines)


def protocol_arguments(module: str, description: str, names: list[str], quick_sets: Sequence[str],
                       argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line of a defaults protocol (this one, ``benchmarks.kernel_defaults``): ``datasets``
    (of ``names``; ``quick_sets`` with ``--quick``), ``permutations``, ``out`` and the ``command`` run."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_PERMUTATIONS} permutation on {', '.join(quick_sets)}")
    parser.add_argument("--datasets", nargs="+", choices=names)
    parser.add_argument("--permutations", type=int)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.datasets = args.datasets or [d for d in names if not args.quick or d in quick_sets]
    args.permutations = args.permutations or (QUICK_PERMUTATIONS if args.quick else PERMUTATIONS)
    args.command = f"python -m {module} " + " ".join(argv if argv is not None else sys.argv[1:])
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = protocol_arguments("benchmarks.logistic_defaults", __doc__.splitlines()[0], sets(False) + sets(True),
                              QUICK_SETS, argv)
    permutations, command = args.permutations, args.command
    commit, started = reproduce.commit(), time.perf_counter()
    cells: list[Cell] = []
    for dataset in args.datasets:
        spec = lb.DATASETS[dataset]
        data = spec.load()
        classes = spec.classes(data)
        metric = "accuracy" if spec.multiclass else "f1"
        for name, *setting, target in itertools.product(LEARNERS[spec.multiclass], ETAS, (False, True), DAMPINGS,
                                                        BUDGETS):
            setting = tuple(setting)
            cell = measure(data, classes, name, setting, target, permutations, metric, dataset)
            cells.append(cell)
            print(f"{dataset:10s} {name:20s} {_label(setting)} {target:4.0%} {cell.mean:.4f} ({cell.query:.3f})",
                  flush=True)
    meta = reproduce.run_meta(command, commit, started, permutations=permutations)
    reproduce.write_results(args.out, "logistic_defaults", markdown(cells, meta), meta, "cells", cells)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
