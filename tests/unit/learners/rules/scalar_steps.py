"""Pieces of the rules' steps written out operation by operation, for the tests that hold the compiled
kernels to them bit for bit."""

from __future__ import annotations

import math


def softmax_coefficients(W, idx, val, y, weight) -> list[float]:
    """c_r = ω (π_r − 1[r = y]), π = softmax(W x), in the order the kernels compute them."""
    k = W.shape[0]
    c = [0.0] * k
    for r in range(k):
        for j in range(idx.size):
            c[r] += W[r, idx[j]] * val[j]
    top, total = max(c), 0.0
    for r in range(k):
        c[r] = math.exp(c[r] - top)
        total += c[r]
    for r in range(k):
        c[r] = weight * (c[r] / total - (1.0 if r == y else 0.0))
    return c
