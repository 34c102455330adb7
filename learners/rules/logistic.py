"""Online logistic regression: a stochastic gradient step on the log loss at every label.

The log loss ℓ(w; x, y) = log(1 + e^(−y w·x)) has the gradient g = −y σ(−y w·x) x, σ(z) = 1/(1 + e^(−z));
unlike the hinge loss it is never zero, so every label moves the model, most where it was least sure.
The model is the one River's ``linear_model.LogisticRegression`` and VW's ``--loss_function
logistic`` learn, and its score w·x is a log-odds, so an entropy query reads calibrated
probabilities from it. Two steps:

- plain SGD (Zhang, "Solving large scale linear prediction problems using stochastic gradient
  descent algorithms", ICML 2004, Eq. 2): w ← w − η g, River's default with η = 0.01;
- diagonal AdaGrad (Duchi, Hazan & Singer, "Adaptive subgradient methods for online learning and
  stochastic optimization", JMLR 12, 2011, Sect. 1.1 and Fig. 1, H_t = δI + diag(G_t)^½):
  G ← G + g ⊙ g, w ← w − η g / (δ + √G), coordinate by coordinate. A rare feature keeps a large
  step, which is what sparse text and one-hot rows need. With δ = 0 the step does not depend on
  the scale of x, and a coordinate's first step is η·sign(g) whatever |g| is; δ > 0 makes a first
  small gradient a small step.

AdaGrad's step shrinks like 1/√G: after thousands of labels the model barely moves, and a concept that
changes is not followed. Two forgettings, off by default (β = 1, λ = 0 is the step above exactly):

- of the sums, G ← β G + g ⊙ g: the exponentially weighted sum whose mean RMSProp divides by
  (Tieleman & Hinton, COURSERA "Neural networks for machine learning", Lecture 6.5, 2012); G is
  RMSProp's average times 1/(1 − β), so the step stops shrinking after ~1/(1 − β) updates;
- of the weights, w ← (1 − λ) w before each step: NORMA's shrinkage (Kivinen, Smola & Williamson,
  "Online learning with kernels", IEEE Trans. Signal Processing 52(8), 2004), which gives the model a
  memory of ~1/λ updates and lets it track a drifting target, decoupled from the adaptive step as in
  AdamW (Loshchilov & Hutter, "Decoupled weight decay regularization", ICLR 2019, Algorithm 2, line
  12, with η_t = 1).

Both touch only the coordinates of x, as the step does: O(nnz), and a coordinate forgets over its own
updates, so a rare feature is not erased while it is absent.

The multiclass rule is softmax (multinomial) regression: one row w^r per class, π = softmax(W x),
and the gradient of −log π_y for row r is (π_r − 1[r = y]) x, every row moving at each label.

Under an importance-weighted query a label counts ω = 1/q times: g is multiplied by ω.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, kernel, sparse_dot, sq_norm
from learners.params import Interval, Options
from learners.rules.linear import binary_margin
from learners.rules.multiclass import top_two

__all__ = ["LogisticRule", "SoftmaxRule", "logistic_update", "softmax_residuals", "softmax_update"]

_SGD, _ADAGRAD = 0, 1


@jit(inline="always")
def _step(w, G, i, g, eta, mode, delta, beta, lam):
    """w_i ← (1 − λ) w_i, then w_i − η g_i (SGD) or, with G_i ← β G_i + g_i², w_i − η g_i / (δ + √G_i)
    (AdaGrad)."""
    w[i] *= 1.0 - lam  # NORMA's shrinkage, decoupled from the step; λ = 0 keeps w_i
    if mode == _SGD:
        w[i] -= eta * g
    else:
        G[i] = beta * G[i] + g * g  # RMSProp's sum; β = 1 is AdaGrad's
        if G[i] > 0.0:
            w[i] -= eta * g / (delta + math.sqrt(G[i]))


@jit
def logistic_update(w, G, idx, val, y, eta, mode, weight, delta, beta=1.0, lam=0.0):
    """One step on the log loss of (x, y), y = ±1, weighted by ω, forgetting by β and λ. O(nnz).

    Returns False when the gradient is zero: an all-zero x, or a margin so large that σ(−y p)
    underflows to 0.
    """
    m = y * sparse_dot(w, idx, val)
    s = 1.0 / (1.0 + math.exp(m)) if m < 700.0 else 0.0  # σ(−y p), p = w·x
    if s == 0.0 or sq_norm(val) == 0.0:
        return False
    c = -weight * y * s  # g = −ω y σ(−y p) x
    for j in range(idx.size):
        _step(w, G, idx[j], c * val[j], eta, mode, delta, beta, lam)
    return True


@jit(inline="always")
def softmax_residuals(W, idx, val, y, weight):
    """c_r = ω (π_r − 1[r = y]), π = softmax(W x): row r's gradient of ω·(−log π_y) is c_r x. O(k·nnz)."""
    k = W.shape[0]
    c = np.empty(k)
    for r in range(k):
        c[r] = sparse_dot(W[r], idx, val)
    top = c.max()
    total = 0.0
    for r in range(k):
        c[r] = math.exp(c[r] - top)
        total += c[r]
    for r in range(k):
        c[r] = weight * (c[r] / total - (1.0 if r == y else 0.0))
    return c


@jit
def softmax_update(W, G, idx, val, y, eta, mode, weight, delta, beta=1.0, lam=0.0):
    """One step on −log π_y, π = softmax(W x), weighted by ω: row r moves along ω (π_r − 1[r = y]) x,
    forgetting by β and λ. O(k·nnz). Returns False for an all-zero x."""
    if sq_norm(val) == 0.0:
        return False
    c = softmax_residuals(W, idx, val, y, weight)
    for r in range(W.shape[0]):
        if c[r] != 0.0:
            for j in range(idx.size):
                _step(W[r], G[r], idx[j], c[r] * val[j], eta, mode, delta, beta, lam)
    return True


@kernel(UPDATE_SIG)
def _logistic(S, a, P, idx, val, y, weight):
    return logistic_update(S[0], S[1], idx, val, y, P[0], int(P[1]), weight, P[2], P[3], P[4])


@kernel(UPDATE_SIG)
def _softmax(S, a, P, idx, val, y, weight):
    k = S.shape[0] // 2
    return softmax_update(S[:k], S[k:], idx, val, y, P[0], int(P[1]), weight, P[2], P[3], P[4])


@kernel(SCORE_SIG)
def _softmax_scores(S, a, P, idx, val):
    """p = w^ŷ·x; gap = w^ŷ·x − w^ỹ·x, the log-odds of the top class against the runner-up."""
    top, first, second = top_two(S[: S.shape[0] // 2], idx, val)
    return first, first - second, np.nan, top


_CONSTRAINTS = {"eta": Interval(0, None, closed="neither"), "step": Options("adagrad", "sgd"),
                "damping": Interval(0, None, closed="left"), "beta": Interval(0, 1, closed="right"),
                "lam": Interval(0, 1, closed="left")}
_MODES = {"sgd": _SGD, "adagrad": _ADAGRAD}


class _LogLossRule(UpdateRule):
    _constraints: ClassVar = _CONSTRAINTS
    importance_weights: ClassVar = True  # ω multiplies the gradient
    # w_i → r_i w_i keeps the scores; g_i is in units of 1/s_i, so G_i = Σ β^k g_i² → G_i / r_i²
    scaling: ClassVar = {"w": 1, "G": -2}

    def __init__(self, *, eta: float = 1.0, step: str = "adagrad", damping: float = 0.0, beta: float = 1.0,
                 lam: float = 0.0) -> None:
        self.eta = eta
        self.step = step
        self.damping = damping
        self.beta = beta
        self.lam = lam
        self._validate()

    def _check_params(self) -> None:
        if self.step == "sgd" and self.beta != 1.0:
            raise ValueError(f"beta={self.beta!r} forgets AdaGrad's sums, which step='sgd' does not keep; "
                             "leave beta at 1 (lam forgets the weights of either step)")

    def packed_params(self) -> np.ndarray:
        return np.array([self.eta, _MODES[self.step], self.damping, self.beta, self.lam], dtype=np.float64)


class LogisticRule(_LogLossRule):
    """Binary logistic regression by SGD or diagonal AdaGrad on the log loss, at every label.

    Parameters
    ----------
    eta : float > 0, default 1.0
        Step size η (River's ``LogisticRegression`` uses SGD with 0.01).
    step : {"adagrad", "sgd"}, default "adagrad"
        w ← w − η g / (δ + √G) (AdaGrad, G = Σ g ⊙ g, δ = ``damping``) or w ← w − η g.
    damping : float ≥ 0, default 0.0
        AdaGrad's δ (Duchi et al. 2011, Fig. 1), added to √G: 0 makes a coordinate's first step
        η·sign(g) whatever the size of g.
    beta : float in (0, 1], default 1.0
        Forgetting of AdaGrad's sums, G ← β G + g ⊙ g (RMSProp's average times 1/(1 − β)); 1 is
        AdaGrad. AdaGrad only.
    lam : float in [0, 1), default 0.0
        Forgetting of the weights, w ← (1 − λ) w before each step (NORMA's shrinkage, decoupled as
        AdamW's); 0 keeps them.

    State
    -----
    w_ : float64 (D,)
        The weights; p = w·x is the log-odds of the positive class.
    G_ : float64 (D,)
        AdaGrad's sum of squared gradients per coordinate, discounted by β (unused by SGD).

    Complexity
    ----------
    O(nnz) per scored row and per update; O(D) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = LogisticRule(eta=0.5); rule.allocate(2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([2.0]), 1)   # g₀ = −σ(0)·2 = −1
    True
    >>> rule.G_.tolist(), rule.w_.tolist()   # w₀ = 0.5 · 1/√1
    ([1.0, 0.0], [0.5, 0.0])

    References
    ----------
    Zhang, ICML 2004. Duchi, Hazan & Singer, JMLR 12:2121-2159, 2011. Tieleman & Hinton, Lecture 6.5,
    2012. Kivinen, Smola & Williamson, IEEE Trans. Signal Processing 52(8):2165-2176, 2004. Loshchilov &
    Hutter, ICLR 2019.
    """

    score_kernel = binary_margin
    update_kernel = _logistic

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"w": 1, "G": 1}


class SoftmaxRule(_LogLossRule):
    """Multiclass (softmax) logistic regression by SGD or diagonal AdaGrad, at every label.

    Parameters
    ----------
    eta : float > 0, default 1.0
        Step size η (``mlr-ada-entropy`` takes 2⁻¹).
    step : {"adagrad", "sgd"}, default "adagrad"
        As :class:`LogisticRule`, row by row.
    damping : float ≥ 0, default 0.0
        AdaGrad's δ, as :class:`LogisticRule`.
    beta : float in (0, 1], default 1.0
        Forgetting of AdaGrad's sums, as :class:`LogisticRule`.
    lam : float in [0, 1), default 0.0
        Forgetting of the weights, as :class:`LogisticRule`: every row, on the coordinates of x.

    State
    -----
    w_ : float64 (k, D)
        One weight row per class; π = softmax(W x).
    G_ : float64 (k, D)
        AdaGrad's sums of squared gradients, discounted by β.

    Complexity
    ----------
    O(k·nnz) per scored row and per update; O(k·D) memory.

    Examples
    --------
    >>> import numpy as np
    >>> rule = SoftmaxRule(eta=1.0); rule.allocate(1, n_classes=2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1)   # π = (½, ½)
    True
    >>> rule.w_.tolist()   # ∓1 · ½/√¼
    [[-1.0], [1.0]]

    References
    ----------
    Duchi, Hazan & Singer, JMLR 12:2121-2159, 2011. Tieleman & Hinton, Lecture 6.5, 2012. Kivinen,
    Smola & Williamson, IEEE Trans. Signal Processing 52(8):2165-2176, 2004. Loshchilov & Hutter,
    ICLR 2019.
    """

    multiclass: ClassVar = True
    provides: ClassVar = frozenset({"p", "gap"})
    score_kernel = _softmax_scores
    update_kernel = _softmax

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"w": n_classes, "G": n_classes}

    def update(self, idx: np.ndarray, val: np.ndarray, y: int, weight: float = 1.0) -> bool:
        k = self.S_.shape[0] // 2
        if not 0 <= int(y) < k:
            raise ValueError(f"class index {y} is outside the model's {k} classes (valid: 0..{k - 1})")
        return super().update(idx, val, y, weight)
