"""PA / PA-I / PA-II against a dense transcription of Eq. (1) of Lu, Zhao & Hoi (2016)."""

import numpy as np
import pytest

from learners.rules.pa import PARule


def pa_dense(w, x, y, C, mode):
    """Eq. (1) written densely: τ = ℓ/‖x‖², min(C, ℓ/‖x‖²), ℓ/(‖x‖² + 1/(2C)); w + τ y x."""
    loss = max(0.0, 1.0 - y * (w @ x))
    if loss == 0.0 or x @ x == 0.0:
        return w.copy()
    tau = [loss / (x @ x), min(C, loss / (x @ x)), loss / (x @ x + 1 / (2 * C))][mode]
    return w + tau * y * x


def _sparse(x):
    idx = np.flatnonzero(x).astype(np.int32)
    return idx, x[idx]


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_pa_update_matches_dense_equation_on_random_stream(mode):
    rng = np.random.default_rng(mode)
    rule = PARule(mode=mode, C=0.3)
    rule.allocate(8)
    w = np.zeros(8)
    for _ in range(200):
        x = rng.standard_normal(8) * (rng.random(8) < 0.5)
        y = int(rng.choice([-1, 1]))
        w = pa_dense(w, x, y, 0.3, mode)
        rule.update(*_sparse(x), y)
        np.testing.assert_allclose(rule.w_, w, rtol=1e-12, atol=1e-12)


def test_pa1_two_steps_by_hand():
    rule = PARule(mode=1, C=0.5)
    rule.allocate(3)
    # step 1: ℓ = 1, ‖x‖² = 2, τ = min(0.5, 0.5) = 0.5 → w = (0.5, 0, 0.5)
    assert rule.update(np.array([0, 2], np.int32), np.array([1.0, 1.0]), 1)
    assert rule.w_.tolist() == [0.5, 0.0, 0.5]
    # step 2: x = (0, 2, 1), y = -1: w·x = 0.5, ℓ = 1.5, ‖x‖² = 5, τ = min(0.5, 0.3) = 0.3
    assert rule.update(np.array([1, 2], np.int32), np.array([2.0, 1.0]), -1)
    np.testing.assert_allclose(rule.w_, [0.5, -0.6, 0.2])


def test_pa2_step_by_hand():
    rule = PARule(mode=2, C=1.0)
    rule.allocate(2)
    # ℓ = 1, ‖x‖² = 4, τ = 1 / (4 + 1/2) = 2/9
    rule.update(np.array([1], np.int32), np.array([2.0]), 1)
    np.testing.assert_allclose(rule.w_, [0.0, 4 / 9])


def test_pa_passive_round_leaves_state_unchanged():
    rule = PARule(mode=0)
    rule.allocate(2)
    rule.w_[:] = [2.0, 0.0]
    assert not rule.update(np.array([0], np.int32), np.array([1.0]), 1)  # margin 2 ≥ 1
    assert rule.w_.tolist() == [2.0, 0.0]


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_pa_zero_row_is_passive_and_finite(mode):
    rule = PARule(mode=mode)
    rule.allocate(3)
    assert not rule.update(np.array([], np.int32), np.array([]), 1)
    assert not rule.update(np.array([1], np.int32), np.array([0.0]), -1)
    assert np.all(rule.w_ == 0.0)


@pytest.mark.parametrize("bad", [{"C": 0.0}, {"C": -1.0}, {"C": float("inf")}, {"mode": 3}, {"C": "1"}])
def test_pa_rejects_bad_parameters(bad):
    with pytest.raises((ValueError, TypeError)):
        PARule(**bad)
