"""The second-order Perceptron (SOP), full and diagonal.

Cesa-Bianchi, Conconi & Gentile, "A second-order perceptron algorithm", SIAM J. Comput. 34(3),
2005; its selective-sampling version (SEL-2nd / SOP-SS / ASOP: this update with the margin query
b/(b+|p̂|)) is from Cesa-Bianchi, Gentile & Zaniboni, JMLR 7, 2006, and is the baseline of Lu, Zhao
& Hoi 2016 (SEL-2nd), Hao et al. 2016 (ASOP), the high-dimensional paper (SOP, diagonal) and
Moroshko & Crammer 2014 (SOP-SS, the c = ∞ case of their Eq. (5)).

With M the rounds on which a queried label showed a mistake, A = aI + Σ_{s∈M} x_s x_sᵀ and
v = Σ_{s∈M} y_s x_s, SOP predicts with

    p̂_t = vᵀ (A + x_t x_tᵀ)⁻¹ x_t = (vᵀA⁻¹x_t) / (1 + x_tᵀA⁻¹x_t)   (Sherman–Morrison)

and on a mistake adds x_t to A and y_t x_t to v. The full rule keeps A⁻¹ and w̄ = A⁻¹v, so a
score costs O(nnz²) and an update O(D²). The diagonal rule keeps diag(A) and v and predicts with
the diagonal of A + x_t x_tᵀ: p̂_t = Σ_i v_i x_i / (A_ii + x_i²), O(nnz) for both.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, kernel, sparse_dot, sq_norm
from learners.params import Interval
from learners.rules.matrix import FullMatrixRule, full_matvec, full_quad, full_rank_one

__all__ = ["SOPDiagRule", "SOPRule", "sop_diag_margin", "sop_diag_update", "sop_margin", "sop_update"]


@jit
def sop_margin(w, A_inv, idx, val):
    """(p̂_t, x_tᵀA⁻¹x_t): p̂_t = w̄·x / (1 + xᵀA⁻¹x), the SOP margin (Cesa-Bianchi et al. 2005,
    Fig. 2) by Sherman–Morrison, w̄ = A⁻¹v. O(nnz²)."""
    s = full_quad(A_inv, idx, val)  # x_tᵀ A⁻¹ x_t
    return sparse_dot(w, idx, val) / (1.0 + s), s


@jit
def sop_update(w, A_inv, idx, val, y):
    """One SOP step on a mistake (y p̂ ≤ 0): A ← A + x xᵀ, v ← v + y x. O(D²).

    Kept as A⁻¹ ← A⁻¹ − u uᵀ/(1+s) and w̄ ← w̄ + u (y − w̄·x)/(1+s), with u = A⁻¹x and s = xᵀu,
    which is w̄ = A⁻¹v after the step. A zero margin counts as a mistake.
    """
    p, s = sop_margin(w, A_inv, idx, val)
    if y * p > 0.0 or sq_norm(val) == 0.0:
        return False
    u = np.empty(w.size)
    full_matvec(A_inv, idx, val, u)  # u = A⁻¹ x_t
    step = (y - sparse_dot(w, idx, val)) / (1.0 + s)
    for i in range(w.size):
        w[i] += step * u[i]  # w̄ ← A_{new}⁻¹ (v + y x)
    full_rank_one(A_inv, u, 1.0 / (1.0 + s))  # (A + x xᵀ)⁻¹ = A⁻¹ − u uᵀ/(1 + s)
    return True


@kernel(SCORE_SIG)
def _score(S, a, P, idx, val):
    p, s = sop_margin(S[0], S[1:], idx, val)
    return p, np.nan, s, -1


@kernel(UPDATE_SIG)
def _update(S, a, P, idx, val, y, weight):
    return sop_update(S[0], S[1:], idx, val, y)


@jit
def sop_diag_margin(v, A, idx, val):
    """p̂_t = Σ_i v_i x_i / (A_ii + x_i²): the SOP margin with diag(A + x xᵀ) in place of A + x xᵀ.
    O(nnz)."""
    p = 0.0
    for j in range(idx.size):
        i = idx[j]
        p += v[i] * val[j] / (A[i] + val[j] * val[j])
    return p


@jit
def sop_diag_update(v, A, idx, val, y):
    """On a mistake (y p̂ ≤ 0): A_ii ← A_ii + x_i², v_i ← v_i + y x_i on the non-zeros of x. O(nnz)."""
    if y * sop_diag_margin(v, A, idx, val) > 0.0 or sq_norm(val) == 0.0:
        return False
    for j in range(idx.size):
        i = idx[j]
        A[i] += val[j] * val[j]  # A ← A + diag(x xᵀ)
        v[i] += y * val[j]  # v ← v + y x
    return True


@kernel(SCORE_SIG)
def _diag_score(S, a, P, idx, val):
    A = S[1]
    s = 0.0
    for j in range(idx.size):
        s += val[j] * val[j] / A[idx[j]]
    return sop_diag_margin(S[0], A, idx, val), np.nan, s, -1


@kernel(UPDATE_SIG)
def _diag_update(S, a, P, idx, val, y, weight):
    return sop_diag_update(S[0], S[1], idx, val, y)


class SOPRule(FullMatrixRule):
    """Second-order Perceptron with the full correlation matrix.

    Predicts sign(p̂_t), p̂_t = vᵀ(A + x_t x_tᵀ)⁻¹x_t; on a mistake A ← A + x xᵀ, v ← v + y x
    (Cesa-Bianchi, Conconi & Gentile 2005). Provides v = x_tᵀA⁻¹x_t, the variance term of the
    regularised least-squares estimate.

    Parameters
    ----------
    a : float > 0, default 1.0
        Regularisation a of A = aI + Σ x xᵀ (a → ∞ gives the Perceptron).
    max_matrix_mb : float > 0, default 1024
        Largest D×D float64 matrix the rule will allocate; above it, allocation is refused and
        the diagonal variant named.

    State
    -----
    w_ : float64 (D,)
        w̄ = A⁻¹v, so that vᵀA⁻¹x = w̄·x.
    A_inv_ : float64 (D, D)
        A⁻¹, starting at I/a.

    Complexity
    ----------
    O(nnz²) per scored row, O(D²) per update; O(D²) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = SOPRule(a=1.0); rule.allocate(2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1)   # p̂ = 0: a mistake
    True
    >>> rule.w_.tolist(), rule.A_inv_.tolist()    # A = I + e₀e₀ᵀ, v = e₀
    ([0.5, 0.0], [[0.5, 0.0], [0.0, 1.0]])
    >>> float(rule.score(np.array([[1.0, 0.0]])).p[0])   # (1/2) / (1 + 1/2)
    0.3333333333333333

    References
    ----------
    Cesa-Bianchi, Conconi & Gentile, SIAM J. Comput. 34(3):640-668, 2005.
    Cesa-Bianchi, Gentile & Zaniboni, JMLR 7:1205-1230, 2006.
    """

    _constraints: ClassVar = {
        "a": Interval(0, None, closed="neither"),
        "max_matrix_mb": Interval(0, None, closed="neither"),
    }
    provides: ClassVar = frozenset({"p", "v"})
    matrix: ClassVar = "A_inv"
    diagonal: ClassVar = "sop-diag"
    score_kernel = _score
    update_kernel = _update
    scaling: ClassVar = {"w": 1, "A_inv": 1}  # A → D⁻¹AD⁻¹ and v → D⁻¹v, so A⁻¹ → DA⁻¹D, w̄ = A⁻¹v → Dw̄

    def __init__(self, *, a: float = 1.0, max_matrix_mb: float = 1024.0) -> None:
        self.a = a
        self.max_matrix_mb = max_matrix_mb
        self._validate()

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"w": 1, "A_inv": n_features}

    def initialize(self) -> None:
        np.fill_diagonal(self.A_inv_, 1.0 / self.a)


class SOPDiagRule(UpdateRule):
    """Second-order Perceptron keeping only the diagonal of the correlation matrix.

    Predicts sign(p̂_t), p̂_t = Σ_i v_i x_i / (A_ii + x_i²); on a mistake A_ii ← A_ii + x_i² and
    v ← v + y x. On rows with one non-zero it is exactly :class:`SOPRule`. Provides
    v = Σ_i x_i² / A_ii.

    Parameters
    ----------
    a : float > 0, default 1.0
        Regularisation a of diag(A) = a + Σ x_i².

    State
    -----
    v_ : float64 (D,)
        Σ y x over the mistaken queried rounds.
    A_ : float64 (D,)
        diag(A), starting at a.

    Complexity
    ----------
    O(nnz) per scored row and per update; O(D) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = SOPDiagRule(a=1.0); rule.allocate(2)
    >>> rule.update(np.array([0, 1], dtype=np.int32), np.array([1.0, 2.0]), -1)
    True
    >>> rule.v_.tolist(), rule.A_.tolist()
    ([-1.0, -2.0], [2.0, 5.0])
    >>> float(rule.score(np.array([[1.0, 0.0]])).p[0])    # -1 / (2 + 1)
    -0.3333333333333333

    References
    ----------
    Cesa-Bianchi, Conconi & Gentile, SIAM J. Comput. 34(3), 2005 (diagonal: as run in the
    high-dimensional online active learning paper, Sect. 5.1.3).
    """

    _constraints: ClassVar = {"a": Interval(0, None, closed="neither")}
    provides: ClassVar = frozenset({"p", "v"})
    score_kernel = _diag_score
    update_kernel = _diag_update
    scaling: ClassVar = {"v": -1, "A": -2}  # v = Σ y x → v_i/r_i, A_ii = a + Σ x_i² → A_ii/r_i²
    signed: ClassVar = ("v",)

    def __init__(self, *, a: float = 1.0) -> None:
        self.a = a
        self._validate()

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"v": 1, "A": 1}

    def initialize(self) -> None:
        self.A_[:] = self.a
