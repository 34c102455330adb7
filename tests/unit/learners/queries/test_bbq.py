"""BBQ's deterministic threshold query r_t > t^(−κ)."""

import numpy as np
import pytest

from learners import make
from learners.base import Learner
from learners.queries.bbq import BBQQuery
from learners.rules import PARule
from learners.values import Scores


def test_bbq_query_compares_r_with_a_threshold_falling_with_every_round():
    q = BBQQuery(kappa=0.5)
    v = np.full(6, 1.0)  # r = v/(1 + v) = 1/2 every round
    prob = q.probability(Scores(p=np.zeros(6), v=v))
    # t^(−1/2) = 1, 0.707, 0.577, 0.5, 0.447, 0.408: r > threshold from t = 5 on (t = 4 is a tie)
    assert prob.tolist() == [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]


def test_bbq_query_probability_is_pure_and_rounds_advance_only_through_decisions():
    learner = make("bbq", n_features=2, bias=0.0, kappa=1.0)
    X = np.array([[1.0, 0.0]] * 3)
    first = learner.decide(X).probability  # rounds 1..3: thresholds 1, 1/2, 1/3 against r = 1/2
    assert first.tolist() == [0.0, 0.0, 1.0]
    assert learner.query.qs_[0] == 3
    assert learner.query.probability(learner.score(X)).tolist() == [1.0, 1.0, 1.0]  # t = 4, 5, 6
    assert learner.query.qs_[0] == 3


@pytest.mark.parametrize("kappa, expected", [(1e-6, 0.0), (50.0, 1.0)])
def test_bbq_query_rate_grows_with_kappa(kappa, expected):
    learner = make("bbq", n_features=3, bias=0.0, kappa=kappa)
    rng = np.random.default_rng(0)
    decisions = learner.decide(rng.standard_normal((200, 3)))
    assert decisions.query[1:].mean() == expected  # round 1 never queries: r < 1 = 1^(−κ)


def test_bbq_query_needs_the_confidence_term():
    with pytest.raises(ValueError, match="needs \\['v'\\]"):
        Learner(PARule(), BBQQuery())
