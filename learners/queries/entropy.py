"""Entropy query: ask with probability H(σ(s·p))^k, the normalised prediction entropy raised to k.

River's ``active.EntropySampler`` (its ``_p``) asks with probability H^k, H the entropy of the
classifier's class probabilities normalised to [0, 1] (log base = the number of classes with
non-zero probability) and k its discount factor; entropy is the uncertainty measure of Settles,
"Active Learning Literature Survey", 2009, Sect. 3.1 (x*_H = argmax_x −Σ_i P(y_i|x) log P(y_i|x)).
A linear model has a margin, not probabilities: this module reads the margin as the logit of a
logistic model, P(+1 | x) = σ(s·p), so for two classes

    Pr(Z_t = 1) = max(q_min, H₂(σ(s·p_t))^k),    H₂(q) = −q log₂ q − (1 − q) log₂(1 − q),

q_min a floor River's rule does not have (0 gives River's rule), which bounds the importance weights.

H₂(σ(x)) = (log1p(e^{−|x|}) + |x|·e^{−|x|}/(1 + e^{−|x|})) / ln 2 decays like |x|·e^{−|x|} as
|x| grows, where the margin rule δ/(δ + |p|) decays only like 1/|p|: records the model is sure of
are almost never asked for, the uncertain ones near the boundary take the budget. The kernels
compute exp(k · ln H₂) from that form, which neither overflows nor loses H^k to underflow: 1 at
p = 0, and for |p| in the thousands still the right tiny number rather than 0 for k < 1.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.jit import jit
from learners.kernels import PROB_SIG, kernel
from learners.params import Interval
from learners.values import Knob

__all__ = ["EntropyQuery", "GapEntropyQuery", "log_logistic_entropy"]

_LN_LN2 = math.log(math.log(2.0))


@jit
def log_logistic_entropy(x):
    """ln H₂(σ(x)), H₂ in bits: 0 at x = 0, finite for every finite x, −inf at ±inf (a one-class gap)."""
    a = abs(x)
    if a == math.inf:
        return -math.inf
    e = math.exp(-a)
    # H₂ ln 2 = −q ln q − (1 − q) ln(1 − q) with q = σ(a): ln q = −log1p(e), ln(1 − q) = −a − log1p(e)
    if a < 1.0:
        return min(math.log(math.log1p(e) + a * e / (1.0 + e)) - _LN_LN2, 0.0)
    # = e·(log1p(e)/e + a/(1 + e)): the factor e = e^{−a} kept as −a in the log, so H^k stays exact
    # for k < 1 where H itself is below float64's range (|x| > ~700)
    r = math.log1p(e) / e if e > 0.0 else 1.0
    return -a + math.log(r + a / (1.0 + e)) - _LN_LN2


@kernel(PROB_SIG)
def entropy_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = max(q_min, H₂(σ(s·p_t))^k); qp = (k, s, q_min)."""
    return max(qp[2], math.exp(qp[0] * log_logistic_entropy(qp[1] * p)))


@kernel(PROB_SIG)
def gap_entropy_probability(p, gap, v, qp, qs):
    """Pr(Z_t = 1) = max(q_min, H₂(σ(s·gap_t))^k), gap_t = top-1 minus top-2 score; qp = (k, s, q_min)."""
    return max(qp[2], math.exp(qp[0] * log_logistic_entropy(qp[1] * gap)))


_CONSTRAINTS = {
    "discount": Interval(0, None, closed="neither"),
    "margin_scale": Interval(0, None, closed="neither"),
    "min_probability": Interval(0, 1, closed="left"),
}


class EntropyQuery(QueryStrategy):
    """Query with probability H₂(σ(s·p))^k: the binary prediction entropy, in bits, raised to k.

    p = 0 (no preference) is always queried; |p| large is queried with probability ~(|p|e^{−|p|})^k,
    and never below ``min_probability``.

    Parameters
    ----------
    discount : float > 0, default 3.0
        River's discount factor k: larger k, fewer queries (k → 0 queries everything whose entropy
        is not 0). The budget parameter: ``find_budget`` and the budget controller move it.
    margin_scale : float > 0, default 1.0
        s, the inverse temperature of the logistic link σ(s·p) (named apart from the learner's own
        ``scale``, its feature scaling): the margin that counts as sure, in units of p.
    min_probability : float in [0, 1), default 0.01
        q_min, a floor under the query probability (0: River's rule, which has none). H^k falls to
        1e-4 and below on records the model is sure of, and a label asked with probability q stands
        for 1/q records in the importance-weighted estimate of the error rate: one such label,
        wrong, can outweigh all the others. With q ≥ q_min no label weighs more than 1/q_min and
        every record keeps a chance of being asked, as in defensive importance sampling (Hesterberg,
        Technometrics 37(2), 1995). Under a budget controller the floor is lowered to a share of the
        rate (:class:`learners.budget.BudgetController`, ``query_floor``).

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> q = EntropyQuery(discount=1.0, min_probability=0.0)
    >>> q.probability(Scores(p=np.array([0.0, -1.0, 1.0, 10.0, 1e6]))).round(4).tolist()
    [1.0, 0.8399, 0.8399, 0.0007, 0.0]
    >>> EntropyQuery(discount=1.0).probability(Scores(p=np.array([10.0, 1e6]))).tolist()
    [0.01, 0.01]

    References
    ----------
    River, ``river.active.EntropySampler`` (``_p``: the entropy normalised to [0, 1], raised to the
    discount factor). B. Settles, Active Learning Literature Survey, Computer Sciences Technical
    Report 1648, University of Wisconsin-Madison, 2009, Sect. 3.1 (entropy uncertainty sampling).
    """

    _constraints: ClassVar = _CONSTRAINTS
    budget_param: ClassVar = "discount"
    probability_kernel = entropy_probability
    # decreasing: a larger k asks less. The range reaches from asking for nearly every record to
    # asking for almost none on the paper's binary sets, so any budget lies inside it
    knob: ClassVar = Knob("discount", 0, 2.0**-12, 2.0**12, increasing=False, floor=2)

    def __init__(self, *, discount: float = 3.0, margin_scale: float = 1.0, min_probability: float = 0.01) -> None:
        self.discount = discount
        self.margin_scale = margin_scale
        self.min_probability = min_probability
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.discount, self.margin_scale, self.min_probability])


class GapEntropyQuery(EntropyQuery):
    """Multiclass entropy query: H₂(σ(s·gap))^k, gap = top-1 minus top-2 class score.

    The kernel sees the top-1 score and the gap, not every class's score, so the entropy is that of
    the two leading classes: a softmax over the top two scores gives the leader probability
    σ(s·gap), and H₂ of that is the normalised entropy River would compute if the other classes had
    probability 0. A tie between the two best classes (gap 0) is always queried. Parameters as
    :class:`EntropyQuery`.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> s = Scores(p=np.array([2.0, 9.0]), gap=np.array([0.0, 1.0]))
    >>> GapEntropyQuery(discount=1.0).probability(s).round(4).tolist()
    [1.0, 0.8399]
    """

    requires: ClassVar = frozenset({"gap"})
    probability_kernel = gap_entropy_probability
