"""Margin-based query: ask with probability δ / (δ + c + |p|).

c = 0 is the rule of PEA/LEPE and PAA (Cesa-Bianchi et al. 2006; Lu, Zhao & Hoi 2016, Sect.
3.2); c = 1 is the variant of Theorem 4 of Lu, Zhao & Hoi, whose bound holds for any δ ≥ 0.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.kernels import PROB_SIG, kernel
from learners.params import Interval
from learners.values import Knob

__all__ = ["MarginQuery"]


@kernel(PROB_SIG)
def margin_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = δ / (δ + c + |p_t|), qp = (δ, c)."""
    delta, offset = qp[0], qp[1]
    return delta / (delta + offset + abs(p))


class MarginQuery(QueryStrategy):
    """Query with probability δ / (δ + offset + |p|), p the signed margin.

    Parameters
    ----------
    delta : float > 0, default 1.0
        Smoothing parameter δ: larger δ, more queries (δ → ∞ queries everything).
    offset : float ≥ 0, default 0.0
        0 for the rule of Sect. 3.2 (Lu, Zhao & Hoi 2016), 1 for its Theorem 4 variant.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> MarginQuery(delta=1.0).probability(Scores(p=np.array([0.0, -1.0, 3.0]))).tolist()
    [1.0, 0.5, 0.25]
    """

    _constraints: ClassVar = {
        "delta": Interval(0, None, closed="neither"),
        "offset": Interval(0, None),
    }
    probability_kernel = margin_probability
    knob: ClassVar = Knob("delta", 0, 2.0**-24, 2.0**24)

    def __init__(self, *, delta: float = 1.0, offset: float = 0.0) -> None:
        self.delta = delta
        self.offset = offset
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.delta, self.offset])
