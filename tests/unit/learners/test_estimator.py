"""The scikit-learn style wrapper."""

import numpy as np
import pytest

from learners.estimator import ActiveClassifier
from learners.synthetic import synthetic_sparse


def test_partial_fit_then_predict_learns_a_separable_stream():
    data = synthetic_sparse(n=3000, d=256, noise=0.0, seed=1)
    X, y = data.rows.to_csr(), np.where(data.labels > 0, "spam", "ham")
    clf = ActiveClassifier("pa-1")
    for start in range(0, 2000, 500):
        clf.partial_fit(X[start:start + 500], y[start:start + 500], classes=["ham", "spam"])
    assert (clf.predict(X[2000:]) == y[2000:]).mean() > 0.8
    assert clf.decision_function(X[:3]).shape == (3,)
    assert clf.n_features_in_ == 256 and clf.classes_.tolist() == ["ham", "spam"]


def test_query_returns_predictions_probabilities_and_mask():
    clf = ActiveClassifier("paa-1", params={"delta": 0.5})
    labels, prob, ask = clf.query(np.eye(3))
    assert labels.shape == prob.shape == ask.shape == (3,)


def test_get_and_set_params_round_trip():
    clf = ActiveClassifier("paa-2", params={"C": 0.5})
    assert clf.get_params() == {"learner": "paa-2", "params": {"C": 0.5}}
    clf.set_params(learner="pea", params={})
    with pytest.raises(ValueError, match="invalid parameter"):
        clf.set_params(C=1.0)


def test_changing_classes_is_refused():
    clf = ActiveClassifier("pa-1").partial_fit(np.eye(2), [0, 1], classes=[0, 1])
    with pytest.raises(ValueError, match="differ"):
        clf.partial_fit(np.eye(2), [0, 1], classes=[1, 0])


def test_multiclass_partial_fit_predict_and_query():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((1500, 5))
    y = np.array(["red", "green", "blue"])[np.argmax(X @ rng.standard_normal((5, 3)), axis=1)]
    clf = ActiveClassifier("mpaa-1", params={"delta": 0.5})
    clf.partial_fit(X[:1000], y[:1000], classes=["red", "green", "blue"])
    assert (clf.predict(X[1000:]) == y[1000:]).mean() > 0.8
    labels, prob, ask = clf.query(X[1000:1010])
    assert set(labels) <= {"red", "green", "blue"} and np.all((prob >= 0) & (prob <= 1)) and ask.dtype == bool
    with pytest.raises(ValueError, match="not one of the model's classes"):
        clf.partial_fit(X[:2], ["red", "violet"])
