"""Max-score Perceptron and MPA / MPA-I / MPA-II against a dense transcription of Eqs. (2)-(5)
of Lu, Zhao & Hoi (2016)."""

import numpy as np
import pytest

from learners import make
from learners.datasets import Dataset
from learners.inputs import as_rows
from learners.replay import replay
from learners.rules import MaxScorePerceptronRule, MPARule, PARule


def best_wrong(W, x, y):
    """s_t = argmax_{r≠y} w^r·x and γ_t = w^y·x − w^s·x, written densely."""
    scores = W @ x
    others = [r for r in range(W.shape[0]) if r != y]
    s = others[int(np.argmax(scores[others]))]
    return s, scores[y] - scores[s]


def mpa_dense(W, x, y, C, mode):
    """Eqs. (3)-(4): τ = ℓ/(2‖x‖²), min(C, ℓ/(2‖x‖²)), ℓ/(2‖x‖² + 1/(2C)); w^y += τx, w^s −= τx."""
    s, gamma = best_wrong(W, x, y)
    loss = max(0.0, 1.0 - gamma)
    if loss == 0.0 or x @ x == 0.0:
        return W.copy()
    sq = x @ x
    tau = [loss / (2 * sq), min(C, loss / (2 * sq)), loss / (2 * sq + 1 / (2 * C))][mode]
    out = W.copy()
    out[y] += tau * x
    out[s] -= tau * x
    return out


def perceptron_dense(W, x, y):
    """Max-score Perceptron: w^y += x, w^s −= x when γ_t ≤ 0."""
    s, gamma = best_wrong(W, x, y)
    if gamma > 0 or x @ x == 0.0:
        return W.copy()
    out = W.copy()
    out[y] += x
    out[s] -= x
    return out


def _sparse(x):
    idx = np.flatnonzero(x).astype(np.int32)
    return idx, x[idx]


def _random_stream(rng, k, n=300, d=7):
    for _ in range(n):
        x = rng.standard_normal(d) * (rng.random(d) < 0.6)
        yield x, int(rng.integers(k))


@pytest.mark.parametrize("k", [2, 3, 10])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_mpa_update_matches_dense_equations_on_random_stream(mode, k):
    rng = np.random.default_rng(10 * k + mode)
    rule = MPARule(mode=mode, C=0.2)
    rule.allocate(7, n_classes=k)
    W = np.zeros((k, 7))
    for x, y in _random_stream(rng, k):
        W = mpa_dense(W, x, y, 0.2, mode)
        rule.update(*_sparse(x), y)
        np.testing.assert_allclose(rule.w_, W, rtol=1e-12, atol=1e-12)
    assert np.abs(W).sum() > 0


@pytest.mark.parametrize("k", [2, 3, 10])
def test_max_score_perceptron_matches_dense_rule_on_random_stream(k):
    rng = np.random.default_rng(k)
    rule = MaxScorePerceptronRule()
    rule.allocate(7, n_classes=k)
    W = np.zeros((k, 7))
    changed = 0
    for x, y in _random_stream(rng, k):
        W = perceptron_dense(W, x, y)
        changed += rule.update(*_sparse(x), y)
        np.testing.assert_array_equal(rule.w_, W)
    assert changed > 10


def test_mpa1_two_steps_by_hand():
    rule = MPARule(mode=1, C=0.1)
    rule.allocate(3, n_classes=3)
    # step 1: all scores 0, y = 2, s = 0 (first tie), γ = 0, ℓ = 1, ‖x‖² = 2: τ = min(0.1, 1/4) = 0.1
    assert rule.update(np.array([0, 1], np.int32), np.array([1.0, 1.0]), 2)
    np.testing.assert_allclose(rule.w_, [[-0.1, -0.1, 0], [0, 0, 0], [0.1, 0.1, 0]])
    # step 2: x = (0, 2, 1), y = 1: scores (-0.2, 0, 0.2), s = 2, γ = -0.2, ℓ = 1.2, ‖x‖² = 5:
    # τ = min(0.1, 1.2/10) = 0.1; only rows 1 and 2 move
    assert rule.update(np.array([1, 2], np.int32), np.array([2.0, 1.0]), 1)
    np.testing.assert_allclose(rule.w_, [[-0.1, -0.1, 0], [0, 0.2, 0.1], [0.1, -0.1, -0.1]])


def test_mpa2_step_by_hand():
    rule = MPARule(mode=2, C=1.0)
    rule.allocate(2, n_classes=4)
    # ℓ = 1, ‖x‖² = 4: τ = 1 / (8 + 1/2) = 2/17, y = 3, s = 0
    rule.update(np.array([1], np.int32), np.array([2.0]), 3)
    np.testing.assert_allclose(rule.w_[:, 1], [-4 / 17, 0, 0, 4 / 17])


def test_mpa_passive_round_leaves_state_unchanged():
    rule = MPARule(mode=0)
    rule.allocate(2, n_classes=3)
    rule.w_[:] = [[0.0, 0.0], [1.5, 0.0], [0.4, 0.0]]
    assert not rule.update(np.array([0], np.int32), np.array([1.0]), 1)  # γ = 1.5 − 0.4 ≥ 1
    assert rule.w_.tolist() == [[0.0, 0.0], [1.5, 0.0], [0.4, 0.0]]
    assert rule.update(np.array([0], np.int32), np.array([1.0]), 2)  # γ = 0.4 − 1.5 < 1


def test_max_score_perceptron_correct_prediction_is_passive_but_a_tie_is_a_mistake():
    rule = MaxScorePerceptronRule()
    rule.allocate(1, n_classes=3)
    rule.w_[:, 0] = [0.0, 2.0, 2.0]
    assert not rule.update(np.array([], np.int32), np.array([]), 1)  # empty row: nothing to move
    assert rule.update(np.array([0], np.int32), np.array([1.0]), 1)  # tie with class 2: γ = 0
    assert rule.w_[:, 0].tolist() == [0.0, 3.0, 1.0]
    assert not rule.update(np.array([0], np.int32), np.array([1.0]), 1)  # now γ = 2 > 0


@pytest.mark.parametrize("rule", [MPARule(mode=0), MPARule(mode=1), MPARule(mode=2), MaxScorePerceptronRule()])
def test_multiclass_zero_row_is_passive_and_finite(rule):
    rule.allocate(3, n_classes=4)
    assert not rule.update(np.array([], np.int32), np.array([]), 1)
    assert not rule.update(np.array([1], np.int32), np.array([0.0]), 3)
    assert np.all(rule.w_ == 0.0)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_two_class_mpa_is_binary_pa_on_the_row_difference_with_c_doubled(mode):
    rng = np.random.default_rng(mode)
    mpa, pa = MPARule(mode=mode, C=0.3), PARule(mode=mode, C=0.6)
    mpa.allocate(6, n_classes=2)
    pa.allocate(6)
    for x, y in _random_stream(rng, 2, n=200, d=6):
        assert mpa.update(*_sparse(x), y) == pa.update(*_sparse(x), 2 * y - 1)
        np.testing.assert_allclose(mpa.w_[1] - mpa.w_[0], pa.w_, rtol=1e-10, atol=1e-12)


def test_score_gives_top_one_score_gap_and_argmax():
    rule = MPARule()
    rule.allocate(2, n_classes=4)
    rule.w_[:] = [[1.0, 0.0], [3.0, 1.0], [3.0, 0.0], [-1.0, 5.0]]
    s = rule.score(as_rows(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])))
    assert s.top.tolist() == [1, 1, 0]  # ties go to the lowest index (rows 0 and 1 tie, row 2 is empty)
    assert s.p.tolist() == [3.0, 4.0, 0.0]
    assert s.gap.tolist() == [0.0, 0.0, 0.0]
    s = rule.score(as_rows(np.array([[0.0, 1.0]])))
    assert (s.top[0], s.p[0], s.gap[0]) == (3, 5.0, 4.0)


def test_update_refuses_a_class_index_outside_the_model():
    rule = MPARule()
    rule.allocate(2, n_classes=3)
    for bad in (3, -1):
        with pytest.raises(ValueError, match="outside the model's 3 classes"):
            rule.update(np.array([0], np.int32), np.array([1.0]), bad)
    assert np.all(rule.w_ == 0.0)


def test_multiclass_learner_needs_its_class_list_and_refuses_other_labels():
    learner = make("mpaa-1")
    with pytest.raises(ValueError, match="needs its class list"):
        learner.ask([1.0, 2.0])
    learner = make("mpaa-1", classes=["cat", "dog", "eel"], n_features=2)
    assert learner.ask([1.0, 2.0], record_id=1)[0] == "cat"
    assert learner.learn([1.0, 2.0], "eel")
    with pytest.raises(ValueError, match="not one of the model's classes"):
        learner.learn([1.0, 2.0], "fox")
    with pytest.raises(ValueError, match="not one of the model's classes"):
        learner.learn_many(np.ones((2, 2)), ["dog", "fox"])
    assert learner.predict(np.array([[1.0, 2.0]])).tolist() == ["eel"]


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_two_class_mpaa_decides_like_binary_paa_with_c_doubled(mode):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((400, 5)) * (rng.random((400, 5)) < 0.7)
    y = np.where(X @ rng.standard_normal(5) > 0, 1, -1)
    name = {0: "paa", 1: "paa-1", 2: "paa-2"}[mode]
    C = {} if mode == 0 else {"C": 0.25}
    C2 = {} if mode == 0 else {"C": 0.5}
    multi = make("m" + name, classes=[-1, 1], n_features=5, delta=0.7, seed=4, **C)
    binary = make(name, n_features=5, delta=0.7, seed=4, **C2)
    a, b = replay(multi, Dataset(as_rows(X), y)), replay(binary, Dataset(as_rows(X), y))
    np.testing.assert_allclose(a.probability, b.probability, rtol=1e-9)
    np.testing.assert_array_equal(a.queried, b.queried)
    np.testing.assert_array_equal(multi.decode(a.y_pred), binary.decode(b.y_pred))  # tie → class -1 in both
    assert 0.05 < a.queried.mean() < 0.95


@pytest.mark.parametrize("bad", [{"C": 0.0}, {"C": -1.0}, {"mode": 3}, {"C": "1"}])
def test_mpa_rejects_bad_parameters(bad):
    with pytest.raises((ValueError, TypeError)):
        MPARule(**bad)
