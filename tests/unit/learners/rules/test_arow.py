"""AROW against a dense transcription of Crammer, Kulesza & Dredze (2009), Sect. 3."""

import numpy as np
import pytest

from learners import make
from learners.rules.arow import AROWDiagRule, AROWRule
from tests.unit.learners.rules._streams import sparse, stream


def arow_dense(mu, Sigma, x, y, r, diagonal=False):
    """α = ℓ β, β = 1/(xᵀΣx + r); μ + α y Σx; Σ − β Σx xᵀΣ (its diagonal for the diagonal rule)."""
    loss = max(0.0, 1.0 - y * mu @ x)
    if loss == 0.0:
        return mu, Sigma
    S = np.diag(Sigma) if diagonal else Sigma
    beta = 1.0 / (x @ S @ x + r)
    new = S - beta * np.outer(S @ x, x @ S)
    return mu + loss * beta * y * S @ x, (np.diag(new) if diagonal else new)


@pytest.mark.parametrize("r", [0.1, 1.0, 10.0])
def test_arow_full_matches_dense_equations(r):
    rule = AROWRule(r=r)
    rule.allocate(6)
    mu, Sigma = np.zeros(6), np.eye(6)
    for x, y in stream(4, 150, 6):
        mu, Sigma = arow_dense(mu, Sigma, x, y, r)
        rule.update(*sparse(x), y)
    np.testing.assert_allclose(rule.mu_, mu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rule.sigma_, Sigma, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("r", [0.1, 1.0, 10.0])
def test_arow_diagonal_matches_the_diagonal_of_the_dense_update(r):
    rule = AROWDiagRule(r=r)
    rule.allocate(8)
    mu, sigma = np.zeros(8), np.ones(8)
    for x, y in stream(5, 200, 8):
        mu, sigma = arow_dense(mu, sigma, x, y, r, diagonal=True)
        rule.update(*sparse(x), y)
    np.testing.assert_allclose(rule.mu_, mu, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rule.sigma_, sigma, rtol=1e-12)


def test_arow_diagonal_equals_full_on_one_hot_rows():
    full, diag = AROWRule(r=0.5), AROWDiagRule(r=0.5)
    full.allocate(4)
    diag.allocate(4)
    for x, y in stream(6, 300, 4, one_hot=True):
        assert full.update(*sparse(x), y) == diag.update(*sparse(x), y)
    np.testing.assert_allclose(np.diag(full.sigma_), diag.sigma_, rtol=1e-13)
    np.testing.assert_allclose(full.mu_, diag.mu_, rtol=1e-13, atol=1e-15)


def test_full_arow_refuses_large_dimensions_naming_arow_diag():
    with pytest.raises(ValueError, match="'arow-diag'"):
        make("arow", n_features=12_000)
