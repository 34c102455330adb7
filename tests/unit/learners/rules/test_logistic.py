"""Logistic and softmax regression against dense transcriptions of their gradient steps."""

import math

import numpy as np
import pytest

from learners.kernels import ready
from learners.rules.logistic import LogisticRule, SoftmaxRule
from learners.scaling import rescale_powers
from tests.unit.learners.rules._streams import sparse, stream
from tests.unit.learners.rules.scalar_steps import softmax_coefficients


def logistic_dense(w, G, x, y, eta, step, weight, damping=0.0, beta=1.0, lam=0.0):
    """g = −ω y σ(−y w·x) x; on the non-zeros of x, w ← (1 − λ) w, then SGD: w − η g; AdaGrad:
    G ← β G + g², w − η g/(δ + √G) where G > 0."""
    g = -weight * y * x / (1.0 + np.exp(y * (w @ x)))
    w = np.where(x != 0, (1.0 - lam) * w, w)
    if step == "sgd":
        return w - eta * g, G
    G = np.where(x != 0, beta * G + g * g, G)
    safe = np.where(G > 0, G, 1.0)
    return w - np.where(G > 0, eta * g / (damping + np.sqrt(safe)), 0.0), G


def softmax_dense(W, G, x, y, eta, step, weight, damping=0.0, beta=1.0, lam=0.0):
    """Row r: g_r = ω (π_r − 1[r = y]) x, π = softmax(W x); the same step per row."""
    z = W @ x
    pi = np.exp(z - z.max())
    pi /= pi.sum()
    W, G = W.copy(), G.copy()
    for r in range(W.shape[0]):
        g = weight * (pi[r] - (r == y)) * x
        W[r] = np.where(x != 0, (1.0 - lam) * W[r], W[r])
        if step == "sgd":
            W[r] = W[r] - eta * g
        else:
            G[r] = np.where(x != 0, beta * G[r] + g * g, G[r])
            W[r] = W[r] - np.where(G[r] > 0, eta * g / (damping + np.sqrt(np.where(G[r] > 0, G[r], 1.0))), 0.0)
    return W, G


def adagrad_scalar(w, G, idx, val, y, eta, weight, delta):
    """The AdaGrad logistic step as it was before the forgettings, operation by operation."""
    p = 0.0
    for j in range(idx.size):
        p += w[idx[j]] * val[j]
    m = y * p
    s = 1.0 / (1.0 + math.exp(m)) if m < 700.0 else 0.0
    c = -weight * y * s
    for j in range(idx.size):
        i, g = idx[j], c * val[j]
        G[i] += g * g
        if G[i] > 0.0:
            w[i] -= eta * g / (delta + math.sqrt(G[i]))


def softmax_scalar(W, G, idx, val, y, eta, weight, delta):
    """The AdaGrad softmax step as it was before the forgettings, operation by operation."""
    c = softmax_coefficients(W, idx, val, y, weight)
    for r in range(W.shape[0]):
        if c[r] != 0.0:
            for j in range(idx.size):
                i, g = idx[j], c[r] * val[j]
                G[r, i] += g * g
                if G[r, i] > 0.0:
                    W[r, i] -= eta * g / (delta + math.sqrt(G[r, i]))


_STEPS = [("sgd", 0.0, 1.0, 0.0), ("adagrad", 0.0, 1.0, 0.0), ("adagrad", 0.5, 1.0, 0.0), ("sgd", 0.0, 1.0, 0.01),
          ("adagrad", 0.5, 0.9, 0.01)]


@pytest.mark.parametrize("step, damping, beta, lam", _STEPS)
@pytest.mark.parametrize("weighted", [False, True])
def test_logistic_update_matches_the_dense_step_on_a_random_stream(step, damping, beta, lam, weighted):
    rng = np.random.default_rng(3)
    rule = LogisticRule(eta=0.3, step=step, damping=damping, beta=beta, lam=lam)
    rule.allocate(8)
    w, G = np.zeros(8), np.zeros(8)
    for x, y in stream(7, 300, 8, density=0.5):
        weight = float(rng.uniform(1, 20)) if weighted else 1.0
        w, G = logistic_dense(w, G, x, y, 0.3, step, weight, damping, beta, lam)
        rule.update(*sparse(x), y, weight)
        np.testing.assert_allclose(rule.w_, w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(rule.G_, G if step == "adagrad" else 0.0, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("step, damping, beta, lam", _STEPS)
@pytest.mark.parametrize("weighted", [False, True])
def test_softmax_update_matches_the_dense_step_on_a_random_stream(step, damping, beta, lam, weighted):
    rng = np.random.default_rng(4)
    rule = SoftmaxRule(eta=0.2, step=step, damping=damping, beta=beta, lam=lam)
    rule.allocate(6, n_classes=4)
    W, G = np.zeros((4, 6)), np.zeros((4, 6))
    for x, y in stream(8, 300, 6, density=0.6, classes=4):
        weight = float(rng.uniform(1, 20)) if weighted else 1.0
        W, G = softmax_dense(W, G, x, y, 0.2, step, weight, damping, beta, lam)
        rule.update(*sparse(x), y, weight)
        np.testing.assert_allclose(rule.w_, W, rtol=1e-10, atol=1e-12)


def test_default_forgetting_is_the_adagrad_step_bit_for_bit():
    rng = np.random.default_rng(12)
    rule, soft = LogisticRule(eta=0.5, damping=0.1), SoftmaxRule(eta=0.5, damping=0.1)
    rule.allocate(20)
    soft.allocate(20, n_classes=3)
    w, G, W, H = np.zeros(20), np.zeros(20), np.zeros((3, 20)), np.zeros((3, 20))
    for _ in range(2000):
        idx = np.sort(rng.choice(20, int(rng.integers(1, 8)), replace=False)).astype(np.int32)
        val, weight = 3.0 * rng.standard_normal(idx.size), float(rng.uniform(1, 5))
        y, k = int(rng.choice([-1, 1])), int(rng.integers(3))
        rule.update(idx, val, y, weight)
        adagrad_scalar(w, G, idx, val, y, 0.5, weight, 0.1)
        soft.update(idx, val, k, weight)
        softmax_scalar(W, H, idx, val, k, 0.5, weight, 0.1)
        assert np.array_equal(rule.w_, w) and np.array_equal(rule.G_, G)
        assert np.array_equal(soft.w_, W) and np.array_equal(soft.G_, H)


def test_beta_discounts_the_sum_before_adding_the_new_square():
    rule = LogisticRule(eta=1.0, beta=0.5)
    rule.allocate(1)
    one, x = np.array([0], np.int32), np.array([2.0])
    rule.update(one, x, 1)  # g₁ = −σ(0)·2 = −1: G = 1, w = 1
    g2 = -2.0 / (1.0 + math.exp(2.0))  # g₂ = −σ(−w·x)·2, w·x = 2
    rule.update(one, x, 1)
    assert rule.G_[0] == pytest.approx(0.5 * 1.0 + g2 * g2)
    assert rule.w_[0] == pytest.approx(1.0 - g2 / math.sqrt(0.5 + g2 * g2))


def test_lam_shrinks_the_touched_weights_before_the_step():
    rule = LogisticRule(eta=1.0, step="sgd", lam=0.25)
    rule.allocate(3)
    rule.w_[:] = [1.0, 0.0, 4.0]
    rule.update(np.array([0], np.int32), np.array([1.0]), 1)  # g₀ = −σ(−1)
    assert rule.w_.tolist() == pytest.approx([0.75 + 1.0 / (1.0 + math.e), 0.0, 4.0])  # w₂ untouched


def _flipped_concept(rule, before, after, seed=0, d=5):
    """Prequential accuracy over the last 200 of ``before`` labels of y = sign(w*·x) and of the
    ``after`` labels of −sign(w*·x) that follow, every label learnt."""
    rng = np.random.default_rng(seed)
    w_star, idx, right = rng.standard_normal(d), np.arange(d, dtype=np.int32), []
    rule.allocate(d)
    for t in range(before + after):
        x = rng.standard_normal(d)
        y = (1 if w_star @ x >= 0 else -1) * (-1 if t >= before else 1)
        right.append((1 if rule.w_ @ x >= 0 else -1) == y)
        rule.update(idx, x, y)
    return np.mean(right[before - 200:before]), np.mean(right[-200:])


def test_forgetting_recovers_a_flipped_concept_that_adagrad_does_not():
    _, adagrad = _flipped_concept(LogisticRule(eta=0.5, damping=0.1), 5000, 500)
    before, forgetting = _flipped_concept(LogisticRule(eta=0.5, damping=0.1, beta=0.999, lam=0.003), 5000, 500)
    assert adagrad < 0.75
    assert forgetting > 0.9 and forgetting > before - 0.05


def test_rescaling_keeps_the_discounted_sums_in_the_new_units():
    """After a feature's scale changes by r, G / r² is the sum its gradients on the new scale would
    have had: a step on the rescaled row then leaves G as the twin's step on the old row, / r²."""
    moved, twin = LogisticRule(eta=0.3, beta=0.9, lam=0.01), LogisticRule(eta=0.3, beta=0.9, lam=0.01)
    moved.allocate(4)
    twin.allocate(4)
    for x, y in stream(13, 50, 4, density=0.8):
        moved.update(*sparse(x), y)
        twin.update(*sparse(x), y)
    idx, ratio = np.array([1, 3], np.int32), np.array([2.0, 0.5])
    powers = np.ascontiguousarray(rescale_powers(moved, 4, 2), dtype=np.float64)
    ready(LogisticRule.rescale_kernel)(*moved.kernel_state(), powers, idx, ratio)
    x = np.array([0.3, -1.2, 0.0, 0.8])
    moved.update(*sparse(x / np.array([1.0, 2.0, 1.0, 0.5])), 1)
    twin.update(*sparse(x), 1)
    np.testing.assert_allclose(moved.G_, twin.G_ / np.array([1.0, 4.0, 1.0, 0.25]), rtol=1e-12)


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


@pytest.mark.parametrize("bad", [{"beta": 0.0}, {"beta": 1.5}, {"lam": 1.0}, {"lam": -0.1}])
def test_forgetting_outside_its_range_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        LogisticRule(**bad)


def test_beta_with_the_sgd_step_is_refused():
    with pytest.raises(ValueError, match="step='sgd'"):
        LogisticRule(step="sgd", beta=0.99)
    assert LogisticRule(step="sgd", lam=0.01).lam == 0.01
