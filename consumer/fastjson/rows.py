"""CSR rows made canonical in place: zeros dropped, indices sorted, a repeated index's values summed."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["compact_rows", "sum_duplicates"]


@njit(cache=True, nogil=True)
def compact_rows(lengths, indices, data, indptr):
    """Drop the zero values of CSR rows laid end to end (row k has ``lengths[k]`` entries), in
    place, and fill ``indptr``. Returns (nnz, canonical): canonical when every row's indices
    strictly increase (sorted, no duplicates), as SciPy's ``has_canonical_format``."""
    at = 0
    src = 0
    canonical = True
    indptr[0] = 0
    for k in range(lengths.size):
        last = -1
        for j in range(src, src + lengths[k]):
            if data[j] != 0.0:
                if indices[j] <= last:
                    canonical = False
                last = indices[j]
                indices[at] = indices[j]
                data[at] = data[j]
                at += 1
        src += lengths[k]
        indptr[k + 1] = at
    return at, canonical


@njit(cache=True, nogil=True)
def sum_duplicates(indptr, indices, data):
    """Sort each CSR row's indices, sum the values of a repeated index from left to right (the order
    they come in the record, on every decoding path, so that the sums agree bit for bit) and drop
    zero sums, in place. Returns (the new indptr, nnz, per row: whether a sum overflowed)."""
    n = indptr.size - 1
    out = np.empty(n + 1, dtype=np.int64)
    out[0] = 0
    overflow = np.zeros(n, dtype=np.bool_)
    at = 0
    for k in range(n):
        lo, hi = indptr[k], indptr[k + 1]
        row_idx = indices[lo:hi].copy()  # the compacted rows are written over the input
        row_val = data[lo:hi].copy()
        order = np.argsort(row_idx, kind="mergesort")  # stable: equal indices keep their order
        j = 0
        while j < order.size:
            index = row_idx[order[j]]
            total = row_val[order[j]]
            j += 1
            while j < order.size and row_idx[order[j]] == index:
                total += row_val[order[j]]
                j += 1
            if not math.isfinite(total):
                overflow[k] = True
            if total != 0.0:
                indices[at] = index
                data[at] = total
                at += 1
        out[k + 1] = at
    return out, at, overflow
