"""River's EntropySampler(PAClassifier) as a peer at the PAA paper's query ratios.

River's active learner asks for a label with probability H(p̂)^d, where H is the normalised
entropy of the wrapped classifier's predicted probabilities (for ``PAClassifier``: a sigmoid of
w·x + b) and d the discount factor. It predicts every record and learns only from the ones it
asked for, like PAA. The discount is bisected until the mean query ratio over the permutations
lands within ±0.5 % of the target, on the same permutations as our learners (seeds 0..N−1).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from learners.datasets import Dataset
from learners.evaluation import binary_metrics

__all__ = ["entropy_sampler"]

TOLERANCE = 0.005


def _dict_rows(data: Dataset) -> list[dict[int, float]]:
    r = data.rows
    return [dict(zip(r.indices[r.indptr[i]:r.indptr[i + 1]].tolist(), r.data[r.indptr[i]:r.indptr[i + 1]].tolist(),
                     strict=True)) for i in range(r.n)]


def _one_run(rows: list[dict[int, float]], positive: np.ndarray, order: np.ndarray, discount: float, seed: int,
             C: float) -> tuple[Any, float]:
    from river import active, linear_model

    model = active.EntropySampler(linear_model.PAClassifier(C=C, mode=1), discount_factor=discount, seed=seed)
    n = order.size
    y_true, y_pred, asked = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, bool)
    start = time.perf_counter()
    for t, i in enumerate(order.tolist()):
        x, y = rows[i], bool(positive[i])
        guess, ask = model.predict_one(x)
        y_true[t], y_pred[t], asked[t] = (1 if y else -1), (1 if guess else -1), ask
        if ask:
            model.learn_one(x, y)
    seconds = time.perf_counter() - start
    return binary_metrics(y_true, y_pred, asked), seconds


def _runs(rows, positive, discount, permutations, C):
    orders = [np.random.default_rng(k).permutation(len(rows)) for k in range(permutations)]
    return [_one_run(rows, positive, order, discount, k, C) for k, order in enumerate(orders)]


def entropy_sampler(data: Dataset, classes: Sequence, rate: float, *, permutations: int = 20, C: float = 1.0,
                    bounds: tuple[float, float] = (2.0**-8, 2.0**12), max_steps: int = 30) -> dict[str, Any]:
    """EntropySampler(PAClassifier(C, mode=1)) with its discount landed on ``rate``: mean ± std of
    F1, query ratio and seconds over the permutations."""
    rows = _dict_rows(data)
    positive = np.asarray(data.labels) == classes[1]
    lo, hi = math.log(bounds[0]), math.log(bounds[1])
    best = None
    for _ in range(max_steps):
        mid = 0.5 * (lo + hi)
        result = _runs(rows, positive, math.exp(mid), permutations, C)
        q = float(np.mean([m.query_ratio for m, _ in result]))
        if best is None or abs(q - rate) < best[0]:
            best = (abs(q - rate), math.exp(mid), result)
        if abs(q - rate) <= TOLERANCE:
            break
        lo, hi = (lo, mid) if q < rate else (mid, hi)  # a larger discount asks less
    _, discount, result = best
    f1 = [m.f1 for m, _ in result]
    q = [m.query_ratio for m, _ in result]
    s = [sec for _, sec in result]
    return {"dataset": data.name, "rate": rate, "discount": discount, "C": C, "permutations": permutations,
            "f1": float(np.mean(f1)), "f1_std": float(np.std(f1)), "query": float(np.mean(q)),
            "query_std": float(np.std(q)), "seconds": float(np.mean(s)), "landed": best[0] <= TOLERANCE}
