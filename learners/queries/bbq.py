"""BBQ's query: ask when the RLS estimate's variance term exceeds a polynomially decaying threshold.

Cesa-Bianchi, Gentile & Orabona, ICML 2009, Fig. 1: query y_t iff r_t > t^(−κ), where
r_t = x_tᵀ(A_t + x_t x_tᵀ)⁻¹x_t = v_t / (1 + v_t) and v_t = x_tᵀA_t⁻¹x_t is the rule's confidence
term. The decision is deterministic: the probability is 0 or 1. Larger κ lowers the threshold
and raises the query rate, so κ is the budget parameter.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.kernels import PROB_SIG, ROUND_SIG, kernel
from learners.params import Interval
from learners.values import Knob

__all__ = ["BBQQuery"]


@kernel(PROB_SIG)
def bbq_probability(p, gap, v, qp, qs):
    """1 if r_t = v/(1 + v) > t^(−κ) else 0; qp = (κ,), qs = (rounds before t,)."""
    t = qs[0] + 1.0
    return 1.0 if v / (1.0 + v) > t ** (-qp[0]) else 0.0


@kernel(ROUND_SIG)
def bbq_tick(qp, qs):
    """t ← t + 1 after every scored record, queried or not."""
    qs[0] += 1.0


class BBQQuery(QueryStrategy):
    """Query when r_t = v/(1 + v) > t^(−κ) (BBQ); needs the rule's v = xᵀA⁻¹x.

    Parameters
    ----------
    kappa : float > 0, default 0.5
        κ of the threshold t^(−κ) (the paper's range is 0 < κ < 1; larger values are allowed and
        query still more).

    State
    -----
    t : float
        Records scored so far.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> q = BBQQuery(kappa=1.0)      # thresholds 1, 1/2, 1/3 for t = 1, 2, 3
    >>> q.probability(Scores(p=np.zeros(3), v=np.array([3.0, 3.0, 0.4]))).tolist()
    [0.0, 1.0, 0.0]

    References
    ----------
    N. Cesa-Bianchi, C. Gentile and F. Orabona, Robust Bounds for Classification via Selective
    Sampling, ICML 2009, Fig. 1.
    """

    requires: ClassVar = frozenset({"v"})
    budget_param: ClassVar = "kappa"
    state_fields: ClassVar = ("t",)
    _constraints: ClassVar = {"kappa": Interval(0, None, closed="neither")}
    probability_kernel = bbq_probability
    knob: ClassVar = Knob("kappa", 0, 2.0**-10, 2.0**6)
    round_kernel = bbq_tick

    def __init__(self, *, kappa: float = 0.5) -> None:
        self.kappa = kappa
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.kappa])
