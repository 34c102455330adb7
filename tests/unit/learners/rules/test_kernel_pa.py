"""Budgeted kernel PA against a dense transcription of Algorithm 3 (Ezukwoke & Zareian)."""

import numpy as np
import pytest

from learners import make
from learners.rules.kernel_pa import KernelPARule


def _sparse(x):
    idx = np.flatnonzero(x).astype(np.int32)
    return idx, x[idx]


def rbf(gamma):
    return lambda u, v: np.exp(-gamma * np.sum((u - v) ** 2))


def poly(gamma, degree, coef0):
    return lambda u, v: (gamma * (u @ v) + coef0) ** degree


class DenseKernelPA:
    """Support set as a list; p̂ = Σ α_i κ(x_i, x); τ by mode; a full budget replaces the oldest."""

    def __init__(self, k, mode, C, budget):
        self.k, self.mode, self.C, self.budget = k, mode, C, budget
        self.sv, self.alpha, self.inserted = [], [], 0

    def margin(self, x):
        return sum(a * self.k(s, x) for s, a in zip(self.sv, self.alpha, strict=True))

    def update(self, x, y):
        loss = 1.0 - y * self.margin(x)
        if loss <= 0 or x @ x == 0:
            return False
        kxx = self.k(x, x)
        tau = [loss / kxx, min(self.C, loss / kxx), loss / (kxx + 1 / (2 * self.C))][self.mode]
        if len(self.sv) < self.budget:
            self.sv.append(x.copy())
            self.alpha.append(y * tau)
        else:  # the oldest support vector makes room
            j = self.inserted % self.budget
            self.sv[j], self.alpha[j] = x.copy(), y * tau
        self.inserted += 1
        return True


def _ring(seed, n, d):
    """Points labelled by whether they lie inside a ring: not linearly separable."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.uniform(-1, 1, d) * (rng.random(d) < 0.8)
        yield x, (1 if 0.3 < x @ x < 0.9 else -1)


@pytest.mark.parametrize("kernel, params, k", [
    ("rbf", {"gamma": 2.0}, rbf(2.0)),
    ("poly", {"gamma": 0.5, "degree": 3, "coef0": 1.0}, poly(0.5, 3, 1.0)),
])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_kernel_pa_matches_dense_algorithm_3(kernel, params, k, mode):
    d, budget = 4, 12
    rule = KernelPARule(kernel=kernel, mode=mode, C=0.5, budget=budget, **params)
    rule.allocate(d)
    dense = DenseKernelPA(k, mode, 0.5, budget)
    for x, y in _ring(0, 150, d):
        assert rule.score(x[None, :]).p[0] == pytest.approx(dense.margin(x), rel=1e-9, abs=1e-12)
        assert rule.update(*_sparse(x), y) == dense.update(x, y)
    assert dense.inserted > budget  # the budget was exercised
    assert rule.a_[0] == budget
    np.testing.assert_allclose(rule.sv_, np.array(dense.sv))
    np.testing.assert_allclose(rule.alpha_, dense.alpha, rtol=1e-9)
    np.testing.assert_allclose(rule.sv_sq_, [s @ s for s in dense.sv])


def test_kernel_pa_learns_a_problem_no_linear_model_can():
    data = list(_ring(1, 3000, 2))
    X, y = np.array([x for x, _ in data]), np.array([t for _, t in data])
    kernel = make("kpa-1", n_features=2, kernel="rbf", gamma=5.0, C=1.0, budget=300)
    linear = make("pa-1", n_features=2)
    for learner in (kernel, linear):
        learner.learn_many(X[:2000], y[:2000])
    kernel_acc = np.mean(kernel.predict(X[2000:]) == y[2000:])
    linear_acc = np.mean(linear.predict(X[2000:]) == y[2000:])
    assert kernel_acc > 0.85 > linear_acc + 0.15


def test_kernel_pa_refuses_dense_support_vectors_that_do_not_fit_and_points_at_rff():
    with pytest.raises(ValueError, match="random Fourier features"):
        make("kpa", n_features=2**20, budget=1000)


def test_kapa_asks_with_the_margin_of_the_kernel_expansion():
    learner = make("kapa-1", n_features=1, bias=0.0, gamma=1.0, delta=0.5)
    learner.learn([1.0], 1)  # α = 1 at x = 1
    _, prob, _ = learner.ask([2.0])  # κ(1, 2) = e^(−1)
    assert prob == pytest.approx(0.5 / (0.5 + np.exp(-1.0)))
