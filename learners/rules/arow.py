"""AROW: Adaptive Regularization of Weight vectors, full and diagonal.

Crammer, Kulesza & Dredze, "Adaptive regularization of weight vectors", NIPS 2009 / Machine
Learning 91, 2013, Sect. 3 (the update SOAL builds on). On a labelled round with hinge loss
ℓ_t = [1 − y_t μ_tᵀx_t]_+ > 0, with v_t = x_tᵀΣ_t x_t, β_t = 1/(v_t + r) and α_t = ℓ_t β_t:

    μ_{t+1} = μ_t + α_t y_t Σ_t x_t
    Σ_{t+1} = Σ_t − β_t Σ_t x_t x_tᵀ Σ_t

The diagonal rule keeps the diagonal of the same update (Σ_ii ← Σ_ii − β_t Σ_ii² x_i², as SOAL's
Eq. (4) does), so it equals the full rule on rows with one non-zero. μ_1 = 0, Σ_1 = I.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.jit import jit
from learners.kernels import UPDATE_SIG, kernel, sparse_dot, sq_norm
from learners.params import Interval
from learners.rules.matrix import (
    GaussianDiagRule,
    GaussianRule,
    diag_quad,
    full_matvec,
    full_quad,
    full_rank_one,
)

__all__ = ["AROWDiagRule", "AROWRule", "arow_diag_update", "arow_update"]


@jit
def arow_update(mu, Sigma, idx, val, y, r):
    """One AROW step (Crammer et al. 2009, Sect. 3) when ℓ_t > 0. O(nnz·D + D²)."""
    loss = 1.0 - y * sparse_dot(mu, idx, val)  # ℓ_t
    if loss <= 0.0 or sq_norm(val) == 0.0:
        return False
    v = full_quad(Sigma, idx, val)  # v_t = x_tᵀ Σ_t x_t
    beta = 1.0 / (v + r)  # β_t
    alpha = loss * beta  # α_t
    u = np.empty(mu.size)
    full_matvec(Sigma, idx, val, u)  # Σ_t x_t
    for i in range(mu.size):
        mu[i] += alpha * y * u[i]  # μ_{t+1} = μ_t + α_t y_t Σ_t x_t
    full_rank_one(Sigma, u, beta)  # Σ_{t+1} = Σ_t − β_t Σ_t x_t x_tᵀ Σ_t
    return True


@jit
def arow_diag_update(mu, Sigma, idx, val, y, r):
    """The AROW step on the diagonal of Σ, on the non-zeros of x_t. O(nnz)."""
    loss = 1.0 - y * sparse_dot(mu, idx, val)  # ℓ_t
    if loss <= 0.0 or sq_norm(val) == 0.0:
        return False
    v = diag_quad(Sigma, idx, val)  # v_t
    beta = 1.0 / (v + r)  # β_t
    alpha = loss * beta  # α_t
    for j in range(idx.size):
        i = idx[j]
        sx = Sigma[i] * val[j]  # (Σ_t x_t)_i
        mu[i] += alpha * y * sx  # μ_{t+1} = μ_t + α_t y_t Σ_t x_t
        Sigma[i] -= beta * sx * sx  # diag(Σ_t − β_t Σ_t x_t x_tᵀ Σ_t)
    return True


@kernel(UPDATE_SIG)
def _update(S, a, P, idx, val, y, weight):
    return arow_update(S[0], S[1:], idx, val, y, P[0])


@kernel(UPDATE_SIG)
def _diag_update(S, a, P, idx, val, y, weight):
    return arow_diag_update(S[0], S[1], idx, val, y, P[0])


class AROWRule(GaussianRule):
    """AROW with the full covariance Σ.

    Parameters
    ----------
    r : float > 0, default 1.0
        Regularisation r: larger r, smaller and slower-shrinking steps.
    max_matrix_mb : float > 0, default 1024
        Largest D×D float64 matrix the rule will allocate.

    State
    -----
    mu_ : float64 (D,)
        Mean μ.
    sigma_ : float64 (D, D)
        Covariance Σ, starting at I.

    Complexity
    ----------
    O(nnz²) per scored row, O(nnz·D + D²) per update; O(D²) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = AROWRule(r=1.0); rule.allocate(2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([2.0]), 1)
    True
    >>> rule.mu_.tolist(), rule.sigma_.tolist()   # v = 4, β = 1/5, α = 1/5
    ([0.4, 0.0], [[0.19999999999999996, 0.0], [0.0, 1.0]])

    References
    ----------
    Crammer, Kulesza & Dredze, Adaptive regularization of weight vectors, Mach. Learn. 91, 2013.
    """

    _constraints: ClassVar = {
        "r": Interval(0, None, closed="neither"),
        "max_matrix_mb": Interval(0, None, closed="neither"),
    }
    diagonal: ClassVar = "arow-diag"
    update_kernel = _update

    def __init__(self, *, r: float = 1.0, max_matrix_mb: float = 1024.0) -> None:
        self.r = r
        self.max_matrix_mb = max_matrix_mb
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([self.r])


class AROWDiagRule(GaussianDiagRule):
    """AROW keeping the diagonal of Σ.

    Parameters
    ----------
    r : float > 0, default 1.0
        Regularisation r.

    State
    -----
    mu_ : float64 (D,)
        Mean μ.
    sigma_ : float64 (D,)
        diag(Σ), starting at 1.

    Complexity
    ----------
    O(nnz) per scored row and per update; O(D) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = AROWDiagRule(r=1.0); rule.allocate(3)
    >>> rule.update(np.array([0, 2], dtype=np.int32), np.array([1.0, 1.0]), -1)
    True
    >>> rule.mu_.tolist(), rule.sigma_.tolist()   # v = 2, β = α = 1/3
    ([-0.3333333333333333, 0.0, -0.3333333333333333], [0.6666666666666667, 1.0, 0.6666666666666667])

    References
    ----------
    Crammer, Kulesza & Dredze, Adaptive regularization of weight vectors, Mach. Learn. 91, 2013.
    """

    _constraints: ClassVar = {"r": Interval(0, None, closed="neither")}
    update_kernel = _diag_update

    def __init__(self, *, r: float = 1.0) -> None:
        self.r = r
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([self.r])
