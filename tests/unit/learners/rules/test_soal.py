"""SOAL's update against a dense transcription of Eqs. (1), (3), (4), (5) of Hao et al. (2016)."""

import numpy as np
import pytest

from learners import make
from learners.rules.soal import SOALDiagRule, SOALRule
from tests.unit.learners.rules._streams import sparse, stream


def soal_dense(mu, Sigma, x, y, eta, gamma):
    """Eqs. (1) and (3) as printed, when the hinge loss is positive."""
    if max(0.0, 1.0 - y * mu @ x) == 0.0:
        return mu, Sigma
    Sigma_next = Sigma - np.outer(Sigma @ x, x @ Sigma) / (gamma + x @ Sigma @ x)  # (1)
    g = -y * x
    return mu - eta * Sigma_next @ g, Sigma_next  # (3)


def soal_diag_dense(mu, sigma, x, y, eta, gamma):
    """Eqs. (4) and (5) as printed (⊙ element-wise), when the hinge loss is positive."""
    if max(0.0, 1.0 - y * mu @ x) == 0.0:
        return mu, sigma
    sigma_next = sigma - sigma * x * x * sigma / (gamma + (x * sigma) @ x)  # (4)
    return mu - eta * sigma_next * (-y * x), sigma_next  # (5)


@pytest.mark.parametrize("eta, gamma", [(1.0, 1.0), (0.1, 10.0), (3.0, 0.2)])
def test_soal_full_matches_eqs_1_and_3(eta, gamma):
    rule = SOALRule(eta=eta, gamma=gamma)
    rule.allocate(6)
    mu, Sigma = np.zeros(6), np.eye(6)
    for x, y in stream(1, 150, 6):
        s = rule.score(x[None, :])
        assert s.p[0] == pytest.approx(mu @ x, abs=1e-12) and s.v[0] == pytest.approx(x @ Sigma @ x, rel=1e-10)
        mu_next, Sigma = soal_dense(mu, Sigma, x, y, eta, gamma)
        assert rule.update(*sparse(x), y) == (not np.array_equal(mu_next, mu))
        mu = mu_next
        np.testing.assert_allclose(rule.mu_, mu, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(rule.sigma_, Sigma, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("eta, gamma", [(1.0, 1.0), (0.1, 10.0), (3.0, 0.2)])
def test_soal_diagonal_matches_eqs_4_and_5(eta, gamma):
    rule = SOALDiagRule(eta=eta, gamma=gamma)
    rule.allocate(8)
    mu, sigma = np.zeros(8), np.ones(8)
    for x, y in stream(2, 200, 8):
        assert rule.score(x[None, :]).v[0] == pytest.approx(x @ (sigma * x), rel=1e-12)
        mu, sigma = soal_diag_dense(mu, sigma, x, y, eta, gamma)
        rule.update(*sparse(x), y)
    np.testing.assert_allclose(rule.mu_, mu, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rule.sigma_, sigma, rtol=1e-12)


def test_soal_diagonal_equals_full_on_one_hot_rows():
    full, diag = SOALRule(eta=0.5, gamma=2.0), SOALDiagRule(eta=0.5, gamma=2.0)
    full.allocate(5)
    diag.allocate(5)
    for x, y in stream(3, 300, 5, one_hot=True):
        a, b = full.score(x[None, :]), diag.score(x[None, :])
        assert a.p[0] == pytest.approx(b.p[0], abs=1e-14) and a.v[0] == pytest.approx(b.v[0], rel=1e-14)
        assert full.update(*sparse(x), y) == diag.update(*sparse(x), y)
    np.testing.assert_allclose(np.diag(full.sigma_), diag.sigma_, rtol=1e-13)
    np.testing.assert_allclose(full.mu_, diag.mu_, rtol=1e-13, atol=1e-15)
    assert np.count_nonzero(full.sigma_ - np.diag(np.diag(full.sigma_))) == 0


def test_soal_is_passive_when_the_hinge_loss_is_zero():
    rule = SOALDiagRule()
    rule.allocate(2)
    rule.mu_[:] = [1.5, 0.0]
    before = rule.state_dict()
    assert not rule.update(np.array([0], np.int32), np.array([1.0]), 1)  # margin 1.5 ≥ 1
    assert all(np.array_equal(before[k], v) for k, v in rule.state_dict().items())
    assert rule.update(np.array([0], np.int32), np.array([0.5]), 1)  # margin 0.75 < 1: updates though correct


def test_full_soal_family_refuses_large_dimensions_naming_the_diagonal_entry():
    for name in ("soal", "soal-m", "sorl", "sol"):
        with pytest.raises(ValueError, match=f"use the diagonal variant '{name}-diag'"):
            make(name, n_features=50_000)
    with pytest.raises(ValueError, match="'soal-diag'"):
        SOALRule(max_matrix_mb=0.001).allocate(100)


def test_soal_family_rule_and_query_share_eta_and_gamma():
    learner = make("soal", eta=0.3, gamma=4.0)
    assert (learner.rule.eta, learner.rule.gamma) == (learner.query.eta, learner.query.gamma) == (0.3, 4.0)
    from learners.base import Learner
    from learners.queries import SOALQuery

    with pytest.raises(ValueError, match="disagree on eta"):
        Learner(SOALRule(eta=1.0), SOALQuery(eta=2.0))
