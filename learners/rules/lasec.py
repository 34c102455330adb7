"""LASEC: the last-step adaptive classifier for a drifting target, full and diagonal.

Moroshko & Crammer, "Selective Sampling with Drift", AISTATS 2014, Fig. 1 (LASEC with a = ∞,
LASEC-SS with a margin query a/(a + |p̂|)), built on Eqs. (2), (3) and (5):

    D_0 = bc/(c − b) I,   e_0 = 0
    S_t = (D_{k−1}⁻¹ + c⁻¹ I)⁻¹ + x_t x_tᵀ                          (2)
    p̂_t = x_tᵀ S_t⁻¹ (I + c⁻¹ D_{k−1})⁻¹ e_{k−1}                     (5)
    on a (queried) mistake:  e_k = (I + c⁻¹ D_{k−1})⁻¹ e_{k−1} + y_t x_t,  D_k = S_t   (3), (2)

We keep the paper's state in covariance form, Σ = D⁻¹ and μ = D⁻¹ e (the regression estimate
u minimising P_t of Lemma 1). With Σ̃ = Σ + c⁻¹ I, the drifted covariance (D̃ = Σ̃⁻¹ is the first
term of S_t), and v = xᵀ Σ̃ x, the Sherman–Morrison formula turns Fig. 1 into

    p̂ = μᵀx / (1 + v)                                                (5)
    μ ← μ + (y − μᵀx) Σ̃x / (1 + v)                                   (3)
    Σ ← Σ̃ − Σ̃x xᵀΣ̃ / (1 + v)                                        (2)

(since (I + c⁻¹D)⁻¹ e = D̃ D⁻¹ e = D̃ μ, and S_t⁻¹ = Σ̃ − Σ̃xxᵀΣ̃/(1 + v)), with Σ_0 = (1/b − 1/c) I
so that Σ̃_0 = I/b. The drift is the c⁻¹ I added to Σ once per update k; c = ∞ gives the second-order
Perceptron (Cesa-Bianchi, Conconi & Gentile 2005), b → ∞ the Perceptron.

**Full** (:class:`LASECRule`): Σ is a D × D matrix, O(nnz²) per scored row, O(D·nnz + D²) per update.

**Diagonal** (:class:`LASECDiagRule`): Σ is kept diagonal (the diagonal of the posterior above,
as in the diagonal versions of AROW and SOAL), so the prediction and the mean update are exact for a
diagonal prior and only the posterior covariance is projected. The drift Σ ← Σ + c⁻¹ I touches
every coordinate, so it is applied lazily in closed form: with K updates so far and coordinate i
last brought up to date at update ℓ_i (``last_``),

    Σ_{K,i} = σ_i + (K − ℓ_i)/c      equivalently   D_{K,i} = c D_{ℓ_i,i} / (c + (K − ℓ_i) D_{ℓ_i,i}),

so a score or an update reads and writes only the coordinates of x: O(nnz).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, kernel, sparse_dot, sq_norm
from learners.params import Interval
from learners.rules.matrix import FullMatrixRule, full_matvec, full_quad, full_rank_one
from learners.scaling import rescale_lasec_diag, rescale_lasec_full

__all__ = [
    "LASECDiagRule",
    "LASECRule",
    "lasec_diag_margin",
    "lasec_diag_update",
    "lasec_full_margin",
    "lasec_full_update",
]


# -- full matrix ------------------------------------------------------------------------------
@jit
def lasec_full_margin(mu, sigma, idx, val, c_inv):
    """(μᵀx, v = xᵀ(Σ + c⁻¹I)x) for a sparse x: the two terms of p̂ in Eq. (5). O(nnz²)."""
    return sparse_dot(mu, idx, val), full_quad(sigma, idx, val) + c_inv * sq_norm(val)


@jit
def lasec_full_update(mu, sigma, idx, val, y, c_inv):
    """One LASEC update on (x, y): Fig. 1 of Moroshko & Crammer 2014, Eqs. (2)-(3) in covariance
    form (module docstring). O(D·nnz + D²)."""
    g = np.empty(mu.size)
    full_matvec(sigma, idx, val, g)
    for k in range(idx.size):
        g[idx[k]] += c_inv * val[k]  # g = Σ̃x = (Σ + c⁻¹I) x
    v = sparse_dot(g, idx, val)  # v = xᵀΣ̃x
    coef = (y - sparse_dot(mu, idx, val)) / (1.0 + v)
    for r in range(mu.size):
        mu[r] += coef * g[r]  # Eq. (3): μ_k = μ + (y − μᵀx) Σ̃x / (1 + v)
    full_rank_one(sigma, g, 1.0 / (1.0 + v))  # Eq. (2): Σ_k = Σ̃ − Σ̃xxᵀΣ̃ / (1 + v), ...
    for r in range(mu.size):
        sigma[r, r] += c_inv  # ... Σ̃ = Σ + c⁻¹I being the drift of update k


@kernel(SCORE_SIG)
def _full_score(S, a, P, idx, val):
    m, v = lasec_full_margin(S[0], S[1:], idx, val, P[1])
    return m / (1.0 + v), np.nan, v, -1


@kernel(UPDATE_SIG)
def _full_update(S, a, P, idx, val, y, weight):
    if y * sparse_dot(S[0], idx, val) > 0.0 or sq_norm(val) == 0.0:  # no mistake; or x = 0
        return False
    lasec_full_update(S[0], S[1:], idx, val, y, P[1])
    a[0] += 1.0
    return True


# -- diagonal, lazy drift ---------------------------------------------------------------------
@jit(inline="always")
def _drifted(sigma, last, i, k_next, c_inv):
    """Σ̃_i for update number k_next: the stored σ_i plus the drift of every update since ℓ_i."""
    return sigma[i] + (k_next - last[i]) * c_inv


@jit
def lasec_diag_margin(mu, sigma, last, idx, val, k, c_inv):
    """(μᵀx, v = Σ_i Σ̃_i x_i²) with Σ̃ the lazily drifted diagonal at update k + 1. O(nnz)."""
    m = 0.0
    v = 0.0
    for j in range(idx.size):
        i = idx[j]
        m += mu[i] * val[j]
        v += _drifted(sigma, last, i, k + 1.0, c_inv) * val[j] * val[j]
    return m, v


@jit
def lasec_diag_update(mu, sigma, last, idx, val, y, k, c_inv):
    """Update number k + 1 of diagonal LASEC on (x, y), touching only idx. O(nnz).

    Σ̃_i = σ_i + (k + 1 − ℓ_i)/c (the lazy drift), then Eq. (3) μ_i += (y − μᵀx) Σ̃_i x_i / (1 + v)
    and the diagonal of Eq. (2) σ_i = Σ̃_i − (Σ̃_i x_i)² / (1 + v), ℓ_i = k + 1.
    """
    k_next = k + 1.0
    m = 0.0
    v = 0.0
    for j in range(idx.size):
        i = idx[j]
        s = _drifted(sigma, last, i, k_next, c_inv)
        sigma[i] = s  # Σ̃_i, final value below
        last[i] = k_next
        m += mu[i] * val[j]
        v += s * val[j] * val[j]
    coef = (y - m) / (1.0 + v)
    for j in range(idx.size):
        i = idx[j]
        g = sigma[i] * val[j]  # (Σ̃x)_i
        mu[i] += coef * g  # Eq. (3)
        sigma[i] -= g * g / (1.0 + v)  # Eq. (2), diagonal


@kernel(SCORE_SIG)
def _diag_score(S, a, P, idx, val):
    m, v = lasec_diag_margin(S[0], S[1], S[2], idx, val, a[0], P[1])
    return m / (1.0 + v), np.nan, v, -1


@kernel(UPDATE_SIG)
def _diag_update(S, a, P, idx, val, y, weight):
    if y * sparse_dot(S[0], idx, val) > 0.0 or sq_norm(val) == 0.0:
        return False
    lasec_diag_update(S[0], S[1], S[2], idx, val, y, a[0], P[1])
    a[0] += 1.0
    return True


class _LASECParams:
    """What both LASEC rules share: (b, c), their check, packing, and Σ_0."""

    _constraints: ClassVar = {
        "b": Interval(0, None, closed="neither"),
        "c": Interval(0, None, closed="neither"),
        "max_matrix_mb": Interval(0, None, closed="neither"),
    }
    provides: ClassVar = frozenset({"p", "v"})
    scalars: ClassVar = ("updates",)
    b: float
    c: float

    def _check_params(self) -> None:
        if not self.b < self.c:
            raise ValueError(f"LASEC needs 0 < b < c (D_0 = bc/(c − b) I), got b={self.b}, c={self.c}")

    def packed_params(self) -> np.ndarray:
        return np.array([self.b, 1.0 / self.c])

    @property
    def sigma0(self) -> float:
        """Σ_0 = D_0⁻¹ = (1/b − 1/c): after the first drift, Σ̃_0 = I/b."""
        return 1.0 / self.b - 1.0 / self.c


class LASECRule(_LASECParams, FullMatrixRule):
    """LASEC with a full D × D matrix: Moroshko & Crammer, AISTATS 2014, Fig. 1.

    Updates only on mistakes (y μᵀx ≤ 0; with a query, only on queried mistakes). The margin is
    p̂ = μᵀx / (1 + xᵀΣ̃x) (Eq. 5), whose sign is the prediction and whose size drives the
    LASEC-SS query a/(a + |p̂|).

    Parameters
    ----------
    b : float > 0, default 1.0
        Regularisation of the first comparator, b‖u_1‖²; D_0 = bc/(c − b) I.
    c : float > b, default 1000.0
        Drift penalty c Σ‖u_{s+1} − u_s‖²; smaller c tracks a faster-moving target. c → ∞ is
        the second-order Perceptron.
    max_matrix_mb : float > 0, default 1024
        Largest D×D float64 matrix the rule will allocate; above it, allocation is refused and
        the diagonal variant named.

    State
    -----
    mu_ : float64 (D,)
        μ = D⁻¹e, the weight vector.
    sigma_ : float64 (D, D)
        Σ = D⁻¹.
    updates : float
        k − 1, the updates made so far.

    Complexity
    ----------
    O(nnz²) per scored row; O(D·nnz + D²) per update; memory D² floats (beyond ``max_matrix_mb``
    allocation is refused: use :class:`LASECDiagRule`).

    Examples
    --------
    >>> import numpy as np
    >>> rule = LASECRule(b=1.0, c=4.0); rule.allocate(2)
    >>> x = np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0])
    >>> rule.update(*x, 1)                  # μᵀx = 0 counts as a mistake
    True
    >>> rule.mu_.round(4).tolist()          # Σ̃ = I/b: μ = Σ̃x / (1 + v) = x/3
    [0.3333, 0.3333]
    >>> rule.sigma_.round(4).tolist()       # Σ̃ − Σ̃xxᵀΣ̃/3 = I − 11ᵀ/3
    [[0.6667, -0.3333], [-0.3333, 0.6667]]

    References
    ----------
    E. Moroshko and K. Crammer, Selective Sampling with Drift, AISTATS 2014, Fig. 1, Eqs. (2)-(5).
    """

    matrix: ClassVar = "sigma"
    diagonal: ClassVar = "lasec-diag"
    score_kernel = _full_score
    update_kernel = _full_update
    scaling: ClassVar = {"mu": 1, "sigma": 1}  # μ → Dμ, Σ + c⁻¹I → D(Σ + c⁻¹I)D
    signed: ClassVar = ("mu",)
    rescale_kernel = rescale_lasec_full

    def __init__(self, *, b: float = 1.0, c: float = 1000.0, max_matrix_mb: float = 1024.0) -> None:
        self.b = b
        self.c = c
        self.max_matrix_mb = max_matrix_mb
        self._validate()

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"mu": 1, "sigma": n_features}

    def initialize(self) -> None:
        np.fill_diagonal(self.sigma_, self.sigma0)


class LASECDiagRule(_LASECParams, UpdateRule):
    """LASEC with a diagonal matrix and lazy drift: O(nnz) per score and per update.

    The same algorithm as :class:`LASECRule` with Σ kept diagonal (module docstring); on rows with
    a single non-zero both agree exactly. The drift c⁻¹ added to every Σ_ii per update is applied
    lazily from the closed form Σ_{K,i} = σ_i + (K − ℓ_i)/c.

    Parameters
    ----------
    b : float > 0, default 1.0
        As in :class:`LASECRule`.
    c : float > b, default 1000.0
        As in :class:`LASECRule`.

    State
    -----
    mu_ : float64 (D,)
        The weight vector μ.
    sigma_ : float64 (D,)
        σ_i = Σ_ii as of update ℓ_i.
    last_ : float64 (D,)
        ℓ_i, the update at which coordinate i was last brought up to date.
    updates : float
        K, the updates made so far.

    Complexity
    ----------
    O(nnz) per scored row and per update; memory 3 D floats.

    Examples
    --------
    >>> import numpy as np
    >>> rule = LASECDiagRule(b=1.0, c=4.0); rule.allocate(3)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1)
    True
    >>> rule.update(np.array([1], dtype=np.int32), np.array([1.0]), -1)
    True

    Σ_0 = 1/b − 1/c = 3/4. Coordinate 0: Σ̃ = 1 at update 1, σ = 1/2, then 1/4 of drift at update 2.
    Coordinate 1: Σ̃ = 3/4 + 2/4, σ = Σ̃/(1 + Σ̃). Coordinate 2, never touched: 3/4 + 2 × 1/4.

    >>> rule.current_sigma().round(4).tolist()
    [0.75, 0.5556, 1.25]

    References
    ----------
    E. Moroshko and K. Crammer, Selective Sampling with Drift, AISTATS 2014, Fig. 1.
    """

    score_kernel = _diag_score
    update_kernel = _diag_update
    scaling: ClassVar = {"mu": 1, "sigma": 2, "last": 0}  # the lazy drift is settled first
    signed: ClassVar = ("mu",)
    rescale_kernel = rescale_lasec_diag

    def __init__(self, *, b: float = 1.0, c: float = 1000.0) -> None:
        self.b = b
        self.c = c
        self._validate()

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"mu": 1, "sigma": 1, "last": 1}

    def initialize(self) -> None:
        self.sigma_[:] = self.sigma0

    def current_sigma(self) -> np.ndarray:
        """Σ_ii after the updates so far, every coordinate brought up to date. O(D)."""
        return self.sigma_ + (self.a_[0] - self.last_) / self.c
