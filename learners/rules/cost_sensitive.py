"""Cost-sensitive binary updates: CSPAA (Eq. 11), cost-sensitive PA (CPA) and PAUM.

Lu, Zhao & Hoi, "Online Passive-Aggressive Active learning", Mach. Learn. 103(2), 2016, Sect. 5.
Maximising the weighted sum η_p·sensitivity + η_n·specificity (Eq. 6) or minimising the cost
c_p·M_p + c_n·M_n (Eq. 7) both amount to minimising Σ_{y=+1} ρ·I(y w·x < 0) + Σ_{y=−1} I(y w·x < 0)
(Eq. 8, Proposition 1), with

* ``objective="sum"``:  ρ = η_p·T_n / (η_n·T_p), T_p / T_n the numbers of positives / negatives;
* ``objective="cost"``: ρ = c_p / c_n.

Every rule here takes its ρ the same way, as the paper's experiments give every compared
algorithm the same ρ and C = ρ (Sect. 6.3.2). Positive is the rare class (internal code +1).

T_n/T_p unknown (``objective="sum"``, ``ratio=None``): the rule counts the labels it receives
(the scalar state ``positives``, ``negatives``, the current label included) and uses
T̂_n/T̂_p = (negatives + 1)/(positives + 1): one pseudo-label per class, so ρ starts at η_p/η_n and
is defined before either class has been seen. Only labelled rounds are counted, so under an active
query the estimate reflects the queried records, which over-represent the class boundary.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import UPDATE_SIG, axpy, kernel, sparse_dot, sq_norm
from learners.params import Interval, Options
from learners.rules.linear import binary_margin

__all__ = ["CPARule", "CSPARule", "PAUMRule", "cost_ratio", "cpa_update", "cspaa_update", "paum_update"]

_POSITIVE = Interval(0, None, closed="neither")
_FRACTION = Interval(0, 1, closed="neither")


@jit
def cost_ratio(rho, eta_ratio, T_p, T_n):
    """ρ of Proposition 1: the fixed ``rho``, or, when it is NaN, η_p·T̂_n/(η_n·T̂_p) with
    T̂ = T + 1 (one pseudo-label per class); ``eta_ratio`` = η_p/η_n."""
    if not math.isnan(rho):
        return rho
    return eta_ratio * (T_n + 1.0) / (T_p + 1.0)


@jit(inline="always")
def _observe(a, P, y):
    """Count the label (a = [T_p, T_n] seen so far), then return (ρ, C) for this round."""
    if y > 0:
        a[0] += 1.0
    else:
        a[1] += 1.0
    rho = cost_ratio(P[0], P[1], a[0], a[1])
    return rho, (rho if math.isnan(P[2]) else P[2])  # C = ρ unless set (Sect. 6.3.2)


@jit
def cspaa_update(w, idx, val, y, rho, C):
    """CSPAA's update on (x, y): Eqs. (9)-(11) of Lu, Zhao & Hoi 2016. O(nnz).

    ρ_t = ρ for a positive, 1 for a negative; ℓ_t = max(0, ρ_t − y_t w_t·x_t);
    w_{t+1} = w_t + τ_t y_t x_t with τ_t = min(C, ℓ_t/‖x_t‖²), which is Eq. (11)'s min(C, ℓ_t) on
    the unit-norm rows the paper assumes (Sect. 5.2). Passive when ℓ_t = 0 or x = 0.
    """
    rho_t = rho if y > 0 else 1.0  # ρ_t = ρ·I(y_t = 1) + I(y_t = −1)
    loss = rho_t - y * sparse_dot(w, idx, val)  # ℓ_t, Eq. (9)
    if loss <= 0.0:
        return False
    sq = sq_norm(val)
    if sq == 0.0:
        return False
    tau = min(C, loss / sq)  # Eq. (11)
    axpy(w, tau * y, idx, val)  # w_{t+1} = w_t + τ_t y_t x_t
    return True


@jit
def cpa_update(w, idx, val, y, rho, C):
    """Prediction-based cost-sensitive PA-I (Crammer et al., JMLR 7, 2006) on (x, y). O(nnz).

    Binary case of the prediction-based loss w·Φ(x, ŷ) − w·Φ(x, y) + √ρ(y, ŷ) with Φ(x, y) = y x/2
    and the costs ρ(+1, −1) = ρ, ρ(−1, +1) = 1: only a mistake (y w·x ≤ 0) updates, with
    ℓ_t = √ρ_t − y_t w_t·x_t and τ_t = min(C, ℓ_t/‖x_t‖²).
    """
    margin = y * sparse_dot(w, idx, val)
    if margin > 0.0:  # ŷ = y: ρ(y, y) = 0 and the loss is 0
        return False
    sq = sq_norm(val)
    if sq == 0.0:
        return False
    rho_t = rho if y > 0 else 1.0
    tau = min(C, (math.sqrt(rho_t) - margin) / sq)  # τ_t = min(C, ℓ_t/‖x_t‖²)
    axpy(w, tau * y, idx, val)
    return True


@jit
def paum_update(w, idx, val, y, tau_p, tau_n):
    """Perceptron with uneven margins (Li et al., ICML 2002, Algorithm 1) on (x, y). O(nnz).

    Updates w ← w + y x whenever y w·x ≤ τ_y: a positive must clear the margin τ_{+1}, a negative
    τ_{−1}. (The algorithm's separate bias b ← b + y R² is the learner's intercept coordinate here.)
    """
    tau_y = tau_p if y > 0 else tau_n
    if y * sparse_dot(w, idx, val) > tau_y:
        return False
    if sq_norm(val) == 0.0:
        return False
    axpy(w, float(y), idx, val)  # w_{t+1} = w_t + y_t x_t
    return True


@kernel(UPDATE_SIG)
def _cspaa(S, a, P, idx, val, y, weight):
    rho, C = _observe(a, P, y)
    return cspaa_update(S[0], idx, val, y, rho, C)


@kernel(UPDATE_SIG)
def _cpa(S, a, P, idx, val, y, weight):
    rho, C = _observe(a, P, y)
    return cpa_update(S[0], idx, val, y, rho, C)


@kernel(UPDATE_SIG)
def _paum(S, a, P, idx, val, y, weight):
    rho, _ = _observe(a, P, y)
    return paum_update(S[0], idx, val, y, rho, 1.0)


class _CostSensitiveRule(UpdateRule):
    """Shared ρ of Proposition 1: objective, its weights, and T_n/T_p known or counted."""

    _constraints: ClassVar = {"objective": Options("sum", "cost")}
    scalars: ClassVar = ("positives", "negatives")
    symmetric: ClassVar = False  # ρ weighs the positive class
    score_kernel = binary_margin

    objective: str
    eta_p: float | None
    c_p: float | None
    ratio: float | None

    def _check_params(self) -> None:
        for name, value, check in (("eta_p", self.eta_p, _FRACTION), ("c_p", self.c_p, _FRACTION),
                                   ("ratio", self.ratio, _POSITIVE), ("C", getattr(self, "C", None), _POSITIVE)):
            if value is not None:
                check.check(name, value)
        if self.objective == "sum" and self.c_p is not None:
            raise ValueError("c_p sets the cost objective's ρ = c_p/c_n; with objective='sum' set eta_p "
                             "(and ratio = T_n/T_p if known) instead")
        if self.objective == "cost":
            if self.c_p is None:
                raise ValueError("objective='cost' needs c_p, the cost of a false negative (c_n = 1 - c_p)")
            if self.eta_p is not None or self.ratio is not None:
                raise ValueError("eta_p and ratio belong to objective='sum'; the cost objective's ρ is c_p/c_n")

    @property
    def eta(self) -> tuple[float, float]:
        """(η_p, η_n) of the weighted sum, η_p defaulting to 1/2."""
        eta_p = 0.5 if self.eta_p is None else float(self.eta_p)
        return eta_p, 1.0 - eta_p

    @property
    def rho(self) -> float | None:
        """ρ when it is fixed by the parameters; None when T_n/T_p is estimated online."""
        if self.objective == "cost":
            return float(self.c_p) / (1.0 - float(self.c_p))
        if self.ratio is None:
            return None
        eta_p, eta_n = self.eta
        return eta_p * float(self.ratio) / eta_n

    def metric_weights(self) -> dict[str, float]:
        """The η and c this rule optimises, as ``binary_metrics`` keywords."""
        eta_p, eta_n = self.eta
        c_p = 0.5 if self.c_p is None else float(self.c_p)
        return {"eta_p": eta_p, "eta_n": eta_n, "c_p": c_p, "c_n": 1.0 - c_p}

    def packed_params(self) -> np.ndarray:
        eta_p, eta_n = self.eta
        rho = self.rho
        C: Any = getattr(self, "C", None)
        return np.array([np.nan if rho is None else rho, eta_p / eta_n, np.nan if C is None else C])


class CSPARule(_CostSensitiveRule):
    """CSPAA's cost-sensitive PA update (Lu, Zhao & Hoi 2016, Eq. 11), for the sum or cost objective.

    On a labelled round with ℓ_t = max(0, ρ_t − y w·x) > 0 (ρ_t = ρ for a positive, 1 for a
    negative): w ← w + τ_t y x, τ_t = min(C, ℓ_t/‖x‖²), Eq. (11) for unit-norm rows. Paired with
    the margin query it is CSPAA, with a fixed rate CSRND, with the decaying δ CSPAA(a).

    Parameters
    ----------
    objective : {"sum", "cost"}, default "sum"
        Which metric ρ serves: the weighted sum (Eq. 6) or the cost (Eq. 7).
    eta_p : float in (0, 1) or None, default None
        η_p of the sum (η_n = 1 − η_p); None = 1/2 (balanced accuracy). Sum objective only.
    c_p : float in (0, 1) or None, default None
        c_p, cost of a false negative (c_n = 1 − c_p), so ρ = c_p/c_n. Required by the cost
        objective, refused by the sum objective.
    ratio : float > 0 or None, default None
        T_n/T_p for the sum objective; None estimates it online from the labels received,
        (negatives + 1)/(positives + 1).
    C : float > 0 or None, default None
        Aggressiveness C; None = ρ (C = ρ in the paper's experiments, Sect. 6.3.2).

    State
    -----
    w_ : float64 (D,)
        The weight vector (the last entry is the intercept when the learner has one).
    positives, negatives : float
        Labels of each class received so far.

    Complexity
    ----------
    O(nnz) per update and per scored row.

    Examples
    --------
    >>> import numpy as np
    >>> rule = CSPARule(objective="cost", c_p=0.75, C=10.0); rule.allocate(2)   # ρ = 0.75/0.25 = 3
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1), rule.w_.tolist()   # ℓ = 3
    (True, [3.0, 0.0])
    >>> rule.update(np.array([0], dtype=np.int32), np.array([1.0]), -1), rule.w_.tolist()  # ℓ = 1 + 3
    (True, [-1.0, 0.0])

    References
    ----------
    Lu, Zhao & Hoi, Mach. Learn. 103(2):141-183, 2016, Sect. 5.2 (Algorithm 4).
    """

    update_kernel = _cspaa

    def __init__(self, *, objective: str = "sum", eta_p: float | None = None, c_p: float | None = None,
                 ratio: float | None = None, C: float | None = None) -> None:
        self.objective, self.eta_p, self.c_p, self.ratio, self.C = objective, eta_p, c_p, ratio, C
        self._validate()


class CPARule(_CostSensitiveRule):
    """Cost-sensitive PA, prediction-based (CPA, Crammer et al. 2006), the CSPAA paper's baseline.

    Only a mistake (y w·x ≤ 0) updates: w ← w + τ_t y x, τ_t = min(C, (√ρ_t − y w·x)/‖x‖²), ρ_t = ρ
    for a positive and 1 for a negative, ρ from the same ``objective`` parameters as
    :class:`CSPARule`.

    Parameters
    ----------
    objective, eta_p, c_p, ratio, C
        As for :class:`CSPARule`.

    State
    -----
    w_ : float64 (D,)
    positives, negatives : float
        Labels of each class received so far.

    Complexity
    ----------
    O(nnz) per update and per scored row.

    Examples
    --------
    >>> import numpy as np
    >>> rule = CPARule(objective="cost", c_p=0.8, C=10.0); rule.allocate(2)   # ρ = 4, √ρ = 2
    >>> rule.update(np.array([1], dtype=np.int32), np.array([1.0]), 1), rule.w_.tolist()
    (True, [0.0, 2.0])
    >>> rule.update(np.array([1], dtype=np.int32), np.array([1.0]), 1)   # now correct: passive
    False

    References
    ----------
    Crammer et al., JMLR 7:551-585, 2006 (cost-sensitive multiclass PA, prediction-based update).
    Lu, Zhao & Hoi, Mach. Learn. 103(2):141-183, 2016, Sect. 6.3.2.
    """

    update_kernel = _cpa

    def __init__(self, *, objective: str = "sum", eta_p: float | None = None, c_p: float | None = None,
                 ratio: float | None = None, C: float | None = None) -> None:
        self.objective, self.eta_p, self.c_p, self.ratio, self.C = objective, eta_p, c_p, ratio, C
        self._validate()


class PAUMRule(_CostSensitiveRule):
    """Perceptron with uneven margins (PAUM, Li et al. 2002): w ← w + y x whenever y w·x ≤ τ_y.

    The margins are τ_{+1} = ρ and τ_{−1} = 1, the ρ_t of CSPAA's loss (Eq. 9), with ρ from the
    same ``objective`` parameters as :class:`CSPARule` (the CSPAA paper does not give PAUM's).

    Parameters
    ----------
    objective, eta_p, c_p, ratio
        As for :class:`CSPARule`.

    State
    -----
    w_ : float64 (D,)
    positives, negatives : float
        Labels of each class received so far.

    Complexity
    ----------
    O(nnz) per update and per scored row.

    Examples
    --------
    >>> import numpy as np
    >>> rule = PAUMRule(objective="sum", ratio=3.0); rule.allocate(2)   # τ_{+1} = 3
    >>> for _ in range(5):
    ...     _ = rule.update(np.array([0], dtype=np.int32), np.array([1.0]), 1)
    >>> rule.w_.tolist()     # updates until w·x = 4 > 3
    [4.0, 0.0]

    References
    ----------
    Li, Zaragoza, Herbrich, Shawe-Taylor & Kandola, The Perceptron Algorithm with Uneven Margins,
    ICML 2002. Lu, Zhao & Hoi, Mach. Learn. 103(2):141-183, 2016, Sect. 6.3.2.
    """

    update_kernel = _paum

    def __init__(self, *, objective: str = "sum", eta_p: float | None = None, c_p: float | None = None,
                 ratio: float | None = None) -> None:
        self.objective, self.eta_p, self.c_p, self.ratio = objective, eta_p, c_p, ratio
        self._validate()
