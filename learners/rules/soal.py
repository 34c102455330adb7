"""The SOAL update: an AROW-style step of the mean μ and the covariance Σ of w ~ N(μ, Σ).

Hao, Zhao, Lu, Hoi, Miao & Zhang, "SOAL: Second-order Online Active Learning", ICDM 2016,
Sect. III-B1 and Algorithm 1. On a labelled round with hinge loss ℓ_t = [1 − y_t μ_tᵀx_t]_+ > 0
(and only then):

    Σ_{t+1} = Σ_t − Σ_t x_t x_tᵀ Σ_t / (γ + x_tᵀΣ_t x_t)          (1)
    μ_{t+1} = μ_t − η Σ_{t+1} g_t,  g_t = −y_t x_t                   (3)

or, keeping only the diagonal of Σ,

    Σ_{t+1} = Σ_t − Σ_t ⊙ x_t ⊙ x_t ⊙ Σ_t / (γ + (x_t ⊙ Σ_t)ᵀx_t)   (4)
    μ_{t+1} = μ_t − η Σ_{t+1} ⊙ g_t                                  (5)

with μ_1 = 0 and Σ_1 = I. Both rules score p_t = μ_tᵀx_t and provide v_t = x_tᵀΣ_t x_t, which
SOAL's query (:class:`learners.queries.soal.SOALQuery`) turns into its confidence term.
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

__all__ = ["SOALDiagRule", "SOALRule", "soal_diag_update", "soal_update"]


@jit
def soal_update(mu, Sigma, idx, val, y, eta, gamma):
    """Eqs. (1) and (3) of Hao et al. 2016 when ℓ_t > 0. O(nnz·D + D²).

    Σ_{t+1}x_t = Σ_t x_t · γ/(γ + v_t), so (3) moves μ along u = Σ_t x_t before (1) changes Σ.
    """
    if 1.0 - y * sparse_dot(mu, idx, val) <= 0.0 or sq_norm(val) == 0.0:  # ℓ_t(μ_t) = 0: passive
        return False
    v = full_quad(Sigma, idx, val)  # v_t = x_tᵀ Σ_t x_t
    u = np.empty(mu.size)
    full_matvec(Sigma, idx, val, u)  # u = Σ_t x_t
    step = eta * y * gamma / (gamma + v)
    for i in range(mu.size):
        mu[i] += step * u[i]  # Eq. (3): μ_t + η y_t Σ_{t+1} x_t
    full_rank_one(Sigma, u, 1.0 / (gamma + v))  # Eq. (1)
    return True


@jit
def soal_diag_update(mu, Sigma, idx, val, y, eta, gamma):
    """Eqs. (4) and (5) of Hao et al. 2016 when ℓ_t > 0, on the non-zeros of x_t. O(nnz)."""
    if 1.0 - y * sparse_dot(mu, idx, val) <= 0.0 or sq_norm(val) == 0.0:  # ℓ_t(μ_t) = 0: passive
        return False
    v = diag_quad(Sigma, idx, val)  # (x_t ⊙ Σ_t)ᵀ x_t
    for j in range(idx.size):
        i = idx[j]
        sx = Sigma[i] * val[j]
        Sigma[i] -= sx * sx / (gamma + v)  # Eq. (4)
        mu[i] += eta * y * Sigma[i] * val[j]  # Eq. (5), with Σ_{t+1}
    return True


@kernel(UPDATE_SIG)
def _update(S, a, P, idx, val, y, weight):
    return soal_update(S[0], S[1:], idx, val, y, P[0], P[1])


@kernel(UPDATE_SIG)
def _diag_update(S, a, P, idx, val, y, weight):
    return soal_diag_update(S[0], S[1], idx, val, y, P[0], P[1])


_CONSTRAINTS = {"eta": Interval(0, None, closed="neither"), "gamma": Interval(0, None, closed="neither")}


class SOALRule(GaussianRule):
    """SOAL update with the full covariance Σ (Eqs. 1 and 3 of Hao et al. 2016).

    Parameters
    ----------
    eta : float > 0, default 1.0
        Learning rate η of the mean.
    gamma : float > 0, default 1.0
        Regularisation γ of the confidence term (larger γ, slower shrinking of Σ).
    max_matrix_mb : float > 0, default 1024
        Largest D×D float64 matrix the rule will allocate.

    State
    -----
    mu_ : float64 (D,)
        Mean μ; predictions are sign(μᵀx).
    sigma_ : float64 (D, D)
        Covariance Σ, starting at I.

    Complexity
    ----------
    O(nnz²) per scored row, O(nnz·D + D²) per update; O(D²) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = SOALRule(eta=1.0, gamma=1.0); rule.allocate(2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1)
    True
    >>> rule.mu_.tolist(), rule.sigma_.tolist()   # v = 1: Σ₀₀ = 1 − 1/2, μ₀ = ηΣ₀₀
    ([0.5, 0.0], [[0.5, 0.0], [0.0, 1.0]])

    References
    ----------
    Hao, Zhao, Lu, Hoi, Miao & Zhang, SOAL: Second-order Online Active Learning, ICDM 2016.
    """

    _constraints: ClassVar = {**_CONSTRAINTS, "max_matrix_mb": Interval(0, None, closed="neither")}
    diagonal: ClassVar = "soal-diag"
    update_kernel = _update

    def __init__(self, *, eta: float = 1.0, gamma: float = 1.0, max_matrix_mb: float = 1024.0) -> None:
        self.eta = eta
        self.gamma = gamma
        self.max_matrix_mb = max_matrix_mb
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([self.eta, self.gamma])


class SOALDiagRule(GaussianDiagRule):
    """SOAL update keeping the diagonal of Σ (Eqs. 4 and 5 of Hao et al. 2016).

    Parameters
    ----------
    eta : float > 0, default 1.0
        Learning rate η of the mean.
    gamma : float > 0, default 1.0
        Regularisation γ of the confidence term.

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
    >>> rule = SOALDiagRule(eta=1.0, gamma=1.0); rule.allocate(2)
    >>> rule.update(np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0]), -1)
    True
    >>> rule.sigma_.tolist(), rule.mu_.tolist()   # v = 2: Σᵢ = 1 − 1/3, μᵢ = −Σᵢ
    ([0.6666666666666667, 0.6666666666666667], [-0.6666666666666667, -0.6666666666666667])

    References
    ----------
    Hao, Zhao, Lu, Hoi, Miao & Zhang, SOAL: Second-order Online Active Learning, ICDM 2016.
    """

    _constraints: ClassVar = _CONSTRAINTS
    update_kernel = _diag_update

    def __init__(self, *, eta: float = 1.0, gamma: float = 1.0) -> None:
        self.eta = eta
        self.gamma = gamma
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([self.eta, self.gamma])
