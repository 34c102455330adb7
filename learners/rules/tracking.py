"""Perceptron variants that track a moving target: the first-order drift baselines of LASEC.

Moroshko & Crammer (AISTATS 2014, Sect. 5) compare LASEC with three of them:

* the **Shifting Perceptron** (Cavallanti, Cesa-Bianchi & Gentile, "Tracking the best hyperplane
  with a simple budget Perceptron", Mach. Learn. 69, 2007): on the k-th mistake (k = 0, 1, …)
  w ← (1 − λ_k) w + y x with λ_k = λ/(λ + k), a shrinkage of every coordinate;
* the **Randomized Budget Perceptron** (ibid.): a Perceptron whose support set holds at most B
  examples; on a mistake with a full set, one of them, drawn uniformly, is discarded;
* the **Modified Perceptron** (Blum, Frieze, Kannan & Vempala, Algorithmica 22, 1998, in the form
  of Dasgupta, Kalai & Monteleoni, COLT 2005, analysed under drift by Crammer, Even-Dar, Mansour &
  Vaughan, COLT 2010): w_1 = y_1 x_1, then on a mistake w ← w − 2 (w·x) x, a reflection that keeps
  ‖w‖ = 1 for unit-norm inputs.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.coin import draw
from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, axpy, kernel, sparse_dot, sq_norm
from learners.memory import require_fits
from learners.params import Interval
from learners.rules.linear import binary_margin

__all__ = [
    "ModifiedPerceptronRule",
    "RandomizedBudgetPerceptronRule",
    "ShiftingPerceptronRule",
    "modified_perceptron_update",
    "randomized_budget_update",
    "shifting_perceptron_update",
]

# Below this the lazily kept scale of the Shifting Perceptron is folded back into w (an O(D) pass
# that happens at most once per ~10^100 of accumulated shrinkage), before it could underflow.
_MIN_SCALE = 1e-100


# -- Shifting Perceptron ----------------------------------------------------------------------
@jit
def shifting_perceptron_update(w, a, idx, val, y, lam):
    """One Shifting Perceptron step on (x, y); the true weights are a[1]·w. O(nnz) amortised.

    Cavallanti, Cesa-Bianchi & Gentile 2007: on a mistake (y wᵀx ≤ 0), λ_k = λ/(λ + k) and
    w ← (1 − λ_k) w + y x, k = mistakes so far (a[0]). The shrinkage of every coordinate is kept
    in the scale a[1], so w_stored ← w_stored + y x / scale touches only x's coordinates.
    """
    if y * a[1] * sparse_dot(w, idx, val) > 0.0 or sq_norm(val) == 0.0:
        return False
    k = a[0]
    if k > 0.0:  # λ_0 = 1 would zero w, which is still 0 before the first mistake
        a[1] *= 1.0 - lam / (lam + k)  # (1 − λ_k)
    if a[1] < _MIN_SCALE:
        w *= a[1]
        a[1] = 1.0
    axpy(w, y / a[1], idx, val)  # w_{k+1} = (1 − λ_k) w_k + y x
    a[0] = k + 1.0
    return True


@kernel(SCORE_SIG)
def _shifting_score(S, a, P, idx, val):
    return a[1] * sparse_dot(S[0], idx, val), np.nan, np.nan, -1


@kernel(UPDATE_SIG)
def _shifting_update(S, a, P, idx, val, y, weight):
    return shifting_perceptron_update(S[0], a, idx, val, y, P[0])


class ShiftingPerceptronRule(UpdateRule):
    """Shifting Perceptron: w ← (1 − λ_k) w + y x on the k-th mistake, λ_k = λ/(λ + k).

    Parameters
    ----------
    lam : float > 0, default 0.01
        λ; larger values forget faster. Moroshko & Crammer use 0.01 (synthetic) and 0.0001 (USPS).

    State
    -----
    w_ : float64 (D,)
        Stored weights; the model is ``scale · w_``.
    mistakes, scale : float
        k, the updates so far, and the accumulated shrinkage Π(1 − λ_j).

    Complexity
    ----------
    O(nnz) per scored row and per update (the shrinkage is a scalar).

    Examples
    --------
    >>> import numpy as np
    >>> rule = ShiftingPerceptronRule(lam=1.0); rule.allocate(2)
    >>> one, two = (np.array([0], dtype=np.int32), np.array([1.0])), (np.array([1], dtype=np.int32), np.array([1.0]))
    >>> rule.update(*one, 1), rule.update(*two, 1)     # λ_1 = 1/2 halves w before adding x
    (True, True)
    >>> rule.weights().tolist()
    [0.5, 1.0]

    References
    ----------
    G. Cavallanti, N. Cesa-Bianchi and C. Gentile, Tracking the best hyperplane with a simple
    budget Perceptron, Machine Learning 69(2-3):143-167, 2007.
    """

    scalars: ClassVar = ("mistakes", "scale")
    _constraints: ClassVar = {"lam": Interval(0, None, closed="neither")}
    score_kernel = _shifting_score
    update_kernel = _shifting_update

    def __init__(self, *, lam: float = 0.01) -> None:
        self.lam = lam
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([self.lam])

    def initialize(self) -> None:
        self.a_[1] = 1.0

    def weights(self) -> np.ndarray:
        """The model's weight vector, scale · w. O(D)."""
        return self.a_[1] * self.w_


# -- Modified Perceptron ----------------------------------------------------------------------
@jit
def modified_perceptron_update(w, a, idx, val, y):
    """One Modified Perceptron step: w_1 = y x/‖x‖, then w ← w − 2 (wᵀx) x/‖x‖² on a mistake. O(nnz).

    For unit-norm x this is Dasgupta, Kalai & Monteleoni's w − 2(w·x)x; dividing by ‖x‖² makes it
    the same reflection (‖w‖ kept) for any x. a[0] counts the updates.
    """
    sq = sq_norm(val)
    m = sparse_dot(w, idx, val)
    if y * m > 0.0 or sq == 0.0:
        return False
    if a[0] == 0.0:
        axpy(w, y / np.sqrt(sq), idx, val)  # w_1 = y_1 x_1 (unit norm)
    elif m == 0.0:
        return False  # the reflection of a w orthogonal to x is w itself
    else:
        axpy(w, -2.0 * m / sq, idx, val)  # w ← w − 2 (w·x) x
    a[0] += 1.0
    return True


@kernel(UPDATE_SIG)
def _modified_update(S, a, P, idx, val, y, weight):
    return modified_perceptron_update(S[0], a, idx, val, y)


class ModifiedPerceptronRule(UpdateRule):
    """Modified Perceptron: on a mistake, reflect w through the hyperplane orthogonal to x.

    Parameters
    ----------
    None.

    State
    -----
    w_ : float64 (D,)
        The weight vector (unit norm after the first update).
    updates : float
        Updates so far (the first one sets w = y x/‖x‖).

    Complexity
    ----------
    O(nnz) per scored row and per update.

    Examples
    --------
    >>> import numpy as np
    >>> rule = ModifiedPerceptronRule(); rule.allocate(2)
    >>> rule.update(np.array([0, 1], dtype=np.int32), np.array([3.0, 4.0]), 1)
    True
    >>> rule.w_.round(12).tolist()                            # y x / ‖x‖
    [0.6, 0.8]
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), -1), rule.w_.round(12).tolist()
    (True, [-0.6, 0.8])

    References
    ----------
    A. Blum, A. Frieze, R. Kannan and S. Vempala, Algorithmica 22:35-52, 1998. S. Dasgupta,
    A. Kalai and C. Monteleoni, Analysis of Perceptron-based active learning, COLT 2005.
    K. Crammer, E. Even-Dar, Y. Mansour and J. Vaughan, Regret minimization with concept drift,
    COLT 2010.
    """

    scalars: ClassVar = ("updates",)
    score_kernel = binary_margin
    update_kernel = _modified_update

    def __init__(self) -> None:
        self._validate()


# -- Randomized Budget Perceptron -------------------------------------------------------------
@jit
def randomized_budget_update(w, sv, a, idx, val, y, seed):
    """One Randomized Budget Perceptron step (Cavallanti et al. 2007). O(nnz + D) on an eviction.

    On a mistake: if the support set is full (a[0] = B), discard the example in a uniformly drawn
    slot j (w ← w − y_j x_j); store y x in the free slot and w ← w + y x. The draw is
    ``coin(seed, a[1])``, a[1] counting the updates: replaying a stream repeats every eviction.
    """
    if y * sparse_dot(w, idx, val) > 0.0 or sq_norm(val) == 0.0:
        return False
    budget = sv.shape[0]
    n = int(a[0])
    if n < budget:
        j = n
        a[0] = n + 1.0
    else:
        j = min(int(draw(seed, np.uint64(a[1])) * budget), budget - 1)
        w -= sv[j]  # forget y_j x_j
        sv[j, :] = 0.0
    for k in range(idx.size):
        sv[j, idx[k]] = y * val[k]
    axpy(w, float(y), idx, val)  # w ← w + y x
    a[1] += 1.0
    return True


@kernel(UPDATE_SIG)
def _budget_update(S, a, P, idx, val, y, weight):
    return randomized_budget_update(S[0], S[1:], a, idx, val, y, np.uint64(P[0]))


class RandomizedBudgetPerceptronRule(UpdateRule):
    """Perceptron with at most B support vectors; a random one is discarded to make room.

    Parameters
    ----------
    budget : int ≥ 1, default 500
        B. Moroshko & Crammer use the switching window: 500 (synthetic), 1,000 (USPS).
    seed : int ≥ 0, default 0
        Seed of the evictions (the learner's ``seed`` when built with :func:`learners.make`).

    State
    -----
    w_ : float64 (D,)
        w = Σ_{i ∈ support set} y_i x_i.
    sv_ : float64 (B, D)
        The support set, one signed example y_i x_i per row (zero rows are free slots).
    size, updates : float
        Examples in the support set; updates so far (the key of the next eviction draw).

    Complexity
    ----------
    O(nnz) per scored row; O(nnz) per update, O(D) more when one is discarded. Memory (B + 1)·D
    floats: large B·D is refused.

    Examples
    --------
    >>> import numpy as np
    >>> rule = RandomizedBudgetPerceptronRule(budget=1); rule.allocate(2)
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1)
    True
    >>> rule.update(np.array([1], dtype=np.int32), np.array([2.0]), -1)    # full: x_1 is discarded
    True
    >>> rule.w_.tolist()
    [0.0, -2.0]

    References
    ----------
    G. Cavallanti, N. Cesa-Bianchi and C. Gentile, Machine Learning 69(2-3):143-167, 2007.
    """

    scalars: ClassVar = ("size", "updates")
    has_sparse_update: ClassVar = False
    _constraints: ClassVar = {
        "budget": Interval(1, 2**31 - 1, integer=True),
        "seed": Interval(0, 2**53, integer=True),
    }
    score_kernel = binary_margin
    update_kernel = _budget_update
    scaling: ClassVar = None  # stored examples, not weights: refused like the kernel rules

    def __init__(self, *, budget: int = 500, seed: int = 0) -> None:
        self.budget = budget
        self.seed = seed
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([float(self.seed)])

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        require_fits(self.budget + 1, n_features, f"a Randomized Budget Perceptron with {self.budget:,} support "
                     f"vectors over {n_features:,} features", "a smaller budget, or 'shifting-perceptron'")
        return {"w": 1, "sv": int(self.budget)}

    def _keeps_2d(self, name: str) -> bool:
        return name == "sv"
