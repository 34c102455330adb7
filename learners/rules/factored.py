"""Softmax regression by AdaGrad whose sums of squared gradients are factored: one per class, one per
feature.

:class:`learners.rules.logistic.SoftmaxRule`'s AdaGrad keeps a sum G_ri of squared gradients for
each of the k·D weights. On a feature it has not seen, a row's first step is then η·sign(g_ri) for
every class, however small the gradient c_r x_i is: a class the model already rules out (π_r ≈ 0)
moves as far as the true one. Sparse text with many classes meets a new feature in most rows, and
each such step is noise in the k − 1 rows that had no reason to move.

Adafactor (Shazeer & Stern, "Adafactor: Adaptive learning rates with sublinear memory cost", ICML
2018, Sect. 3) stands for the k × D matrix of second moments by its row sums R and column sums C,
G ≈ R C / (1ᵀR), the rank-one fit that keeps both sums. Here they are summed over the stream, as
AdaGrad's G is (Adafactor's β̂₂ = 1), not averaged. A step is then η g_ri / (δ + √(R_r C_i / Σ_s R_s)):
a row moves by its share of the feature's gradient, the feature's scale still sets the step's size,
and a class whose gradients have been large steps less than one whose have been small.

Every row moves at each label, as in :class:`~learners.rules.logistic.SoftmaxRule`; the state is the
k·D weights, D column sums and k row sums. The two forgettings of :mod:`learners.rules.logistic`
apply here too: both sums discounted by β at each of their updates (Adafactor's β̂₂ < 1, as
RMSProp's), the weights shrunk by (1 − λ) on the coordinates of x.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, kernel, sq_norm
from learners.params import Interval
from learners.rules.logistic import softmax_residuals
from learners.rules.multiclass import top_two

__all__ = ["FactoredSoftmaxRule", "factored_softmax_update"]


@jit
def factored_softmax_update(W, C, R, idx, val, y, eta, weight, delta, beta=1.0, lam=0.0):
    """One step on ω·(−log π_y), π = softmax(W x): row r's gradient is g_r = c_r x with
    c_r = ω (π_r − 1[r = y]), and with the factored sums (Sect. 3, discounted by β; β = 1 sums over
    the stream)

    R_r ← β R_r + Σ_i g_ri² = β R_r + c_r² ‖x‖²,   C_i ← β C_i + Σ_r g_ri² = β C_i + x_i² Σ_r c_r²,
    W_ri ← (1 − λ) W_ri − η g_ri / (δ + √(R_r C_i / Σ_s R_s)), the step where that root is > 0.

    O(k·nnz). Returns False for an all-zero x."""
    k = W.shape[0]
    xx = sq_norm(val)
    if xx == 0.0:
        return False
    c = softmax_residuals(W, idx, val, y, weight)
    cc = 0.0  # Σ_r c_r²
    rows = 0.0  # Σ_s R_s
    for r in range(k):
        cc += c[r] * c[r]
        R[r] = beta * R[r] + c[r] * c[r] * xx
        rows += R[r]
    share = np.zeros(k)  # √(R_r / Σ_s R_s), so that √(R_r C_i / Σ_s R_s) = share_r √C_i
    if rows > 0.0:
        for r in range(k):
            share[r] = math.sqrt(R[r] / rows)
    for j in range(idx.size):
        i = idx[j]
        C[i] = beta * C[i] + cc * val[j] * val[j]
        root = math.sqrt(C[i])
        for r in range(k):
            W[r, i] *= 1.0 - lam  # λ = 0 keeps W_ri
            v = share[r] * root
            if v > 0.0:
                W[r, i] -= eta * c[r] * val[j] / (delta + v)
    return True


@kernel(UPDATE_SIG)
def _factored(S, a, P, idx, val, y, weight):
    k = S.shape[0] - 1
    return factored_softmax_update(S[:k], S[k], a, idx, val, y, P[0], weight, P[1], P[2], P[3])


@kernel(SCORE_SIG)
def _factored_scores(S, a, P, idx, val):
    """p = w^ŷ·x; gap = w^ŷ·x − w^ỹ·x, the log-odds of the top class against the runner-up."""
    top, first, second = top_two(S[: S.shape[0] - 1], idx, val)
    return first, first - second, np.nan, top


class FactoredSoftmaxRule(UpdateRule):
    """Multiclass (softmax) logistic regression by AdaGrad with factored sums of squared gradients
    (:func:`factored_softmax_update`), at every label.

    Parameters
    ----------
    eta : float > 0, default 0.5
        Step size η.
    damping : float ≥ 0, default 0.0
        AdaGrad's δ (Duchi et al. 2011, Fig. 1), added to the root.
    beta : float in (0, 1], default 1.0
        Forgetting of both sums, C ← β C + …, R ← β R + … (as RMSProp's); 1 sums over the stream.
    lam : float in [0, 1), default 0.0
        Forgetting of the weights, W_ri ← (1 − λ) W_ri on the coordinates of x before each step
        (NORMA's shrinkage, decoupled as AdamW's); 0 keeps them.

    State
    -----
    w_ : float64 (k, D)
        One weight row per class; π = softmax(W x).
    C_ : float64 (D,)
        Per feature, the sum over the stream and the classes of the squared gradients, discounted by β.
    R_ : float64 (k,)
        Per class, the sum over the stream and the features of the squared gradients, discounted by β.
        They mix the features, so online feature scaling (:mod:`learners.scaling`) leaves them as
        they are: the scores stay exact, and the steps after a rescale use sums gathered on the old
        scale.

    Complexity
    ----------
    O(k·nnz) per scored row and per update; O(k·D) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = FactoredSoftmaxRule(eta=1.0); rule.allocate(1, n_classes=2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1)   # π = (½, ½), c = (½, −½)
    True
    >>> rule.R_.tolist(), rule.C_.tolist()
    ([0.25, 0.25], [0.5])
    >>> rule.w_.round(12).tolist()   # ∓1 · ½ / √(¼ · ½ / ½), √½ · √½ rounded
    [[-1.0], [1.0]]

    References
    ----------
    Shazeer & Stern, "Adafactor: Adaptive learning rates with sublinear memory cost", ICML 2018,
    Sect. 3. Duchi, Hazan & Singer, JMLR 12:2121-2159, 2011. Tieleman & Hinton, Lecture 6.5, 2012.
    Kivinen, Smola & Williamson, IEEE Trans. Signal Processing 52(8):2165-2176, 2004. Loshchilov &
    Hutter, ICLR 2019.
    """

    _constraints: ClassVar = {"eta": Interval(0, None, closed="neither"),
                              "damping": Interval(0, None, closed="left"),
                              "beta": Interval(0, 1, closed="right"), "lam": Interval(0, 1, closed="left")}
    importance_weights: ClassVar = True  # ω multiplies the gradient
    # w_i → r_i w_i keeps the scores; C_i, a sum of squared gradients in units of 1/s_i, → C_i / r_i²
    scaling: ClassVar = {"w": 1, "C": -2}
    multiclass: ClassVar = True
    provides: ClassVar = frozenset({"p", "gap"})
    score_kernel = _factored_scores
    update_kernel = _factored

    def __init__(self, *, eta: float = 0.5, damping: float = 0.0, beta: float = 1.0, lam: float = 0.0) -> None:
        self.eta = eta
        self.damping = damping
        self.beta = beta
        self.lam = lam
        self._validate()
        self._n_classes = 0  # set by allocate: the length of R

    def packed_params(self) -> np.ndarray:
        return np.array([self.eta, self.damping, self.beta, self.lam], dtype=np.float64)

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"w": n_classes, "C": 1}

    def vectors(self) -> dict[str, int]:
        return {"R": self._n_classes}

    def allocate(self, n_features: int, n_classes: int = 2) -> None:
        self._n_classes = n_classes
        super().allocate(n_features, n_classes)

    def _keeps_2d(self, name: str) -> bool:
        return name == "w"

    def update(self, idx: np.ndarray, val: np.ndarray, y: int, weight: float = 1.0) -> bool:
        k = self.w_.shape[0]
        if not 0 <= int(y) < k:
            raise ValueError(f"class index {y} is outside the model's {k} classes (valid: 0..{k - 1})")
        return super().update(idx, val, y, weight)
