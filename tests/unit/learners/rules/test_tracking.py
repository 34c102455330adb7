"""Shifting, Modified and Randomized Budget Perceptrons against dense transcriptions."""

import numpy as np
import pytest

from learners import make
from learners.coin import coin
from learners.rules.tracking import (
    ModifiedPerceptronRule,
    RandomizedBudgetPerceptronRule,
    ShiftingPerceptronRule,
)


def _sparse(x):
    idx = np.flatnonzero(x).astype(np.int32)
    return idx, x[idx]


def _stream(seed, n, d, density=0.5):
    rng = np.random.default_rng(seed)
    for t in range(n):
        x = rng.standard_normal(d) * (rng.random(d) < density)
        u = np.random.default_rng(1000 + t // 50).standard_normal(d)
        yield x, (1 if x @ u >= 0 else -1)


@pytest.mark.parametrize("lam", [0.01, 1.0, 30.0])
def test_shifting_perceptron_matches_eager_shrinkage(lam):
    d = 8
    rule = ShiftingPerceptronRule(lam=lam)
    rule.allocate(d)
    w, k = np.zeros(d), 0
    for x, y in _stream(0, 400, d):
        assert rule.score(x[None, :]).p[0] == pytest.approx(w @ x, rel=1e-9, abs=1e-12)
        mistake = y * (w @ x) <= 0 and x @ x > 0
        if mistake:  # w ← (1 − λ_k) w + y x, λ_k = λ/(λ + k)
            w = (1.0 - lam / (lam + k)) * w + y * x
            k += 1
        assert rule.update(*_sparse(x), y) == mistake
    np.testing.assert_allclose(rule.weights(), w, rtol=1e-9, atol=1e-12)
    assert rule.a_[0] == k > 50


def test_shifting_perceptron_folds_a_vanishing_scale_back_into_the_weights():
    rule = ShiftingPerceptronRule(lam=1e4)
    rule.allocate(2)
    x = np.array([0], dtype=np.int32), np.array([1.0])
    for y in [1, -1] * 20:  # each mistake multiplies the scale by k/(λ + k) ≈ 10⁻⁴
        rule.update(*x, y)
    assert 1e-100 <= rule.a_[1] <= 1.0
    assert np.isfinite(rule.w_).all() and rule.weights()[0] != 0.0


def test_modified_perceptron_reflects_and_keeps_unit_norm():
    d = 5
    rule = ModifiedPerceptronRule()
    rule.allocate(d)
    w = None
    for x, y in _stream(1, 300, d):
        if x @ x == 0:
            continue
        margin = 0.0 if w is None else w @ x
        changed = rule.update(*_sparse(x), y)
        if w is None:
            w = y * x / np.linalg.norm(x)  # w_1 = y_1 x_1 (unit norm)
            assert changed
        elif y * margin <= 0 and margin != 0:
            w = w - 2 * margin * x / (x @ x)  # w − 2(w·x)x for unit x
            assert changed
        else:
            assert not changed
        np.testing.assert_allclose(rule.w_, w, rtol=1e-9, atol=1e-12)
    assert np.linalg.norm(rule.w_) == pytest.approx(1.0)


def test_randomized_budget_perceptron_keeps_at_most_b_examples_and_discards_the_drawn_one():
    d, budget, seed = 6, 4, 9
    rule = RandomizedBudgetPerceptronRule(budget=budget, seed=seed)
    rule.allocate(d)
    support, updates = [None] * budget, 0  # slot → y x
    for x, y in _stream(2, 300, d):
        w = sum(s for s in support if s is not None) if any(s is not None for s in support) else np.zeros(d)
        mistake = y * (w @ x) <= 0 and x @ x > 0
        if mistake:
            free = [j for j, s in enumerate(support) if s is None]
            j = free[0] if free else int(coin(seed, updates) * budget)
            support[j] = y * x
            updates += 1
        assert rule.update(*_sparse(x), y) == mistake
    assert updates > 2 * budget
    np.testing.assert_allclose(rule.sv_, np.array(support), rtol=1e-12)
    np.testing.assert_allclose(rule.w_, np.sum(support, axis=0), rtol=1e-9, atol=1e-12)
    assert rule.a_[0] == budget


def test_randomized_budget_perceptron_refuses_a_budget_that_does_not_fit():
    with pytest.raises(ValueError, match="smaller budget"):
        make("randomized-budget-perceptron", n_features=10**6, budget=1000)


@pytest.mark.parametrize("name", ["shifting-perceptron", "modified-perceptron", "randomized-budget-perceptron"])
def test_drift_perceptrons_are_registered_under_the_papers_spelling(name):
    assert make(name.replace("-", " ").title()).name == name
