"""The Perceptron update against its dense form: w + y x when y w·x ≤ 0."""

import numpy as np

from learners.rules.perceptron import PerceptronRule


def test_perceptron_matches_dense_rule_on_random_stream():
    rng = np.random.default_rng(0)
    rule = PerceptronRule()
    rule.allocate(6)
    w = np.zeros(6)
    for _ in range(300):
        x = rng.standard_normal(6) * (rng.random(6) < 0.6)
        y = int(rng.choice([-1, 1]))
        if y * (w @ x) <= 0 and x @ x > 0:
            w = w + y * x
        idx = np.flatnonzero(x).astype(np.int32)
        rule.update(idx, x[idx], y)
        np.testing.assert_allclose(rule.w_, w, rtol=1e-12, atol=1e-12)


def test_perceptron_correct_prediction_is_passive():
    rule = PerceptronRule()
    rule.allocate(2)
    rule.w_[:] = [0.1, 0.0]
    assert not rule.update(np.array([0], np.int32), np.array([1.0]), 1)
    assert rule.w_.tolist() == [0.1, 0.0]


def test_perceptron_zero_margin_counts_as_mistake():
    rule = PerceptronRule()
    rule.allocate(2)
    assert rule.update(np.array([1], np.int32), np.array([3.0]), -1)
    assert rule.w_.tolist() == [0.0, -3.0]
