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


def test_perceptron_radius_grows_only_on_update_rounds():
    rule = PerceptronRule()
    rule.allocate(3)
    S, a, P = rule.kernel_state()
    idx = np.array([0, 2], np.int32)
    assert rule.score_fn(S, a, P, idx, np.array([1.0, 2.0]))[2] == 5.0  # X'² = max(0, ‖x‖²)
    assert rule.update(idx, np.array([1.0, 2.0]), 1)  # mistake (p = 0): X² ← 5
    assert not rule.update(idx, np.array([3.0, 3.0]), 1)  # correct, passive: X² stays 5
    assert rule.state_dict()["radius_sq"] == 5.0
    assert rule.score_fn(S, a, P, idx, np.array([3.0, 3.0]))[2] == 18.0  # this row's own norm
    assert rule.score_fn(S, a, P, idx, np.array([0.5, 0.5]))[2] == 5.0


def sel_ada_dense(X, y, beta, coins):
    """Cesa-Bianchi, Gentile & Zaniboni (2006), Fig. 2, written out densely: b = β X'² √(1+K)."""
    w, X2, K = np.zeros(X.shape[1]), 0.0, 0
    queried = []
    for x, label, u in zip(X, y, coins, strict=True):
        p = w @ x
        prediction = 1 if p > 0 else -1
        X2_t = max(X2, x @ x)
        b = beta * X2_t * np.sqrt(1 + K)
        z = u < (b / (b + abs(p)) if b + abs(p) > 0 else 1.0)
        queried.append(z)
        if z and label * p <= 0 and x @ x > 0:
            w = w + label * x
            X2 = X2_t
        if z and prediction != label:
            K += 1
    return w, np.array(queried)


def test_sel_ada_replay_matches_dense_algorithm():
    from learners import make
    from learners.coin import coins
    from learners.datasets import Dataset
    from learners.inputs import as_rows
    from learners.replay import replay

    rng = np.random.default_rng(4)
    X = rng.standard_normal((400, 5)) * (rng.random((400, 5)) < 0.7) * rng.choice([0.5, 3.0], size=(400, 1))
    y = np.where(X @ rng.standard_normal(5) + 0.3 * rng.standard_normal(400) >= 0, 1, -1)
    learner = make("sel-ada", n_features=5, bias=0.0, delta=0.05, seed=9)
    trace = replay(learner, Dataset(as_rows(X), y))
    w, queried = sel_ada_dense(X, y, 0.05, coins(9, np.arange(400, dtype=np.uint64)))
    np.testing.assert_array_equal(trace.queried, queried)
    np.testing.assert_allclose(learner.rule.w_, w, rtol=1e-12, atol=1e-12)
    assert 0.1 < queried.mean() < 0.9  # the test exercises both branches
