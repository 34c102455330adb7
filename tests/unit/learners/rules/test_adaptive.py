"""DA / MD against a dense transcription of Algorithm 1 of the high-dimensional online active
learning paper (H_t from the full history of subgradients, w from its closed forms)."""

import numpy as np
import pytest

from learners import make
from learners.rules.adaptive import DualAveragingRule, MirrorDescentRule
from tests.unit.learners.rules._streams import sparse, stream


class DenseAlgorithm1:
    """Lines 8-14 written with the d×t matrix G_{1:t} of every subgradient."""

    def __init__(self, d, delta, eta, dual):
        self.G, self.w, self.delta, self.eta, self.dual = np.zeros((d, 0)), np.zeros(d), delta, eta, dual

    def h_matrix(self):
        return self.delta * np.eye(self.G.shape[0]) + np.diag(np.linalg.norm(self.G, axis=1))  # line 12

    def v(self, x):
        return x @ np.linalg.solve(self.h_matrix(), x)  # v_t = x_tᵀH_{t−1}⁻¹x_t

    def learn(self, x, y):
        g = -y * x if max(0.0, 1 - y * self.w @ x) > 0 else np.zeros_like(x)  # line 8: g_t ∈ ∂f_t(w_t)
        self.G = np.column_stack([self.G, g])  # line 11
        H = self.h_matrix()
        if self.dual:
            self.w = -self.eta * np.linalg.solve(H, self.G.sum(axis=1))  # line 13
        else:
            self.w = self.w - self.eta * np.linalg.solve(H, g)  # line 14


@pytest.mark.parametrize("rule_class, dual", [(DualAveragingRule, True), (MirrorDescentRule, False)])
@pytest.mark.parametrize("delta, eta", [(1.0, 1.0), (0.01, 0.01), (0.1, 5.0)])
def test_rule_matches_algorithm_1(rule_class, dual, delta, eta):
    rule = rule_class(delta=delta, eta=eta, a="one")
    rule.allocate(7)
    dense = DenseAlgorithm1(7, delta, eta, dual)
    for x, y in stream(11, 150, 7, density=0.4):
        s = rule.score(x[None, :])
        assert s.p[0] == pytest.approx(dense.w @ x, rel=1e-9, abs=1e-12)
        assert s.v[0] == pytest.approx(dense.v(x), rel=1e-12)
        rule.update(*sparse(x), y)
        dense.learn(x, y)
    weights = rule.score(np.eye(7)).p  # w_i read through the rule's own score
    np.testing.assert_allclose(weights, dense.w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rule.s_, np.linalg.norm(dense.G, axis=1), rtol=1e-12)


@pytest.mark.parametrize("a, expected", [("inverse-norm", lambda x: 1 / max(1.0, x @ x)), ("one", lambda x: 1.0),
                                         ("zero", lambda x: 0.0)])
def test_reported_v_is_a_t_times_x_h_inverse_x(a, expected):
    rule = MirrorDescentRule(delta=0.5, a=a)
    rule.allocate(4)
    rule.s_[:] = [0.0, 1.0, 2.0, 3.0]
    for x in (np.array([0.1, 0.0, 0.2, 0.0]), np.array([3.0, -1.0, 0.0, 2.0])):
        v = x @ (x / (0.5 + rule.s_))
        assert rule.score(x[None, :]).v[0] == pytest.approx(expected(x) * v, rel=1e-14)


def test_updates_touch_only_the_non_zeros_and_skip_zero_loss():
    rule = MirrorDescentRule(delta=1.0, eta=1.0)
    rule.allocate(5)
    rule.w_[:] = [2.0, 0.0, 0.0, 0.0, 7.0]
    assert not rule.update(np.array([0], np.int32), np.array([1.0]), 1)  # margin 2: f_t = 0, g_t = 0
    assert rule.update(np.array([1, 3], np.int32), np.array([1.0, -1.0]), 1)
    assert rule.w_[[0, 2, 4]].tolist() == [2.0, 0.0, 7.0] and rule.s_[[0, 2, 4]].tolist() == [0.0, 0.0, 0.0]


def test_dual_averaging_weights_scale_with_eta_until_the_loss_stops():
    """DA's w is −η H⁻¹ Σg: for rows that all incur loss, the state does not depend on η."""
    a, b = DualAveragingRule(eta=1e-6), DualAveragingRule(eta=2e-6)
    a.allocate(3)
    b.allocate(3)
    for x, y in stream(12, 20, 3):
        a.update(*sparse(x), y)
        b.update(*sparse(x), y)
    np.testing.assert_array_equal(a.g_sum_, b.g_sum_)
    x = np.array([[1.0, -1.0, 0.5]])
    assert b.score(x).p[0] == pytest.approx(2 * a.score(x).p[0], rel=1e-12)


def test_registry_ablations_fix_a_t():
    assert make("d-ada").rule.a == "inverse-norm" and make("d-ada-i").rule.a == "one"
    assert make("m-amd").rule.a == "zero" and make("D-AMD-I").name == "d-amd-i"
    with pytest.raises(ValueError, match="defines 'd-ada'"):
        make("d-ada", a="one")
    assert isinstance(make("r-amd").rule, MirrorDescentRule) and make("r-amd").query.rate == 0.1
    learner = make("d-amd", eta=0.3)
    assert learner.rule.eta == learner.query.eta == 0.3
