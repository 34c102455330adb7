"""Paired learners: a stable logistic model, and a reactive one that replaces it when the concept moves.

AdaGrad's steps shrink like 1/√G, so after thousands of labels a model barely moves, and a concept
that changes is not followed. Forgetting in the model itself (λ of :mod:`learners.rules.logistic`)
follows the change but costs every stationary stream, most a long one whose weights it bounds. Paired
learners (Bach & Maloof, "Paired learners for concept drift", ICDM 2008) keep both:

- the *stable* model (w, G): the rule of :class:`~learners.rules.logistic.LogisticRule` with its own
  β and λ; it scores every record and is the model the queries read;
- a *reactive* model (v, H): the same step on the same labels, forgetting faster (β_r, λ_r);
- on each label, before either learns it, their mistakes e_s = [y w·x ≤ 0] and e_r = [y v·x ≤ 0]
  feed Page's CUSUM test (Page, "Continuous inspection schemes", Biometrika 41, 1954, Sect. 2, with
  reference value k = 0):

      C ← max(0, C + e_s − e_r)                                              (1)

  C is the number of mistakes the stable model made beyond the reactive one's since it last was
  ahead. When C > h the stable model is replaced by a copy of the reactive one (Bach & Maloof's
  Algorithm 1, line 10), and C ← 0.

On a stationary stream the reactive model errs at least as often, C stays near 0 and the stable model
is AdaGrad as before. When the concept moves, the stable model errs and the reactive one has already
learnt the new concept: after h more mistakes the stable model starts again from it, with the
reactive model's small sums, so its steps are large again.

Both models step at each label: twice the update's O(nnz), and O(D) when a replacement copies the
reactive model. The mistakes count whatever a label's importance weight: the test is over labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from learners.jit import jit
from learners.kernels import SCORE_SIG, UPDATE_SIG, kernel, sparse_dot
from learners.params import Interval
from learners.rules.factored import FactoredSoftmaxRule, factored_softmax_update
from learners.rules.logistic import LogisticRule, logistic_update
from learners.rules.multiclass import top_two

__all__ = ["PairedFactoredSoftmaxRule", "PairedLogisticRule", "paired_factored_update", "paired_update"]

_PAIR_CONSTRAINTS = {"reactive_beta": Interval(0, 1, closed="right"), "reactive_lam": Interval(0, 1, closed="left"),
                     "replace_after": Interval(0, None, closed="neither")}


@jit(inline="always")
def cusum(a, stable_mistake, reactive_mistake, replace_after):
    """Eq. (1) on one label's two mistakes; True when the stable model is to be replaced, and then C ← 0.
    a = (C, replacements)."""
    a[0] = max(0.0, a[0] + stable_mistake - reactive_mistake)
    if a[0] <= replace_after:
        return False
    a[0] = 0.0
    a[1] += 1.0
    return True


@jit
def paired_update(w, G, v, H, a, idx, val, y, eta, mode, weight, delta, beta, lam, reactive_beta, reactive_lam,
                  replace_after):
    """One label for the pair: Eq. (1) on the two models' mistakes, the replacement when C > h, then
    each model's step (:func:`~learners.rules.logistic.logistic_update`). a = (C, replacements).
    Returns True if either model moved."""
    if cusum(a, 1.0 if y * sparse_dot(w, idx, val) <= 0.0 else 0.0, 1.0 if y * sparse_dot(v, idx, val) <= 0.0 else 0.0,
             replace_after):
        w[:] = v
        G[:] = H
    stable = logistic_update(w, G, idx, val, y, eta, mode, weight, delta, beta, lam)
    reactive = logistic_update(v, H, idx, val, y, eta, mode, weight, delta, reactive_beta, reactive_lam)
    return stable or reactive


@kernel(UPDATE_SIG)
def _paired(S, a, P, idx, val, y, weight):
    return paired_update(S[0], S[1], S[2], S[3], a, idx, val, y, P[0], int(P[1]), weight, P[2], P[3], P[4], P[5],
                         P[6], P[7])


class PairedLogisticRule(LogisticRule):
    """:class:`~learners.rules.logistic.LogisticRule` with a reactive twin that replaces it after a change.

    Parameters
    ----------
    eta, step, damping, beta, lam
        The stable model's step, as :class:`~learners.rules.logistic.LogisticRule`; the reactive
        model takes the same η, step and δ.
    reactive_beta : float in (0, 1], default 0.99
        The reactive model's forgetting of AdaGrad's sums (β_r).
    reactive_lam : float in [0, 1), default 0.005
        The reactive model's forgetting of its weights (λ_r): a memory of ~1/λ_r updates.
    replace_after : float > 0, default 10
        h of Eq. (1): the mistakes the stable model may make beyond the reactive one's, since it last
        was ahead, before it is replaced.

    State
    -----
    w_, G_ : float64 (D,)
        The stable model, which scores.
    v_, H_ : float64 (D,)
        The reactive model.
    a_ : (C, replacements)
        The CUSUM of Eq. (1) and how many times the stable model was replaced.

    Complexity
    ----------
    O(nnz) per scored row, 2·O(nnz) per update and O(D) per replacement; O(D) memory, twice the
    logistic rule's.

    Examples
    --------
    >>> import numpy as np
    >>> rule = PairedLogisticRule(eta=0.5); rule.allocate(1)
    >>> x = np.array([0], dtype=np.int32), np.array([1.0])
    >>> for _ in range(500):   # y = +1, 500 times
    ...     _ = rule.update(*x, 1)
    >>> round(float(rule.w_[0]), 2), round(float(rule.v_[0]), 2)   # the reactive model forgets: a smaller weight
    (5.51, 4.83)
    >>> for _ in range(43):   # the concept flips; the reactive model is right first
    ...     _ = rule.update(*x, -1)
    >>> int(rule.a_[1]), bool(rule.w_[0] < 0)   # after 11 mistakes more than it, the stable one was replaced
    (1, True)

    References
    ----------
    Bach & Maloof, ICDM 2008. Page, Biometrika 41(1/2):100-115, 1954. Duchi, Hazan & Singer, JMLR 12,
    2011. Kivinen, Smola & Williamson, IEEE Trans. Signal Processing 52(8), 2004.
    """

    _constraints: ClassVar = {**LogisticRule._constraints, **_PAIR_CONSTRAINTS}
    scalars: ClassVar = ("cusum", "replacements")
    # each model moves as the logistic rule's under a change of scale
    scaling: ClassVar = {"w": 1, "G": -2, "v": 1, "H": -2}
    signed: ClassVar = ("w", "v")
    has_sparse_update: ClassVar = False  # a replacement copies the whole reactive model
    update_kernel = _paired
    upgrades_from: ClassVar = ("LogisticRule",)  # a model saved before it had a twin

    def __init__(self, *, eta: float = 1.0, step: str = "adagrad", damping: float = 0.0, beta: float = 1.0,
                 lam: float = 0.0, reactive_beta: float = 0.99, reactive_lam: float = 0.005,
                 replace_after: float = 10.0) -> None:
        self.reactive_beta = reactive_beta
        self.reactive_lam = reactive_lam
        self.replace_after = replace_after
        super().__init__(eta=eta, step=step, damping=damping, beta=beta, lam=lam)

    def _check_params(self) -> None:
        super()._check_params()
        if self.step == "sgd" and self.reactive_beta != 1.0:
            raise ValueError(f"reactive_beta={self.reactive_beta!r} forgets AdaGrad's sums, which step='sgd' does "
                             "not keep; leave it at 1")

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"w": 1, "G": 1, "v": 1, "H": 1}

    def packed_params(self) -> np.ndarray:
        return np.append(super().packed_params(), [self.reactive_beta, self.reactive_lam, self.replace_after])

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        """A logistic rule's state (w, G) loads too: the twin starts as its copy, the count of Eq. (1) at 0."""
        super().load_state_dict(_with_twin(state, {"v": "w", "H": "G"}))


def _with_twin(state: Mapping[str, np.ndarray], twin: Mapping[str, str]) -> Mapping[str, np.ndarray]:
    """``state``, and if it has no twin (a model saved without one), the twin as a copy of the model."""
    if all(name in state for name in twin):
        return state
    return {**state, **{name: np.array(state[model], copy=True) for name, model in twin.items()},
            "cusum": np.array(0.0), "replacements": np.array(0.0)}


@jit
def paired_factored_update(W, C, R, V, H, Q, a, idx, val, y, eta, weight, delta, beta, lam, reactive_beta,
                           reactive_lam, replace_after):
    """One label for the multiclass pair: Eq. (1) on the two models' mistakes (the top class is not y),
    the replacement when C > h, then each model's step
    (:func:`~learners.rules.factored.factored_softmax_update`). Returns True if either model moved."""
    if cusum(a, 1.0 if top_two(W, idx, val)[0] != y else 0.0, 1.0 if top_two(V, idx, val)[0] != y else 0.0,
             replace_after):
        W[:] = V
        C[:] = H
        R[:] = Q
    stable = factored_softmax_update(W, C, R, idx, val, y, eta, weight, delta, beta, lam)
    reactive = factored_softmax_update(V, H, Q, idx, val, y, eta, weight, delta, reactive_beta, reactive_lam)
    return stable or reactive


@kernel(UPDATE_SIG)
def _paired_factored(S, a, P, idx, val, y, weight):
    k = (S.shape[0] - 2) // 2
    return paired_factored_update(S[:k], S[k], a[2:2 + k], S[k + 1:2 * k + 1], S[2 * k + 1], a[2 + k:], a, idx, val,
                                  y, P[0], weight, P[1], P[2], P[3], P[4], P[5], P[6])


@kernel(SCORE_SIG)
def _paired_factored_scores(S, a, P, idx, val):
    """The stable model's scores, as :class:`~learners.rules.factored.FactoredSoftmaxRule`'s."""
    top, first, second = top_two(S[: (S.shape[0] - 2) // 2], idx, val)
    return first, first - second, np.nan, top


class PairedFactoredSoftmaxRule(FactoredSoftmaxRule):
    """:class:`~learners.rules.factored.FactoredSoftmaxRule` with a reactive twin that replaces it after
    a change; a mistake is a top class other than the label.

    Parameters
    ----------
    eta, damping, beta, lam
        The stable model's step, as :class:`~learners.rules.factored.FactoredSoftmaxRule`; the
        reactive model takes the same η and δ.
    reactive_beta, reactive_lam, replace_after
        As :class:`PairedLogisticRule`.

    State
    -----
    w_, C_, R_
        The stable model, which scores.
    v_, H_, Q_
        The reactive model's weights, column sums and row sums.
    a_ : (C, replacements, R, Q)
        The CUSUM of Eq. (1), the replacements, then the two models' row sums.

    Complexity
    ----------
    O(k·nnz) per scored row, 2·O(k·nnz) per update and O(k·D) per replacement; O(k·D) memory, twice
    the factored rule's.

    References
    ----------
    Bach & Maloof, ICDM 2008. Page, Biometrika 41(1/2):100-115, 1954. Shazeer & Stern, ICML 2018.
    """

    _constraints: ClassVar = {**FactoredSoftmaxRule._constraints, **_PAIR_CONSTRAINTS}
    scalars: ClassVar = ("cusum", "replacements")
    scaling: ClassVar = {"w": 1, "C": -2, "v": 1, "H": -2}
    signed: ClassVar = ("w", "v")
    has_sparse_update: ClassVar = False  # a replacement copies the whole reactive model
    score_kernel = _paired_factored_scores
    update_kernel = _paired_factored
    upgrades_from: ClassVar = ("FactoredSoftmaxRule",)  # a model saved before it had a twin

    def __init__(self, *, eta: float = 0.5, damping: float = 0.0, beta: float = 1.0, lam: float = 0.0,
                 reactive_beta: float = 0.99, reactive_lam: float = 0.005, replace_after: float = 10.0) -> None:
        self.reactive_beta = reactive_beta
        self.reactive_lam = reactive_lam
        self.replace_after = replace_after
        super().__init__(eta=eta, damping=damping, beta=beta, lam=lam)

    def packed_params(self) -> np.ndarray:
        return np.append(super().packed_params(), [self.reactive_beta, self.reactive_lam, self.replace_after])

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"w": n_classes, "C": 1, "v": n_classes, "H": 1}

    def vectors(self) -> dict[str, int]:
        return {"R": self._n_classes, "Q": self._n_classes}

    def _keeps_2d(self, name: str) -> bool:
        return name in ("w", "v")

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        """A factored rule's state (w, C, R) loads too: the twin starts as its copy, the count of Eq. (1) at 0."""
        super().load_state_dict(_with_twin(state, {"v": "w", "H": "C", "Q": "R"}))
