"""Classes learnt from the labels (``classes=[]``) and the rules' swap of their two classes."""

from __future__ import annotations

import numpy as np
import pytest

from learners import make
from learners.registry import ALGORITHMS


def _stream(n=300, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.where(X[:, 0] - X[:, 1] > 0.2, 1, -1)


def _binary_swappable():
    names = []
    for name, spec in ALGORITHMS.items():
        learner = make(name, n_features=6) if not spec.rule.multiclass else None
        if learner is not None and spec.rule.scaling is not None and spec.rule.symmetric:
            names.append(name)
    return names


@pytest.mark.parametrize("name", _binary_swappable())
def test_a_rule_that_swaps_its_classes_scores_as_if_it_had_learnt_the_other_labels(name):
    X, y = _stream()
    a, b = make(name, n_features=6), make(name, n_features=6)
    a.learn_many(X, y, encoded=True)
    b.learn_many(X, -y, encoded=True)
    b.rule.flip_sign()
    np.testing.assert_allclose(b.score(X).p, a.score(X).p, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("first", "second"), [(0, 1), (1, 0), ("no", "yes"), (2, 1), ("spam", "ham"), (-1, 1)])
def test_learnt_classes_learn_as_the_classes_given(first, second):
    """Labels of one class first (the learner cannot yet know which is positive), then both: the
    model ends as the one told the classes from the start, to the bit where a swap is exact."""
    X, y = _stream()
    labels = np.where(y == y[0], first, second).astype(object)
    given = make("lr-ada-entropy", classes=sorted([first, second], key=lambda c: (isinstance(c, str), c)),
                 n_features=6)
    learnt = make("lr-ada-entropy", classes=[], n_features=6)
    assert learnt.predict(X[:1])[0] is None  # no class known yet
    for lo in range(0, len(y), 25):
        for learner in (given, learnt):
            learner.learn_many(X[lo : lo + 25], labels[lo : lo + 25])
    assert learnt.classes == given.classes
    np.testing.assert_allclose(learnt.score(X).p, given.score(X).p, rtol=1e-12)
    assert list(learnt.predict(X)) == list(given.predict(X))


def test_one_class_known_is_every_prediction():
    X, _ = _stream()
    learner = make("lr-ada-entropy", classes=[], n_features=6)
    learner.learn_many(X[:5], ["fraud"] * 5)
    assert set(learner.predict(X)) == {"fraud"}


def test_a_third_class_is_refused_naming_the_binary_model():
    X, _ = _stream()
    learner = make("lr-ada-entropy", classes=[], n_features=6)
    learner.learn_many(X[:2], [0, 1])
    assert learner.adopt([1, 2, "x"]) == [True, False, False]
    with pytest.raises(ValueError, match=r"label 2 is not one of the model's classes \[0, 1\].*binary"):
        learner.learn_many(X[:1], [2])


def test_booleans_and_nan_are_never_classes():
    learner = make("lr-ada-entropy", classes=[], n_features=6)
    assert learner.adopt([True, float("nan"), None]) == [False, False, False]
    assert learner.classes == ()


def test_learnt_classes_are_restored_with_the_state():
    X, y = _stream()
    learner = make("lr-ada-entropy-rff", classes=[], n_features=6)
    learner.learn_many(X, np.where(y > 0, "b", "a"))
    copy = make("lr-ada-entropy-rff", classes=[], n_features=6)
    copy.load_state_dict(learner.state_dict())
    assert copy.classes == ("a", "b") and copy.get_params()["classes"] == ()
    np.testing.assert_array_equal(copy.predict(X), learner.predict(X))
    assert copy.clone().learns_classes


@pytest.mark.parametrize(("name", "message"), [("mlr-ada-entropy", "binary learners"), ("cspaa-sum", "give them"),
                                               ("kpa-1", "give them")])
def test_learnt_classes_are_refused_where_they_cannot_work(name, message):
    with pytest.raises(ValueError, match=message):
        make(name, classes=[])


def test_decisions_before_two_classes_predict_the_class_known_or_none():
    """So that a label for such a record is scored against what was predicted: none (a mistake) or the
    one class known."""
    X, _ = _stream()
    learner = make("lr-ada-entropy", classes=[], n_features=6)
    d = learner.decide(X[:10])
    assert list(d.predicted) == [0] * 10 and list(d.label) == [None] * 10
    assert (learner.encode([7]) != d.predicted[:1]).all()  # whatever the label, a mistake
    learner.learn_many(X[:3], [7, 7, 7])
    d = learner.decide(X[10:20])
    assert list(d.label) == [7] * 10 and (d.predicted == learner.encode([7] * 10)).all()


def test_a_prediction_maps_to_its_code_without_becoming_a_class():
    X, _ = _stream()
    learner = make("lr-ada-entropy", classes=[], n_features=6)
    assert learner.code_of_prediction(None) == 0  # made before any class was known
    with pytest.raises(ValueError, match="not one of the model's classes"):
        learner.code_of_prediction("spam")
    assert learner.classes == ()  # a prediction is not a label
    learner.learn_many(X[:2], ["ham", "spam"])
    assert [learner.code_of_prediction(c) for c in ("ham", "spam")] == [-1, 1]
