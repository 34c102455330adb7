"""Queries that ignore the scores: a fixed rate (the random R- baselines) and always (supervised)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.kernels import PROB_SIG, kernel
from learners.params import Interval
from learners.values import Knob

__all__ = ["AlwaysQuery", "FixedRateQuery"]


@kernel(PROB_SIG)
def fixed_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = r, whatever the scores."""
    return qp[0]


class FixedRateQuery(QueryStrategy):
    """Ask for each label with the same probability, as RPE/RPA do (uniform random sampling).

    Parameters
    ----------
    rate : float in [0, 1], default 0.1
        Probability of asking for any label.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> FixedRateQuery(rate=0.2).probability(Scores(p=np.array([0.0, 5.0]))).tolist()
    [0.2, 0.2]
    """

    _constraints: ClassVar = {"rate": Interval(0, 1)}
    requires: ClassVar = frozenset()
    budget_param: ClassVar = "rate"
    probability_kernel = fixed_probability
    knob: ClassVar = Knob("rate", 0, 2.0**-20, 1.0)

    def __init__(self, *, rate: float = 0.1) -> None:
        self.rate = rate
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.rate])


class AlwaysQuery(QueryStrategy):
    """Ask for every label: the fully supervised learners (PE, PA, PA-I, PA-II)."""

    requires: ClassVar = frozenset()
    budget_param: ClassVar = None
    knob: ClassVar = None
    probability_kernel = fixed_probability

    def __init__(self) -> None:
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([1.0])
