"""Logistic and softmax regression against dense transcriptions of their gradient steps."""

import numpy as np
import pytest

from learners.rules.logistic import LogisticRule, SoftmaxRule
from tests.unit.learners.rules._streams import sparse, stream


def logistic_dense(w, G, x, y, eta, step, weight, damping=0.0):
    """g = −ω y σ(−y w·x) x; SGD: w − η g; AdaGrad: G + g², w − η g/(δ + √G) where G > 0."""
    g = -weight * y * x / (1.0 + np.exp(y * (w @ x)))
    if step == "sgd":
        return w - eta * g, G
    G = G + g * g
    safe = np.where(G > 0, G, 1.0)
    return w - np.where(G > 0, eta * g / (damping + np.sqrt(safe)), 0.0), G


def softmax_dense(W, G, x, y, eta, step, weight, damping=0.0):
    """Row r: g_r = ω (π_r − 1[r = y]) x, π = softmax(W x); the same step per row."""
    z = W @ x
    pi = np.exp(z - z.max())
    pi /= pi.sum()
    W, G = W.copy(), G.copy()
    for r in range(W.shape[0]):
        g = weight * (pi[r] - (r == y)) * x
        if step == "sgd":
            W[r] = W[r] - eta * g
        else:
            G[r] = G[r] + g * g
            W[r] = W[r] - np.where(G[r] > 0, eta * g / (damping + np.sqrt(np.where(G[r] > 0, G[r], 1.0))), 0.0)
    return W, G


@pytest.mark.parametrize("step, damping", [("sgd", 0.0), ("adagrad", 0.0), ("adagrad", 0.5)])
@pytest.mark.parametrize("weighted", [False, True])
def test_logistic_update_matches_the_dense_step_on_a_random_stream(step, damping, weighted):
    rng = np.random.default_rng(3)
    rule = LogisticRule(eta=0.3, step=step, damping=damping)
    rule.allocate(8)
    w, G = np.zeros(8), np.zeros(8)
    for x, y in stream(7, 300, 8, density=0.5):
        weight = float(rng.uniform(1, 20)) if weighted else 1.0
        w, G = logistic_dense(w, G, x, y, 0.3, step, weight, damping)
        rule.update(*sparse(x), y, weight)
        np.testing.assert_allclose(rule.w_, w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(rule.G_, G if step == "adagrad" else 0.0, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("step, damping", [("sgd", 0.0), ("adagrad", 0.0), ("adagrad", 0.5)])
@pytest.mark.parametrize("weighted", [False, True])
def test_softmax_update_matches_the_dense_step_on_a_random_stream(step, damping, weighted):
    rng = np.random.default_rng(4)
    rule = SoftmaxRule(eta=0.2, step=step, damping=damping)
    rule.allocate(6, n_classes=4)
    W, G = np.zeros((4, 6)), np.zeros((4, 6))
    for x, y in stream(8, 300, 6, density=0.6, classes=4):
        weight = float(rng.uniform(1, 20)) if weighted else 1.0
        W, G = softmax_dense(W, G, x, y, 0.2, step, weight, damping)
        rule.update(*sparse(x), y, weight)
        np.testing.assert_allclose(rule.w_, W, rtol=1e-10, atol=1e-12)


def test_a_step_lowers_the_log_loss_of_its_row():
    rule = LogisticRule(eta=0.05, step="sgd")
    rule.allocate(5)
    for x, y in stream(9, 50, 5, density=0.8, linear=True):
        idx, val = sparse(x)
        before = np.log1p(np.exp(-y * (rule.w_ @ x)))
        rule.update(idx, val, y)
        assert np.log1p(np.exp(-y * (rule.w_ @ x))) < before


def test_the_weight_is_a_multiplier_of_the_sgd_step():
    one, heavy = LogisticRule(eta=0.1, step="sgd"), LogisticRule(eta=0.1, step="sgd")
    one.allocate(2)
    heavy.allocate(2)
    idx, val = np.array([0, 1], np.int32), np.array([1.0, -2.0])
    one.update(idx, val, 1)
    heavy.update(idx, val, 1, 4.0)
    np.testing.assert_allclose(heavy.w_, 4.0 * one.w_)


def test_adagrad_steps_do_not_depend_on_the_scale_of_x():
    """w₁ = η sign(g): the first AdaGrad step is ±η per coordinate, however large x is."""
    for scale in (1e-3, 1.0, 1e3):
        rule = LogisticRule(eta=0.5)
        rule.allocate(3)
        rule.update(np.array([0, 2], np.int32), np.array([scale, -scale]), 1)
        np.testing.assert_allclose(rule.w_, [0.5, 0.0, -0.5])


def test_zero_rows_and_saturated_margins_leave_the_state_alone():
    rule = LogisticRule()
    rule.allocate(3)
    assert not rule.update(np.array([], np.int32), np.array([]), 1)
    assert not rule.update(np.array([1], np.int32), np.array([0.0]), -1)
    rule.w_[:] = [1e6, 0.0, 0.0]
    assert not rule.update(np.array([0], np.int32), np.array([1.0]), 1)  # σ(−10⁶) = 0
    assert rule.w_.tolist() == [1e6, 0.0, 0.0] and not rule.G_.any()
    soft = SoftmaxRule()
    soft.allocate(3, n_classes=3)
    assert not soft.update(np.array([2], np.int32), np.array([0.0]), 1)
    assert not soft.S_.any()


def test_softmax_scores_are_the_top_class_and_its_log_odds_against_the_runner_up():
    rule = SoftmaxRule()
    rule.allocate(2, n_classes=3)
    rule.w_[:] = [[1.0, 0.0], [3.0, 0.0], [2.5, 0.0]]
    rule.G_[:] = 100.0  # not read by the score
    s = rule.score(np.array([[1.0, 0.0]]))
    assert int(s.top[0]) == 1 and float(s.p[0]) == 3.0 and float(s.gap[0]) == 0.5


def test_softmax_refuses_a_class_outside_the_model():
    rule = SoftmaxRule()
    rule.allocate(2, n_classes=3)
    with pytest.raises(ValueError, match="outside the model's 3 classes"):
        rule.update(np.array([0], np.int32), np.array([1.0]), 3)


@pytest.mark.parametrize("bad", [{"eta": 0.0}, {"eta": -1.0}, {"eta": float("nan")}, {"step": "adam"}])
def test_bad_parameters_are_refused(bad):
    with pytest.raises((ValueError, TypeError)):
        LogisticRule(**bad)


def test_damping_makes_a_first_small_gradient_a_small_step():
    idx, val = np.array([0], np.int32), np.array([0.01])
    steps = []
    for damping in (0.0, 1.0):
        rule = LogisticRule(eta=1.0, damping=damping)
        rule.allocate(1)
        rule.update(idx, val, 1)  # g₀ = −σ(0)·0.01 = −0.005
        steps.append(rule.w_[0])
    assert steps[0] == pytest.approx(1.0)  # η·sign(g), however small g is
    assert steps[1] == pytest.approx(0.005 / 1.005)


def test_damping_below_zero_is_refused_naming_it():
    with pytest.raises(ValueError, match="damping"):
        LogisticRule(damping=-0.1)
