"""M-DA / M-MD against a dense transcription of Algorithm 2 (Eqs. 5-9) of the high-dimensional
online active learning paper."""

import numpy as np
import pytest

from learners import make
from learners.rules.adaptive_multiclass import MulticlassDualAveragingRule, MulticlassMirrorDescentRule
from tests.unit.learners.rules._streams import sparse, stream


class DenseAlgorithm2:
    """One G^(i) history and one H^(i) per class; Eqs. (5)/(6) in closed form, (7)-(8) for the query."""

    def __init__(self, C, d, delta, eta, dual):
        self.G = [np.zeros((d, 0)) for _ in range(C)]
        self.W = np.zeros((C, d))
        self.delta, self.eta, self.dual = delta, eta, dual

    def h_matrix(self, i):
        return self.delta * np.eye(self.W.shape[1]) + np.diag(np.linalg.norm(self.G[i], axis=1))

    def scores(self, x):
        scores = self.W @ x
        top = int(np.argmax(scores))
        second = np.max(np.delete(scores, top))
        rho = [x @ np.linalg.solve(self.h_matrix(i), x) for i in range(len(self.G))]
        v = rho[top] + max(r for i, r in enumerate(rho) if i != top)  # Eq. (8)
        return scores[top], scores[top] - second, v, top  # Eq. (7): p_t = top-1 − top-2

    def learn(self, x, y):
        scores = self.W @ x
        r = max((i for i in range(len(self.G)) if i != y), key=lambda i: scores[i])
        loss = max(0.0, 1 + scores[r] - scores[y])
        for i in range(len(self.G)):
            g = x if (loss > 0 and i == r) else -x if (loss > 0 and i == y) else np.zeros_like(x)
            self.G[i] = np.column_stack([self.G[i], g])
            if self.dual:
                self.W[i] = -self.eta * np.linalg.solve(self.h_matrix(i), self.G[i].sum(axis=1))  # Eq. (5)
            else:
                self.W[i] = self.W[i] - self.eta * np.linalg.solve(self.h_matrix(i), g)  # Eq. (6)


@pytest.mark.parametrize("rule_class, dual",
                         [(MulticlassDualAveragingRule, True), (MulticlassMirrorDescentRule, False)])
@pytest.mark.parametrize("delta, eta", [(1.0, 1.0), (0.05, 0.2)])
def test_multiclass_rule_matches_algorithm_2(rule_class, dual, delta, eta):
    rule = rule_class(delta=delta, eta=eta, a="one")
    rule.allocate(6, n_classes=4)
    dense = DenseAlgorithm2(4, 6, delta, eta, dual)
    for x, y in stream(13, 120, 6, density=0.5, classes=4):
        s = rule.score(x[None, :])
        p, gap, v, top = dense.scores(x)
        if gap > 1e-9:  # an exact tie may break either way under rounding
            assert int(s.top[0]) == top
        assert (s.p[0], s.gap[0]) == (pytest.approx(p, abs=1e-10), pytest.approx(gap, abs=1e-10))
        assert s.v[0] == pytest.approx(v, rel=1e-12)
        rule.update(*sparse(x), y)
        dense.learn(x, y)
    W = -eta * rule.g_sum_ / (delta + rule.s_) if dual else rule.w_  # DA forms w^(i) when it reads it
    np.testing.assert_allclose(W, dense.W, rtol=1e-9, atol=1e-12)
    s_dense = np.stack([np.linalg.norm(G, axis=1) for G in dense.G])
    np.testing.assert_allclose(rule.s_, s_dense, rtol=1e-12)


def test_only_the_true_and_the_runner_up_classes_change():
    rule = MulticlassMirrorDescentRule()
    rule.allocate(3, n_classes=5)
    rule.w_[3] = [0.0, 2.0, 0.0]  # the runner-up for x = e₁, y = 1
    rule.update(np.array([1], np.int32), np.array([1.0]), 1)
    changed = np.flatnonzero((rule.w_ != np.array([[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 2, 0], [0, 0, 0]])).any(1))
    assert changed.tolist() == [1, 3]


def test_multiclass_registry_entries():
    learner = make("md-amd", classes=["a", "b", "c"], n_features=4)
    assert learner.multiclass and learner.rule.a == "inverse-norm"
    assert make("mm-ada", classes=[0, 1]).rule.a == "zero" and make("md-ada-i", classes=[0, 1]).rule.a == "one"
    assert make("mr-amd", classes=[0, 1]).query.rate == 0.1
    assert isinstance(make("mda", classes=[0, 1]).rule, MulticlassDualAveragingRule)
