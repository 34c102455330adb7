"""Importance-weighted active learning (IWAL): ask with a probability P_k that falls as the model's
disagreement margin grows, and learn each label with importance weight 1/P_k.

IWAL (Beygelzimer, Dasgupta & Langford, "Importance Weighted Active Learning", ICML 2009) asks for
x_k with probability P_k and weighs the label by 1/P_k, so the labelled rows stand for every row:
the weighted error Σ Z_i [ŷ_i ≠ y_i]/P_i is an unbiased estimate of the errors made on all of
them. Its margin-based rule (Beygelzimer, Hsu, Langford & Zhang, "Agnostic Active Learning Without
Constraints", NIPS 2010, Algorithm 1) sets P_k from G_k, how much the empirical importance-weighted
error would have to rise for the prediction on x_k to flip, against a deviation bound. This is the
rule Vowpal Wabbit's ``--active`` implements (``reductions/active.cc``, ``get_active_coin_bias``),
in this form, with k the rounds before this one and c₀ the mellowness:

    b  = c₀ (ln(k + 1) + 10⁻⁴) / (k + 10⁻⁴)                          (the deviation term)
    ε  = clip(Σ ω_i [ŷ_i ≠ y_i] / k + √((1 + ½ ln k) / (Σ ω_i + 10⁻⁴)), 0, 1)   (error + slack)
    G  = ω_flip / k,  ω_flip = |p| √k / s                              (disagreement, per round)
    P_k = 1                     if G ≤ √b (√ε + √(ε + G)) + b,
        = b r²,  r = (√ε + √(ε + G) + √((√ε + √(ε + G))² + 4G)) / (2G)   otherwise,

and P_k = 1 for k ≤ 1. The sums run over the labels applied so far, ω_i their importance weights.
P_k is the solution of G = (√ε + √(ε + G))·√(b/P) + b/P, which is how the bound of the NIPS paper
reads with C₀ log k/(k − 1) replaced by b; it is continuous in G (both branches are 1 at the
boundary) and non-decreasing in c₀, the knob a budget controller moves.

ω_flip is the importance weight that would flip the prediction (VW's "revert weight"). In the
theory it is that of the empirical risk minimiser over k rows, which grows with k; VW computes it
for its learner, whose step falls like η/√k (its default ``power_t`` 0.5), so that a label of
weight ω moves the margin by about ω η ‖x‖²/√k and ω_flip = |p| √k/(η‖x‖²). Our rules take steps
that do not shrink with k (a PA-I label of weight ω moves the margin by at most C ω ‖x‖²), so their
own flip weight |p|/(C‖x‖²) would make G fall like 1/k, faster than the bound's √(log k/k), and the
rule would end up asking for every label. ω_flip is therefore VW's, with s = η‖x‖² the
``sensitivity`` parameter, or the confidence term v = xᵀΣx for rules that provide it (second-order
rules: the margin moved per unit of update).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from learners.base import QueryStrategy
from learners.jit import jit
from learners.kernels import LABEL_SIG, PROB_SIG, ROUND_SIG, kernel
from learners.params import Interval
from learners.values import Knob

__all__ = ["GapIWALQuery", "IWALQuery", "iwal_probability"]

_EPS = 1e-4  # VW's 0.0001 in b and in the slack's denominator


@jit
def iwal_probability(k, weighted_labels, weighted_mistakes, revert, c0):
    """P_k of the module doc for k rounds before this one, the weighted label and mistake sums,
    the revert weight ω_flip and the mellowness c₀."""
    if k <= 1.0:
        return 1.0
    b = c0 * (math.log(k + 1.0) + _EPS) / (k + _EPS)
    eps = weighted_mistakes / k + math.sqrt((1.0 + 0.5 * math.log(k)) / (weighted_labels + _EPS))
    eps = min(max(eps, 0.0), 1.0)
    g = revert / k
    sl = math.sqrt(eps) + math.sqrt(eps + g)
    if g <= math.sqrt(b) * sl + b:
        return 1.0
    r = (sl + math.sqrt(sl * sl + 4.0 * g)) / (2.0 * g)
    return min(b * r * r, 1.0)


@jit(inline="always")
def _revert(distance, v, qp, qs):
    """ω_flip = |p| √k / s: the importance weight that flips the prediction; s = v when the rule
    provides it."""
    s = v if v == v and v > 0.0 else qp[1]  # v == v: not NaN
    return abs(distance) * math.sqrt(qs[0]) / s


@kernel(PROB_SIG)
def _probability(p, gap, v, qp, qs):
    """P_k with G from the margin p; qp = (c₀, s), qs = (k, Σω, Σω·mistake)."""
    return iwal_probability(qs[0], qs[1], qs[2], _revert(p, v, qp, qs), qp[0])


@kernel(PROB_SIG)
def _gap_probability(p, gap, v, qp, qs):
    """P_k with G from the gap between the two best classes' scores."""
    return iwal_probability(qs[0], qs[1], qs[2], _revert(gap, v, qp, qs), qp[0])


@kernel(ROUND_SIG)
def _count_round(qp, qs):
    """k ← k + 1 once the record's probability is known."""
    qs[0] += 1.0


@kernel(LABEL_SIG)
def _count_label(qp, qs, mistake, weight):
    """Σω += ω, Σω·[ŷ ≠ y] += ω·mistake for an applied label."""
    qs[1] += weight
    if mistake:
        qs[2] += weight


class IWALQuery(QueryStrategy):
    """IWAL's margin rule (Beygelzimer, Hsu, Langford & Zhang 2010, as VW's ``--active``): ask with
    probability P_k of the module doc, learn the label with importance weight 1/P_k.

    Only rules that apply an importance weight (``importance_weights``: PA-I, PA-II, MPA-I, MPA-II)
    take it: without the weight, the labelled rows over-represent the uncertain region and the
    rule is no longer IWAL.

    Parameters
    ----------
    mellowness : float > 0, default 8.0
        c₀: larger asks more (VW's ``--mellowness``, default 8). The budget parameter.
    sensitivity : float > 0, default 1.0
        s = η‖x‖² of ω_flip (module doc); used when the rule provides no confidence term v.

    State
    -----
    ``rounds`` (k), ``weighted_labels`` (Σω), ``weighted_mistakes`` (Σω [ŷ ≠ y]).

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> q = IWALQuery(mellowness=0.01)
    >>> q.qs_[:] = [1000.0, 200.0, 20.0]   # 1,000 rounds, weighted error 2 %
    >>> q.probability(Scores(p=np.array([0.0, 0.1, 1.0, 10.0]))).round(4).tolist()
    [1.0, 1.0, 0.0553, 0.0012]

    References
    ----------
    A. Beygelzimer, S. Dasgupta & J. Langford, Importance Weighted Active Learning, ICML 2009.
    A. Beygelzimer, D. Hsu, J. Langford & T. Zhang, Agnostic Active Learning Without Constraints,
    NIPS 2010, Algorithm 1. Vowpal Wabbit, ``vowpalwabbit/core/src/reductions/active.cc``.
    """

    importance_weighted: ClassVar = True
    budget_param: ClassVar = "mellowness"
    knob: ClassVar = Knob("mellowness", 0, 2.0**-24, 2.0**24)
    state_fields: ClassVar = ("rounds", "weighted_labels", "weighted_mistakes")
    probability_kernel = _probability
    round_kernel = _count_round
    label_kernel = _count_label
    _constraints: ClassVar = {
        "mellowness": Interval(0, None, closed="neither"),
        "sensitivity": Interval(0, None, closed="neither"),
    }

    def __init__(self, *, mellowness: float = 8.0, sensitivity: float = 1.0) -> None:
        self.mellowness = mellowness
        self.sensitivity = sensitivity
        self._setup()

    def packed_params(self) -> np.ndarray:
        return np.array([self.mellowness, self.sensitivity])


class GapIWALQuery(IWALQuery):
    """Multiclass IWAL: G from the gap between the two best classes' scores (the importance weight
    that makes the runner-up win), otherwise as :class:`IWALQuery`; s = 2C‖x‖² for MPA-I.

    Examples
    --------
    >>> import numpy as np
    >>> from learners.values import Scores
    >>> q = GapIWALQuery(mellowness=0.01)
    >>> q.qs_[:] = [1000.0, 200.0, 20.0]
    >>> q.probability(Scores(p=np.array([5.0, 5.0]), gap=np.array([0.1, 1.0]))).round(4).tolist()
    [1.0, 0.0553]
    """

    requires: ClassVar = frozenset({"gap"})
    probability_kernel = _gap_probability
