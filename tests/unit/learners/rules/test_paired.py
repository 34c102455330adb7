"""Paired learners: each model steps as its rule alone, and Eq. (1) decides the replacement."""

import numpy as np
import pytest

from learners.rules.factored import FactoredSoftmaxRule
from learners.rules.logistic import LogisticRule
from learners.rules.paired import PairedFactoredSoftmaxRule, PairedLogisticRule
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


def test_the_multiclass_pair_steps_as_two_factored_rules_and_counts_top_class_mistakes():
    pair = PairedFactoredSoftmaxRule(eta=0.5, beta=0.999, replace_after=1e18)
    stable = FactoredSoftmaxRule(eta=0.5, beta=0.999)
    reactive = FactoredSoftmaxRule(eta=0.5, beta=pair.reactive_beta, lam=pair.reactive_lam)
    for rule in (pair, stable, reactive):
        rule.allocate(6, n_classes=3)
    cusum = 0
    for x, y in stream(14, 300, 6, density=0.6, classes=3):
        idx, val = sparse(x)
        wrong = [int(np.argmax(rule.w_[:, idx] @ val) != y) for rule in (stable, reactive)]
        cusum = max(0, cusum + wrong[0] - wrong[1])  # Eq. (1)
        for rule in (pair, stable, reactive):
            rule.update(idx, val, y)
        assert np.array_equal(pair.w_, stable.w_) and np.array_equal(pair.C_, stable.C_)
        assert np.array_equal(pair.R_, stable.R_)
        assert np.array_equal(pair.v_, reactive.w_) and np.array_equal(pair.H_, reactive.C_)
        assert np.array_equal(pair.Q_, reactive.R_)
        assert pair.a_[0] == cusum


def test_the_multiclass_pair_replaces_its_stable_model_by_the_reactive_one_after_a_relabelling():
    pair = PairedFactoredSoftmaxRule(eta=0.5, beta=0.999, replace_after=3)
    twin = PairedFactoredSoftmaxRule(eta=0.5, beta=0.999, replace_after=1e18)  # the same pair, never replacing
    for rule in (pair, twin):
        rule.allocate(6, n_classes=3)
    rows = list(stream(16, 4000, 6, density=0.8, classes=3))
    centres = np.random.default_rng(16).standard_normal((3, 6)) * 3.0
    for t, (x, k) in enumerate(rows):
        x = centres[k] + x
        y = k if t < 2000 else (k + 1) % 3  # every class relabelled
        idx, val = sparse(x)
        if pair.update(idx, val, y) and pair.a_[1] == 1:
            assert t >= 2000
            # the stable model restarted from the reactive one, then learnt the label with its own β, λ
            restarted = FactoredSoftmaxRule(eta=0.5, beta=0.999)
            restarted.allocate(6, n_classes=3)
            restarted.w_[...], restarted.C_[...], restarted.R_[...] = twin.v_, twin.H_, twin.Q_
            restarted.update(idx, val, y)
            twin.update(idx, val, y)
            np.testing.assert_array_equal(pair.w_, restarted.w_)
            np.testing.assert_array_equal(pair.v_, twin.v_)
            return
        twin.update(idx, val, y)
        np.testing.assert_array_equal(pair.w_, twin.w_)
    raise AssertionError("the stable model was never replaced")


@pytest.mark.parametrize(("name", "before"), [("lr-ada-entropy", LogisticRule), ("mlr-factored-entropy",
                                                                                FactoredSoftmaxRule)])
def test_a_default_saved_before_it_had_a_twin_loads_as_a_change_of_parameters(name, before):
    from learners import make
    from learners.base import Learner

    rng = np.random.default_rng(17)
    X = rng.standard_normal((300, 5))
    classes = [0, 1, 2] if before is FactoredSoftmaxRule else [-1, 1]
    y = np.array(classes)[rng.integers(len(classes), size=300)]
    paired = make(name, n_features=5, classes=classes)
    rule = paired.rule
    kept = {k: getattr(rule, k) for k in before.param_names()}
    own = {k: v for k, v in paired.get_params().items() if k in set(Learner.param_names()) - {"name"}}
    old = Learner(before(**kept), paired.query.clone(), name=name, **own)
    for i in range(300):
        old.learn(X[i], y[i])
    state = old.state_dict()
    with pytest.raises(ValueError, match="rule"):
        make(name, n_features=5, classes=classes).load_state_dict(state)
    paired.load_state_dict(state, allow_param_change=True)
    np.testing.assert_array_equal(paired.rule.w_, old.rule.w_)
    np.testing.assert_array_equal(paired.rule.v_, old.rule.w_)  # the twin starts as the model
    ids = [str(i) for i in range(50)]
    np.testing.assert_array_equal(paired.decide(X[:50], ids).predicted, old.decide(X[:50], ids).predicted)
