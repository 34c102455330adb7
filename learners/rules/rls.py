"""Regularised least squares with the current instance: the learner behind BBQ and BBQ-I.

Cesa-Bianchi, Gentile & Orabona, "Robust Bounds for Classification via Selective Sampling",
ICML 2009, Fig. 1 (BBQ): the weight vector and the query statistic are those of RLS regularised
by the identity and including the current instance (the Vovk-Azoury-Warmuth forecaster),

    A_t = a I + Σ_{s queried} x_s x_sᵀ,    w_t = (A_t + x_t x_tᵀ)⁻¹ Σ_{s queried} y_s x_s,
    p_t = w_tᵀ x_t = μᵀx_t / (1 + v_t),     v_t = x_tᵀ A_t⁻¹ x_t,   μ = A_t⁻¹ Σ y_s x_s,

with BBQ's query statistic r_t = x_tᵀ(A_t + x_t x_tᵀ)⁻¹x_t = v_t / (1 + v_t). BBQ updates on every
queried label. BBQ-I (Moroshko & Crammer, AISTATS 2014, Sect. 5) updates only on queried mistakes,
which makes its learner the second-order Perceptron (:class:`learners.rules.sop.SOPRule`, a = 1).

This is LASEC without drift (c = ∞, b = a; Moroshko & Crammer, Sect. 3), so the update is
:func:`learners.rules.lasec.lasec_full_update` with c⁻¹ = 0: μ ← μ + (y − μᵀx) A⁻¹x / (1 + v),
A⁻¹ ← A⁻¹ − A⁻¹xxᵀA⁻¹ / (1 + v).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.kernels import SCORE_SIG, UPDATE_SIG, kernel, sq_norm
from learners.params import Interval
from learners.rules.lasec import lasec_full_margin, lasec_full_update
from learners.rules.matrix import FullMatrixRule

__all__ = ["RLSRule"]


@kernel(SCORE_SIG)
def _score(S, a, P, idx, val):
    m, v = lasec_full_margin(S[0], S[1:], idx, val, 0.0)
    return m / (1.0 + v), np.nan, v, -1


@kernel(UPDATE_SIG)
def _update(S, a, P, idx, val, y, weight):
    if sq_norm(val) == 0.0:
        return False
    lasec_full_update(S[0], S[1:], idx, val, y, 0.0)
    a[0] += 1.0
    return True


class RLSRule(FullMatrixRule):
    """Regularised least squares (full matrix) learning from every label: the learner of BBQ.

    Parameters
    ----------
    a : float > 0, default 1.0
        Regularisation a I of A_0 (BBQ uses the identity, a = 1).
    max_matrix_mb : float > 0, default 1024
        Largest D×D float64 matrix the rule will allocate; above it, allocation is refused.

    State
    -----
    mu_ : float64 (D,)
        μ = A⁻¹ Σ y_s x_s.
    sigma_ : float64 (D, D)
        A⁻¹.
    updates : float
        Labels used so far.

    Complexity
    ----------
    O(nnz²) per scored row, O(D·nnz + D²) per update, D² floats of memory (large D is refused).

    Examples
    --------
    >>> import numpy as np
    >>> rule = RLSRule(a=1.0); rule.allocate(2)
    >>> x = np.array([0], dtype=np.int32), np.array([2.0])
    >>> rule.update(*x, 1), rule.update(*x, 1)       # a correct label still updates BBQ
    (True, True)
    >>> rule.mu_.round(4).tolist()                   # A = 1 + 2·4 = 9, Σ y x = 4: μ = 4/9
    [0.4444, 0.0]

    References
    ----------
    N. Cesa-Bianchi, C. Gentile and F. Orabona, Robust Bounds for Classification via Selective
    Sampling, ICML 2009, Fig. 1.
    """

    provides: ClassVar = frozenset({"p", "v"})
    scalars: ClassVar = ("updates",)
    matrix: ClassVar = "sigma"
    diagonal: ClassVar = "sop-ss-diag"  # BBQ has no diagonal form; the closest diagonal learner
    _constraints: ClassVar = {
        "a": Interval(0, None, closed="neither"),
        "max_matrix_mb": Interval(0, None, closed="neither"),
    }
    score_kernel = _score
    update_kernel = _update
    scaling: ClassVar = {"mu": 1, "sigma": 1}  # μ → Dμ, Σ = (aI + Σxxᵀ)⁻¹ → DΣD
    signed: ClassVar = ("mu",)

    def __init__(self, *, a: float = 1.0, max_matrix_mb: float = 1024.0) -> None:
        self.a = a
        self.max_matrix_mb = max_matrix_mb
        self._validate()

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"mu": 1, "sigma": n_features}

    def initialize(self) -> None:
        np.fill_diagonal(self.sigma_, 1.0 / self.a)
