"""Multiclass query on the top-2 score gap: ask with probability δ / (δ + p_t).

Lu, Zhao & Hoi, "Online Passive-Aggressive Active learning", Mach. Learn. 103(2), 2016, Sect. 4.2:
the margin γ_t needs the true label, so the query uses the confidence p_t = w^ŷ·x − w^ỹ·x (Eq. 5),
the gap between the two highest class scores, instead (p_t ≤ |γ_t|, so it asks at least as often).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.kernels import PROB_SIG, kernel
from learners.params import Interval
from learners.values import Knob

__all__ = ["GapQuery"]


@kernel(PROB_SIG)
def gap_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = δ / (δ + p_t) with p_t = ``gap`` (Eq. 5, ≥ 0); qp = (δ,)."""
    delta = qp[0]
    return delta / (delta + abs(gap))


class GapQuery(QueryStrategy):
    """Query with probability δ / (δ + gap), gap = top-1 minus top-2 class score (MPAA, MPEA).

    Parameters
    ----------
    delta : float > 0, default 1.0
        Smoothing parameter δ: larger δ, more queries; a tie between the two best classes
        (gap 0) is always queried.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> s = Scores(p=np.array([2.0, 0.5, 9.0]), gap=np.array([0.0, 1.0, 3.0]))
    >>> GapQuery(delta=1.0).probability(s).tolist()
    [1.0, 0.5, 0.25]

    References
    ----------
    Lu, Zhao & Hoi, Mach. Learn. 103(2):141-183, 2016, Sect. 4.2 (Algorithm 3).
    """

    _constraints: ClassVar = {"delta": Interval(0, None, closed="neither")}
    requires: ClassVar = frozenset({"gap"})
    probability_kernel = gap_probability
    knob: ClassVar = Knob("delta", 0, 2.0**-24, 2.0**24)

    def __init__(self, *, delta: float = 1.0) -> None:
        self.delta = delta
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.delta])
