"""The Perceptron update (Rosenblatt 1958), the base of PE, RPE, PEA/LEPE and SEL-ada."""

from __future__ import annotations

from numba import njit

from learners.base import UpdateRule
from learners.kernels import UPDATE_SIG, axpy, kernel, sparse_dot, sq_norm
from learners.rules.linear import binary_margin

__all__ = ["PerceptronRule", "perceptron_update"]


@njit(cache=True, nogil=True)
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


@kernel(UPDATE_SIG)
def _update(S, a, P, idx, val, y):
    return perceptron_update(S[0], idx, val, y)


class PerceptronRule(UpdateRule):
    """Perceptron update of a binary linear model: w ← w + y x when y w·x ≤ 0.

    Parameters
    ----------
    None.

    State
    -----
    w_ : float64 (D,)
        The weight vector (the last entry is the intercept when the learner has one).

    Complexity
    ----------
    O(nnz) per update and per scored row.

    Examples
    --------
    >>> import numpy as np
    >>> rule = PerceptronRule(); rule.allocate(2)
    >>> rule.update(np.array([1], dtype=np.int32), np.array([2.0]), -1), rule.w_.tolist()
    (True, [0.0, -2.0])

    References
    ----------
    Rosenblatt, Psychological Review 65(6), 1958. Cesa-Bianchi, Gentile & Zaniboni, JMLR 7, 2006.
    """

    score_kernel = binary_margin
    update_kernel = _update

    def __init__(self) -> None:
        self._validate()
