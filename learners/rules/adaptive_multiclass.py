"""Multiclass adaptive subgradient updates: M-DA and M-MD with one diagonal H per class.

"Online active learning for high-dimensional classification", Sect. 4.2 and Algorithm 2. The model
is one predictor w^(i) per class (multi-prototype, Crammer et al. 2006), ŷ_t = argmax_i w^(i)ᵀx_t,
with the multiclass hinge loss f_t(W) = max{0, 1 + w^(r_t)ᵀx_t − w^(y_t)ᵀx_t}, r_t = argmax_{i≠y_t}.
When f_t(W_t) > 0, g^(r_t) = x_t, g^(y_t) = −x_t and every other g^(i) = 0; then for i ∈ {y_t, r_t}

    s^(i)_{t,j} = √(s^(i)_{t−1,j}² + g^(i)_{t,j}²),   H^(i)_t = δI + diag(s^(i)_t)   (line 12)
    M-DA:  w^(i)_{t+1} = −η (H^(i)_t)⁻¹ Σ_k g^(i)_k                                   (5)
    M-MD:  w^(i)_{t+1} = w^(i)_t − η (H^(i)_t)⁻¹ g^(i)_t                              (6)

in O(nnz). A row is scored in O(C·nnz): p = the top-1 score, gap = top-1 − top-2 (p_t of Eq. 7),
and v = a_t v_t with (Eq. 8)

    v_t = x_tᵀ(H^(ŷ_t)_{t−1})⁻¹x_t + max_{i≠ŷ_t} x_tᵀ(H^(i)_{t−1})⁻¹x_t

a_t as in :mod:`learners.rules.adaptive`.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, kernel, sq_norm
from learners.rules.adaptive import _AdaptiveRule, a_weight, inverse_h_quad
from learners.scaling import rescale_dual_averaging

__all__ = ["MulticlassDualAveragingRule", "MulticlassMirrorDescentRule", "mda_update", "mmd_update",
           "multiclass_scores"]


@jit(inline="always")
def _class_score(W, S_row, i, idx, val, delta, eta, dual):
    """w^(i)ᵀx_t: DA forms w^(i) = −η (H^(i))⁻¹ Σg^(i) on the fly, MD reads it."""
    p = 0.0
    if dual:
        for j in range(idx.size):
            k = idx[j]
            p -= eta * W[i, k] / (delta + S_row[k]) * val[j]
    else:
        for j in range(idx.size):
            p += W[i, idx[j]] * val[j]
    return p


@jit
def multiclass_scores(W, s, idx, val, delta, eta, dual):
    """(top-1 score, gap p_t of Eq. 7, v_t of Eq. 8, ŷ_t) over the classes. O(C·nnz)."""
    best, second, top = -np.inf, -np.inf, 0
    v_top = 0.0
    v1, v2, v1_class = -np.inf, -np.inf, -1  # the two largest x_tᵀ(H^(i))⁻¹x_t and the argmax
    for i in range(W.shape[0]):
        score = _class_score(W, s[i], i, idx, val, delta, eta, dual)
        vi = inverse_h_quad(s[i], idx, val, delta)
        if score > best:
            second, best, top, v_top = best, score, i, vi
        elif score > second:
            second = score
        if vi > v1:
            v2, v1, v1_class = v1, vi, i
        elif vi > v2:
            v2 = vi
    v_other = v2 if v1_class == top else v1  # max_{i≠ŷ} x_tᵀ(H^(i))⁻¹x_t
    return best, best - second, v_top + v_other, top  # Eqs. (7), (8)


@jit(inline="always")
def _runner_up(W, s, idx, val, y, delta, eta, dual):
    """(w^(y)ᵀx, max_{i≠y} w^(i)ᵀx, r_t)."""
    own, rival, r = 0.0, -np.inf, -1
    for i in range(W.shape[0]):
        score = _class_score(W, s[i], i, idx, val, delta, eta, dual)
        if i == y:
            own = score
        elif score > rival:
            rival, r = score, i
    return own, rival, r


@jit
def mda_update(W, s, idx, val, y, delta, eta):
    """M-DA (Eq. 5) when f_t(W_t) > 0: W holds Σ_k g^(i)_k per class. O(C·nnz)."""
    own, rival, r = _runner_up(W, s, idx, val, y, delta, eta, True)
    if 1.0 + rival - own <= 0.0 or sq_norm(val) == 0.0:  # f_t(W_t) = 0
        return False
    for j in range(idx.size):
        k = idx[j]
        x2 = val[j] * val[j]
        s[y, k] = math.sqrt(s[y, k] * s[y, k] + x2)  # line 12, g^(y) = −x
        s[r, k] = math.sqrt(s[r, k] * s[r, k] + x2)  # line 12, g^(r) = x
        W[y, k] -= val[j]  # Σ g^(y) += −x
        W[r, k] += val[j]  # Σ g^(r) += x
    return True


@jit
def mmd_update(W, s, idx, val, y, delta, eta):
    """M-MD (Eq. 6) when f_t(W_t) > 0. O(C·nnz)."""
    own, rival, r = _runner_up(W, s, idx, val, y, delta, eta, False)
    if 1.0 + rival - own <= 0.0 or sq_norm(val) == 0.0:  # f_t(W_t) = 0
        return False
    for j in range(idx.size):
        k = idx[j]
        x2 = val[j] * val[j]
        s[y, k] = math.sqrt(s[y, k] * s[y, k] + x2)  # line 12
        s[r, k] = math.sqrt(s[r, k] * s[r, k] + x2)
        W[y, k] += eta * val[j] / (delta + s[y, k])  # w^(y) + η (H^(y))⁻¹ x
        W[r, k] -= eta * val[j] / (delta + s[r, k])  # w^(r) − η (H^(r))⁻¹ x
    return True


@kernel(SCORE_SIG)
def _mda_score(S, a, P, idx, val):
    C = S.shape[0] // 2
    p, gap, v, top = multiclass_scores(S[:C], S[C:], idx, val, P[0], P[1], True)
    return p, gap, a_weight(P[2], val) * v, top


@kernel(UPDATE_SIG)
def _mda_update(S, a, P, idx, val, y, weight):
    C = S.shape[0] // 2
    return mda_update(S[:C], S[C:], idx, val, y, P[0], P[1])


@kernel(SCORE_SIG)
def _mmd_score(S, a, P, idx, val):
    C = S.shape[0] // 2
    p, gap, v, top = multiclass_scores(S[:C], S[C:], idx, val, P[0], P[1], False)
    return p, gap, a_weight(P[2], val) * v, top


@kernel(UPDATE_SIG)
def _mmd_update(S, a, P, idx, val, y, weight):
    C = S.shape[0] // 2
    return mmd_update(S[:C], S[C:], idx, val, y, P[0], P[1])


class _MulticlassAdaptiveRule(_AdaptiveRule):
    """The binary rules' δ, η and a, with one diagonal H^(i) per class and the top-2 gap."""

    provides: ClassVar = frozenset({"p", "gap", "v"})
    multiclass: ClassVar = True


class MulticlassDualAveragingRule(_MulticlassAdaptiveRule):
    """Multiclass dual averaging (M-DA, Eq. 5) with one diagonal H^(i) per class.

    Parameters
    ----------
    delta : float > 0, default 1.0
        δ of H^(i)_t = δI + diag(s^(i)_t).
    eta : float > 0, default 1.0
        Step size η.
    a : {"inverse-norm", "one", "zero"}, default "inverse-norm"
        a_t that scales the reported v: 1/max(1, x_tᵀx_t) (MD-ADA), 1 (MD-ADA-I), 0 (MM-ADA).

    State
    -----
    g_sum_ : float64 (C, D)
        Σ_k g^(i)_k per class.
    s_ : float64 (C, D)
        s^(i)_t per class.

    Complexity
    ----------
    O(C·nnz) per scored row and per update; O(C·D) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = MulticlassDualAveragingRule(); rule.allocate(2, n_classes=3)
    >>> rule.update(np.array([1], dtype=np.int32), np.array([1.0]), 2)   # r = 0 (first of the ties)
    True
    >>> rule.g_sum_.tolist()
    [[0.0, 1.0], [0.0, 0.0], [0.0, -1.0]]
    >>> s = rule.score(np.array([[0.0, 1.0]])); int(s.top[0]), float(s.gap[0])
    (2, 0.5)

    References
    ----------
    Online active learning for high-dimensional classification, Algorithm 2 (M-DA update).
    """

    score_kernel = _mda_score
    update_kernel = _mda_update
    scaling: ClassVar = {"g_sum": -1, "s": -1}  # one row per class; see rescale_dual_averaging
    signed: ClassVar = ("g_sum",)
    rescale_kernel = rescale_dual_averaging

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"g_sum": n_classes, "s": n_classes}


class MulticlassMirrorDescentRule(_MulticlassAdaptiveRule):
    """Multiclass mirror descent (M-MD, Eq. 6) with one diagonal H^(i) per class.

    Parameters
    ----------
    delta : float > 0, default 1.0
        δ of H^(i)_t = δI + diag(s^(i)_t).
    eta : float > 0, default 1.0
        Step size η.
    a : {"inverse-norm", "one", "zero"}, default "inverse-norm"
        a_t that scales the reported v: 1/max(1, x_tᵀx_t) (MD-AMD), 1 (MD-AMD-I), 0 (MM-AMD).

    State
    -----
    w_ : float64 (C, D)
        One predictor per class.
    s_ : float64 (C, D)
        s^(i)_t per class.

    Complexity
    ----------
    O(C·nnz) per scored row and per update; O(C·D) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = MulticlassMirrorDescentRule(); rule.allocate(2, n_classes=3)
    >>> rule.update(np.array([1], dtype=np.int32), np.array([1.0]), 2)
    True
    >>> rule.w_.tolist()     # w^(2) + 1/(1 + 1), w^(0) − 1/(1 + 1)
    [[0.0, -0.5], [0.0, 0.0], [0.0, 0.5]]

    References
    ----------
    Online active learning for high-dimensional classification, Algorithm 2 (M-MD update).
    """

    score_kernel = _mmd_score
    update_kernel = _mmd_update
    scaling: ClassVar = {"w": 1, "s": -1}  # one row per class

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"w": n_classes, "s": n_classes}
