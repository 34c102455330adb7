"""Multi-prototype linear rules: one weight row per class, the max-score Perceptron and MPA.

The classifier of Sect. 4.1 of Lu, Zhao & Hoi, "Online Passive-Aggressive Active learning",
Machine Learning 103(2), 2016 (after Crammer & Singer, JMLR 3, 2003, and Crammer et al., JMLR 7,
2006): k weight vectors w^1..w^k, prediction ŷ_t = argmax_r w^r·x_t (Eq. 2). A label y_t updates
only two rows, the true class and s_t = argmax_{r≠y_t} w^r·x_t, the highest-scoring wrong class.

State ``S`` is the k×D matrix whose row r is w^r, so a class index is a row index.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, axpy, kernel, sparse_dot, sq_norm
from learners.params import Interval, Options

__all__ = ["MPARule", "MaxScorePerceptronRule", "max_score_perceptron_update", "mpa_update", "top_two"]


@jit
def top_two(W, idx, val):
    """(ŷ, w^ŷ·x, w^ỹ·x): the best class (Eq. 2) and the two highest scores. O(k·nnz).

    Ties go to the lowest class index, as argmax does. With one class the second score is -inf.
    """
    best, first, second = 0, -np.inf, -np.inf
    for r in range(W.shape[0]):
        score = sparse_dot(W[r], idx, val)
        if score > first:
            best, first, second = r, score, first
        elif score > second:
            second = score
    return best, first, second


@jit
def best_wrong_class(W, idx, val, y):
    """(s_t, γ_t): the highest-scoring class other than y, and the margin
    γ_t = w^{y_t}·x_t − w^{s_t}·x_t (Sect. 4.1). O(k·nnz)."""
    s, best = -1, -np.inf
    for r in range(W.shape[0]):
        if r != y:
            score = sparse_dot(W[r], idx, val)
            if score > best:
                s, best = r, score
    return s, sparse_dot(W[y], idx, val) - best


@kernel(SCORE_SIG)
def top_two_scores(S, a, P, idx, val):
    """p = w^ŷ·x (top-1 score); gap = w^ŷ·x − w^ỹ·x, the confidence p_t of Eq. (5); top = ŷ."""
    top, first, second = top_two(S, idx, val)
    return first, first - second, np.nan, top


@jit
def max_score_perceptron_update(W, idx, val, y):
    """Max-score multiclass Perceptron (Crammer & Singer 2003; Sect. 4.1 of Lu, Zhao & Hoi 2016).

    On a mistake, w^{y_t} += x_t and w^{s_t} −= x_t. A margin γ_t ≤ 0 counts as a mistake (the true
    class does not strictly win), as a zero margin does for the binary Perceptron; an all-zero x
    gives no direction to move in. O(k·nnz).
    """
    s, gamma = best_wrong_class(W, idx, val, y)
    if gamma > 0.0:
        return False
    if sq_norm(val) == 0.0:
        return False
    axpy(W[y], 1.0, idx, val)  # w^{y_t}_{t+1} = w^{y_t}_t + x_t
    axpy(W[s], -1.0, idx, val)  # w^{s_t}_{t+1} = w^{s_t}_t − x_t
    return True


@jit
def mpa_update(W, idx, val, y, C, mode):
    """One MPA step on (x, y): Eqs. (3)-(4) of Lu, Zhao & Hoi 2016. O(k·nnz).

    mode 0 = MPA, 1 = MPA-I, 2 = MPA-II. Returns False on a passive round (γ_t ≥ 1) and for an
    all-zero x.
    """
    s, gamma = best_wrong_class(W, idx, val, y)
    loss = 1.0 - gamma  # ℓ_t = max(0, 1 − γ_t)
    if loss <= 0.0:
        return False
    sq = sq_norm(val)  # ‖x_t‖²
    if sq == 0.0:
        return False
    if mode == 0:
        tau = loss / (2.0 * sq)  # Eq. (4), MPA
    elif mode == 1:
        tau = min(C, loss / (2.0 * sq))  # Eq. (4), MPA-I
    else:
        tau = loss / (2.0 * sq + 1.0 / (2.0 * C))  # Eq. (4), MPA-II
    axpy(W[y], tau, idx, val)  # Eq. (3): w^{y_t} += τ_t x_t
    axpy(W[s], -tau, idx, val)  # Eq. (3): w^{s_t} −= τ_t x_t
    return True


@kernel(UPDATE_SIG)
def _perceptron(S, a, P, idx, val, y, weight):
    return max_score_perceptron_update(S, idx, val, y)


@kernel(UPDATE_SIG)
def _mpa(S, a, P, idx, val, y, weight):
    # importance weight ω: C ω for C in Eq. (4), as for the binary PA-I and PA-II
    return mpa_update(S, idx, val, y, P[0] * weight, int(P[1]))


class _MulticlassRule(UpdateRule):
    """A rule over k class rows; labels are class indices 0..k-1."""

    multiclass: ClassVar = True
    provides: ClassVar = frozenset({"p", "gap"})
    score_kernel = top_two_scores

    def update(self, idx: np.ndarray, val: np.ndarray, y: int, weight: float = 1.0) -> bool:
        k = self.S_.shape[0]
        if not 0 <= int(y) < k:
            raise ValueError(f"class index {y} is outside the model's {k} classes (valid: 0..{k - 1})")
        return super().update(idx, val, y, weight)


class MaxScorePerceptronRule(_MulticlassRule):
    """Max-score multiclass Perceptron: on a mistake, w^y += x and w^s −= x (s: best wrong class).

    The Perceptron base of MRPE and MPEA (Lu, Zhao & Hoi 2016, Sect. 6.2.1). It changes only two
    rows per update, which is why the paper prefers it to the uniform-update Perceptron as the
    counterpart of MPA.

    Parameters
    ----------
    None.

    State
    -----
    w_ : float64 (k, D)
        One weight row per class (the last column is the intercept when the learner has one).

    Complexity
    ----------
    O(k·nnz) per update and per scored row.

    Examples
    --------
    >>> import numpy as np
    >>> rule = MaxScorePerceptronRule(); rule.allocate(2, n_classes=3)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 2)   # all scores tie: a mistake
    True
    >>> rule.w_.tolist()     # s_t = class 0, the first of the tied wrong classes
    [[-1.0, 0.0], [0.0, 0.0], [1.0, 0.0]]

    References
    ----------
    Crammer & Singer, JMLR 3:951-991, 2003. Lu, Zhao & Hoi, Mach. Learn. 103(2):141-183, 2016.
    """

    update_kernel = _perceptron

    def __init__(self) -> None:
        self._validate()


class MPARule(_MulticlassRule):
    """Multiclass Passive-Aggressive update (MPA, MPA-I, MPA-II) of Lu, Zhao & Hoi 2016, Sect. 4.1.

    On a labelled round with ℓ_t = max(0, 1 − γ_t) > 0, γ_t = w^y·x − w^s·x: w^y += τ_t x and
    w^s −= τ_t x (Eq. 3), τ_t = ℓ/(2‖x‖²) (MPA), min(C, ℓ/(2‖x‖²)) (MPA-I) or ℓ/(2‖x‖² + 1/(2C))
    (MPA-II) (Eq. 4). With two classes it is binary PA on u = w¹ − w⁰ with C doubled.

    Parameters
    ----------
    mode : {0, 1, 2}, default 1
        0 = MPA (hard margin), 1 = MPA-I, 2 = MPA-II.
    C : float > 0, default 1.0
        Aggressiveness C of MPA-I / MPA-II (ignored by MPA).

    State
    -----
    w_ : float64 (k, D)
        One weight row per class (the last column is the intercept when the learner has one).

    Complexity
    ----------
    O(k·nnz) per update and per scored row.

    Examples
    --------
    >>> import numpy as np
    >>> rule = MPARule(mode=1, C=1.0); rule.allocate(2, n_classes=3)
    >>> rule.update(np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0]), 1)  # ℓ = 1, τ = 1/4
    True
    >>> rule.w_.tolist()
    [[-0.25, -0.25], [0.25, 0.25], [0.0, 0.0]]

    References
    ----------
    Crammer et al., JMLR 7:551-585, 2006. Lu, Zhao & Hoi, Mach. Learn. 103(2):141-183, 2016.
    """

    _constraints: ClassVar = {"mode": Options(0, 1, 2), "C": Interval(0, None, closed="neither")}
    update_kernel = _mpa

    @property
    def importance_weights(self) -> bool:
        """MPA-I and MPA-II weigh a label's slack by its importance ω (C ω for C); MPA's hard
        constraint has no slack to weigh."""
        return self.mode != 0

    def __init__(self, *, mode: int = 1, C: float = 1.0) -> None:
        self.mode = mode
        self.C = C
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([self.C, self.mode], dtype=np.float64)
