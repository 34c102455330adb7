"""SOAL's query: margin and second-order confidence together.

Hao, Zhao, Lu, Hoi, Miao & Zhang, "SOAL: Second-order Online Active Learning", ICDM 2016, Sect.
III-B2 and Algorithm 1: with p_t = μ_tᵀx_t and v_t = x_tᵀΣ_t x_t from the rule,

    c_t = −η γ v_t / (2 (γ + v_t))       (the model's confidence on x_t)
    ρ_t = |p_t| + c_t                     (6)

and the label is always queried when ρ_t ≤ 0, else with probability δ/(δ + ρ_t). η and γ are the
update rule's; the Learner refuses a rule and a query that disagree on them.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.kernels import PROB_SIG, kernel
from learners.params import Interval
from learners.values import Knob

__all__ = ["SOALQuery"]


@kernel(PROB_SIG)
def soal_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = 1 if ρ_t ≤ 0 else δ/(δ + ρ_t); qp = (δ, η, γ)."""
    delta, eta, gamma = qp[0], qp[1], qp[2]
    c = -eta * gamma * v / (2.0 * (gamma + v))  # c_t
    rho = abs(p) + c  # Eq. (6)
    if rho <= 0.0:
        return 1.0
    return delta / (delta + rho)


class SOALQuery(QueryStrategy):
    """Query with probability 1 if ρ_t = |p_t| + c_t ≤ 0, else δ/(δ + ρ_t).

    Parameters
    ----------
    delta : float > 0, default 1.0
        Smoothing parameter δ: larger δ, more queries.
    eta : float > 0, default 1.0
        The rule's learning rate η.
    gamma : float > 0, default 1.0
        The rule's regularisation γ.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> q = SOALQuery(delta=1.0, eta=1.0, gamma=1.0)
    >>> q.probability(Scores(p=np.array([0.2, -3.25]), v=np.array([1.0, 1.0]))).tolist()   # c = −1/4, ρ = −0.05, 3
    [1.0, 0.25]
    """

    _constraints: ClassVar = {
        "delta": Interval(0, None, closed="neither"),
        "eta": Interval(0, None, closed="neither"),
        "gamma": Interval(0, None, closed="neither"),
    }
    requires: ClassVar = frozenset({"p", "v"})
    probability_kernel = soal_probability
    knob: ClassVar = Knob("delta", 0, 2.0**-24, 2.0**24)

    def __init__(self, *, delta: float = 1.0, eta: float = 1.0, gamma: float = 1.0) -> None:
        self.delta = delta
        self.eta = eta
        self.gamma = gamma
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.delta, self.eta, self.gamma])
