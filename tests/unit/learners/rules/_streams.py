"""Small random streams shared by the rule tests."""

from __future__ import annotations

import numpy as np


def sparse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A dense row as the (indices, values) pair the kernels take."""
    idx = np.flatnonzero(x).astype(np.int32)
    return idx, x[idx]


def stream(seed: int, n: int, d: int, *, density: float = 0.5, one_hot: bool = False, classes: int = 0,
           linear: bool = False):
    """(x, y) pairs: Gaussian rows with a fraction ``density`` of non-zeros (or one non-zero),
    labels ±1 (or 0..classes-1) at random, or ``linear``: sign(w*ᵀx) with 10 % flipped."""
    rng = np.random.default_rng(seed)
    w_star = rng.standard_normal(d)
    for _ in range(n):
        if one_hot:
            x = np.zeros(d)
            x[rng.integers(d)] = rng.standard_normal()
        else:
            x = rng.standard_normal(d) * (rng.random(d) < density)
        y = int(rng.integers(classes)) if classes else int(rng.choice([-1, 1]))
        if linear:
            y = (1 if w_star @ x >= 0 else -1) * (-1 if rng.random() < 0.1 else 1)
        yield x, y
