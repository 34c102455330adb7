"""The random-feature map of the kernel logistic learner: its width m and its kernel's γ.

    python -m benchmarks.kernel_defaults            # 3 tuning permutations, every binary board set
    python -m benchmarks.kernel_defaults --quick    # 1 permutation, 3 sets

``lr-ada-entropy-rff`` is ``lr-ada-entropy`` (AdaGrad's logistic step and the entropy query, with
their registered defaults) learning on [x, z(u)]: the row's own features beside m random Fourier
features of the row lifted onto the sphere, u = [x, 1]/‖[x, 1]‖ (``rff_lift=1``, ``rff_keep=True``).
Its map runs online (the budget controller, no look-ahead) at 5 % and 10 % labels over
m ∈ {256, 512} × γ ∈ {1, 2, 4, 8}, beside the same learner without the map, on the leaderboard's
tuning permutations (never its evaluated ones), on every binary set of the board, the large ones
included: ijcnn1, whose 22 features are the kind a kernel helps, is one of them.

The map to register is the one with the best mean rank over the (set, budget) cells among those
that lose no cell to the learner without a map by more than :data:`benchmarks.logistic_defaults.HARM`:
the map is there to add a kernel's curvature to the linear model, not to cost a set what the
linear model gets. Written to ``kernel_defaults.md`` and ``.json``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks import leaderboard as lb
from benchmarks import reproduce
from benchmarks.logistic_defaults import BUDGETS, HARM, best, chosen, harmless, mean_ranks, protocol_arguments
from learners import make
from learners.budget import backtest_controller
from learners.replay import run

__all__ = ["COMPONENTS", "GAMMAS", "LEARNER", "Cell", "main", "measure", "registered"]

LEARNER = "lr-ada-entropy-rff"
COMPONENTS = (256, 512)
GAMMAS = (1.0, 2.0, 4.0, 8.0)
QUICK_SETS = ("svmguide1", "a8a", "PCMAC")
NO_MAP = (0, 0.0)  # the learner without random features: the reference no map may cost more than HARM

Setting = tuple[int, float]  # (m, γ)


@dataclass
class Cell:
    dataset: str
    components: int
    gamma: float
    budget: float
    mean: float
    query: float
    seconds: float

    @property
    def setting(self) -> Setting:
        return self.components, self.gamma


def sets() -> list[str]:
    """Every binary set of the leaderboard."""
    return [d.name for d in lb.DATASETS.values() if not d.multiclass]


def params(setting: Setting) -> dict[str, object]:
    """The learner's parameters for ``setting``; without a map, those of ``lr-ada-entropy``."""
    components, gamma = setting
    if not components:
        return {"rff_components": 0, "rff_lift": 0.0, "rff_keep": False}
    return {"rff_components": components, "rff_gamma": gamma}


def measure(data, classes, setting: Setting, target: float, permutations: int, dataset: str) -> Cell:
    """One setting at ``target``, online, over the tuning permutations."""
    started = time.perf_counter()
    learner = lb.build(LEARNER, data, classes, {**params(setting), **lb.untuned(LEARNER)})
    learner.budget = backtest_controller(target, data.n)
    result = run(learner, data, permutations=permutations, seed=lb.TUNING_SEED)
    return Cell(dataset, setting[0], setting[1], target, result.mean("f1"), result.mean("query_ratio"),
                time.perf_counter() - started)


def registered() -> Setting:
    got = make(LEARNER).get_params()
    return int(got["rff_components"]), float(got["rff_gamma"])


def _label(setting: Setting) -> str:
    return "no map" if setting == NO_MAP else f"m = {setting[0]}, γ = {setting[1]:g}"


def markdown(cells: Sequence[Cell], meta: dict) -> str:
    ranks, current = mean_ranks(cells), registered()
    top, pick, safe = best(cells), chosen(cells, NO_MAP), set(harmless(cells, NO_MAP))
    datasets = list(dict.fromkeys(c.dataset for c in cells))
    index = {(c.dataset, c.budget, c.setting): c for c in cells}
    seconds = {s: sum(c.seconds for c in cells if c.setting == s) for s in ranks}
    lines = ["# The kernel logistic learner's map: its width and its kernel", "",
             f"{meta['date']}, commit `{meta['commit']}`, {meta['permutations']} tuning permutations (seeds from "
             f"{lb.TUNING_SEED:,}), {meta['minutes']:.1f} min on this machine. Command: `{meta['command']}`", "",
             f"`{LEARNER}` online (`BudgetController(target)` with the boosted warm-up, no look-ahead) at 5 % and "
             "10 % labels: F1, the realised query ratio in brackets; ranks within each (set, budget) cell, best "
             "first. *No map* is the same learner on the row alone (`lr-ada-entropy`).", "",
             f"To register: **{_label(pick)}**; registered: {_label(current)}"
             f"{' (the same)' if pick == current else ''}. Best mean rank: {_label(top)}"
             + ("." if top == pick else f", which loses a cell to the learner without a map by more than {HARM:g}.")
             + f" Maps in *italics* lose a cell to it by more than {HARM:g}.", "",
             "| map | mean rank | seconds | " + " | ".join(f"{d} {b:.0%}" for d in datasets for b in BUDGETS) + " |",
             "|---|---|---|" + "---|" * (len(datasets) * len(BUDGETS))]
    for setting in sorted(ranks, key=ranks.__getitem__):
        marks = (" (to register)" if setting == pick else "") + (" (registered)" if setting == current else "")
        label = _label(setting) if setting in safe else f"*{_label(setting)}*"
        shown = [index.get((d, b, setting)) for d in datasets for b in BUDGETS]
        lines.append(f"| {label}{marks} | {ranks[setting]:.2f} | {seconds[setting]:.1f} | "
                     + " | ".join("" if c is None else f"{c.mean:.4f} ({c.query:.3f})" for c in shown) + " |")
    return "\n".join([*lines, ""])


def main(argv: Sequence[str] | None = None) -> int:
    args = protocol_arguments("benchmarks.kernel_defaults", __doc__.splitlines()[0], sets(), QUICK_SETS, argv)
    permutations, command = args.permutations, args.command
    commit, started = reproduce.commit(), time.perf_counter()
    cells: list[Cell] = []
    for dataset in args.datasets:
        spec = lb.DATASETS[dataset]
        data = spec.load()
        classes = spec.classes(data)
        for setting in (NO_MAP, *itertools.product(COMPONENTS, GAMMAS)):
            for target in BUDGETS:
                cell = measure(data, classes, setting, target, permutations, dataset)
                cells.append(cell)
                print(f"{dataset:10s} {_label(setting):18s} {target:4.0%} {cell.mean:.4f} ({cell.query:.3f}) "
                      f"{cell.seconds:.1f} s", flush=True)
    meta = reproduce.run_meta(command, commit, started, permutations=permutations)
    reproduce.write_results(args.out, "kernel_defaults", markdown(cells, meta), meta, "cells", cells)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
