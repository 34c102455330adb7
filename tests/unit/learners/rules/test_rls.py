"""BBQ's learner (regularised least squares with the current instance) against its dense form."""

import numpy as np
import pytest

from learners import make
from learners.rules.rls import RLSRule


def _sparse(x):
    idx = np.flatnonzero(x).astype(np.int32)
    return idx, x[idx]


@pytest.mark.parametrize("a", [0.5, 1.0, 4.0])
def test_rls_margin_and_state_match_ridge_regression_with_the_current_instance(a):
    rng = np.random.default_rng(0)
    d = 6
    rule = RLSRule(a=a)
    rule.allocate(d)
    A, b = a * np.eye(d), np.zeros(d)  # A = aI + Σ x xᵀ, b = Σ y x over every label
    for _ in range(120):
        x = rng.standard_normal(d) * (rng.random(d) < 0.7)
        y = int(rng.choice([-1, 1]))
        s = rule.score(x[None, :])
        w = np.linalg.solve(A + np.outer(x, x), b)  # w_t = (A + x xᵀ)⁻¹ Σ y x
        assert s.p[0] == pytest.approx(w @ x, rel=1e-9, abs=1e-12)
        assert s.v[0] == pytest.approx(x @ np.linalg.solve(A, x), rel=1e-9, abs=1e-12)
        assert rule.update(*_sparse(x), y) == bool(x @ x)
        A += np.outer(x, x)
        b += y * x
    np.testing.assert_allclose(rule.sigma_, np.linalg.inv(A), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rule.mu_, np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)


def test_rls_updates_on_correctly_predicted_labels_too():
    rule = RLSRule()
    rule.allocate(1)
    x = np.array([0], dtype=np.int32), np.array([1.0])
    rule.update(*x, 1)
    assert rule.score(np.array([[1.0]])).p[0] > 0
    before = rule.mu_.copy()
    assert rule.update(*x, 1) is True
    assert rule.mu_[0] > before[0]


def test_bbq_i_updates_only_on_mistakes_and_bbq_on_every_label():
    x = np.array([[1.0, 0.0]])
    bbq, bbq_i = make("bbq", n_features=2, bias=0.0), make("bbq-i", n_features=2, bias=0.0)
    for learner in (bbq, bbq_i):
        learner.learn_many(x, [1])
        assert learner.learn_many(x, [1]) == (1 if learner is bbq else 0)
