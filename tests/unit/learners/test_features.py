"""Random Fourier features: the kernel they approximate, their seed, and their place in a Learner."""

import numpy as np
import pytest

from learners import make
from learners.datasets import Dataset
from learners.features import RandomFourierFeatures, _project
from learners.inputs import as_rows
from learners.replay import replay


def test_rff_inner_products_approximate_the_rbf_kernel():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4)) * 0.5
    rff = RandomFourierFeatures(n_components=20_000, gamma=0.7, seed=3, n_features=4)
    Z = rff.transform(as_rows(X)).to_csr().toarray()
    K = np.exp(-0.7 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    assert np.abs(Z @ Z.T - K).max() < 0.04  # Monte Carlo error ~ 1/√m


def test_rff_map_is_a_function_of_the_seed_only():
    a = RandomFourierFeatures(n_components=50, gamma=1.0, seed=7, n_features=3)
    b = RandomFourierFeatures(n_components=50, gamma=1.0, seed=7, n_features=3)
    c = RandomFourierFeatures(n_components=50, gamma=1.0, seed=8, n_features=3)
    np.testing.assert_array_equal(a.omega_, b.omega_)
    np.testing.assert_array_equal(a.beta_, b.beta_)
    assert not np.allclose(a.omega_, c.omega_)
    wider = RandomFourierFeatures(n_components=80, gamma=1.0, seed=7, n_features=3)
    np.testing.assert_array_equal(wider.omega_[:, :50], a.omega_)  # entry (i, j) never depends on m
    assert abs(a.omega_.std() - np.sqrt(2.0)) < 0.35  # ω ~ N(0, 2γ)


def test_rff_projection_recomputed_from_the_seed_equals_the_stored_one():
    rff = RandomFourierFeatures(n_components=16, gamma=0.3, seed=5, n_features=6)
    rows = as_rows(np.random.default_rng(1).standard_normal((4, 6)))
    stored, recomputed = np.empty(64), np.empty(64)
    _project(rows.indptr, rows.indices, rows.data, rff.omega_, rff.beta_, rff._seed, rff._sd, stored)
    _project(rows.indptr, rows.indices, rows.data, np.empty((0, 16)), rff.beta_, rff._seed, rff._sd, recomputed)
    np.testing.assert_allclose(recomputed, stored, rtol=1e-12, atol=1e-14)


def test_learner_with_rff_learns_on_the_map_and_keeps_its_input_dimension():
    learner = make("pa-1", n_features=3, rff_components=64, rff_gamma=0.5)
    assert learner.rule.w_.shape == (65,)  # m features + intercept
    x = [0.2, -1.0, 0.5]
    learner.learn(x, 1)
    assert learner.ask(x)[0] == 1
    with pytest.raises(ValueError, match="3 features"):
        learner.ask([1.0, 2.0])


def test_learner_with_rff_checkpoint_restores_the_same_decisions_without_storing_the_map():
    X = np.random.default_rng(2).standard_normal((50, 3))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    learner = make("paa-1", n_features=3, rff_components=32, rff_gamma=1.0, rff_seed=4, delta=2.0)
    learner.learn_many(X, y)
    state = learner.state_dict()
    assert all(v.size <= 33 for k, v in state.items() if k.startswith("rule."))  # no d × m projection inside
    copy = make("paa-1", n_features=3, rff_components=32, rff_gamma=1.0, rff_seed=4, delta=2.0)
    copy.load_state_dict(state)
    np.testing.assert_array_equal(copy.decide(X, list(range(50))).probability,
                                  learner.decide(X, list(range(50))).probability)
    other = make("paa-1", n_features=3, rff_components=32, rff_gamma=1.0, rff_seed=5, delta=2.0)
    with pytest.raises(ValueError, match="rff_seed"):
        other.load_state_dict(state, allow_param_change=True)


def test_learner_with_rff_one_record_at_a_time_equals_replay():
    X = np.random.default_rng(3).standard_normal((80, 2))
    y = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.0, 1, -1)
    a = make("paa-1", n_features=2, rff_components=40, normalize=True, delta=1.0)
    asked = []
    for i in range(80):
        prediction, prob, query = a.ask(X[i], record_id=i)
        asked.append(prob)
        if query:
            a.learn(X[i], y[i], predicted=prediction)
    b = make("paa-1", n_features=2, rff_components=40, normalize=True, delta=1.0)
    trace = replay(b, Dataset(as_rows(X), y))
    np.testing.assert_allclose(asked, trace.probability, rtol=1e-12)
    np.testing.assert_allclose(a.rule.w_, b.rule.w_, rtol=1e-12)
