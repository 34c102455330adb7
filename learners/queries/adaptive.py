"""Margin queries whose parameter moves with the stream.

SEL-ada, the selective sampling Perceptron with adaptive parameter (Cesa-Bianchi, Gentile &
Zaniboni, "Worst-case analysis of selective sampling for linear classification", JMLR 7, 2006,
Fig. 2; baseline "SEL-ada" of Lu, Zhao & Hoi 2016, Sect. 6.1.1): on round t, with K the number of
updates so far (mistakes on queried rounds) and X'² = max(X², ‖x_t‖²) the squared radius of the
rows updated on, extended by x_t,

    b_t = β · X'² · √(1 + K),        Pr(Z_t = 1) = b_t / (b_t + |p_t|).

Rows are not normalised: X'² carries the scale of x, so β is scale-free. The update rule supplies
X'² as its score term ``v`` (:class:`learners.rules.PerceptronRule`).

CSPAA(a) (Lu, Zhao & Hoi 2016, remark before Sect. 5.3 and Sect. 6.3.5): δ_t = δ_{t−1}·t/(t+1)
from a large δ_0, so the learner asks for almost everything at first and less and less as its
model matures.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.kernels import LABEL_SIG, PROB_SIG, ROUND_SIG, kernel
from learners.params import Interval
from learners.values import Knob

__all__ = ["DecayingMarginQuery", "SelAdaQuery", "sel_ada_probability"]


@kernel(PROB_SIG)
def sel_ada_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = b_t / (b_t + |p_t|), b_t = β X'² √(1 + K); qp = (β,), qs = (K,), v = X'²."""
    b = qp[0] * v * math.sqrt(1.0 + qs[0])  # b_t = β X'² √(1 + K_{t−1})
    if b + abs(p) == 0.0:
        return 1.0  # the limit of b/(b + |p|) as p → 0, as for the fixed-δ margin rule
    return b / (b + abs(p))


@kernel(LABEL_SIG)
def sel_ada_count(qp, qs, mistake, weight):
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
    >>> from learners.values import Scores
    >>> q = SelAdaQuery(delta=1.0)
    >>> q.probability(Scores(p=np.array([1.0]), v=np.array([1.0]))).tolist()     # b = 1
    [0.5]
    >>> for _ in range(3): q.kernels[2](*q.kernel_state(), True, 1.0)        # K = 3
    >>> round(float(q.probability(Scores(p=np.array([1.0]), v=np.array([0.5])))[0]), 4)   # b = 0.5·2
    0.5
    """

    _constraints: ClassVar = {"delta": Interval(0, None, closed="neither")}
    requires: ClassVar = frozenset({"p", "v"})
    state_fields: ClassVar = ("errors",)
    probability_kernel = sel_ada_probability
    knob: ClassVar = Knob("delta", 0, 2.0**-24, 2.0**24)
    label_kernel = sel_ada_count

    def __init__(self, *, delta: float = 1.0) -> None:
        self.delta = delta
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.delta])


@kernel(PROB_SIG)
def decaying_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = δ_{t−1} / (δ_{t−1} + |p_t|) with δ_{t−1} = δ_0 / t; qp = (δ_0,), qs = (t − 1,).

    δ_t = δ_{t−1}·t/(t+1) telescopes to δ_0/(t+1); round t draws with the δ left by round t − 1,
    so the first round uses δ_0 itself.
    """
    delta_t = qp[0] / (qs[0] + 1.0)
    return delta_t / (delta_t + abs(p))


@kernel(ROUND_SIG)
def decaying_step(qp, qs):
    """One more round seen: δ_t = δ_{t−1}·t/(t+1)."""
    qs[0] += 1.0


class DecayingMarginQuery(QueryStrategy):
    """Margin query with δ_t = δ_{t−1}·t/(t+1) = δ_0/(t+1), the adaptive sampling factor of CSPAA(a).

    Round t (t = 1, 2, …) asks with probability δ_{t−1}/(δ_{t−1} + |p_t|): many queries while the
    model is young, fewer as t grows. Every scored record counts as a round, queried or not.

    Parameters
    ----------
    delta : float > 0, default 2**14
        δ_0, the initial sampling factor (2^14 in Sect. 6.3.5 of Lu, Zhao & Hoi 2016).

    State
    -----
    rounds : float
        t − 1, records scored so far.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> q = DecayingMarginQuery(delta=4.0)
    >>> q.probability(Scores(p=np.full(4, 2.0))).round(4).tolist()   # δ = 4, 2, 4/3, 1
    [0.6667, 0.5, 0.4, 0.3333]

    References
    ----------
    Lu, Zhao & Hoi, Mach. Learn. 103(2):141-183, 2016, Sect. 5.2 (remark) and Table 8.
    """

    _constraints: ClassVar = {"delta": Interval(0, None, closed="neither")}
    state_fields: ClassVar = ("rounds",)
    probability_kernel = decaying_probability
    knob: ClassVar = Knob("delta", 0, 2.0**-24, 2.0**24)
    round_kernel = decaying_step

    def __init__(self, *, delta: float = 2.0**14) -> None:
        self.delta = delta
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.delta])
