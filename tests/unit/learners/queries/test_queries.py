"""Query probabilities: margin (and its Theorem 4 variant), fixed rate, always, SEL-ada."""

import math

import numpy as np
import pytest

from learners.queries import AlwaysQuery, FixedRateQuery, MarginQuery, SelAdaQuery
from learners.values import Scores

P = np.array([0.0, 0.5, -0.5, 3.0, -1e9])


@pytest.mark.parametrize("delta", [0.01, 1.0, 7.5])
def test_margin_probability_is_delta_over_delta_plus_abs_p(delta):
    got = MarginQuery(delta=delta).probability(Scores(p=P))
    np.testing.assert_allclose(got, delta / (delta + np.abs(P)))


def test_margin_offset_one_is_theorem_4_rule():
    got = MarginQuery(delta=2.0, offset=1.0).probability(Scores(p=P))
    np.testing.assert_allclose(got, 2.0 / (3.0 + np.abs(P)))
    assert got[0] == pytest.approx(2 / 3)  # even p = 0 is no longer certain


def test_margin_probability_is_monotone_in_delta_and_bounded():
    deltas = 2.0 ** np.arange(-10, 11)
    probs = np.array([MarginQuery(delta=d).probability(Scores(p=P)) for d in deltas])
    assert np.all(np.diff(probs, axis=0) >= 0)
    assert np.all((probs >= 0) & (probs <= 1))


def test_fixed_rate_ignores_scores():
    assert FixedRateQuery(rate=0.3).probability(Scores(p=P)).tolist() == [0.3] * P.size
    assert AlwaysQuery().probability(Scores(p=P)).tolist() == [1.0] * P.size


def test_sel_ada_b_grows_with_radius_and_sqrt_of_queried_mistakes():
    q = SelAdaQuery(delta=0.5)
    _, _, label = q.kernels
    for k in range(5):
        for X2 in (0.25, 1.0, 9.0):
            b = 0.5 * X2 * math.sqrt(1 + k)  # b_t = β X'² √(1 + K)
            got = q.probability(Scores(p=np.array([2.0]), v=np.array([X2])))[0]
            assert got == pytest.approx(b / (b + 2.0))
        label(*q.kernel_state(), True, 1.0)
    label(*q.kernel_state(), False, 1.0)  # a correct prediction does not count
    assert q.state_dict()["errors"] == 5


def test_sel_ada_zero_margin_and_zero_radius_queries():
    q = SelAdaQuery(delta=1.0)
    got = q.probability(Scores(p=np.array([0.0, 0.0, 1.0]), v=np.array([0.0, 2.0, 0.0])))
    assert got.tolist() == [1.0, 1.0, 0.0]


def test_probability_does_not_advance_state():
    q = SelAdaQuery(delta=1.0)
    q.probability(Scores(p=P, v=np.ones_like(P)))
    assert q.state_dict()["errors"] == 0


@pytest.mark.parametrize("bad", [lambda: MarginQuery(delta=0), lambda: MarginQuery(delta=1, offset=-1),
                                 lambda: FixedRateQuery(rate=1.5), lambda: SelAdaQuery(delta=-2)])
def test_queries_reject_bad_parameters(bad):
    with pytest.raises(ValueError):
        bad()
