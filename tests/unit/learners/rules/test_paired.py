"""Paired learners: each model is the logistic rule's step, and Eq. (1) decides the replacement."""

import numpy as np
import pytest

from learners.rules.logistic import LogisticRule
from learners.rules.paired import PairedLogisticRule
from tests.unit.learners.rules._streams import sparse, stream


def _twin(**params) -> tuple[PairedLogisticRule, LogisticRule, LogisticRule]:
    """The pair, and two logistic rules stepping as its stable and its reactive model."""
    pair = PairedLogisticRule(eta=0.4, damping=0.1, beta=0.999, **params)
    stable = LogisticRule(eta=0.4, damping=0.1, beta=0.999)
    reactive = LogisticRule(eta=0.4, damping=0.1, beta=pair.reactive_beta, lam=pair.reactive_lam)
    for rule in (pair, stable, reactive):
        rule.allocate(8)
    return pair, stable, reactive


def _mistake(rule: LogisticRule, idx, val, y) -> int:
    return int(y * float(rule.w_[idx] @ val) <= 0.0)


@pytest.mark.parametrize("weighted", [False, True])
def test_each_model_steps_as_the_logistic_rule_and_the_cusum_counts_mistakes_beyond_the_reactive(weighted):
    rng = np.random.default_rng(5)
    pair, stable, reactive = _twin(replace_after=1e18)
    cusum = 0
    for x, y in stream(11, 400, 8, density=0.6, linear=True):
        idx, val = sparse(x)
        weight = float(rng.uniform(1, 10)) if weighted else 1.0
        cusum = max(0, cusum + _mistake(stable, idx, val, y) - _mistake(reactive, idx, val, y))  # Eq. (1)
        pair.update(idx, val, y, weight)
        stable.update(idx, val, y, weight)
        reactive.update(idx, val, y, weight)
        assert np.array_equal(pair.w_, stable.w_) and np.array_equal(pair.G_, stable.G_)
        assert np.array_equal(pair.v_, reactive.w_) and np.array_equal(pair.H_, reactive.G_)
        assert pair.a_[0] == cusum
    assert pair.a_[1] == 0  # h beyond any count: never replaced


def test_the_stable_model_becomes_the_reactive_one_when_the_count_passes_h():
    pair, stable, reactive = _twin(replace_after=3)
    rows = list(stream(12, 3000, 8, density=0.6, linear=True))
    replaced_at = None
    for i, (x, y) in enumerate(rows[:1500] + [(x, -y) for x, y in rows[1500:]]):  # the concept flips
        idx, val = sparse(x)
        before = pair.a_[0] + _mistake(stable, idx, val, y) - _mistake(reactive, idx, val, y)
        pair.update(idx, val, y)
        if pair.a_[1] == 1 and replaced_at is None:
            replaced_at = i
            assert before > 3
            # the replacement copied the reactive model, then both learnt the label
            reactive.update(idx, val, y)
            assert np.array_equal(pair.v_, reactive.w_)
            np.testing.assert_array_equal(pair.w_[np.setdiff1d(np.arange(8), idx)],
                                          reactive.w_[np.setdiff1d(np.arange(8), idx)])
            break
        stable.update(idx, val, y)
        reactive.update(idx, val, y)
    assert replaced_at is not None and replaced_at >= 1500


def test_after_a_flip_the_pair_is_right_again_sooner_than_adagrad_alone():
    pair, stable, _ = _twin()
    rows = list(stream(13, 6000, 8, density=0.6, linear=True))
    hits = {"pair": [], "alone": []}
    for x, y in rows[:3000] + [(x, -y) for x, y in rows[3000:]]:
        idx, val = sparse(x)
        hits["pair"].append(_mistake(pair, idx, val, y) == 0)
        hits["alone"].append(_mistake(stable, idx, val, y) == 0)
        pair.update(idx, val, y)
        stable.update(idx, val, y)
    after = {k: float(np.mean(v[3000:3600])) for k, v in hits.items()}
    assert after["pair"] > after["alone"] + 0.2, after
    assert pair.a_[1] >= 1


def test_the_reactive_model_keeps_adagrad_sums_only_with_adagrad():
    with pytest.raises(ValueError, match="reactive_beta"):
        PairedLogisticRule(step="sgd", reactive_beta=0.99)
    with pytest.raises(ValueError, match="replace_after"):
        PairedLogisticRule(replace_after=0)
