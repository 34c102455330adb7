"""Peers of the leaderboard, measured in the same run on the same permutations: River, VW, a batch SVM.

* **River** ``active.EntropySampler`` around ``linear_model.PAClassifier`` or
  ``linear_model.LogisticRegression`` (one-vs-rest ``multiclass.OneVsRestClassifier`` on
  multiclass streams, where it also asks while the model names fewer than two classes: River's
  sampler sees zero entropy there and a cold one-vs-rest model would never ask): it asks with
  probability H(p̂)^d; the discount d is bisected (log scale, a
  larger d asks less) on the first evaluated permutation only, since River handles 20-90 k rows/s,
  then that d runs on the other permutations and the realised ratio is what is reported.
* **VW** ``--active --simulation`` (pyvw, in-process; binary only: VW's active reduction takes
  simple labels): the mellowness c₀ bisected the same way (a larger c₀ asks more, though not
  always monotonically). ``--simulation`` sees every label and hides the ones it does not query: an
  unqueried example comes back with the label ``FLT_MAX`` and weight 0, which is how the queries are
  counted. VW fully supervised (logistic loss, ``--oaa K`` on multiclass) is the all-label reference.
* **Batch linear SVM** (scikit-learn ``LinearSVC``, C = 1) trained on all rows and scored on the same
  rows: what a linear model can reach with every label and many passes, the ceiling.

Every peer reads rows in the order of :func:`learners.replay.run`'s permutation k
(``default_rng(seed + k)``) and is scored prequentially (predict, then learn) over every round,
with the metrics of :mod:`learners.evaluation`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from learners.datasets import Dataset
from learners.evaluation import Metrics, binary_metrics, multiclass_metrics

__all__ = ["RIVER_BASES", "PeerRun", "bisect_knob", "linear_svc", "river_entropy", "river_model", "river_name",
           "river_rounds", "vw_active", "vw_supervised"]

FLT_MAX = 3.0e38  # VW's label of an example --simulation did not query
# discount: 2^-8 asks nearly always; LogisticRegression stays near p = ½ for long and needs 2^12 and more
RIVER_BOUNDS = (2.0**-8, 2.0**24)
VW_BOUNDS = (1e-8, 1e2)  # mellowness c₀
MAX_STEPS = 20


@dataclass
class PeerRun:
    """A peer's passes, one per evaluated permutation, and the knob that produced them."""

    name: str
    knob: str | None  # the parameter bisected to land the ratio; None for all-label references
    value: float | None
    metrics: list[Metrics]
    seconds: list[float]
    params: dict[str, Any] = field(default_factory=dict)

    def mean(self, key: str) -> float:
        return float(np.mean([getattr(m, key) for m in self.metrics]))

    def std(self, key: str) -> float:
        return float(np.std([getattr(m, key) for m in self.metrics]))


@dataclass(frozen=True, slots=True)
class Encoded:
    """A dataset's labels as the metrics take them: ±1 (binary, positive = ``classes[1]``) or class
    indices (multiclass, in ``classes`` order)."""

    codes: np.ndarray
    multiclass: bool
    n_classes: int

    @classmethod
    def of(cls, data: Dataset, classes: Sequence, multiclass: bool) -> Encoded:
        labels = np.asarray(data.labels)
        if multiclass:
            index = {c: i for i, c in enumerate(classes)}
            return cls(np.array([index[c] for c in labels.tolist()], dtype=np.int64), True, len(classes))
        return cls(np.where(labels == classes[1], 1, -1).astype(np.int64), False, 2)

    def metrics(self, y_true: np.ndarray, y_pred: np.ndarray, queried: np.ndarray) -> Metrics:
        if self.multiclass:
            return multiclass_metrics(y_true, y_pred, queried, self.n_classes)
        return binary_metrics(y_true, y_pred, queried)


def order(n: int, seed: int) -> np.ndarray:
    """Permutation ``seed`` of :func:`learners.replay.run` (``run(..., seed=s)``'s k-th is s + k)."""
    return np.random.default_rng(seed).permutation(n)


Pass = Callable[[float, int], tuple[Metrics, float]]  # (knob value, permutation seed) → (metrics, seconds)


def bisect_knob(one_pass: Pass, target: float, seed: int, *, bounds: tuple[float, float], rising: bool,
                tol: float, max_steps: int = MAX_STEPS) -> tuple[float, Metrics, float]:
    """The knob value (log-scale bisection) whose pass on permutation ``seed`` queries closest to
    ``target``, stopping within ``tol``; with that pass's metrics and seconds."""
    lo, hi = math.log(bounds[0]), math.log(bounds[1])
    best: tuple[float, float, Metrics, float] | None = None
    for _ in range(max_steps):
        mid = 0.5 * (lo + hi)
        m, seconds = one_pass(math.exp(mid), seed)
        miss = abs(m.query_ratio - target)
        if best is None or miss < best[0]:
            best = (miss, math.exp(mid), m, seconds)
        if miss <= tol:
            break
        lo, hi = (mid, hi) if (m.query_ratio < target) == rising else (lo, mid)
    assert best is not None
    return best[1], best[2], best[3]


def landed_on_first(name: str, knob: str, one_pass: Pass, target: float, seeds: Sequence[int], *,
                    bounds: tuple[float, float], rising: bool, tol: float, params: dict[str, Any],
                    corrections: int = 0, land: float | None = None) -> PeerRun:
    """Bisect on ``seeds[0]``, then run the value found on the other seeds. With ``corrections``,
    while the mean ratio over every seed misses ``target`` by more than ``land``, bisect that mean
    within a factor of 4 of the value, at most ``corrections`` runs over every seed more."""
    value, first, seconds = bisect_knob(one_pass, target, seeds[0], bounds=bounds, rising=rising, tol=tol)
    runs = [(first, seconds)] + [one_pass(value, s) for s in seeds[1:]]
    miss = lambda got: abs(float(np.mean([m.query_ratio for m, _ in got])) - target)  # noqa: E731
    best = (miss(runs), value, runs)
    if corrections and best[0] > (land if land is not None else tol):
        ratio = float(np.mean([m.query_ratio for m, _ in runs]))
        up = (ratio < target) == rising  # the knob must move up
        lo, hi = (math.log(value), math.log(value * 4)) if up else (math.log(value / 4), math.log(value))
        for _ in range(corrections):
            mid = 0.5 * (lo + hi)
            again = [one_pass(math.exp(mid), s) for s in seeds]
            if miss(again) < best[0]:
                best = (miss(again), math.exp(mid), again)
            if best[0] <= (land if land is not None else tol):
                break
            ratio = float(np.mean([m.query_ratio for m, _ in again]))
            lo, hi = (mid, hi) if (ratio < target) == rising else (lo, mid)
    _, value, runs = best
    return PeerRun(name, knob, value, [m for m, _ in runs], [s for _, s in runs], params)


# -- River ------------------------------------------------------------------------------------------------


def dict_rows(data: Dataset) -> list[dict[int, float]]:
    """Rows as River takes them: {feature index: value}."""
    r = data.rows
    idx, val = r.indices.tolist(), r.data.tolist()
    ptr = r.indptr.tolist()
    return [dict(zip(idx[ptr[i]:ptr[i + 1]], val[ptr[i]:ptr[i + 1]], strict=True)) for i in range(r.n)]


RIVER_BASES = ("pa", "lr")


def river_name(base: str, scaled: bool = False) -> str:
    """The peer's name on the boards: ``river-entropy(pa)``, ``river-entropy(scaler+lr)``, ..."""
    return f"river-entropy({'scaler+' if scaled else ''}{base})"


def river_model(base: str, multiclass: bool, discount: float, seed: int, C: float = 1.0, scaled: bool = False):
    """River's ``EntropySampler`` around ``PAClassifier(C, mode=1)`` (``base="pa"``) or
    ``LogisticRegression`` (``"lr"``), one-vs-rest on multiclass streams; with ``scaled``, behind
    ``preprocessing.StandardScaler()`` in a pipeline, as River's docs put its linear models (the
    scaler learns from the rows the model learns from: the labelled ones)."""
    from river import active, linear_model, preprocessing
    from river import multiclass as river_multiclass

    make = {"pa": lambda: linear_model.PAClassifier(C=C, mode=1), "lr": linear_model.LogisticRegression}[base]
    classifier = river_multiclass.OneVsRestClassifier(make()) if multiclass else make()
    if scaled:
        classifier = preprocessing.StandardScaler() | classifier
    return active.EntropySampler(classifier, discount_factor=discount, seed=seed)


def river_rounds(model, rows: list[dict[int, float]], perm: np.ndarray, codes: np.ndarray,
                 multiclass: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """One prequential pass of a River sampler over ``rows`` in the order ``perm`` (``codes``: the
    labels in that order, ±1 or class indices): (predictions, asked, seconds). River learns only the
    rows it asked for."""
    target = codes.tolist() if multiclass else (codes > 0).tolist()
    y_pred = np.empty(perm.size, np.int64)
    asked = np.empty(perm.size, bool)
    start = time.perf_counter()
    for t, i in enumerate(perm.tolist()):
        x, y = rows[i], target[t]
        proba, ask = model.predict_proba_one(x)
        guess = max(proba, key=proba.get) if proba else 0  # {} until a class is seen: guess the first
        if multiclass:
            # one-vs-rest names only the classes it has seen, and the sampler never asks while it
            # names fewer than two (zero entropy): a cold multiclass model would never learn
            ask = ask or len(proba) < 2
            y_pred[t] = guess
        else:
            y_pred[t] = 1 if guess else -1
        asked[t] = ask
        if ask:
            model.learn_one(x, y)
    return y_pred, asked, time.perf_counter() - start


def river_pass(rows: list[dict[int, float]], enc: Encoded, base: str, C: float = 1.0, scaled: bool = False) -> Pass:
    """One prequential pass of EntropySampler(base) at a discount over permutation ``seed``."""

    def one(discount: float, seed: int) -> tuple[Metrics, float]:
        perm = order(len(rows), seed)
        codes = enc.codes[perm]
        model = river_model(base, enc.multiclass, discount, seed, C, scaled)
        y_pred, asked, seconds = river_rounds(model, rows, perm, codes, enc.multiclass)
        return enc.metrics(codes, y_pred, asked), seconds

    return one


def river_entropy(data: Dataset, classes: Sequence, target: float, seeds: Sequence[int], *, base: str = "pa",
                  multiclass: bool = False, tol: float = 0.005, C: float = 1.0, scaled: bool = False,
                  rows: list[dict[int, float]] | None = None, corrections: int = 0,
                  land: float | None = None) -> PeerRun:
    """River's EntropySampler around PAClassifier(C, mode=1) (``base="pa"``) or LogisticRegression
    (``"lr"``), behind River's StandardScaler if ``scaled``, its discount landed on ``target`` on
    the first permutation (then corrected over every permutation: :func:`landed_on_first`)."""
    enc = Encoded.of(data, classes, multiclass)
    one = river_pass(rows if rows is not None else dict_rows(data), enc, base, C, scaled)
    params = {"C": C} if base == "pa" else {}
    return landed_on_first(river_name(base, scaled), "discount", one, target, seeds, bounds=RIVER_BOUNDS,
                           rising=False, tol=tol, params=params, corrections=corrections, land=land)


# -- VW ---------------------------------------------------------------------------------------------------


def vw_lines(data: Dataset) -> list[str]:
    """Rows as VW text features ``| idx:val ...`` (label prepended per pass)."""
    r = data.rows
    idx, val, ptr = r.indices.tolist(), r.data.tolist(), r.indptr.tolist()
    return ["| " + " ".join(f"{j}:{v:.9g}" for j, v in zip(idx[ptr[i]:ptr[i + 1]], val[ptr[i]:ptr[i + 1]],
                                                          strict=True)) for i in range(r.n)]


def _vw_pass(lines: list[str], enc: Encoded, args: str, active: bool) -> Callable[[str, int], tuple[Metrics, float]]:
    from vowpalwabbit import pyvw

    def one(extra: str, seed: int) -> tuple[Metrics, float]:
        vw = pyvw.Workspace(f"{args} {extra} --quiet --random_seed {seed}")
        perm = order(len(lines), seed)
        codes = enc.codes[perm]
        shown = (codes + 1).tolist() if enc.multiclass else codes.tolist()  # --oaa classes are 1..K
        y_pred = np.empty(perm.size, np.int64)
        asked = np.ones(perm.size, bool)
        start = time.perf_counter()
        for t, i in enumerate(perm.tolist()):
            ex = vw.example(f"{shown[t]} {lines[i]}")
            vw.learn(ex)  # predicts before it learns: the prediction is prequential
            if enc.multiclass:
                y_pred[t] = ex.get_multiclass_prediction() - 1
            else:
                y_pred[t] = 1 if ex.get_simplelabel_prediction() > 0 else -1
                if active:
                    asked[t] = ex.get_simplelabel_label() < FLT_MAX
            vw.finish_example(ex)
        seconds = time.perf_counter() - start
        vw.finish()
        return enc.metrics(codes, y_pred, asked), seconds

    return one


def vw_active(data: Dataset, classes: Sequence, target: float, seeds: Sequence[int], *, tol: float = 0.005,
              lines: list[str] | None = None, corrections: int = 0, land: float | None = None) -> PeerRun:
    """VW ``--active --simulation --binary`` (logistic loss), mellowness landed on ``target`` on the
    first permutation (then corrected over every permutation: :func:`landed_on_first`)."""
    enc = Encoded.of(data, classes, False)
    run = _vw_pass(lines if lines is not None else vw_lines(data), enc,
                   "--active --simulation --binary --loss_function logistic", True)
    one: Pass = lambda c0, seed: run(f"--mellowness {c0:.6g}", seed)  # noqa: E731
    return landed_on_first("vw-active", "mellowness", one, target, seeds, bounds=VW_BOUNDS, rising=True, tol=tol,
                           params={"loss_function": "logistic"}, corrections=corrections, land=land)


def vw_supervised(data: Dataset, classes: Sequence, seeds: Sequence[int], *, multiclass: bool = False,
                  lines: list[str] | None = None) -> PeerRun:
    """VW with every label (logistic loss; ``--oaa K`` on multiclass), its defaults otherwise."""
    enc = Encoded.of(data, classes, multiclass)
    args = f"--oaa {len(classes)}" if multiclass else "--binary --loss_function logistic"
    run = _vw_pass(lines if lines is not None else vw_lines(data), enc, args, False)
    out = [run("", s) for s in seeds]
    return PeerRun("vw-supervised", None, None, [m for m, _ in out], [s for _, s in out], {"args": args})


# -- the ceiling ------------------------------------------------------------------------------------------


def linear_svc(data: Dataset, classes: Sequence, *, multiclass: bool = False, C: float = 1.0) -> PeerRun:
    """scikit-learn LinearSVC(C) fitted on every row and scored on the same rows (no permutation:
    a batch learner sees them all at once)."""
    from sklearn.svm import LinearSVC

    enc = Encoded.of(data, classes, multiclass)
    X = data.rows.to_csr()
    start = time.perf_counter()
    model = LinearSVC(C=C, dual="auto", max_iter=5000).fit(X, enc.codes)
    y_pred = model.predict(X).astype(np.int64)
    seconds = time.perf_counter() - start
    m = enc.metrics(enc.codes, y_pred, np.ones(data.n, bool))
    return PeerRun("linear-svc", None, None, [m], [seconds], {"C": C})
