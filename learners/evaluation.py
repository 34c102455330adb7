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

from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["Metrics", "auc_roc", "binary_metrics", "multiclass_metrics"]


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


def _mid_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``x``, tied values sharing the mean of their ranks (``scipy.stats.rankdata``'s
    default, without importing SciPy's statistics for it)."""
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    first = np.concatenate([[True], ordered[:-1] != ordered[1:]])
    starts = np.flatnonzero(first)
    counts = np.diff(starts, append=x.size)
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(starts + 1.0 + (counts - 1.0) / 2.0, counts)
    return ranks


def auc_roc(y_true: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for the positive class (code +1): the Mann-Whitney
    statistic with mid-ranks for ties. NaN unless both classes are present. O(n log n)."""
    pos = np.asarray(y_true) > 0
    n_p = int(np.count_nonzero(pos))
    n_n = pos.size - n_p
    if n_p == 0 or n_n == 0:
        return float("nan")
    ranks = _mid_ranks(np.asarray(scores, dtype=np.float64))
    return float((ranks[pos].sum() - n_p * (n_p + 1) / 2.0) / (n_p * n_n))


def binary_metrics(y_true: np.ndarray, y_pred: np.ndarray, queried: np.ndarray, *,
                   eta_p: float = 0.5, eta_n: float = 0.5, c_p: float = 0.5, c_n: float = 0.5,
                   scores: np.ndarray | None = None) -> Metrics:
    """Prequential metrics of a binary stream; labels are internal codes ±1. ``scores`` (the
    margins the predictions came from) adds the AUC-ROC."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    pos, pred_pos = y_true > 0, y_pred > 0
    tp = int(np.count_nonzero(pos & pred_pos))
    fn = int(np.count_nonzero(pos & ~pred_pos))
    fp = int(np.count_nonzero(~pos & pred_pos))
    tn = int(np.count_nonzero(~pos & ~pred_pos))
    n = y_true.size
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    specificity = _ratio(tn, tn + fp)
    queries = int(np.count_nonzero(queried))
    return Metrics(
        examples=n, mistakes=fp + fn, accuracy=_ratio(tp + tn, n), mistake_rate=_ratio(fp + fn, n),
        f1=_ratio(2 * precision * recall, precision + recall), query_ratio=_ratio(queries, n),
        queries=queries, precision=precision, recall=recall, sensitivity=recall,
        specificity=specificity, weighted_sum=eta_p * recall + eta_n * specificity,
        cost=c_p * fn + c_n * fp, auc_roc=float("nan") if scores is None else auc_roc(y_true, scores),
        tp=tp, fp=fp, tn=tn, fn=fn,
    )


def multiclass_metrics(y_true: np.ndarray, y_pred: np.ndarray, queried: np.ndarray,
                       n_classes: int) -> Metrics:
    """Prequential metrics of a multiclass stream; labels are class indices. f1 is macro-F1."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    n = y_true.size
    mistakes = int(np.count_nonzero(y_true != y_pred))
    tp = np.bincount(y_true[y_true == y_pred], minlength=n_classes)
    support = np.bincount(y_true, minlength=n_classes)
    predicted = np.bincount(y_pred, minlength=n_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(support + predicted > 0, 2 * tp / (support + predicted), 0.0)
    queries = int(np.count_nonzero(queried))
    present = support > 0
    return Metrics(
        examples=n, mistakes=mistakes, accuracy=_ratio(n - mistakes, n), mistake_rate=_ratio(mistakes, n),
        f1=float(f1[present].mean()) if present.any() else 0.0, query_ratio=_ratio(queries, n), queries=queries,
    )
