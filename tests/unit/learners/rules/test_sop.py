"""The second-order Perceptron against a dense transcription of Cesa-Bianchi, Conconi & Gentile (2005)."""

import numpy as np
import pytest

from learners import make
from learners.rules.sop import SOPDiagRule, SOPRule


def _sparse(x):
    idx = np.flatnonzero(x).astype(np.int32)
    return idx, x[idx]


class DenseSOP:
    """A = aI + Σ_M x xᵀ, v = Σ_M y x; p̂ = vᵀ(A + x xᵀ)⁻¹x; on y p̂ ≤ 0 add x to M."""

    def __init__(self, d, a, diagonal=False):
        self.A, self.v, self.diagonal = a * np.eye(d), np.zeros(d), diagonal

    def margin(self, x):
        B = self.A + np.outer(x, x)
        if self.diagonal:
            B = np.diag(np.diag(B))
        return self.v @ np.linalg.solve(B, x)

    def update(self, x, y):
        if y * self.margin(x) > 0 or x @ x == 0:
            return False
        self.A += np.diag(x * x) if self.diagonal else np.outer(x, x)
        self.v += y * x
        return True


def _stream(rng, n, d, density=0.5, one_hot=False):
    for _ in range(n):
        if one_hot:
            x = np.zeros(d)
            x[rng.integers(d)] = rng.standard_normal()
        else:
            x = rng.standard_normal(d) * (rng.random(d) < density)
        yield x, int(rng.choice([-1, 1]))


@pytest.mark.parametrize("a", [0.3, 1.0, 5.0])
def test_sop_full_margin_and_state_match_dense_equations(a):
    rng = np.random.default_rng(1)
    rule, dense = SOPRule(a=a), DenseSOP(7, a)
    rule.allocate(7)
    for x, y in _stream(rng, 150, 7):
        s = rule.score(x[None, :])
        assert s.p[0] == pytest.approx(dense.margin(x), rel=1e-9, abs=1e-12)
        assert s.v[0] == pytest.approx(x @ np.linalg.solve(dense.A, x), rel=1e-9, abs=1e-12)
        assert rule.update(*_sparse(x), y) == dense.update(x, y)
    np.testing.assert_allclose(rule.A_inv_, np.linalg.inv(dense.A), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rule.w_, np.linalg.solve(dense.A, dense.v), rtol=1e-9, atol=1e-12)


def test_sop_diagonal_matches_dense_diagonal_equations():
    rng = np.random.default_rng(2)
    rule, dense = SOPDiagRule(a=0.7), DenseSOP(9, 0.7, diagonal=True)
    rule.allocate(9)
    for x, y in _stream(rng, 200, 9):
        assert rule.score(x[None, :]).p[0] == pytest.approx(dense.margin(x), rel=1e-12, abs=1e-14)
        assert rule.update(*_sparse(x), y) == dense.update(x, y)
    np.testing.assert_allclose(rule.A_, np.diag(dense.A), rtol=1e-12)
    np.testing.assert_allclose(rule.v_, dense.v, rtol=1e-12)


def test_sop_diagonal_equals_full_on_one_hot_rows():
    rng = np.random.default_rng(3)
    full, diag = SOPRule(a=2.0), SOPDiagRule(a=2.0)
    full.allocate(6)
    diag.allocate(6)
    for x, y in _stream(rng, 300, 6, one_hot=True):
        assert full.score(x[None, :]).p[0] == pytest.approx(diag.score(x[None, :]).p[0], rel=1e-12, abs=1e-15)
        assert full.update(*_sparse(x), y) == diag.update(*_sparse(x), y)
    np.testing.assert_allclose(np.diag(full.A_inv_), 1.0 / diag.A_, rtol=1e-12)


def test_sop_updates_only_on_mistakes():
    rule = SOPDiagRule()
    rule.allocate(2)
    x = (np.array([0], np.int32), np.array([1.0]))
    assert rule.update(*x, 1)  # p̂ = 0 counts as a mistake
    before = rule.state_dict()
    assert not rule.update(*x, 1)  # now p̂ = 1/3 > 0: correct, no update
    assert rule.state_dict()["v"].tolist() == before["v"].tolist()


def test_sop_zero_row_is_passive():
    for rule in (SOPRule(), SOPDiagRule()):
        rule.allocate(3)
        assert not rule.update(np.array([], np.int32), np.array([]), 1)
        assert not rule.update(np.array([1], np.int32), np.array([0.0]), -1)


def test_full_sop_refuses_a_matrix_beyond_its_memory_limit_and_names_the_diagonal_entry():
    with pytest.raises(ValueError, match=r"'sop-diag'"):
        SOPRule(max_matrix_mb=1.0).allocate(1000)  # 8 MB
    with pytest.raises(ValueError, match=r"20,001×20,001 matrix \(3,200 MB\).*'sop-ss-diag'"):
        make("sop-ss", n_features=20_000)  # + the intercept
    assert make("sop-ss-diag", n_features=10**6).rule.A_.size == 10**6 + 1


@pytest.mark.parametrize("spelling", ["SEL-2nd", "ASOP", "sop_ss"])
def test_selective_sampling_sop_spellings(spelling):
    assert make(spelling).name == "sop-ss"


@pytest.mark.parametrize("bad", [{"a": 0.0}, {"a": -1.0}, {"max_matrix_mb": 0.0}])
def test_sop_rejects_bad_parameters(bad):
    with pytest.raises(ValueError):
        SOPRule(**bad)
