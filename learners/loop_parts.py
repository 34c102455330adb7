"""What every compiled loop over a batch of rows is built from (:mod:`learners.drivers`).

The array types of the drivers' signatures, the decorator that declares a driver, and the inlined
pieces of a round: the prediction from a score, a row with its intercept, the queue of labels on
their way. The scaler's compiled statistics use them too (:mod:`learners.scaling`), so they sit
below the drivers' package, not in it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from learners.jit import jit
from learners.kernels import Lazy

__all__ = ["B1", "I64", "INDPTR", "U64", "driver", "pending_rounds", "predict", "row_of", "scratch", "widest"]

I64 = "int64[::1]"
U64 = "uint64[::1]"
B1 = "boolean[::1]"
INDPTR = "int64[::1]"


def driver(signature: str, *, nrt: bool = False) -> Callable[[Callable], Lazy]:
    """Declare a driver: compiled with ``signature`` on its first call (:class:`learners.kernels.Lazy`)."""
    return lambda fn: Lazy(fn, signature, nrt=nrt)


@jit(inline="always")
def predict(p, top, tie, multiclass):
    """The predicted code of a round: the top class (multiclass) or sign(p), with sign(0) = ``tie``."""
    if multiclass:
        return top
    if p > 0.0:
        return 1
    if p < 0.0:
        return -1
    return tie


@jit
def widest(indptr):
    """The most non-zeros of any row (at least 1): the size of a row buffer."""
    width = 1
    for i in range(indptr.size - 1):
        width = max(width, indptr[i + 1] - indptr[i])
    return width


def scratch(indptr: np.ndarray, rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scratch arrays of a replay driver over ``rounds`` rounds of the rows of ``indptr``: its
    queue of rounds, and a row buffer one wider than the widest row (the intercept). Allocated by
    the caller, the drivers run without numba's runtime (:func:`learners.jit.kernel`)."""
    width = max(int(np.max(np.diff(indptr), initial=0)), 1) + 1
    return np.empty(rounds, dtype=np.int64), np.empty(width, dtype=np.int32), np.empty(width)


@jit(inline="always")
def row_of(indptr, indices, data, i, bias, column, idx_buf, val_buf):
    """Row ``i`` as the kernels take it: with ``bias != 0``, followed by the intercept coordinate
    ``column`` = ``bias``, built in the row buffers, so no copy of the whole batch holds it. O(nnz)."""
    lo, hi = indptr[i], indptr[i + 1]
    if bias == 0.0:
        return indices[lo:hi], data[lo:hi]
    m = hi - lo
    for j in range(m):
        idx_buf[j] = indices[lo + j]
        val_buf[j] = data[lo + j]
    idx_buf[m] = column
    val_buf[m] = bias
    return idx_buf[: m + 1], val_buf[: m + 1]


@jit(inline="always")
def pending_rounds(out_query, first, fifo):
    """Put the carried rounds ``0 .. first-1`` that were queried (their labels still on the way) in
    the queue; returns its length."""
    tail = 0
    for s in range(first):
        if out_query[s]:
            fifo[tail] = s
            tail += 1
    return tail
