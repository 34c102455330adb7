"""The score kernel shared by binary linear rules: p = w · x."""

from __future__ import annotations

import numpy as np

from learners.kernels import SCORE_SIG, kernel, sparse_dot

__all__ = ["binary_margin"]


@kernel(SCORE_SIG)
def binary_margin(S, a, P, idx, val):
    """p_t = w_t · x_t with w = S[0]. O(nnz)."""
    return sparse_dot(S[0], idx, val), np.nan, np.nan, -1
