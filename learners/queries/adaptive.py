"""Margin queries whose parameter moves with the stream.

SEL-ada, the selective sampling Perceptron with adaptive parameter (Cesa-Bianchi, Gentile &
Zaniboni, "Worst-case analysis of selective sampling for linear classification", JMLR 7, 2006,
Fig. 2; baseline "SEL-ada" of Lu, Zhao & Hoi 2016, Sect. 6.1.1): on round t, with K the number of
updates so far (mistakes on queried rounds) and X'² = max(X², ‖x_t‖²) the squared radius of the
rows updated on, extended by x_t,

    b_t = β · X'² · √(1 + K),        Pr(Z_t = 1) = b_t / (b_t + |p_t|).

Rows are not normalised: X'² carries the scale of x, so β is scale-free. The update rule supplies
X'² as its score term ``v`` (:class:`learners.rules.PerceptronRule`).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.kernels import LABEL_SIG, PROB_SIG, kernel
from learners.params import Interval

__all__ = ["SelAdaQuery", "sel_ada_probability"]


@kernel(PROB_SIG)
def sel_ada_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = b_t / (b_t + |p_t|), b_t = β X'² √(1 + K); qp = (β,), qs = (K,), v = X'²."""
    b = qp[0] * v * math.sqrt(1.0 + qs[0])  # b_t = β X'² √(1 + K_{t−1})
    if b + abs(p) == 0.0:
        return 1.0  # the limit of b/(b + |p|) as p → 0, as for the fixed-δ margin rule
    return b / (b + abs(p))


@kernel(LABEL_SIG)
def sel_ada_count(qp, qs, mistake):
    """K ← K + 1 when a queried label shows the prediction was wrong (a Perceptron update)."""
    if mistake:
        qs[0] += 1.0


class SelAdaQuery(QueryStrategy):
    """Adaptive margin query of SEL-ada: b_t = β X'² √(1 + K), K = mistakes on queried rounds.

    Parameters
    ----------
    delta : float > 0, default 1.0
        The constant β of b_t (named ``delta`` like every margin query's budget parameter: a
        larger value queries more).

    State
    -----
    errors : float
        K, mistakes found on queried rounds so far.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.base import Scores
    >>> q = SelAdaQuery(delta=1.0)
    >>> q.probability(Scores(p=np.array([1.0]), v=np.array([1.0]))).tolist()     # b = 1
    [0.5]
    >>> for _ in range(3): q.kernels[2](*q.kernel_state(), True)             # K = 3
    >>> round(float(q.probability(Scores(p=np.array([1.0]), v=np.array([0.5])))[0]), 4)   # b = 0.5·2
    0.5
    """

    _constraints: ClassVar = {"delta": Interval(0, None, closed="neither")}
    requires: ClassVar = frozenset({"p", "v"})
    state_fields: ClassVar = ("errors",)
    probability_kernel = sel_ada_probability
    label_kernel = sel_ada_count

    def __init__(self, *, delta: float = 1.0) -> None:
        self.delta = delta
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.delta])
