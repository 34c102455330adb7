"""Random Fourier features: the kernel they approximate, their seed, and their place in a Learner."""

import numpy as np
import pytest

from learners import features, make
from learners.datasets import Dataset
from learners.features import RandomFourierFeatures
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


def test_rff_projection_recomputed_from_the_seed_equals_the_stored_one(monkeypatch):
    rows = as_rows(np.random.default_rng(1).standard_normal((4, 6)))
    stored = RandomFourierFeatures(n_components=16, gamma=0.3, seed=5, n_features=6)
    want = stored.transform(rows).data  # Ω made now, while it fits
    monkeypatch.setattr(features, "MAX_STATE_BYTES", 0)  # as when d × m does not fit
    recomputed = RandomFourierFeatures(n_components=16, gamma=0.3, seed=5, n_features=6)
    assert stored.omega_.shape == (6, 16) and recomputed.omega_.size == 0
    np.testing.assert_array_equal(recomputed.transform(rows).data, want)


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


def _one_record_at_a_time(learner, X, y) -> list[float]:
    """The query probability of each record, asked and learnt one at a time as the service does."""
    asked = []
    for i in range(len(y)):
        prediction, prob, query = learner.ask(X[i], record_id=i)
        asked.append(prob)
        if query:
            learner.learn(X[i], y[i], predicted=prediction)
    return asked


def test_learner_with_rff_one_record_at_a_time_equals_replay():
    X = np.random.default_rng(3).standard_normal((80, 2))
    y = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.0, 1, -1)
    a = make("paa-1", n_features=2, rff_components=40, normalize=True, delta=1.0)
    asked = _one_record_at_a_time(a, X, y)
    b = make("paa-1", n_features=2, rff_components=40, normalize=True, delta=1.0)
    trace = replay(b, Dataset(as_rows(X), y))
    np.testing.assert_allclose(asked, trace.probability, rtol=1e-12)
    np.testing.assert_allclose(a.rule.w_, b.rule.w_, rtol=1e-12)


def _direct(X, omega, beta):
    """√(2/m) cos(Ωᵀx + β), transcribed from Rahimi & Recht's Algorithm 1."""
    return np.sqrt(2.0 / beta.size) * np.cos(X @ omega + beta)


def test_rff_map_is_the_direct_transcription():
    X = np.random.default_rng(4).standard_normal((7, 5))
    rff = RandomFourierFeatures(n_components=12, gamma=0.8, seed=2, n_features=5)
    np.testing.assert_allclose(rff.transform(as_rows(X)).to_csr().toarray(), _direct(X, rff.omega_, rff.beta_),
                               rtol=1e-12, atol=1e-14)


def test_rff_lift_maps_the_row_on_the_sphere_and_approximates_its_kernel():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((25, 3)) * np.array([100.0, 1.0, 0.01])  # features on any scale
    c = 2.0
    U = np.hstack([X, np.full((25, 1), c)])
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    small = RandomFourierFeatures(n_components=9, gamma=1.5, seed=1, n_features=3, lift=c)
    assert small.omega_.shape == (4, 9)  # a row of Ω for the lifted coordinate
    np.testing.assert_allclose(small.transform(as_rows(X)).to_csr().toarray(), _direct(U, small.omega_, small.beta_),
                               rtol=1e-12, atol=1e-13)
    rff = RandomFourierFeatures(n_components=20_000, gamma=1.5, seed=1, n_features=3, lift=c)
    Z = rff.transform(as_rows(X)).to_csr().toarray()
    K = np.exp(-1.5 * ((U[:, None, :] - U[None, :, :]) ** 2).sum(axis=2))
    assert np.abs(Z @ Z.T - K).max() < 0.04


def test_rff_keep_puts_the_row_beside_its_map():
    X = np.random.default_rng(6).standard_normal((6, 4))
    X[2] = 0.0  # an empty row keeps no coordinate of its own and still has its map
    rows = as_rows(X)
    alone = RandomFourierFeatures(n_components=10, gamma=0.5, seed=3, n_features=4, lift=1.0)
    both = RandomFourierFeatures(n_components=10, gamma=0.5, seed=3, n_features=4, lift=1.0, keep=True)
    assert (alone.width, both.width) == (10, 14)
    mapped = both.transform(rows)
    np.testing.assert_array_equal(mapped.to_csr().toarray(),
                                  np.hstack([X, alone.transform(rows).to_csr().toarray()]))
    assert np.all(np.diff(mapped.indices[mapped.indptr[0]:mapped.indptr[1]]) > 0)  # sorted within a row
    idx, val = both.transform_row(rows.indices[:4], rows.data[:4])
    np.testing.assert_array_equal(idx, mapped.indices[: mapped.indptr[1]])
    np.testing.assert_array_equal(val, mapped.data[: mapped.indptr[1]])


def test_rff_lift_recomputed_from_the_seed_equals_the_stored_one(monkeypatch):
    rows = as_rows(np.random.default_rng(7).standard_normal((4, 6)))
    stored = RandomFourierFeatures(n_components=16, gamma=0.3, seed=5, n_features=6, lift=0.5, keep=True)
    want = stored.transform(rows).data  # Ω made now, while it fits
    monkeypatch.setattr(features, "MAX_STATE_BYTES", 0)
    recomputed = RandomFourierFeatures(n_components=16, gamma=0.3, seed=5, n_features=6, lift=0.5, keep=True)
    assert stored.omega_.shape == (7, 16) and recomputed.omega_.size == 0
    np.testing.assert_array_equal(recomputed.transform(rows).data, want)


def test_rff_rows_of_omega_are_made_for_the_features_seen_as_far_as_they_fit(monkeypatch):
    # hashed features: Ω of every coordinate would not fit, so rows are made as coordinates appear
    X = np.zeros((3, 9))
    X[0, [1, 4]], X[1, [4, 7, 8]], X[2, [0, 2, 5, 6]] = (1.0, -2.0), (0.5, 3.0, -1.0), (1.0, 2.0, 3.0, 4.0)
    rows = as_rows(X)
    whole = RandomFourierFeatures(n_components=16, gamma=0.3, seed=5, n_features=9, lift=1.0, keep=True)
    want = [whole.transform(as_rows(X[i : i + 1])).data for i in range(3)]
    monkeypatch.setattr(features, "MAX_STATE_BYTES", 4 * 8 * 16 * 5)  # room for five rows of Ω
    seen = RandomFourierFeatures(n_components=16, gamma=0.3, seed=5, n_features=9, lift=1.0, keep=True)
    got = [seen.transform(as_rows(X[i : i + 1])).data for i in range(3)]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    # the lift's row first, then rows 1, 4, then 7, 8 as they appeared; row 2's coordinates from the seed
    np.testing.assert_array_equal(seen.inputs_, [9, 1, 4, 7, 8])
    np.testing.assert_array_equal(seen.omega_, whole.omega_[[9, 1, 4, 7, 8]])
    np.testing.assert_array_equal(seen.transform(rows).data, whole.transform(rows).data)


def test_learner_with_rff_keep_learns_on_the_row_and_the_map():
    learner = make("lr-ada-entropy", n_features=3, rff_components=16, rff_lift=1.0, rff_keep=True)
    assert learner.rule.w_.shape == (3 + 16 + 1,)
    for wrong, message in (({"rff_keep": True}, "rff_keep=True"), ({"rff_lift": 1.0}, "rff_lift=1.0")):
        with pytest.raises(ValueError, match=message):
            make("lr-ada-entropy", n_features=3, **wrong)
    with pytest.raises(ValueError, match="rff_lift"):
        make("lr-ada-entropy", n_features=3, rff_components=4, rff_lift=-1.0)


@pytest.mark.parametrize("scale", ["none", "standard", "rms"])
def test_learner_with_rff_lift_and_keep_one_record_at_a_time_equals_replay_and_checkpoint(scale):
    X = np.random.default_rng(8).standard_normal((120, 2)) * np.array([50.0, 0.02])
    y = np.where(np.hypot(X[:, 0] / 50.0, X[:, 1] / 0.02) < 1.0, 1, -1)
    params = {"n_features": 2, "rff_components": 24, "rff_gamma": 4.0, "rff_lift": 1.0, "rff_keep": True,
              "scale": scale}
    a = make("lr-ada-entropy", **params)
    asked = _one_record_at_a_time(a, X, y)
    b = make("lr-ada-entropy", **params)
    trace = replay(b, Dataset(as_rows(X), y))
    np.testing.assert_allclose(asked, trace.probability, rtol=1e-12)
    np.testing.assert_allclose(a.rule.w_, b.rule.w_, rtol=1e-12)
    state = b.state_dict()
    copy = make("lr-ada-entropy", **params)
    copy.load_state_dict(state)
    np.testing.assert_array_equal(copy.decide(X, list(range(120))).probability,
                                  b.decide(X, list(range(120))).probability)
    for changed in ({"rff_lift": 2.0}, {"rff_keep": False}):
        with pytest.raises(ValueError, match=next(iter(changed))):
            make("lr-ada-entropy", **{**params, **changed}).load_state_dict(state, allow_param_change=True)
