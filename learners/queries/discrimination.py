"""The discrimination-based query of D-ADA / D-AMD and their multiclass versions.

"Online active learning for high-dimensional classification", Algorithm 1 (lines 5-6) and
Algorithm 2 (Eqs. 7-9): the margin is compensated by how rare the features of x_t still are,

    q_t = |p̂_t| − (η/2) a_t v_t         (binary; v_t = x_tᵀH_{t−1}⁻¹x_t)
    q_t = p_t − (η/2) a_t v_t           (multiclass; p_t the top-1 − top-2 gap, v_t of Eq. 8)

and the label is queried with probability b/(b + q_t 1[q_t > 0]): always when q_t ≤ 0. a_t is a
function of x_t alone (1/max(1, x_tᵀx_t), 1 or 0), so the update rule applies it: the v a rule
of :mod:`learners.rules.adaptive` reports is already a_t v_t. η is the rule's; the Learner refuses
a rule and a query that disagree on it.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.kernels import PROB_SIG, kernel
from learners.params import Interval
from learners.values import Knob

__all__ = ["DiscriminationQuery", "GapDiscriminationQuery"]


@kernel(PROB_SIG)
def discrimination_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = b/(b + q_t 1[q_t > 0]), q_t = |p̂_t| − (η/2) a_t v_t; qp = (b, η), v = a_t v_t."""
    b, eta = qp[0], qp[1]
    q = abs(p) - 0.5 * eta * v  # Algorithm 1, line 5
    if q <= 0.0:
        return 1.0
    return b / (b + q)  # line 6


@kernel(PROB_SIG)
def gap_discrimination_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = b/(b + q_t 1[q_t > 0]), q_t = p_t − (η/2) a_t v_t (Eq. 9), p_t the gap (Eq. 7)."""
    b, eta = qp[0], qp[1]
    q = gap - 0.5 * eta * v  # Eq. (9)
    if q <= 0.0:
        return 1.0
    return b / (b + q)  # Algorithm 2, line 6


_CONSTRAINTS = {"b": Interval(0, None, closed="neither"), "eta": Interval(0, None, closed="neither")}


class DiscriminationQuery(QueryStrategy):
    """Binary discrimination-based query: b/(b + q_t 1[q_t > 0]), q_t = |p̂_t| − (η/2) a_t v_t.

    With a rule reporting a_t = 0 this is the margin query b/(b + |p̂_t|) of M-ADA / M-AMD.

    Parameters
    ----------
    b : float > 0, default 1.0
        Query parameter b: larger b, more queries.
    eta : float > 0, default 1.0
        The rule's step size η.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> q = DiscriminationQuery(b=1.0, eta=2.0)
    >>> q.probability(Scores(p=np.array([0.5, -3.0, 3.0]), v=np.array([1.0, 1.0, 0.0]))).tolist()
    [1.0, 0.3333333333333333, 0.25]
    """

    _constraints: ClassVar = _CONSTRAINTS
    requires: ClassVar = frozenset({"p", "v"})
    budget_param: ClassVar = "b"
    probability_kernel = discrimination_probability
    knob: ClassVar = Knob("b", 0, 2.0**-24, 2.0**24)

    def __init__(self, *, b: float = 1.0, eta: float = 1.0) -> None:
        self.b = b
        self.eta = eta
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.b, self.eta])


class GapDiscriminationQuery(DiscriminationQuery):
    """Multiclass discrimination-based query (Eq. 9): q_t = p_t − (η/2) a_t v_t, p_t the top-2 gap.

    With a rule reporting a_t = 0 this is the multiclass margin query b/(b + p_t) of MM-ADA / MM-AMD.
    Parameters as :class:`DiscriminationQuery`.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> q = GapDiscriminationQuery(b=1.0, eta=1.0)
    >>> q.probability(Scores(p=np.zeros(2), gap=np.array([0.4, 2.0]), v=np.array([1.0, 0.0]))).tolist()
    [1.0, 0.3333333333333333]
    """

    requires: ClassVar = frozenset({"gap", "v"})
    probability_kernel = gap_discrimination_probability
