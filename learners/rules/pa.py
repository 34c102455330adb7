"""Passive-Aggressive updates: PA, PA-I and PA-II.

Crammer, Dekel, Keshet, Shalev-Shwartz & Singer, "Online Passive-Aggressive Algorithms", JMLR 7,
2006; as restated in Eq. (1) of Lu, Zhao & Hoi, "Online Passive-Aggressive Active learning",
Machine Learning 103(2), 2016, which builds PAA, PAA-I and PAA-II (Algorithm 2) on them.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import UPDATE_SIG, axpy, kernel, sparse_dot, sq_norm
from learners.params import Interval, Options
from learners.rules.linear import binary_margin

__all__ = ["PARule", "pa_update"]


@jit
def pa_update(w, idx, val, y, C, mode):
    """One PA step on (x, y), x = (idx, val): Eq. (1) of Lu, Zhao & Hoi 2016. O(nnz).

    mode 0 = PA, 1 = PA-I, 2 = PA-II. Returns False on a passive round (zero hinge loss) and
    for an all-zero x, which gives no direction to move in.
    """
    loss = 1.0 - y * sparse_dot(w, idx, val)  # ℓ_t = max(0, 1 − y_t w_t·x_t)
    if loss <= 0.0:
        return False
    sq = sq_norm(val)  # ‖x_t‖²
    if sq == 0.0:
        return False
    if mode == 0:
        tau = loss / sq  # Eq. (1), PA
    elif mode == 1:
        tau = min(C, loss / sq)  # Eq. (1), PA-I
    else:
        tau = loss / (sq + 1.0 / (2.0 * C))  # Eq. (1), PA-II
    axpy(w, tau * y, idx, val)  # w_{t+1} = w_t + τ_t y_t x_t
    return True


@kernel(UPDATE_SIG)
def _update(S, a, P, idx, val, y, weight):
    # importance weight ω: min_w' ½‖w' − w‖² + C ω ξ (ξ² for PA-II) is Eq. (1) with C ω for C
    return pa_update(S[0], idx, val, y, P[0] * weight, int(P[1]))


class PARule(UpdateRule):
    """Passive-Aggressive update of a binary linear model (PA, PA-I, PA-II).

    On a labelled round with hinge loss ℓ_t > 0: w ← w + τ_t y_t x_t, with τ_t from Eq. (1) of
    Lu, Zhao & Hoi (2016): ℓ/‖x‖² (PA), min(C, ℓ/‖x‖²) (PA-I), ℓ/(‖x‖² + 1/(2C)) (PA-II).

    Parameters
    ----------
    mode : {0, 1, 2}, default 1
        0 = PA (hard margin), 1 = PA-I, 2 = PA-II.
    C : float > 0, default 1.0
        Aggressiveness C of PA-I / PA-II (ignored by PA).

    State
    -----
    w_ : float64 (D,)
        The weight vector (the last entry is the intercept when the learner has one).

    Complexity
    ----------
    O(nnz) per update and per scored row.

    Examples
    --------
    >>> import numpy as np
    >>> rule = PARule(mode=1, C=0.5); rule.allocate(3)
    >>> rule.update(np.array([0, 2], dtype=np.int32), np.array([1.0, 1.0]), 1)
    True
    >>> rule.w_.tolist()     # τ = min(0.5, 1/2) = 0.5
    [0.5, 0.0, 0.5]

    References
    ----------
    Crammer et al., JMLR 7:551-585, 2006. Lu, Zhao & Hoi, Mach. Learn. 103(2):141-183, 2016.
    """

    _constraints: ClassVar = {"mode": Options(0, 1, 2), "C": Interval(0, None, closed="neither")}
    score_kernel = binary_margin
    update_kernel = _update

    @property
    def importance_weights(self) -> bool:
        """PA-I and PA-II weigh a label's slack by its importance ω (C ω for C); PA's hard
        constraint has no slack to weigh."""
        return self.mode != 0

    def __init__(self, *, mode: int = 1, C: float = 1.0) -> None:
        self.mode = mode
        self.C = C
        self._validate()

    def packed_params(self) -> np.ndarray:
        return np.array([self.C, self.mode], dtype=np.float64)
