"""CSPAA's update (Eqs. 9-11 of Lu, Zhao & Hoi 2016), CPA and PAUM against dense transcriptions,
and the handling of ρ: sum / cost objectives, known or online-estimated T_n/T_p, C = ρ."""

import numpy as np
import pytest

from learners import make
from learners.rules import CPARule, CSPARule, PARule, PAUMRule


def cspaa_dense(w, x, y, rho, C):
    """ρ_t = ρ (y = +1) or 1; ℓ = max(0, ρ_t − y w·x); w + min(C, ℓ/‖x‖²) y x."""
    rho_t = rho if y > 0 else 1.0
    loss = max(0.0, rho_t - y * (w @ x))
    if loss == 0.0 or x @ x == 0.0:
        return w.copy()
    return w + min(C, loss / (x @ x)) * y * x


def cpa_dense(w, x, y, rho, C):
    """Mistake (y w·x ≤ 0) only: ℓ = √ρ_t − y w·x; w + min(C, ℓ/‖x‖²) y x."""
    if y * (w @ x) > 0 or x @ x == 0.0:
        return w.copy()
    rho_t = rho if y > 0 else 1.0
    return w + min(C, (np.sqrt(rho_t) - y * (w @ x)) / (x @ x)) * y * x


def paum_dense(w, x, y, rho):
    """w + y x whenever y w·x ≤ τ_y, τ_{+1} = ρ, τ_{−1} = 1."""
    if y * (w @ x) > (rho if y > 0 else 1.0) or x @ x == 0.0:
        return w.copy()
    return w + y * x


def _sparse(x):
    idx = np.flatnonzero(x).astype(np.int32)
    return idx, x[idx]


def _stream(seed, n=300, d=6, positive_rate=0.2):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield rng.standard_normal(d) * (rng.random(d) < 0.6), 1 if rng.random() < positive_rate else -1


RULES = {"cspaa": (CSPARule, cspaa_dense), "cpa": (CPARule, cpa_dense), "paum": (PAUMRule, paum_dense)}
SETTINGS = [  # (parameters, ρ they give)
    ({"objective": "sum", "ratio": 4.0}, 4.0),
    ({"objective": "sum", "ratio": 4.0, "eta_p": 0.8}, 16.0),
    ({"objective": "cost", "c_p": 0.75}, 3.0),
]


@pytest.mark.parametrize("params, rho", SETTINGS)
@pytest.mark.parametrize("family", sorted(RULES))
def test_rule_matches_dense_equations_with_a_fixed_rho(family, params, rho):
    cls, dense = RULES[family]
    C = 0.7
    rule = cls(**params, **({} if family == "paum" else {"C": C}))
    rule.allocate(6)
    assert rule.rho == pytest.approx(rho)
    w = np.zeros(6)
    for x, y in _stream(len(family)):
        w = dense(w, x, y, rho) if family == "paum" else dense(w, x, y, rho, C)
        rule.update(*_sparse(x), y)
        np.testing.assert_allclose(rule.w_, w, rtol=1e-12, atol=1e-12)
    assert np.abs(w).sum() > 0


@pytest.mark.parametrize("family", sorted(RULES))
def test_online_ratio_is_counted_from_labels_with_one_pseudo_label_per_class(family):
    cls, dense = RULES[family]
    rule = cls(objective="sum", eta_p=0.6)
    rule.allocate(6)
    w, T_p, T_n = np.zeros(6), 0, 0
    for x, y in _stream(7):
        T_p, T_n = T_p + (y > 0), T_n + (y < 0)
        rho = 0.6 * (T_n + 1) / (0.4 * (T_p + 1))  # ρ_t = η_p T̂_n / (η_n T̂_p), current label counted
        w = dense(w, x, y, rho) if family == "paum" else dense(w, x, y, rho, rho)  # C = ρ by default
        rule.update(*_sparse(x), y)
        np.testing.assert_allclose(rule.w_, w, rtol=1e-12, atol=1e-12)
    assert rule.rho is None
    state = rule.state_dict()
    assert (float(state["positives"]), float(state["negatives"])) == (T_p, T_n)


def test_online_ratio_by_hand():
    rule = CSPARule(objective="sum", C=100.0)
    rule.allocate(1)
    one = (np.array([0], np.int32), np.array([1.0]))
    rule.update(*one, -1)  # T̂_n/T̂_p = 2/1: a negative has ρ_t = 1 anyway: ℓ = 1, w = −1
    assert rule.w_.tolist() == [-1.0]
    rule.update(*one, -1)  # ℓ = 1 − 1 = 0: passive, but counted
    rule.update(*one, 1)  # ρ = (2 + 1)/(1 + 1) = 1.5: ℓ = 1.5 + 1 = 2.5, w = 1.5
    assert rule.w_.tolist() == [1.5]
    assert (float(rule.a_[0]), float(rule.a_[1])) == (1.0, 2.0)


def test_eq_11_literally_on_unit_norm_rows():
    rule = CSPARule(objective="cost", c_p=0.9, C=5.0)  # ρ = 9
    rule.allocate(2)
    x = np.array([0.6, 0.8])  # ‖x‖ = 1: τ = min(C, ℓ)
    rule.update(*_sparse(x), 1)  # ℓ = 9, τ = 5
    np.testing.assert_allclose(rule.w_, 5 * x)
    rule.update(*_sparse(x), -1)  # ℓ = 1 + 5, τ = 5
    np.testing.assert_allclose(rule.w_, 0 * x, atol=1e-15)
    rule.update(*_sparse(x), 1)  # ℓ = 9 − 0 = 9 > C again
    np.testing.assert_allclose(rule.w_, 5 * x)


def test_cspaa_with_rho_one_is_pa_1():
    cs, pa = CSPARule(objective="sum", ratio=1.0, C=0.4), PARule(mode=1, C=0.4)
    cs.allocate(6)
    pa.allocate(6)
    for x, y in _stream(3):
        assert cs.update(*_sparse(x), y) == pa.update(*_sparse(x), y)
    np.testing.assert_allclose(cs.w_, pa.w_, rtol=1e-12)


def test_default_c_is_rho_and_an_explicit_c_clips():
    one = (np.array([0], np.int32), np.array([1.0]))
    a, b = CSPARule(objective="sum", ratio=9.0), CSPARule(objective="sum", ratio=9.0, C=1.0)
    for rule in (a, b):
        rule.allocate(1)
        rule.update(*one, 1)
    assert a.w_.tolist() == [9.0] and b.w_.tolist() == [1.0]


def test_positive_needs_a_larger_margin_than_a_negative():
    rule = CSPARule(objective="cost", c_p=0.8)  # ρ = 4
    rule.allocate(1)
    rule.w_[:] = [2.0]
    one = (np.array([0], np.int32), np.array([1.0]))
    assert rule.update(*one, 1)  # y w·x = 2 < ρ = 4: still a loss
    rule.w_[:] = [-2.0]
    assert not rule.update(*one, -1)  # y w·x = 2 ≥ 1: passive


def test_cpa_updates_only_on_mistakes():
    rule = CPARule(objective="sum", ratio=9.0)
    rule.allocate(1)
    one = (np.array([0], np.int32), np.array([1.0]))
    assert rule.update(*one, 1) and rule.w_.tolist() == [3.0]  # ℓ = √9 − 0, τ = min(9, 3)
    assert not rule.update(*one, 1)  # correct, even though 3 < ρ
    assert rule.update(*one, -1) and rule.w_.tolist() == [-1.0]  # ℓ = 1 + 3 = 4


@pytest.mark.parametrize("rule", [CSPARule(objective="sum"), CPARule(objective="cost", c_p=0.6), PAUMRule()])
def test_cost_sensitive_zero_row_is_passive(rule):
    rule.allocate(3)
    assert not rule.update(np.array([], np.int32), np.array([]), 1)
    assert not rule.update(np.array([2], np.int32), np.array([0.0]), -1)
    assert np.all(rule.w_ == 0.0)


@pytest.mark.parametrize("bad, message", [
    ({"objective": "cost"}, "needs c_p"),
    ({"objective": "sum", "c_p": 0.9}, "c_p sets the cost objective"),
    ({"objective": "cost", "c_p": 0.9, "ratio": 9.0}, "belong to objective='sum'"),
    ({"objective": "cost", "c_p": 0.9, "eta_p": 0.5}, "belong to objective='sum'"),
    ({"objective": "accuracy"}, "objective must be one of"),
    ({"eta_p": 1.0}, "eta_p must be in"),
    ({"objective": "cost", "c_p": 0.0}, "c_p must be in"),
    ({"ratio": 0.0}, "ratio must be in"),
    ({"C": -1.0}, "C must be in"),
])
def test_cost_sensitive_rules_reject_bad_parameters(bad, message):
    with pytest.raises(ValueError, match=message):
        CSPARule(**bad)


def test_registry_objectives_and_rho():
    assert make("cspaa-sum").rule.objective == "sum" and make("cspaa-sum").rule.rho is None
    assert make("cspaa-sum", ratio=9.0).rule.rho == 9.0
    assert make("cspaa-cost").rule.rho == pytest.approx(9.0)  # c_p = 0.9: the paper's URL1 setting
    assert make("cspaa-cost", c_p=0.99).rule.rho == pytest.approx(99.0)
    with pytest.raises(ValueError, match="defines 'cspaa-cost'"):
        make("cspaa-cost", objective="sum")
    assert make("cspaa-a", objective="cost", c_p=0.75).rule.rho == pytest.approx(3.0)
    assert make("csrnd").rule.metric_weights() == {"eta_p": 0.5, "eta_n": 0.5, "c_p": 0.5, "c_n": 0.5}
