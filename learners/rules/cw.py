"""Confidence-Weighted learning (exact convex CW), full and diagonal.

Crammer, Dredze & Pereira, "Exact convex confidence-weighted learning", NIPS 2008, Sect. 3; the
diagonal version is the CW-diag baseline of Lu, Zhao & Hoi 2016 (Sect. 6.3.2). With m_t =
y_t μ_tᵀx_t, v_t = x_tᵀΣ_t x_t, φ = Φ⁻¹(η), ψ = 1 + φ²/2 and ζ = 1 + φ²:

    α_t = max{0, (−m_t ψ + √(m_t² φ⁴/4 + v_t φ² ζ)) / (v_t ζ)}
    u_t = ¼ (−α_t v_t φ + √(α_t² v_t² φ² + 4 v_t))²
    μ_{t+1} = μ_t + α_t y_t Σ_t x_t
    Σ_{t+1}⁻¹ = Σ_t⁻¹ + α_t φ u_t^{−1/2} x_t x_tᵀ

an update whenever the constraint Pr[y_t wᵀx_t ≥ 0] ≥ η is violated (φ√v_t > m_t). The full
rule applies the last line to Σ by Woodbury (β_t = α_t φ / (√u_t + v_t α_t φ)); the diagonal rule
adds only the diagonal α_t φ u_t^{−1/2} x_i² to the precision Σ⁻¹ (the "drop" approximation of
Crammer et al.), which equals the full rule on rows with one non-zero. μ_1 = 0, Σ_1 = I.
"""

from __future__ import annotations

import math
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

__all__ = ["CWDiagRule", "CWRule", "cw_coefficients", "cw_diag_update", "cw_update"]


@jit
def cw_coefficients(m, v, phi):
    """(α_t, α_t φ / √u_t) of exact convex CW (Crammer, Dredze & Pereira 2008, Sect. 3)."""
    psi = 1.0 + phi * phi / 2.0  # ψ
    zeta = 1.0 + phi * phi  # ζ
    alpha = max(0.0, (-m * psi + math.sqrt(m * m * phi**4 / 4.0 + v * phi * phi * zeta)) / (v * zeta))
    b = alpha * v * phi
    root_u = 2.0 * v / (b + math.sqrt(b * b + 4.0 * v))  # √u_t = ½(−b + √(b² + 4v)), without cancellation
    return alpha, alpha * phi / root_u


@jit
def cw_update(mu, Sigma, idx, val, y, phi):
    """One exact convex CW step with the full Σ, when φ√v_t > m_t. O(nnz·D + D²)."""
    if sq_norm(val) == 0.0:
        return False
    m = y * sparse_dot(mu, idx, val)  # m_t
    v = full_quad(Sigma, idx, val)  # v_t
    if v <= 0.0 or phi * math.sqrt(v) - m <= 0.0:  # the confidence constraint holds: passive
        return False
    alpha, gain = cw_coefficients(m, v, phi)
    if alpha == 0.0 or not math.isfinite(gain):  # Σ has collapsed on x (v ≈ 0): no finite step left
        return False
    u = np.empty(mu.size)
    full_matvec(Sigma, idx, val, u)  # Σ_t x_t
    for i in range(mu.size):
        mu[i] += alpha * y * u[i]  # μ_{t+1} = μ_t + α_t y_t Σ_t x_t
    full_rank_one(Sigma, u, gain / (1.0 + gain * v))  # Woodbury on Σ⁻¹ + (α φ/√u) x xᵀ
    return True


@jit
def cw_diag_update(mu, Sigma, idx, val, y, phi):
    """One exact convex CW step on diag(Σ): Σ_ii⁻¹ ← Σ_ii⁻¹ + (α φ/√u) x_i², on the non-zeros. O(nnz)."""
    if sq_norm(val) == 0.0:
        return False
    m = y * sparse_dot(mu, idx, val)  # m_t
    v = diag_quad(Sigma, idx, val)  # v_t
    if v <= 0.0 or phi * math.sqrt(v) - m <= 0.0:
        return False
    alpha, gain = cw_coefficients(m, v, phi)
    if alpha == 0.0 or not math.isfinite(gain):  # Σ has collapsed on x (v ≈ 0): no finite step left
        return False
    for j in range(idx.size):
        i = idx[j]
        mu[i] += alpha * y * Sigma[i] * val[j]  # μ_{t+1} = μ_t + α_t y_t Σ_t x_t
        Sigma[i] = Sigma[i] / (1.0 + gain * Sigma[i] * val[j] * val[j])  # 1/(Σ⁻¹ + (αφ/√u) x_i²)
    return True


@kernel(UPDATE_SIG)
def _update(S, a, P, idx, val, y, weight):
    return cw_update(S[0], S[1:], idx, val, y, P[0])


@kernel(UPDATE_SIG)
def _diag_update(S, a, P, idx, val, y, weight):
    return cw_diag_update(S[0], S[1], idx, val, y, P[0])


_ETA = Interval(0.5, 1.0, closed="neither")


def _phi(eta: float) -> float:
    """φ = Φ⁻¹(η), the confidence parameter of CW's constraint."""
    from statistics import NormalDist  # with fractions, decimal and random, 5 ms of every command's start-up

    return NormalDist().inv_cdf(eta)


class CWRule(GaussianRule):
    """Exact convex Confidence-Weighted update with the full covariance Σ.

    Parameters
    ----------
    eta : float in (0.5, 1), default 0.7
        Confidence η: each update makes Pr[y wᵀx ≥ 0] ≥ η under w ~ N(μ, Σ); φ = Φ⁻¹(η).
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
    >>> rule = CWRule(eta=0.7); rule.allocate(2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1)
    True
    >>> [round(x, 4) for x in rule.mu_.tolist()], round(float(rule.sigma_[0, 0]), 4)
    ([0.4644, 0.0], 0.7843)

    References
    ----------
    Crammer, Dredze & Pereira, Exact convex confidence-weighted learning, NIPS 2008.
    """

    _constraints: ClassVar = {"eta": _ETA, "max_matrix_mb": Interval(0, None, closed="neither")}
    diagonal: ClassVar = "cw-diag"
    update_kernel = _update

    def __init__(self, *, eta: float = 0.7, max_matrix_mb: float = 1024.0) -> None:
        self.eta = eta
        self.max_matrix_mb = max_matrix_mb
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([_phi(self.eta)])


class CWDiagRule(GaussianDiagRule):
    """Exact convex Confidence-Weighted update keeping diag(Σ) (CW-diag).

    Parameters
    ----------
    eta : float in (0.5, 1), default 0.7
        Confidence η; φ = Φ⁻¹(η).

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
    >>> rule = CWDiagRule(eta=0.7); rule.allocate(2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1)   # one non-zero: as CWRule
    True
    >>> [round(x, 4) for x in rule.mu_.tolist()], round(float(rule.sigma_[0]), 4)
    ([0.4644, 0.0], 0.7843)

    References
    ----------
    Crammer, Dredze & Pereira, NIPS 2008; CW-diag of Lu, Zhao & Hoi, Mach. Learn. 103(2), 2016.
    """

    _constraints: ClassVar = {"eta": _ETA}
    update_kernel = _diag_update

    def __init__(self, *, eta: float = 0.7) -> None:
        self.eta = eta
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([_phi(self.eta)])
