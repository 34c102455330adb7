"""Dataset transforms the papers apply before streaming: one-vs-rest labels and feature scaling.

Each has a spec prefix understood by :func:`learners.data_spec.resolve` (and so by
``activestream replay --data``), and prefixes compose left to right:

* ``ovr:LABEL:SPEC`` — a binary task: rows labelled LABEL become +1, every other row −1 (how the
  SOAL paper turns letter and covtype into binary sets, "one-vs-all");
* ``scale:SPEC`` — each feature mapped linearly from its [min, max] over the file onto [−1, 1], as
  LIBSVM's ``svm-scale`` made ``letter.scale``, ``satimage.scale``, ``shuttle.scale`` (rows become
  dense: for low-dimensional sets);
* ``maxabs:SPEC`` — each feature divided by its largest |value| over the file, which keeps zeros
  (for non-negative features it is ``svm-scale -l 0``, e.g. ``mnist.scale``; kddcup99's byte
  counts up to ~7·10⁸ land in [0, 1]).

Scaling reads the whole file first: it reproduces the published scaled datasets, not something a
live stream could do (a stream would use the learner's per-row ``normalize``).

Examples
--------
>>> from learners.data_spec import resolve
>>> data = resolve("ovr:1:synthetic:sparse?n=50&d=20&seed=1")
>>> sorted(set(data.labels.tolist())), data.name
([-1, 1], 'ovr:1:synthetic:sparse?n=50&d=20&nnz=18&seed=1')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from learners.datasets import Dataset
from learners.inputs import Rows

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["TRANSFORMS", "maxabs", "one_vs_rest", "parse_label", "scale"]

_DENSE_LIMIT = 50_000_000  # cells: ``scale`` makes rows dense


def parse_label(text: str):
    """A label as written in a spec: an int if it is one, else a float, else the string."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def one_vs_rest(data: Dataset, label) -> Dataset:
    """``data`` as a binary task: ``label`` → +1, every other label → −1."""
    if label not in data.classes():
        raise ValueError(f"label {label!r} is not in {data.name} (labels: {data.classes()[:20]})")
    labels = np.where(data.labels == label, 1, -1).astype(np.int64)
    return Dataset(data.rows, labels, f"ovr:{label}:{data.name}", data.ordered)


def _with_matrix(data: Dataset, csr: sp.csr_matrix, prefix: str) -> Dataset:
    csr.eliminate_zeros()
    csr.sort_indices()
    rows = Rows.from_arrays(csr.indptr, csr.indices, csr.data, data.rows.n_features)
    return Dataset(rows, data.labels, f"{prefix}:{data.name}", data.ordered)


def scale(data: Dataset) -> Dataset:
    """Each feature mapped from [min, max] (implicit zeros included) onto [−1, 1]; constant
    features become 0, as ``svm-scale`` does."""
    n, d = data.n, data.rows.n_features
    if n * d > _DENSE_LIMIT:
        raise ValueError(f"scale: makes {data.name} dense ({n:,}×{d:,}); use maxabs: for sparse data")
    X = data.rows.to_csr().toarray()
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    Z = np.where(hi > lo, -1.0 + 2.0 * (X - lo) / span, 0.0)
    import scipy.sparse as sp  # a replay without transforms does not pay for SciPy

    return _with_matrix(data, sp.csr_matrix(Z), "scale")


def maxabs(data: Dataset) -> Dataset:
    """Each feature divided by its largest |value|; zeros stay zeros."""
    csr = data.rows.to_csr().astype(np.float64)
    peak = np.zeros(data.rows.n_features)
    np.maximum.at(peak, csr.indices, np.abs(csr.data))
    csr.data = csr.data / np.where(peak > 0, peak, 1.0)[csr.indices]
    return _with_matrix(data, csr, "maxabs")


TRANSFORMS = {"scale": scale, "maxabs": maxabs}
