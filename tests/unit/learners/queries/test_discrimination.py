"""The discrimination-based queries of D-ADA/D-AMD (Algorithm 1) and MD-ADA/MD-AMD (Eq. 9)."""

import numpy as np
import pytest

from learners import make
from learners.queries import DiscriminationQuery, GapDiscriminationQuery
from learners.values import Scores

P = np.array([0.0, 0.3, -0.3, 2.0, -50.0])
V = np.array([0.0, 1.0, 0.5, 0.5, 100.0])


def algorithm_1(p, v, b, eta):
    q = abs(p) - eta / 2 * v  # line 5 (v already carries a_t)
    return b / (b + q * (q > 0))  # line 6


@pytest.mark.parametrize("b, eta", [(1.0, 1.0), (0.01, 3.0), (10.0, 0.1)])
def test_binary_probability_matches_algorithm_1(b, eta):
    got = DiscriminationQuery(b=b, eta=eta).probability(Scores(p=P, v=V))
    np.testing.assert_allclose(got, [algorithm_1(p, v, b, eta) for p, v in zip(P, V, strict=True)])


@pytest.mark.parametrize("b, eta", [(1.0, 1.0), (0.01, 3.0)])
def test_multiclass_probability_reads_the_gap(b, eta):
    gap = np.abs(P)
    got = GapDiscriminationQuery(b=b, eta=eta).probability(Scores(p=np.full(P.size, 9.0), gap=gap, v=V))
    np.testing.assert_allclose(got, [algorithm_1(g, v, b, eta) for g, v in zip(gap, V, strict=True)])


def test_margin_variant_has_zero_discrimination_term():
    learner = make("m-ada", n_features=3, b=0.5)
    x = np.array([[1.0, 0.0, 0.0]])
    assert learner.score(x).v[0] == 0.0
    assert learner.query.probability(learner.score(x))[0] == 1.0  # p = 0 at the start


def test_d_queries_more_than_m_on_rare_features():
    """Same model, same row: the discrimination term can only raise the query probability."""
    rows = np.random.default_rng(0).random((50, 20)) * (np.random.default_rng(1).random((50, 20)) < 0.2)
    probs = {}
    for name in ("m-amd", "d-amd", "d-amd-i"):
        learner = make(name, n_features=20, b=0.2, eta=0.5, delta=0.1)
        for i, x in enumerate(rows[:30]):
            learner.learn(x, 1 if i % 2 else -1)
        probs[name] = learner.decide(rows[30:]).probability
    assert np.all(probs["m-amd"] <= probs["d-amd"]) and np.all(probs["d-amd"] <= probs["d-amd-i"])
    assert np.any(probs["m-amd"] < probs["d-amd-i"])


def test_budget_parameter_is_b():
    assert DiscriminationQuery.budget_param == GapDiscriminationQuery.budget_param == "b"
    with pytest.raises(ValueError):
        DiscriminationQuery(b=0.0)
