"""What the second-order rules share: quadratic forms over sparse rows, and full-matrix state.

A second-order rule keeps a matrix next to its weights: a covariance Σ (SOAL, AROW, CW) or the
inverse correlation matrix A⁻¹ (the second-order Perceptron). Kept diagonal, it is one row of
``S`` and every operation is O(nnz). Kept full, it is D rows of ``S`` (a D×D block): scoring
reads the nnz×nnz sub-block it needs, O(nnz²); an update is a rank-one change of the whole
matrix, O(D²). :class:`FullMatrixRule` refuses a dimension whose matrix would not fit in
``max_matrix_mb`` and names the diagonal registry entry instead.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from learners.base import UpdateRule
from learners.jit import jit
from learners.kernels import SCORE_SIG, kernel, sparse_dot
from learners.scaling import rescale_full

__all__ = [
    "FullMatrixRule",
    "GaussianDiagRule",
    "GaussianRule",
    "MatrixTooLargeError",
    "diag_quad",
    "full_matvec",
    "full_quad",
    "full_rank_one",
    "matrix_megabytes",
    "mean_diag_score",
    "mean_full_score",
]


@jit(inline="always")
def diag_quad(d, idx, val):
    """xᵀ diag(d) x for a sparse row x. O(nnz)."""
    s = 0.0
    for j in range(idx.size):
        s += d[idx[j]] * val[j] * val[j]
    return s


@jit
def full_quad(M, idx, val):
    """xᵀ M x for a sparse row x: reads only the nnz×nnz sub-block of M. O(nnz²)."""
    s = 0.0
    for j in range(idx.size):
        row = M[idx[j]]
        t = 0.0
        for k in range(idx.size):
            t += row[idx[k]] * val[k]
        s += val[j] * t
    return s


@jit
def full_matvec(M, idx, val, out):
    """out ← M x for a symmetric M and a sparse row x: a sum of nnz rows of M. O(nnz·D)."""
    out[:] = 0.0
    for j in range(idx.size):
        row = M[idx[j]]
        xj = val[j]
        for i in range(out.size):
            out[i] += xj * row[i]


@jit
def full_rank_one(M, u, beta):
    """M ← M − β u uᵀ. O(D²), skipping the rows where u is zero."""
    for i in range(u.size):
        bi = beta * u[i]
        if bi == 0.0:
            continue
        row = M[i]
        for k in range(u.size):
            row[k] -= bi * u[k]


def matrix_megabytes(n_features: int) -> float:
    """Memory of one float64 n_features × n_features matrix, in MB (10⁶ bytes)."""
    return 8.0 * n_features * n_features / 1e6


class MatrixTooLargeError(ValueError):
    """A full-matrix rule was asked for a dimension whose D×D matrix exceeds its memory limit."""

    def __init__(self, rule: str, n_features: int, limit_mb: float, diagonal: str) -> None:
        self.rule, self.n_features, self.limit_mb, self.diagonal = rule, n_features, limit_mb, diagonal
        super().__init__(self.message(diagonal))

    def message(self, diagonal: str) -> str:
        """The refusal, naming ``diagonal`` as the registry entry to use instead."""
        d = self.n_features
        return (f"{self.rule} keeps a full {d:,}×{d:,} matrix ({matrix_megabytes(d):,.0f} MB), more than "
                f"max_matrix_mb={self.limit_mb:g}; use the diagonal variant {diagonal!r} (O(D) memory, "
                f"O(nnz) updates) or raise max_matrix_mb")


class FullMatrixRule(UpdateRule):
    """Base of the rules that keep a full D×D matrix under the state name ``matrix``.

    Subclasses set ``matrix`` (the name of the D-row block in their layout) and ``diagonal``
    (the registry entry of their diagonal variant, for the refusal message).
    """

    is_full_matrix: ClassVar[bool] = True
    has_sparse_update: ClassVar[bool] = False  # a rank-one change of the whole matrix
    rescale_kernel: ClassVar = rescale_full  # the trailing D×D block is M → DMD
    matrix: ClassVar[str]
    diagonal: ClassVar[str]

    max_matrix_mb: float

    def _keeps_2d(self, name: str) -> bool:
        return name == self.matrix or self.multiclass

    def allocate(self, n_features: int, n_classes: int = 2) -> None:
        if matrix_megabytes(n_features) > self.max_matrix_mb:
            raise MatrixTooLargeError(type(self).__name__, n_features, self.max_matrix_mb, self.diagonal)
        super().allocate(n_features, n_classes)


@kernel(SCORE_SIG)
def mean_full_score(S, a, P, idx, val):
    """p = μᵀx and v = xᵀΣx for the rules that keep w ~ N(μ, Σ) as μ = S[0], Σ = S[1:] (full)."""
    return sparse_dot(S[0], idx, val), np.nan, full_quad(S[1:], idx, val), -1


@kernel(SCORE_SIG)
def mean_diag_score(S, a, P, idx, val):
    """p = μᵀx and v = xᵀdiag(Σ)x, with μ = S[0] and diag(Σ) = S[1]."""
    return sparse_dot(S[0], idx, val), np.nan, diag_quad(S[1], idx, val), -1


class GaussianRule(FullMatrixRule):
    """A rule keeping w ~ N(μ, Σ) with a full Σ, Σ_1 = I (SOAL, AROW, CW): it scores p = μᵀx and
    reports v = xᵀΣx. Subclasses give the update kernel, their parameters and the diagonal twin."""

    scaling: ClassVar = {"mu": 1, "sigma": 1}  # μ → Dμ, Σ → DΣD
    signed: ClassVar = ("mu",)
    provides: ClassVar = frozenset({"p", "v"})
    matrix: ClassVar = "sigma"
    score_kernel = mean_full_score

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"mu": 1, "sigma": n_features}

    def initialize(self) -> None:
        np.fill_diagonal(self.sigma_, 1.0)  # Σ_1 = I


class GaussianDiagRule(UpdateRule):
    """The same with diag(Σ) only, Σ_1 = I: O(nnz) to score and to update."""

    scaling: ClassVar = {"mu": 1, "sigma": 2}  # μ_i → r_i μ_i, Σ_ii → r_i² Σ_ii
    signed: ClassVar = ("mu",)
    provides: ClassVar = frozenset({"p", "v"})
    score_kernel = mean_diag_score

    def layout(self, n_features: int, n_classes: int) -> dict[str, int]:
        return {"mu": 1, "sigma": 1}

    def initialize(self) -> None:
        self.sigma_[:] = 1.0  # Σ_1 = I

