"""Margin queries whose δ moves with the stream.

SEL-ada (Cesa-Bianchi, Gentile & Zaniboni, JMLR 7, 2006; as used in Lu, Zhao & Hoi 2016, Sect.
6.1.1): δ_t ∝ √(1 + K_{t−1}), K the number of mistakes seen on queried rounds, so the learner asks
more as it discovers it is wrong more often.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.kernels import LABEL_SIG, PROB_SIG, kernel
from learners.params import Interval

__all__ = ["SelAdaQuery"]


@kernel(PROB_SIG)
def sel_ada_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = δ_t / (δ_t + |p_t|), δ_t = δ √(1 + K_{t−1}); qp = (δ,), qs = (K,)."""
    delta_t = qp[0] * math.sqrt(1.0 + qs[0])
    return delta_t / (delta_t + abs(p))


@kernel(LABEL_SIG)
def sel_ada_count(qp, qs, mistake):
    """K ← K + 1 when a queried label shows the prediction was wrong."""
    if mistake:
        qs[0] += 1.0


class SelAdaQuery(QueryStrategy):
    """Margin query with δ_t = δ √(1 + K_{t−1}) (SEL-ada), K = mistakes on queried rounds.

    Parameters
    ----------
    delta : float > 0, default 1.0
        The proportionality constant δ of δ_t.

    State
    -----
    errors : float
        K, mistakes found on queried rounds so far.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.base import Scores
    >>> q = SelAdaQuery(delta=1.0)
    >>> q.probability(Scores(p=np.array([1.0]))).tolist()
    [0.5]
    >>> q.kernels[2](*q.kernel_state(), True); q.kernels[2](*q.kernel_state(), True)
    >>> q.kernels[2](*q.kernel_state(), True)   # K = 3, δ_t = 2
    >>> round(float(q.probability(Scores(p=np.array([1.0])))[0]), 4)
    0.6667
    """

    _constraints: ClassVar = {"delta": Interval(0, None, closed="neither")}
    state_fields: ClassVar = ("errors",)
    probability_kernel = sel_ada_probability
    label_kernel = sel_ada_count

    def __init__(self, *, delta: float = 1.0) -> None:
        self.delta = delta
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.delta])
