"""Exact convex CW against a dense transcription of Crammer, Dredze & Pereira (2008), Sect. 3."""

from statistics import NormalDist

import numpy as np
import pytest

from learners import make
from learners.rules.cw import CWDiagRule, CWRule
from tests.unit.learners.rules._streams import sparse, stream


def cw_dense(mu, Sigma, x, y, eta, diagonal=False):
    """α, u from the paper; μ + α y Σx; Σ⁻¹ + α φ u^{-1/2} x xᵀ (only its diagonal for CW-diag)."""
    phi = NormalDist().inv_cdf(eta)
    psi, zeta = 1 + phi**2 / 2, 1 + phi**2
    S = np.diag(Sigma) if diagonal else Sigma
    m, v = y * mu @ x, x @ S @ x
    if v == 0 or phi * np.sqrt(v) - m <= 0:
        return mu, Sigma
    alpha = max(0.0, (-m * psi + np.sqrt(m**2 * phi**4 / 4 + v * phi**2 * zeta)) / (v * zeta))
    b = alpha * v * phi
    u = 0.25 * (-b + np.sqrt(b**2 + 4 * v)) ** 2
    if b > 1e3 * np.sqrt(v):  # as printed, u cancels to 0 once Σ has shrunk: the same value, rationalised
        u = (2 * v / (b + np.sqrt(b**2 + 4 * v))) ** 2
    if diagonal:
        return mu + alpha * y * Sigma * x, 1.0 / (1.0 / Sigma + alpha * phi / np.sqrt(u) * x * x)
    return mu + alpha * y * S @ x, np.linalg.inv(np.linalg.inv(S) + alpha * phi / np.sqrt(u) * np.outer(x, x))


@pytest.mark.parametrize("eta", [0.55, 0.7, 0.8])
def test_cw_full_matches_dense_equations(eta):
    rule = CWRule(eta=eta)
    rule.allocate(5)
    mu, Sigma = np.zeros(5), np.eye(5)
    for x, y in stream(7, 150, 5, linear=True):
        mu, Sigma = cw_dense(mu, Sigma, x, y, eta)
        rule.update(*sparse(x), y)
    np.testing.assert_allclose(rule.mu_, mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(rule.sigma_, Sigma, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("eta", [0.55, 0.7, 0.8])
def test_cw_diagonal_adds_only_the_diagonal_to_the_precision(eta):
    rule = CWDiagRule(eta=eta)
    rule.allocate(8)
    mu, sigma = np.zeros(8), np.ones(8)
    for x, y in stream(8, 200, 8, linear=True):
        mu, sigma = cw_dense(mu, sigma, x, y, eta, diagonal=True)
        rule.update(*sparse(x), y)
    np.testing.assert_allclose(rule.mu_, mu, rtol=1e-10, atol=1e-12)
    # CW shrinks Σ fast (to ~1e-45 here): rounding in the two orders of operations shows at 1e-9
    np.testing.assert_allclose(rule.sigma_, sigma, rtol=1e-7)


def test_cw_diagonal_equals_full_on_one_hot_rows():
    full, diag = CWRule(eta=0.8), CWDiagRule(eta=0.8)
    full.allocate(4)
    diag.allocate(4)
    for x, y in stream(9, 300, 4, one_hot=True):
        full.update(*sparse(x), y)  # a repeated row sits on the constraint's boundary: compare states only
        diag.update(*sparse(x), y)
    np.testing.assert_allclose(np.diag(full.sigma_), diag.sigma_, rtol=1e-12)
    np.testing.assert_allclose(full.mu_, diag.mu_, rtol=1e-12, atol=1e-14)


def test_cw_stops_instead_of_overflowing_when_sigma_collapses():
    rule = CWDiagRule(eta=0.99)  # random labels drive Σ to ~1e-190 within 60 updates
    rule.allocate(8)
    for x, y in stream(8, 3000, 8):
        rule.update(*sparse(x), y)
    assert np.isfinite(rule.mu_).all() and np.isfinite(rule.sigma_).all()


def test_cw_update_makes_the_confidence_constraint_hold():
    rule = CWRule(eta=0.9)
    rule.allocate(3)
    x = np.array([1.0, -2.0, 0.5])
    rule.update(*sparse(x), 1)
    phi = NormalDist().inv_cdf(0.9)
    assert rule.mu_ @ x == pytest.approx(phi * np.sqrt(x @ rule.sigma_ @ x), rel=1e-9)  # on the boundary
    assert not rule.update(*sparse(x), 1)


def test_cw_rejects_eta_outside_half_to_one():
    for eta in (0.5, 1.0, 0.2):
        with pytest.raises(ValueError):
            CWDiagRule(eta=eta)
    with pytest.raises(ValueError, match="'cw-diag'"):
        make("cw", n_features=20_000)
