"""The tuning protocol of the high-dimensional online active learning paper, Sect. 5.1.2.

"Hyperparameter optimization is carried out using grid search with cross validation. In performing
cross validation, only one pass over the training splits is allowed. Once hyperparameters at each
certain query ratio are determined, each algorithm is run 20 times, each time with a different
random permutation of examples in the dataset."

Here, for one (algorithm, dataset, query ratio):

1. selection: a fixed random half of the rows is the training split; for every grid point the
   query budget (b, δ or the rate) is bisected until the mean query ratio over ``select_perms``
   one-pass permutations lands within ``select_tol`` of the target, and the metric is recorded;
   the best grid point that lands wins (none landing: the one closest to the target, flagged); a
   grid point whose smallest budget already queries more than the target is recorded at that
   smallest budget without bisecting (the discrimination queries always ask when q_t ≤ 0, so some
   (δ, η) cannot go below a minimum ratio);
2. evaluation: on all rows, the winner's budget is bisected again over ``perms`` permutations
   (``default_rng(k)``, k = 0..perms−1) to land the target within ±0.5 %, and those runs are the
   result (mean ± std of the metric and of the query ratio).

Selection and evaluation share rows (half of them), as cross-validation on the same dataset does.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from learners import make
from learners.datasets import Dataset
from learners.replay import find_budget, run

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Outcome:
    """One (algorithm, dataset, target) cell: what was selected and what the 20 runs gave."""

    name: str
    data: str
    target: float | None  # None: a supervised learner (every label)
    params: dict[str, Any]
    metric: str
    mean: float
    std: float
    query: float
    query_std: float
    seconds: float  # mean replay time of one permutation
    landed: bool  # the query ratio is within ±0.5 % of the target (always True when supervised)
    grid: list[dict[str, Any]] = field(default_factory=list)  # selection: params, query, metric

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def half(data: Dataset, seed: int = 12345) -> Dataset:
    """A fixed random half of the rows (in file order): the training split of the selection."""
    keep = np.sort(np.random.default_rng(seed).permutation(data.n)[: data.n // 2])
    return Dataset(data.rows.take(keep), data.labels[keep], f"half of {data.name}")


def learner(name: str, data: Dataset, classes: Sequence, params: Mapping[str, Any]):
    return make(name, n_features=data.rows.n_features, classes=list(classes), bias=0.0, **params)


LOWEST_BUDGET, HIGHEST_BUDGET = 2.0**-24, 2.0**24  # find_budget's bounds


def _run_at(model, data: Dataset, target: float | None, perms: int, seed: int, tol: float):
    if target is None:
        return model, run(model, data, permutations=perms, seed=seed)
    budget = model.query.budget_param
    if budget != "rate":  # a target below the smallest reachable ratio: no bisection can land it
        knob = type(model.query).knob
        least = LOWEST_BUDGET if knob is None or knob.increasing else HIGHEST_BUDGET  # the end that asks least
        floor = run(model.clone(**{budget: least}), data, permutations=perms, seed=seed)
        if floor.mean("query_ratio") > target + tol:
            return model.clone(**{budget: least}), floor
    return find_budget(model, data, target, permutations=perms, seed=seed, tol=tol)


def tune(name: str, data: Dataset, classes: Sequence, grid: Mapping[str, Sequence[float]], target: float | None,
         *, metric: str = "f1", fixed: Mapping[str, Any] | None = None, perms: int = 20, select_perms: int = 3,
         select_tol: float = 0.01, train: Dataset | None = None) -> Outcome:
    """Select on ``train`` (default: a half of ``data``), then evaluate on ``data``."""
    train = half(data) if train is None else train
    fixed = dict(fixed or {})
    rows = []
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        params = {**fixed, **dict(zip(keys, values, strict=True))}
        model, result = _run_at(learner(name, train, classes, params), train, target, select_perms, 1000,
                                select_tol / 2)
        q = result.mean("query_ratio")
        rows.append({"params": params, "query": q, metric: result.mean(metric),
                     "landed": target is None or abs(q - target) <= select_tol})
    landed = [r for r in rows if r["landed"]]
    best = max(landed, key=lambda r: r[metric]) if landed else min(rows, key=lambda r: abs(r["query"] - target))
    model, result = _run_at(learner(name, data, classes, best["params"]), data, target, perms, 0, 0.005)
    q = result.mean("query_ratio")
    budget = model.query.budget_param
    chosen = {**best["params"], **({budget: getattr(model.query, budget)} if target is not None else {})}
    return Outcome(
        name=name, data=data.name, target=target, params=chosen, metric=metric,
        mean=result.mean(metric), std=result.std(metric), query=q, query_std=result.std("query_ratio"),
        seconds=float(np.mean(result.seconds)), landed=target is None or abs(q - target) <= 0.0051,
        grid=rows,
    )


def sweep(name: str, data: Dataset, classes: Sequence, params: Mapping[str, Any], budgets: Sequence[float], *,
          metric: str = "f1", perms: int = 20) -> list[dict[str, Any]]:
    """Fixed parameters, one run set per value of the budget parameter: a query-ratio curve."""
    model = learner(name, data, classes, params)
    budget = model.query.budget_param
    out = []
    for value in budgets:
        result = run(model.clone(**{budget: value}) if budget else model, data, permutations=perms)
        out.append({budget or "all": value, "query": result.mean("query_ratio"), "query_std": result.std("query_ratio"),
                    metric: result.mean(metric), f"{metric}_std": result.std(metric),
                    "seconds": float(np.mean(result.seconds))})
        if budget is None:
            break
    return out


def save(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, default=float))


def load(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


class Clock:
    """Wall time since start, for progress lines."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def __str__(self) -> str:
        return f"{time.perf_counter() - self.start:7.1f}s"
