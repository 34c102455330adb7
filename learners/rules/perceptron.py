"""The Perceptron update (Rosenblatt 1958), the base of PE, RPE, PEA/LEPE and SEL-ada."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, axpy, kernel, sparse_dot, sq_norm

__all__ = ["PerceptronRule", "perceptron_update", "squared_radius"]


@jit
def perceptron_update(w, idx, val, y):
    """w ← w + y x on a mistake (y w·x ≤ 0): Sect. 3.1 of Lu, Zhao & Hoi 2016. O(nnz).

    A zero margin counts as a mistake, whichever way the learner breaks ties when predicting.
    """
    if y * sparse_dot(w, idx, val) > 0.0:
        return False
    if sq_norm(val) == 0.0:
        return False
    axpy(w, float(y), idx, val)  # w_{t+1} = w_t + y_t x_t
    return True


@jit
def squared_radius(X2, val):
    """X'² = max(X²_{k−1}, ‖x_t‖²): Cesa-Bianchi, Gentile & Zaniboni 2006, Fig. 2. O(nnz)."""
    return max(X2, sq_norm(val))


@kernel(SCORE_SIG)
def _score(S, a, P, idx, val):
    return sparse_dot(S[0], idx, val), np.nan, squared_radius(a[0], val), -1


@kernel(UPDATE_SIG)
def _update(S, a, P, idx, val, y, weight):
    changed = perceptron_update(S[0], idx, val, y)
    if changed:
        a[0] = squared_radius(a[0], val)  # X_k = X' on an update round only (ibid., Fig. 2)
    return changed


class PerceptronRule(UpdateRule):
    """Perceptron update of a binary linear model: w ← w + y x when y w·x ≤ 0.

    Besides the margin p = w·x, the rule reports v = X'² = max(X², ‖x‖²), where X² is the largest
    squared norm among the rows it was updated on: the radius term of the adaptive selective
    sampling Perceptron (SEL-ada), whose query parameter is b_t = β X'² √(1 + K).

    Parameters
    ----------
    None.

    State
    -----
    w_ : float64 (D,)
        The weight vector (the last entry is the intercept when the learner has one).
    radius_sq : float
        X², the largest ‖x‖² of a row that caused an update (0 before the first).

    Complexity
    ----------
    O(nnz) per update and per scored row.

    Examples
    --------
    >>> import numpy as np
    >>> rule = PerceptronRule(); rule.allocate(2)
    >>> rule.update(np.array([1], dtype=np.int32), np.array([2.0]), -1), rule.w_.tolist()
    (True, [0.0, -2.0])
    >>> rule.state_dict()["radius_sq"].item()
    4.0

    References
    ----------
    Rosenblatt, Psychological Review 65(6), 1958. Cesa-Bianchi, Gentile & Zaniboni, JMLR 7, 2006.
    """

    provides: ClassVar = frozenset({"p", "v"})
    scalars: ClassVar = ("radius_sq",)
    score_kernel = _score
    update_kernel = _update

    def __init__(self) -> None:
        self._validate()
