"""Prequential (online) evaluation: every round counts, as in the papers.

Each record is predicted before its label is used, whether or not the label is ever queried; the
metrics below are over all rounds of the stream.

Binary metrics (positive class = internal code +1):

* mistakes M = M_p + M_n (M_p: positives predicted negative, M_n: negatives predicted positive);
* accuracy, mistake rate; precision, recall (= sensitivity), specificity; F1 of the positive class
  (F-measure = 2·P·R/(P+R), 0 when the model never predicts or never meets a positive);
* weighted sum η_p·sensitivity + η_n·specificity (Lu, Zhao & Hoi 2016, Sect. 5);
* cost c_p·M_p + c_n·M_n (ibid.);
* AUC-ROC of the prequential margins, when they are given (the probability that a positive
  scores above a negative, ties counting one half);
* query ratio = queried rounds / rounds.

Multiclass: mistakes, accuracy, mistake rate, macro-F1 and query ratio.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from learners.jit import signature
from learners.kernels import kernel, ready

__all__ = ["Metrics", "auc_of_classes", "auc_of_sorted", "auc_roc", "binary_counts", "binary_counts_and_scores",
           "binary_metrics",
           "binary_metrics_of_counts", "multiclass_counts", "multiclass_metrics", "multiclass_metrics_of_counts",
           "sort_scores"]


@dataclass(frozen=True, slots=True)
class Metrics:
    examples: int
    mistakes: int
    accuracy: float
    mistake_rate: float
    f1: float
    query_ratio: float
    queries: int
    precision: float = float("nan")
    recall: float = float("nan")
    sensitivity: float = float("nan")
    specificity: float = float("nan")
    weighted_sum: float = float("nan")
    cost: float = float("nan")
    auc_roc: float = float("nan")
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def auc_roc(y_true: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for the positive class (code +1): the Mann-Whitney
    statistic, ties counted a half. NaN unless both classes are present. O(n log n)."""
    pos = np.asarray(y_true) > 0
    s = np.asarray(scores, dtype=np.float64)
    return auc_of_classes(s[pos], s[~pos])


@kernel(signature("int64", "float64[::1]", "float64[::1]"))
def _twice_u(positive, negative):
    """2U of the positives against the negatives, both sorted in numpy's order (NaN last): for each
    positive, twice the negatives below it plus those equal to it, in one merge of the two."""
    below = 0  # the negatives before ``below`` sort before the positive (numpy's <, NaN the largest)
    upto = 0  # those before ``upto`` sort before it or equal it
    m = negative.size
    total = 0
    for p in positive:
        while below < m and (negative[below] < p or (p != p and negative[below] == negative[below])):
            below += 1
        upto = max(upto, below)
        while upto < m and not (p < negative[upto] or (negative[upto] != negative[upto] and p == p)):
            upto += 1
        total += below + upto
    return total


def sort_scores(values: np.ndarray) -> None:
    """Sort contiguous float64 ``values`` in place, ascending, NaN last: numpy's own sort, which
    takes no memory beside the array's and, with the vectorised quicksort numpy dispatches to on
    AVX-512 and AVX2 machines, sorts a stream's margins faster than a radix sort of their bits."""
    values.sort()


def auc_of_classes(positive: np.ndarray, negative: np.ndarray) -> float:
    """:func:`auc_roc` from the scores of the positive and of the negative rounds (both sorted in
    place, so no copy the size of the stream is made)."""
    sort_scores(positive)
    sort_scores(negative)
    return auc_of_sorted([positive], [negative])


def auc_of_sorted(positive: list[np.ndarray], negative: list[np.ndarray], *, each: Callable = map) -> float:
    """:func:`auc_roc` from the scores of the positive and of the negative rounds, each class held as
    parts sorted in numpy's order: U = Σ over positives of the negatives below it, plus half those
    equal to it, an exact integer count (2U is summed, part against part, by one merge each, the
    merges mapped by ``each``: a thread pool's ``map`` runs them side by side, as the merge lets go of
    the GIL)."""
    n_p, n_n = sum(p.size for p in positive), sum(n.size for n in negative)
    if n_p == 0 or n_n == 0:
        return float("nan")
    twice_u = ready(_twice_u)
    pairs = [(p, n) for p in positive if p.size for n in negative if n.size]
    total = sum(int(u) for u in each(lambda pair: twice_u(*pair), pairs))
    return float((total / 2.0) / (n_p * n_n))


def binary_metrics(y_true: np.ndarray, y_pred: np.ndarray, queried: np.ndarray, *,
                   eta_p: float = 0.5, eta_n: float = 0.5, c_p: float = 0.5, c_n: float = 0.5,
                   scores: np.ndarray | None = None) -> Metrics:
    """Prequential metrics of a binary stream; labels are internal codes ±1. ``scores`` (the
    margins the predictions came from) adds the AUC-ROC."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    return binary_metrics_of_counts(binary_counts(y_true, y_pred), int(np.count_nonzero(queried)),
                                    eta_p=eta_p, eta_n=eta_n, c_p=c_p, c_n=c_n,
                                    auc=float("nan") if scores is None else auc_roc(y_true, scores))


def binary_counts(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """(tp, fn, fp, tn) of internal codes ±1: what the binary metrics need of the rounds, summable
    over parts of a stream."""
    pos, pred_pos = y_true > 0, y_pred > 0
    return np.array([np.count_nonzero(pos & pred_pos), np.count_nonzero(pos & ~pred_pos),
                     np.count_nonzero(~pos & pred_pos), np.count_nonzero(~pos & ~pred_pos)], dtype=np.int64)


def binary_counts_and_scores(y_true: np.ndarray, y_pred: np.ndarray, scores: np.ndarray,
                             positive: np.ndarray, negative: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`binary_counts` of internal codes ±1, and ``scores`` split by class in one compiled pass:
    those of the positive rounds written in order at the start of ``positive``, the others at the
    start of ``negative`` (each at least as long as ``scores``); returns the counts and how many
    rounds are positive."""
    if not len(y_true) == len(y_pred) == len(scores):
        raise ValueError(f"labels, predictions and scores differ in length: {len(y_true)}, {len(y_pred)}, "
                         f"{len(scores)}")
    for out in (positive, negative):  # written in place by compiled code, which checks no bound
        if out.dtype != np.float64 or not out.flags.c_contiguous or not out.flags.writeable or out.size < len(scores):
            raise ValueError("positive and negative must be writable contiguous float64 arrays as long as the scores")
    counts = np.zeros(4, dtype=np.int64)
    positives = ready(_split_by_class)(np.ascontiguousarray(y_true, dtype=np.int64),
                                       np.ascontiguousarray(y_pred, dtype=np.int64),
                                       np.ascontiguousarray(scores, dtype=np.float64), counts, positive, negative)
    return counts, int(positives)


@kernel(signature("int64", "int64[::1]", "int64[::1]", "float64[::1]", "int64[::1]", "float64[::1]", "float64[::1]"))
def _split_by_class(y, yhat, p, counts, positive, negative):
    """:func:`binary_counts_and_scores`' pass: each score written to both outputs, the class moving
    one of the two ends on, so no branch follows the labels."""
    n_pos = 0
    tp = fn = fp = 0
    for i in range(y.size):
        pos = np.int64(y[i] > 0)
        pred = np.int64(yhat[i] > 0)
        positive[n_pos] = p[i]
        negative[i - n_pos] = p[i]
        n_pos += pos
        tp += pos & pred
        fn += pos & (1 - pred)
        fp += (1 - pos) & pred
    counts[0] += tp
    counts[1] += fn
    counts[2] += fp
    counts[3] += y.size - tp - fn - fp
    return n_pos


def binary_metrics_of_counts(counts: np.ndarray, queries: int, *, eta_p: float = 0.5, eta_n: float = 0.5,
                             c_p: float = 0.5, c_n: float = 0.5, auc: float = float("nan")) -> Metrics:
    """:func:`binary_metrics` from :func:`binary_counts` (summed over a stream's parts)."""
    tp, fn, fp, tn = (int(c) for c in counts)
    n = tp + fn + fp + tn
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    specificity = _ratio(tn, tn + fp)
    return Metrics(
        examples=n, mistakes=fp + fn, accuracy=_ratio(tp + tn, n), mistake_rate=_ratio(fp + fn, n),
        f1=_ratio(2 * precision * recall, precision + recall), query_ratio=_ratio(queries, n),
        queries=queries, precision=precision, recall=recall, sensitivity=recall,
        specificity=specificity, weighted_sum=eta_p * recall + eta_n * specificity,
        cost=c_p * fn + c_n * fp, auc_roc=auc, tp=tp, fp=fp, tn=tn, fn=fn,
    )


def multiclass_metrics(y_true: np.ndarray, y_pred: np.ndarray, queried: np.ndarray,
                       n_classes: int) -> Metrics:
    """Prequential metrics of a multiclass stream; labels are class indices. f1 is macro-F1."""
    return multiclass_metrics_of_counts(multiclass_counts(np.asarray(y_true), np.asarray(y_pred), n_classes),
                                        int(np.count_nonzero(queried)))


def multiclass_counts(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> np.ndarray:
    """Per class: rounds right, rounds of the class, rounds predicted as it (3 × k), summable over
    parts of a stream."""
    return np.stack([np.bincount(y_true[y_true == y_pred], minlength=n_classes),
                     np.bincount(y_true, minlength=n_classes), np.bincount(y_pred, minlength=n_classes)])


def multiclass_metrics_of_counts(counts: np.ndarray, queries: int) -> Metrics:
    """:func:`multiclass_metrics` from :func:`multiclass_counts` (summed over a stream's parts)."""
    tp, support, predicted = counts
    n = int(support.sum())
    mistakes = n - int(tp.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(support + predicted > 0, 2 * tp / (support + predicted), 0.0)
    present = support > 0
    return Metrics(
        examples=n, mistakes=mistakes, accuracy=_ratio(n - mistakes, n), mistake_rate=_ratio(mistakes, n),
        f1=float(f1[present].mean()) if present.any() else 0.0, query_ratio=_ratio(queries, n), queries=queries,
    )
