"""Adaptive subgradient updates with a diagonal H: dual averaging (DA) and mirror descent (MD).

"Online active learning for high-dimensional classification", Sect. 3.2 and Algorithm 1 (after
Duchi, Hazan & Singer 2011). The hinge loss f_t(w) = max{0, 1 − y_t wᵀx_t} has the subgradient
g_t = −y_t x_t when f_t(w_t) > 0 and 0 otherwise; on a queried round

    s_{t,i} = ‖G_{1:t,i}‖₂ = √(s_{t−1,i}² + g_{t,i}²),   H_t = δI + diag(s_t)   (line 12)
    DA:  w_{t+1} = −η H_t⁻¹ Σ_{k≤t} g_k                                       (line 13)
    MD:  w_{t+1} = w_t − η H_t⁻¹ g_t                                          (line 14)

with w_1 = 0, H_0 = δI. g_t touches only the non-zeros of x_t, so an update is O(nnz); DA keeps
Σg and s and forms each w_i = −η (Σg)_i / (δ + s_i) when it is read, also O(nnz) per row.

The discrimination query needs v_t = x_tᵀH_{t−1}⁻¹x_t scaled by a_t (Remark 3: 1/max(1, x_tᵀx_t)
for D-ADA/D-AMD, 1 for their -I variants, 0 for the margin-only M- variants). a_t depends on x_t
alone, so the rule applies it and reports v = a_t v_t.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, kernel, sq_norm
from learners.params import Interval, Options
from learners.scaling import rescale_dual_averaging

__all__ = [
    "A_MODES",
    "DualAveragingRule",
    "MirrorDescentRule",
    "a_weight",
    "da_margin",
    "da_update",
    "inverse_h_quad",
    "md_update",
]

# a_t of Remark 3, by name; packed as the code the kernels read.
A_MODES = {"inverse-norm": 0.0, "one": 1.0, "zero": 2.0}


@jit(inline="always")
def a_weight(mode, val):
    """a_t: 1/max(1, x_tᵀx_t) (mode 0), 1 (mode 1) or 0 (mode 2). Remark 3, Cases 3, 2, 1."""
    if mode == 0.0:
        return 1.0 / max(1.0, sq_norm(val))
    if mode == 1.0:
        return 1.0
    return 0.0


@jit(inline="always")
def inverse_h_quad(s, idx, val, delta):
    """v_t = x_tᵀ H_{t−1}⁻¹ x_t = Σ_i x_i² / (δ + s_{t−1,i}). O(nnz)."""
    v = 0.0
    for j in range(idx.size):
        v += val[j] * val[j] / (delta + s[idx[j]])
    return v


@jit(inline="always")
def da_margin(g_sum, s, idx, val, delta, eta):
    """p̂_t = w_tᵀx_t with w_t = −η H_{t−1}⁻¹ Σ_{k<t} g_k (line 13). O(nnz)."""
    p = 0.0
    for j in range(idx.size):
        i = idx[j]
        p -= eta * g_sum[i] / (delta + s[i]) * val[j]
    return p


@jit
def da_update(g_sum, s, idx, val, y, delta, eta):
    """Dual averaging, Algorithm 1 lines 8, 12, 13, when f_t(w_t) > 0. O(nnz)."""
    if 1.0 - y * da_margin(g_sum, s, idx, val, delta, eta) <= 0.0 or sq_norm(val) == 0.0:
        return False  # g_t = 0: nothing changes
    for j in range(idx.size):
        i = idx[j]
        g = -y * val[j]  # g_t = −y_t x_t
        s[i] = math.sqrt(s[i] * s[i] + g * g)  # line 12: s_{t,i} = ‖G_{1:t,i}‖₂
        g_sum[i] += g  # line 13 reads w_{t+1} = −η H_t⁻¹ Σ g lazily
    return True


@jit
def md_update(w, s, idx, val, y, delta, eta):
    """Mirror descent, Algorithm 1 lines 8, 12, 14, when f_t(w_t) > 0. O(nnz)."""
    p = 0.0
    for j in range(idx.size):
        p += w[idx[j]] * val[j]
    if 1.0 - y * p <= 0.0 or sq_norm(val) == 0.0:
        return False  # g_t = 0: nothing changes
    for j in range(idx.size):
        i = idx[j]
        g = -y * val[j]  # g_t = −y_t x_t
        s[i] = math.sqrt(s[i] * s[i] + g * g)  # line 12
        w[i] -= eta * g / (delta + s[i])  # line 14: w_{t+1} = w_t − η H_t⁻¹ g_t
    return True


@kernel(SCORE_SIG)
def _da_score(S, a, P, idx, val):
    delta, eta = P[0], P[1]
    v = a_weight(P[2], val) * inverse_h_quad(S[1], idx, val, delta)
    return da_margin(S[0], S[1], idx, val, delta, eta), np.nan, v, -1


@kernel(UPDATE_SIG)
def _da_update(S, a, P, idx, val, y, weight):
    return da_update(S[0], S[1], idx, val, y, P[0], P[1])


@kernel(SCORE_SIG)
def _md_score(S, a, P, idx, val):
    w = S[0]
    p = 0.0
    for j in range(idx.size):
        p += w[idx[j]] * val[j]
    return p, np.nan, a_weight(P[2], val) * inverse_h_quad(S[1], idx, val, P[0]), -1


@kernel(UPDATE_SIG)
def _md_update(S, a, P, idx, val, y, weight):
    return md_update(S[0], S[1], idx, val, y, P[0], P[1])


class _AdaptiveRule(UpdateRule):
    _constraints: ClassVar = {
        "delta": Interval(0, None, closed="neither"),
        "eta": Interval(0, None, closed="neither"),
        "a": Options(*A_MODES),
    }
    provides: ClassVar = frozenset({"p", "v"})

    def __init__(self, *, delta: float = 1.0, eta: float = 1.0, a: str = "inverse-norm") -> None:
        self.delta = delta
        self.eta = eta
        self.a = a
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([self.delta, self.eta, A_MODES[self.a]])


class DualAveragingRule(_AdaptiveRule):
    """Dual averaging with the diagonal AdaGrad matrix H_t (the update of DA, R-/M-/D-ADA).

    Parameters
    ----------
    delta : float > 0, default 1.0
        δ of H_t = δI + diag(s_t): larger δ, smaller steps and fewer certain queries.
    eta : float > 0, default 1.0
        Step size η.
    a : {"inverse-norm", "one", "zero"}, default "inverse-norm"
        a_t that scales the reported v = a_t x_tᵀH_{t−1}⁻¹x_t: 1/max(1, x_tᵀx_t) (D-ADA), 1
        (D-ADA-I), 0 (M-ADA). It does not change the model.

    State
    -----
    g_sum_ : float64 (D,)
        Σ_k g_k, the sum of the subgradients of the applied labels.
    s_ : float64 (D,)
        s_t, the per-coordinate ℓ₂ norm of those subgradients.

    Complexity
    ----------
    O(nnz) per scored row and per update; O(D) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = DualAveragingRule(delta=1.0, eta=1.0); rule.allocate(2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([2.0]), 1)
    True
    >>> rule.g_sum_.tolist(), rule.s_.tolist()
    ([-2.0, 0.0], [2.0, 0.0])
    >>> float(rule.score(np.array([[1.0, 0.0]])).p[0])   # w₀ = −1·(−2)/(1 + 2)
    0.6666666666666666

    References
    ----------
    Online active learning for high-dimensional classification, Algorithm 1 (DA update);
    Duchi, Hazan & Singer, JMLR 12, 2011.
    """

    score_kernel = _da_score
    update_kernel = _da_update
    scaling: ClassVar = {"g_sum": -1, "s": -1}  # kept as w_i → r_i w_i, √G_i → √G_i/r_i: see the kernel
    signed: ClassVar = ("g_sum",)
    rescale_kernel = rescale_dual_averaging

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"g_sum": 1, "s": 1}


class MirrorDescentRule(_AdaptiveRule):
    """Mirror descent with the diagonal AdaGrad matrix H_t (the update of MD, R-/M-/D-AMD).

    Parameters
    ----------
    delta : float > 0, default 1.0
        δ of H_t = δI + diag(s_t).
    eta : float > 0, default 1.0
        Step size η.
    a : {"inverse-norm", "one", "zero"}, default "inverse-norm"
        a_t that scales the reported v (see :class:`DualAveragingRule`).

    State
    -----
    w_ : float64 (D,)
        The weights.
    s_ : float64 (D,)
        s_t, the per-coordinate ℓ₂ norm of the applied subgradients.

    Complexity
    ----------
    O(nnz) per scored row and per update; O(D) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = MirrorDescentRule(delta=1.0, eta=1.0); rule.allocate(2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([2.0]), 1)   # w₀ = 0 + 1·2/(1 + 2)
    True
    >>> rule.w_.tolist(), rule.s_.tolist()
    ([0.6666666666666666, 0.0], [2.0, 0.0])

    References
    ----------
    Online active learning for high-dimensional classification, Algorithm 1 (MD update);
    Duchi, Hazan & Singer, JMLR 12, 2011.
    """

    score_kernel = _md_score
    update_kernel = _md_update
    scaling: ClassVar = {"w": 1, "s": -1}  # w_i → r_i w_i, √G_i → √G_i/r_i (g = −y x̃ is in 1/s units)

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"w": 1, "s": 1}
