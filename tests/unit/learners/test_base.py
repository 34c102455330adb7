"""The Learner: labels, single-record API, batches, checkpoints."""

import numpy as np
import pytest

from learners import make


def test_binary_labels_map_onto_plus_minus_one():
    learner = make("pa-1", classes=("ham", "spam"), n_features=2)
    assert learner.encode(["spam", "ham"]).tolist() == [1, -1]
    assert learner.decode(np.array([1, -1])).tolist() == ["spam", "ham"]
    with pytest.raises(ValueError, match="label 'eggs' is not one of"):
        learner.encode(["eggs"])


def test_tie_rule_decides_zero_margin():
    neg = make("pa-1", n_features=2, bias=0.0)
    pos = make("pa-1", n_features=2, bias=0.0, tie="positive")
    assert neg.predict(np.zeros((1, 2))).tolist() == [-1]
    assert pos.predict(np.zeros((1, 2))).tolist() == [1]


def test_empty_row_without_intercept_is_always_queried_and_with_intercept_not():
    learner = make("paa-1", n_features=2, bias=0.0, delta=0.1)
    assert learner.ask(np.zeros(2))[1] == 1.0
    learner = make("paa-1", n_features=2, delta=0.1)
    learner.learn(np.zeros(2), -1)  # the intercept learns from an empty row
    assert learner.ask(np.zeros(2))[1] < 1.0


def test_ask_returns_user_labels_and_learn_counts():
    learner = make("paa-1", classes=(0, 1), n_features=3)
    prediction, prob, query = learner.ask([1.0, 0.0, 0.0], record_id="a")
    assert prediction in (0, 1) and 0 <= prob <= 1 and isinstance(query, bool)
    assert learner.learn([1.0, 0.0, 0.0], 1)
    assert (learner.rounds_, learner.labels_, learner.updates_) == (1, 1, 1)


def test_decide_batch_uses_ids_for_coins():
    learner = make("rpa-1", rate=0.5, n_features=4)
    X = np.eye(4)
    a = learner.decide(X, ids=["a", "b", "c", "d"]).query
    b = learner.decide(X[::-1], ids=["d", "c", "b", "a"]).query
    np.testing.assert_array_equal(a, b[::-1])


def test_decisions_weight_is_inverse_probability():
    learner = make("paa-1", n_features=2, delta=0.5)
    d = learner.decide(np.array([[1.0, 0.0], [0.0, 0.0]]), ids=["x", "y"])
    np.testing.assert_allclose(d.weight[d.query], 1 / d.probability[d.query])


def test_state_dict_refuses_another_learner_or_parameters():
    a = make("paa-1", n_features=3, C=1.0)
    a.learn([1.0, 0, 0], 1)
    with pytest.raises(ValueError, match=r"C: saved 1\.0 vs this 2\.0"):
        make("paa-1", n_features=3, C=2.0).load_state_dict(a.state_dict())
    with pytest.raises(ValueError, match="rule"):
        make("pea", n_features=3).load_state_dict(a.state_dict())
    with pytest.raises(ValueError, match="n_features"):
        make("paa-1", n_features=4, C=1.0).load_state_dict(a.state_dict(), allow_param_change=True)
    b = make("paa-1", n_features=3, C=2.0)
    b.load_state_dict(a.state_dict(), allow_param_change=True)
    np.testing.assert_array_equal(b.rule.w_, a.rule.w_)


def test_state_dict_refuses_another_format_version():
    a = make("pa-1", n_features=2)
    a.learn([1.0, 0.0], 1)
    state = a.state_dict()
    state["format_version"] = np.array(99)
    with pytest.raises(ValueError, match="format version 99"):
        make("pa-1", n_features=2).load_state_dict(state)


def test_multiclass_needs_classes_and_binary_defaults_to_plus_minus_one():
    assert make("pa-1").classes == (-1, 1)
    with pytest.raises(ValueError, match="exactly 2"):
        make("pa-1", classes=[1, 2, 3])


def test_numeric_binary_labels_encode_like_the_general_path():
    learner = make("paa-1", n_features=3, classes=(0, 1))
    labels = np.array([1, 0, 0, 1, 1])
    assert learner.encode(labels).tolist() == [1, -1, -1, 1, 1]
    assert learner.encode(labels.astype(float)).tolist() == [1, -1, -1, 1, 1]
    with pytest.raises(ValueError, match="label 2 is not one of"):
        learner.encode(np.array([0, 2, 1]))


def test_learn_many_takes_labels_already_encoded():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 5)), rng.choice(["spam", "ham"], 60)
    plain, coded = (make("paa-1", n_features=5, classes=["ham", "spam"]) for _ in range(2))
    plain.learn_many(X, y)
    coded.learn_many(X, coded.encode(y), encoded=True)
    np.testing.assert_array_equal(plain.score(X).p, coded.score(X).p)
    assert plain.labels_ == coded.labels_


def test_a_checkpoint_from_before_a_rule_parameter_existed_loads_as_its_default():
    import json

    a = make("lr-ada-entropy", n_features=3, damping=0.0)
    a.learn(np.array([1.0, 0.0, 2.0]), 1)
    state = a.state_dict()
    meta = json.loads(str(state["meta"]))
    del meta["params"]["damping"]  # written before AdaGrad's damping was a parameter
    state["meta"] = np.array(json.dumps(meta))
    b = make("lr-ada-entropy", n_features=3, damping=0.0)
    b.load_state_dict(state)
    np.testing.assert_array_equal(b.rule.w_, a.rule.w_)
    with pytest.raises(ValueError, match=r"damping: saved 0\.0 vs this 0\.5"):  # another configuration
        make("lr-ada-entropy", n_features=3, damping=0.5).load_state_dict(state)
    # the registered δ is no longer the 0 such a state was learnt with: refused, naming it
    with pytest.raises(ValueError, match=r"damping: saved 0\.0 vs this 0\.1"):
        make("lr-ada-entropy", n_features=3, eta=a.rule.eta).load_state_dict(state)
    make("paa-1", n_features=3).load_state_dict(make("paa-1", n_features=3).state_dict())  # no damping there


def test_following_a_model_takes_its_weights_and_keeps_this_learners_query_state():
    from learners.budget import BudgetController

    trainer, scorer = make("paa-1", n_features=3), make("paa-1", n_features=3)
    scorer.budget = BudgetController(target=0.5)
    scorer.decide(np.zeros((4, 3)), ids=[f"r{i}" for i in range(4)])  # the scorer's coin has drawn 4
    for x, y in (([1.0, 0.0, 0.0], 1), ([0.0, 1.0, 0.0], -1)):
        trainer.learn(x, y)
    scorer.follow(trainer.state_dict())
    np.testing.assert_array_equal(scorer.state_dict()["rule.w"], trainer.state_dict()["rule.w"])
    assert (scorer.rounds_, scorer.labels_) == (4, 2) and scorer.budget.records == 4
