"""SOAL's query (Hao et al. 2016, Eq. 6 and Algorithm 1) against its formula."""

import numpy as np
import pytest

from learners.queries import SOALQuery
from learners.values import Scores

P = np.array([0.0, 0.3, -0.3, 2.0, -50.0, 1e-3])
V = np.array([0.0, 1.0, 4.0, 0.5, 100.0, 1e-6])


def soal_rule(p, v, delta, eta, gamma):
    c = -eta * gamma * v / (2 * gamma + 2 * v)  # c_t as printed in Algorithm 1
    rho = abs(p) + c
    return 1.0 if rho <= 0 else delta / (delta + rho)


@pytest.mark.parametrize("delta, eta, gamma", [(1.0, 1.0, 1.0), (0.01, 10.0, 0.1), (5.0, 0.1, 100.0)])
def test_soal_probability_matches_algorithm_1(delta, eta, gamma):
    got = SOALQuery(delta=delta, eta=eta, gamma=gamma).probability(Scores(p=P, v=V))
    np.testing.assert_allclose(got, [soal_rule(p, v, delta, eta, gamma) for p, v in zip(P, V, strict=True)])


def test_soal_always_queries_when_rho_is_not_positive():
    q = SOALQuery(delta=1e-9, eta=2.0, gamma=1.0)
    # c = −2·1·v/(2(1+v)) = −v/(1+v): with v = 1, c = −1/2, so |p| ≤ 1/2 is always queried
    prob = q.probability(Scores(p=np.array([0.5, -0.4999, 0.5001]), v=np.ones(3)))
    assert prob[0] == 1.0 and prob[1] == 1.0 and prob[2] < 1e-5


def test_soal_without_confidence_term_is_the_margin_query():
    prob = SOALQuery(delta=0.7).probability(Scores(p=P, v=np.zeros(P.size)))
    np.testing.assert_allclose(prob, np.where(P == 0, 1.0, 0.7 / (0.7 + np.abs(P))))


def test_soal_probability_grows_with_delta_and_with_v():
    deltas = 2.0 ** np.arange(-10, 11)
    probs = np.array([SOALQuery(delta=d).probability(Scores(p=P, v=V)) for d in deltas])
    assert np.all(np.diff(probs, axis=0) >= 0) and np.all((probs >= 0) & (probs <= 1))
    by_v = SOALQuery().probability(Scores(p=np.full(4, 2.0), v=np.array([0.0, 1.0, 10.0, 1e6])))
    assert np.all(np.diff(by_v) > 0)
