"""IWAL's query (VW's --active rule) and the importance weights it hands the update."""

import math

import numpy as np
import pytest

from learners import make
from learners.base import Learner
from learners.queries import GapIWALQuery, IWALQuery
from learners.queries.iwal import iwal_probability
from learners.replay import replay
from learners.rules import MPARule, PARule, SOALRule
from learners.synthetic import synthetic_sparse
from learners.values import Scores


def coin_bias(k: float, avg_loss: float, g: float, c0: float) -> float:
    """VW's get_active_coin_bias, line by line, in float64."""
    b = c0 * (math.log(k + 1.0) + 0.0001) / (k + 0.0001)
    sb = math.sqrt(b)
    avg_loss = min(1.0, max(0.0, avg_loss))
    sl = math.sqrt(avg_loss) + math.sqrt(avg_loss + g)
    if g <= sb * sl + b:
        return 1.0
    rs = (sl + math.sqrt(sl * sl + 4 * g)) / (2 * g)
    return b * rs * rs


def transcription(k: float, weighted_queries: float, sum_loss: float, revert_weight: float, c0: float) -> float:
    """VW's query_decision's bias: 1 for k ≤ 1, else the coin bias with avg_loss = sum_loss/k +
    √((1 + ½ ln k)/(weighted_queries + 0.0001)) and g = revert_weight/k."""
    if k <= 1.0:
        return 1.0
    avg_loss = sum_loss / k + math.sqrt((1.0 + 0.5 * math.log(k)) / (weighted_queries + 0.0001))
    return coin_bias(k, avg_loss, revert_weight / k, c0)


def states(n: int, seed: int = 0) -> np.ndarray:
    """(k, Σω, Σω·mistake) as a stream produces them: Σω·mistake ≤ Σω, both grown over k rounds."""
    rng = np.random.default_rng(seed)
    k = np.floor(rng.uniform(0, 6, n) ** 10 / 100)  # 0, 1, and up to ~6·10⁵
    labels = k * rng.uniform(0, 3, n)  # weights 1/q ≥ 1 over a fraction of the rounds
    return np.column_stack([k, labels, labels * rng.uniform(0, 0.6, n)])


def test_probability_is_vws_coin_bias():
    rng = np.random.default_rng(1)
    for (k, wq, wm), revert, c0 in zip(states(4000), rng.exponential(30, 4000) * rng.integers(0, 2, 4000),
                                       2.0 ** rng.uniform(-20, 6, 4000), strict=True):
        assert iwal_probability(k, wq, wm, revert, c0) == pytest.approx(transcription(k, wq, wm, revert, c0),
                                                                        rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("query", [IWALQuery, GapIWALQuery])
def test_the_query_reads_its_state_and_flips_by_the_margin_or_gap(query):
    rng = np.random.default_rng(2)
    q = query(mellowness=0.3, sensitivity=2.0)
    distance = rng.normal(0, 2, 50)
    other = rng.normal(0, 2, 50)  # the score the query must not read
    for k, wq, wm in states(20, seed=3):
        q.qs_[:] = [k, wq, wm]
        scores = Scores(p=distance, gap=None) if query is IWALQuery else Scores(p=other, gap=np.abs(distance))
        # the batch's rows are rounds k, k + 1, ...
        want = [transcription(k + i, wq, wm, abs(d) * math.sqrt(k + i) / 2.0, 0.3) for i, d in enumerate(distance)]
        np.testing.assert_allclose(q.probability(scores), want, rtol=1e-12)


def test_a_confidence_term_replaces_the_sensitivity():
    q = IWALQuery(mellowness=0.3, sensitivity=2.0)
    q.qs_[:] = [500.0, 80.0, 10.0]
    v = np.array([0.5, 4.0])
    got = q.probability(Scores(p=np.array([1.0, 1.0]), v=v))
    want = [transcription(500 + i, 80, 10, math.sqrt(500 + i) / s, 0.3) for i, s in enumerate(v)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_probability_is_non_decreasing_in_the_mellowness():
    rng = np.random.default_rng(4)
    grid = 2.0 ** np.arange(-24, 25, 0.5)
    for k, wq, wm in states(300, seed=5):
        revert = rng.exponential(20.0)
        probs = [iwal_probability(k, wq, wm, revert, c0) for c0 in grid]
        assert np.all(np.diff(probs) >= 0), (k, wq, wm, revert)
        assert 0.0 < probs[0] <= probs[-1] <= 1.0


def test_the_state_counts_rounds_and_weighted_labels_and_mistakes():
    learner = make("paa-1-iwal", n_features=4, mellowness=1e-3)
    x = np.array([1.0, 0.0, 0.5, 0.0])
    for _ in range(3):
        learner.ask(x)
    learner.learn(x, 1, predicted=-1, probability=0.25)  # a mistake, weight 4
    learner.learn(x, 1, predicted=1, probability=0.5)  # right, weight 2
    assert learner.query.qs_.tolist() == [3.0, 6.0, 4.0]
    learner.learn(x, -1, predicted=1)  # not asked for (no probability): weight 1
    assert learner.query.qs_.tolist() == [3.0, 7.0, 5.0]


@pytest.mark.parametrize(("name", "rule"), [("paa-1-iwal", PARule), ("paa-2-iwal", PARule),
                                            ("mpaa-1-iwal", MPARule), ("mpaa-2-iwal", MPARule)])
def test_a_label_asked_with_probability_q_is_learnt_with_c_over_q(name, rule):
    """min ½‖w' − w‖² + C ω ξ: the importance weight ω = 1/q multiplies C (against the
    supervised PA-I/II and MPA-I/II with C/q)."""
    multiclass = name.startswith("m")
    classes = {"classes": [0, 1, 2]} if multiclass else {}
    learner = make(name, n_features=3, C=0.3, bias=0.0, **classes)
    weighted = make(name.replace("paa", "pa").replace("-iwal", ""), n_features=3,
                    C=0.3 / 0.2, bias=0.0, **classes)
    rng = np.random.default_rng(6)
    for _ in range(20):
        x, y = rng.normal(size=3), int(rng.integers(0, 3)) if multiclass else int(rng.choice([-1, 1]))
        learner.learn(x, y, probability=0.2)
        weighted.learn(x, y)
    np.testing.assert_allclose(learner.rule.S_, weighted.rule.S_, rtol=1e-12)
    assert learner.rule.importance_weights and type(learner.rule) is rule


def test_replay_learns_each_label_with_one_over_its_probability():
    """The compiled replay (plain and with online scaling) against ask/learn one record at a time."""
    data = synthetic_sparse(n=3000, d=64, seed=7)
    rows = data.rows.to_csr()
    for scale in ("none", "maxabs"):
        compiled = make("paa-1-iwal", n_features=64, mellowness=1e-3, scale=scale)
        trace = replay(compiled, data)
        stepped = make("paa-1-iwal", n_features=64, mellowness=1e-3, scale=scale)
        for i in range(data.n):
            predicted, q, ask = stepped.ask(rows[i], record_id=i)
            assert q == trace.probability[i] and ask == trace.queried[i]
            if ask:
                stepped.learn(rows[i], data.labels[i], predicted=predicted, probability=q)
        assert 0.02 < trace.queried.mean() < 0.9 and trace.probability[trace.queried].min() < 0.5
        np.testing.assert_array_equal(stepped.rule.S_, compiled.rule.S_)
        np.testing.assert_array_equal(stepped.query.qs_, compiled.query.qs_)


def test_learn_many_weighs_by_the_probabilities_and_checks_them():
    data = synthetic_sparse(n=200, d=16, seed=8)
    rows, q = data.rows.to_csr(), np.linspace(0.05, 1.0, 200)
    batch, one = make("paa-1-iwal", n_features=16), make("paa-1-iwal", n_features=16)
    batch.learn_many(rows, data.labels, probability=q)
    for i in range(200):
        one.learn(rows[i], data.labels[i], probability=q[i])
    np.testing.assert_array_equal(batch.rule.S_, one.rule.S_)
    for bad in (np.zeros(200), np.full(200, 1.5), q[:5]):
        with pytest.raises(ValueError, match="probabilit"):
            batch.learn_many(rows, data.labels, probability=bad)


def test_the_papers_learners_ignore_the_probability():
    data = synthetic_sparse(n=200, d=16, seed=9)
    rows = data.rows.to_csr()
    a, b = make("paa-1", n_features=16), make("paa-1", n_features=16)
    a.learn_many(rows, data.labels, probability=np.full(200, 0.1))
    b.learn_many(rows, data.labels)
    np.testing.assert_array_equal(a.rule.S_, b.rule.S_)


@pytest.mark.parametrize("rule", [PARule(mode=0), SOALRule()])
def test_a_rule_that_cannot_weigh_a_label_is_refused(rule):
    with pytest.raises(ValueError, match="importance weight"):
        Learner(rule, IWALQuery())
