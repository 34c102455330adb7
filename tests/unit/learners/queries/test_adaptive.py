"""CSPAA(a)'s decaying sampling factor δ_t = δ_{t−1}·t/(t+1) (Lu, Zhao & Hoi 2016, Sect. 5.2)."""

import numpy as np
import pytest

from learners import make
from learners.queries import DecayingMarginQuery
from learners.values import Scores


def test_delta_schedule_is_the_recursion_from_delta_0():
    q = DecayingMarginQuery(delta=2.0**14)
    p = np.full(1000, 3.0)
    got = q.probability(Scores(p=p))
    delta, expected = 2.0**14, []
    for t in range(1, 1001):  # round t draws with δ_{t−1}; then δ_t = δ_{t−1}·t/(t+1)
        expected.append(delta / (delta + 3.0))
        delta = delta * t / (t + 1)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert got[0] == pytest.approx(2.0**14 / (2.0**14 + 3))


def test_probability_is_pure_and_decide_advances_the_rounds():
    learner = make("cspaa-a", n_features=2, delta=8.0)
    X = np.array([[1.0, 0.0]] * 5)
    first = learner.query.probability(Scores(p=np.ones(5)))
    assert learner.query.state_dict()["rounds"] == 0
    learner.decide(X)
    assert learner.query.state_dict()["rounds"] == 5
    learner.learn_many(X, [1] * 5)
    assert learner.query.state_dict()["rounds"] == 5  # labels do not move δ
    np.testing.assert_allclose(first, [8 / 9, 4 / 5, (8 / 3) / (8 / 3 + 1), 2 / 3, (8 / 5) / (8 / 5 + 1)])


def test_query_ratio_falls_over_the_stream():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5000, 4))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 1.0, 1, -1)
    learner = make("cspaa-a", n_features=4, delta=1024.0)
    asked = []
    for i in range(5000):
        _, _, ask = learner.ask(X[i], record_id=i)
        asked.append(ask)
        if ask:
            learner.learn(X[i], int(y[i]))
    assert np.mean(asked[:500]) > 5 * np.mean(asked[-1000:])  # measured 0.50 vs 0.04


@pytest.mark.parametrize("delta", [0.0, -1.0])
def test_decaying_query_rejects_bad_delta(delta):
    with pytest.raises(ValueError):
        DecayingMarginQuery(delta=delta)
