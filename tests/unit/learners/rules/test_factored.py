"""The factored-AdaGrad softmax rule against a dense transcription of its step."""

import math

import numpy as np
import pytest

from learners.rules.factored import FactoredSoftmaxRule
from learners.rules.logistic import SoftmaxRule
from tests.unit.learners.rules._streams import sparse, stream
from tests.unit.learners.rules.scalar_steps import softmax_coefficients


def factored_dense(W, R, C, x, y, eta, weight, damping, beta=1.0, lam=0.0):
    """The k × D gradient g = c xᵀ, c_r = ω (π_r − 1[r = y]); R ← β R + its row sums of g², C ← β C +
    its column sums (where x ≠ 0); W ← (1 − λ) W where x ≠ 0, then W −= η g / (δ + √(R Cᵀ / ΣR)) where
    that root is > 0."""
    z = W @ x
    pi = np.exp(z - z.max())
    pi /= pi.sum()
    c = weight * (pi - (np.arange(W.shape[0]) == y))
    g = np.outer(c, x)
    R, C = beta * R + (g * g).sum(axis=1), np.where(x != 0, beta * C + (g * g).sum(axis=0), C)
    root = np.sqrt(np.outer(R, C) / R.sum()) if R.sum() > 0 else np.zeros_like(W)
    step = np.where(root > 0, eta * g / (damping + np.where(root > 0, root, 1.0)), 0.0)
    return np.where(x != 0, (1.0 - lam) * W, W) - step, R, C


def factored_scalar(W, C, R, idx, val, y, eta, weight, delta):
    """The factored step as it was before the forgettings, operation by operation."""
    k = W.shape[0]
    xx = 0.0
    for v in val:
        xx += v * v
    c = softmax_coefficients(W, idx, val, y, weight)
    cc = rows = 0.0
    for r in range(k):
        cc += c[r] * c[r]
        R[r] += c[r] * c[r] * xx
        rows += R[r]
    share = [math.sqrt(R[r] / rows) if rows > 0.0 else 0.0 for r in range(k)]
    for j in range(idx.size):
        i = idx[j]
        C[i] += cc * val[j] * val[j]
        root = math.sqrt(C[i])
        for r in range(k):
            v = share[r] * root
            if v > 0.0:
                W[r, i] -= eta * c[r] * val[j] / (delta + v)


@pytest.mark.parametrize("damping, beta, lam", [(0.0, 1.0, 0.0), (0.5, 1.0, 0.0), (0.5, 0.9, 0.01)])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_update_matches_the_dense_step_on_a_random_stream(damping, beta, lam, weighted):
    rng = np.random.default_rng(5)
    rule = FactoredSoftmaxRule(eta=0.3, damping=damping, beta=beta, lam=lam)
    rule.allocate(7, n_classes=4)
    W, R, C = np.zeros((4, 7)), np.zeros(4), np.zeros(7)
    for x, y in stream(11, 300, 7, density=0.6, classes=4):
        weight = float(rng.uniform(1, 20)) if weighted else 1.0
        W, R, C = factored_dense(W, R, C, x, y, 0.3, weight, damping, beta, lam)
        assert rule.update(*sparse(x), y, weight)
        np.testing.assert_allclose(rule.w_, W, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(rule.R_, R, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(rule.C_, C, rtol=1e-10, atol=1e-12)


def test_the_rows_of_a_new_feature_move_by_their_gradients_where_adagrad_moves_each_by_eta():
    """Feature r taught to mean class r (classes in turn, so the classes' sums are alike); then a row
    of feature 1 and a new feature 3 labelled 0. Diagonal AdaGrad's first step on feature 3 is η in
    every row; the factored one moves the class the model rules out (2, π₂ ≪ π₁) by a fraction of
    class 1's step, about π₂/π₁."""
    steps, pi = {}, None
    for name, rule in (("adagrad", SoftmaxRule(eta=0.5)), ("factored", FactoredSoftmaxRule(eta=0.5))):
        rule.allocate(4, n_classes=3)
        for t in range(60):
            rule.update(np.array([t % 3], np.int32), np.array([1.0]), t % 3)
        idx, val = np.array([1, 3], np.int32), np.array([1.0, 1.0])
        z = rule.w_[:, 1]
        pi = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        before = rule.w_[:, 3].copy()
        rule.update(idx, val, 0)
        steps[name] = np.abs(rule.w_[:, 3] - before)
    np.testing.assert_allclose(steps["adagrad"], 0.5)
    assert pi[2] < 0.1 * pi[1]
    assert steps["factored"][2] < 0.2 * steps["factored"][1]


def test_scores_read_the_weight_rows_alone():
    rule = FactoredSoftmaxRule()
    rule.allocate(2, n_classes=3)
    rule.w_[:] = [[1.0, 0.0], [3.0, 0.0], [2.5, 0.0]]
    rule.C_[:] = 100.0  # the row of sums below the weights: not a class
    s = rule.score(np.array([[1.0, 0.0]]))
    assert int(s.top[0]) == 1 and float(s.p[0]) == 3.0 and float(s.gap[0]) == 0.5


def test_zero_rows_leave_the_state_alone_and_a_class_outside_the_model_is_refused():
    rule = FactoredSoftmaxRule()
    rule.allocate(3, n_classes=3)
    assert not rule.update(np.array([2], np.int32), np.array([0.0]), 1)
    assert not rule.S_.any() and not rule.a_.any()
    with pytest.raises(ValueError, match="outside the model's 3 classes"):
        rule.update(np.array([0], np.int32), np.array([1.0]), 3)


def test_the_state_round_trips_through_state_dict():
    rule = FactoredSoftmaxRule()
    rule.allocate(4, n_classes=3)
    for x, y in stream(12, 30, 4, density=0.7, classes=3):
        rule.update(*sparse(x), y)
    state = rule.state_dict()
    assert set(state) == {"w", "C", "R"} and state["R"].shape == (3,) and state["C"].shape == (4,)
    other = FactoredSoftmaxRule()
    other.allocate(4, n_classes=3)
    other.load_state_dict(state)
    np.testing.assert_array_equal(other.S_, rule.S_)
    np.testing.assert_array_equal(other.a_, rule.a_)


def test_default_forgetting_is_the_factored_step_bit_for_bit():
    rng = np.random.default_rng(14)
    rule = FactoredSoftmaxRule(eta=0.5)
    rule.allocate(20, n_classes=4)
    W, C, R = np.zeros((4, 20)), np.zeros(20), np.zeros(4)
    for _ in range(2000):
        idx = np.sort(rng.choice(20, int(rng.integers(1, 8)), replace=False)).astype(np.int32)
        val, weight, y = 3.0 * rng.standard_normal(idx.size), float(rng.uniform(1, 5)), int(rng.integers(4))
        rule.update(idx, val, y, weight)
        factored_scalar(W, C, R, idx, val, y, 0.5, weight, 0.0)
        assert np.array_equal(rule.w_, W) and np.array_equal(rule.C_, C) and np.array_equal(rule.R_, R)


def _flipped_classes(rule, before, after, seed=0, d=5, k=3):
    """Prequential accuracy over the last 200 of ``before`` labels argmax W* x and of the ``after``
    labels that follow, each class moved to the next, every label learnt."""
    rng = np.random.default_rng(seed)
    W_star, idx, right = rng.standard_normal((k, d)), np.arange(d, dtype=np.int32), []
    rule.allocate(d, n_classes=k)
    for t in range(before + after):
        x = rng.standard_normal(d)
        y = (int(np.argmax(W_star @ x)) + (t >= before)) % k
        right.append(int(np.argmax(rule.w_ @ x)) == y)
        rule.update(idx, x, y)
    return np.mean(right[before - 200:before]), np.mean(right[-200:])


def test_forgetting_recovers_flipped_classes_that_the_factored_sums_do_not():
    _, summed = _flipped_classes(FactoredSoftmaxRule(eta=0.5), 5000, 500)
    before, forgetting = _flipped_classes(FactoredSoftmaxRule(eta=0.5, beta=0.999, lam=0.003), 5000, 500)
    assert summed < 0.75
    assert forgetting > 0.85 and forgetting > before - 0.05


@pytest.mark.parametrize("bad", [{"eta": 0.0}, {"eta": float("nan")}, {"damping": -0.1}, {"beta": 0.0},
                                 {"beta": 1.01}, {"lam": 1.0}, {"lam": -0.01}])
def test_bad_parameters_are_refused_naming_them(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        FactoredSoftmaxRule(**bad)
