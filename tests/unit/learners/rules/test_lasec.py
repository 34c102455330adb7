"""LASEC against a dense transcription of Fig. 1 of Moroshko & Crammer (AISTATS 2014)."""

import numpy as np
import pytest

from learners import make
from learners.rules.lasec import LASECDiagRule, LASECRule
from learners.rules.sop import SOPRule


def _sparse(x):
    idx = np.flatnonzero(x).astype(np.int32)
    return idx, x[idx]


class DenseLASEC:
    """Fig. 1 as printed: D_0 = bc/(c−b) I, e_0 = 0; S_t = (D⁻¹ + I/c)⁻¹ + xxᵀ (2);
    p̂ = xᵀS_t⁻¹(I + D/c)⁻¹e (5); on a mistake e ← (I + D/c)⁻¹e + yx (3), D ← S_t."""

    def __init__(self, d, b, c):
        self.b, self.c, self.eye = b, c, np.eye(d)
        self.D, self.e = b * c / (c - b) * self.eye, np.zeros(d)

    def s_matrix(self, x):  # S_t of Eq. (2)
        return np.linalg.inv(np.linalg.inv(self.D) + self.eye / self.c) + np.outer(x, x)

    def shrunk_e(self):
        return np.linalg.solve(self.eye + self.D / self.c, self.e)

    def margin(self, x):
        return x @ np.linalg.solve(self.s_matrix(x), self.shrunk_e())

    def update(self, x, y):
        if y * self.margin(x) > 0 or x @ x == 0:
            return False
        self.e, self.D = self.shrunk_e() + y * x, self.s_matrix(x)
        return True


class EagerDiagonalLASEC:
    """The diagonal rule with its drift applied to every coordinate at every update: O(d)."""

    def __init__(self, d, b, c):
        self.c, self.mu, self.sigma = c, np.zeros(d), np.full(d, 1.0 / b - 1.0 / c)

    def margin(self, x):
        return self.mu @ x / (1.0 + (self.sigma + 1.0 / self.c) @ (x * x))

    def update(self, x, y):
        if y * (self.mu @ x) > 0 or x @ x == 0:
            return False
        self.sigma += 1.0 / self.c  # the drift Σ̃ = Σ + I/c, on all d coordinates
        g = self.sigma * x
        v = g @ x
        self.mu += (y - self.mu @ x) / (1.0 + v) * g
        self.sigma -= g * g / (1.0 + v)
        return True


def _stream(rng, n, d, density=0.6, one_hot=False):
    for t in range(n):
        if one_hot:
            x = np.zeros(d)
            x[rng.integers(d)] = rng.standard_normal()
        else:
            x = rng.standard_normal(d) * (rng.random(d) < density)
        # a target that switches every 40 rounds keeps the stream drifting and the updates frequent
        u = np.random.default_rng(t // 40).standard_normal(d)
        yield x, (1 if x @ u >= 0 else -1)


@pytest.mark.parametrize("b, c", [(0.5, 2.0), (1.0, 10.0), (3.0, 1e4)])
def test_lasec_full_margin_and_state_match_dense_figure_1(b, c):
    rng = np.random.default_rng(0)
    rule, dense = LASECRule(b=b, c=c), DenseLASEC(6, b, c)
    rule.allocate(6)
    updates = 0
    for x, y in _stream(rng, 200, 6):
        s = rule.score(x[None, :])
        assert s.p[0] == pytest.approx(dense.margin(x), rel=1e-8, abs=1e-11)
        changed = rule.update(*_sparse(x), y)
        assert changed == dense.update(x, y)
        updates += changed
    assert updates > 30
    np.testing.assert_allclose(rule.sigma_, np.linalg.inv(dense.D), rtol=1e-8, atol=1e-11)  # Σ = D⁻¹
    np.testing.assert_allclose(rule.mu_, np.linalg.solve(dense.D, dense.e), rtol=1e-8, atol=1e-11)  # μ = D⁻¹e
    assert rule.a_[0] == updates


def test_lasec_confidence_term_is_drifted_covariance():
    rule = LASECRule(b=2.0, c=8.0)
    rule.allocate(3)
    rule.update(np.array([0, 2], dtype=np.int32), np.array([1.0, -1.0]), 1)
    x = np.array([0.5, 1.0, 2.0])
    want = x @ (rule.sigma_ + np.eye(3) / 8.0) @ x
    assert rule.score(x[None, :]).v[0] == pytest.approx(want, rel=1e-12)


def test_lasec_with_infinite_drift_penalty_is_the_second_order_perceptron():
    rng = np.random.default_rng(3)
    lasec, sop = LASECRule(b=0.7, c=1e300), SOPRule(a=0.7)
    lasec.allocate(5)
    sop.allocate(5)
    for x, y in _stream(rng, 150, 5):
        assert lasec.score(x[None, :]).p[0] == pytest.approx(sop.score(x[None, :]).p[0], rel=1e-9, abs=1e-12)
        assert lasec.update(*_sparse(x), y) == sop.update(*_sparse(x), y)
    np.testing.assert_allclose(lasec.mu_, sop.w_, rtol=1e-9, atol=1e-12)


def test_lasec_correct_prediction_leaves_state_unchanged():
    rule = LASECRule(b=1.0, c=5.0)
    rule.allocate(2)
    x = np.array([0, 1], dtype=np.int32), np.array([1.0, 0.5])
    rule.update(*x, 1)
    before = rule.S_.copy(), rule.a_.copy()
    assert rule.update(*x, 1) is False
    np.testing.assert_array_equal(rule.S_, before[0])
    np.testing.assert_array_equal(rule.a_, before[1])


@pytest.mark.parametrize("cls", [LASECRule, LASECDiagRule])
def test_lasec_zero_row_is_not_an_update(cls):
    rule = cls(b=1.0, c=5.0)
    rule.allocate(3)
    before = rule.S_.copy()
    assert rule.update(np.array([], dtype=np.int32), np.array([]), 1) is False
    np.testing.assert_array_equal(rule.S_, before)  # not even the drift: there was no update k


@pytest.mark.parametrize("b, c", [(1.0, 1.0), (2.0, 1.0)])
def test_lasec_rejects_b_not_below_c(b, c):
    with pytest.raises(ValueError, match="0 < b < c"):
        LASECRule(b=b, c=c)


@pytest.mark.parametrize("b, c", [(1.0, 3.0), (0.2, 50.0)])
def test_lasec_diagonal_lazy_drift_equals_eager_drift(b, c):
    rng = np.random.default_rng(4)
    d = 40
    rule, eager = LASECDiagRule(b=b, c=c), EagerDiagonalLASEC(d, b, c)
    rule.allocate(d)
    for x, y in _stream(rng, 400, d, density=0.1):
        assert rule.score(x[None, :]).p[0] == pytest.approx(eager.margin(x), rel=1e-10, abs=1e-13)
        assert rule.update(*_sparse(x), y) == eager.update(x, y)
    assert rule.a_[0] > 100
    np.testing.assert_allclose(rule.current_sigma(), eager.sigma, rtol=1e-10)
    np.testing.assert_allclose(rule.mu_, eager.mu, rtol=1e-10, atol=1e-13)
    assert (rule.last_ < rule.a_[0]).any(), "some coordinates must still owe drift for the test to mean anything"


def test_lasec_diagonal_update_writes_only_the_rows_coordinates():
    rule = LASECDiagRule(b=1.0, c=2.0)
    rule.allocate(1000)
    rule.update(np.array([3, 500], dtype=np.int32), np.array([1.0, 2.0]), 1)
    before = rule.S_.copy()
    rule.update(np.array([7, 900], dtype=np.int32), np.array([-1.0, 0.5]), 1)
    changed = np.flatnonzero((before != rule.S_).any(axis=0))
    assert changed.tolist() == [7, 900]


def test_lasec_diagonal_equals_full_on_one_hot_rows():
    rng = np.random.default_rng(5)
    full, diag = LASECRule(b=0.8, c=6.0), LASECDiagRule(b=0.8, c=6.0)
    full.allocate(8)
    diag.allocate(8)
    for x, y in _stream(rng, 300, 8, one_hot=True):
        assert diag.score(x[None, :]).p[0] == pytest.approx(full.score(x[None, :]).p[0], rel=1e-10, abs=1e-13)
        assert diag.update(*_sparse(x), y) == full.update(*_sparse(x), y)
    np.testing.assert_allclose(diag.current_sigma(), np.diag(full.sigma_), rtol=1e-10)
    np.testing.assert_allclose(full.sigma_ - np.diag(np.diag(full.sigma_)), 0.0, atol=1e-15)
    np.testing.assert_allclose(diag.mu_, full.mu_, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("name, twin", [("lasec", "lasec-diag"), ("lasec-ss", "lasec-ss-diag")])
def test_make_full_lasec_refuses_a_matrix_that_does_not_fit_and_names_the_diagonal(name, twin):
    with pytest.raises(ValueError, match=f"'{twin}'"):
        make(name, n_features=100_000)
    make(f"{name}-diag", n_features=10**6)  # O(D) memory: fine


def test_lasec_ss_queries_with_the_margin_of_equation_5():
    learner = make("lasec-ss", n_features=2, delta=0.5, bias=0.0, b=1.0, c=4.0)
    learner.learn([1.0, 1.0], 1)  # μ = x/3
    p = learner.score(np.array([[2.0, 0.0]])).p[0]  # μᵀx = 2/3, v = xᵀ(Σ + I/4)x
    sigma = learner.rule.sigma_ + np.eye(2) / 4.0
    assert p == pytest.approx((2 / 3) / (1 + np.array([2.0, 0.0]) @ sigma @ np.array([2.0, 0.0])))
    _, prob, _ = learner.ask([2.0, 0.0])
    assert prob == pytest.approx(0.5 / (0.5 + abs(p)))
