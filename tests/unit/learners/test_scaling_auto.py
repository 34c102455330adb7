"""``scale="auto"`` (the mode chosen from the stream's first batch) and the scale before a random
feature map."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from learners import make
from learners.datasets import Dataset
from learners.hashing import DEFAULT_DIMENSION, hash_features
from learners.inputs import as_rows
from learners.replay import replay, run
from learners.scaler import Scaler
from learners.scaling import AUTO_ROWS, OBSERVE_ALL, STANDARD_LIMIT, choose_mode


def _accuracy(trace) -> float:
    return float(np.mean(trace.y_true == trace.y_pred))


def _rng():
    return np.random.default_rng(7)


def _dense_raw(n=300, d=6):
    """Columns on scales 10⁻² … 10³, with offsets: a raw table."""
    rng = _rng()
    return rng.standard_normal((n, d)) * 10.0 ** np.linspace(-2, 3, d) + 10.0 ** np.linspace(0, 3, d)


def _one_hot(n=300, d=60):
    rng = _rng()
    X = np.zeros((n, d))
    X[np.arange(n), rng.integers(0, d, n)] = 1.0
    X[np.arange(n), rng.integers(0, d, n)] = 1.0
    return sp.csr_matrix(X)


def _counts(n=300, d=STANDARD_LIMIT + 100, spread=1.0):
    """Sparse term counts; ``spread`` multiplies every other column."""
    rng = _rng()
    X = sp.random(n, d, density=0.01, random_state=1, data_rvs=lambda k: rng.integers(1, 5, k).astype(float))
    return sp.csr_matrix(X @ sp.diags(np.where(np.arange(d) % 2 == 0, 1.0, spread)))


@pytest.mark.parametrize(("X", "mode"), [
    (_dense_raw(), "standard"),  # a raw table
    (_dense_raw() / 1e4, "standard"),  # dense, even where bounded: the twin of a standardised file
    (_one_hot(), "none"),  # sparse flags on one scale: left as they are
    (_counts(d=500), "none"),  # narrow term counts
    (_counts(d=500, spread=1e3), "standard"),  # sparse, but its columns 1,000 times apart
    (_counts(), "none"),  # wide term counts
    (_counts(spread=1e3), "rms"),  # wide, columns apart: never centred (it would densify the rows)
])
def test_auto_mode_follows_the_stream_shape(X, mode):
    assert choose_mode(as_rows(X)) == mode


def _named_table(n=100, d=20, seed=0):
    """Named numeric columns hashed into 2²⁰ coordinates, on scales 10⁻¹ … 10³ with offsets."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * 10.0 ** np.linspace(-1, 3, d) + 10.0 ** np.linspace(0, 3, d)
    rows = [hash_features({f"col{j}": float(v) for j, v in enumerate(x)}, DEFAULT_DIMENSION) for x in X]
    return as_rows(sp.csr_matrix(([v for _, vals in rows for v in vals], [i for idx, _ in rows for i in idx],
                                  np.arange(n + 1) * d), shape=(n, DEFAULT_DIMENSION)))


def test_a_named_table_is_standardised_where_its_features_are_present():
    assert choose_mode(_named_table()) == "sparse-standard"
    assert choose_mode(_named_table(n=1)) == "rms"  # one row cannot tell a table from a document


def test_auto_chooses_after_its_first_rows_and_keeps_its_choice():
    X = _dense_raw()
    learner = make("lr-ada-entropy", scale="auto", n_features=X.shape[1])
    learner.decide(X[:AUTO_ROWS - 1])
    assert learner.scale_mode is None  # one row short
    learner.decide(X[AUTO_ROWS - 1 : 100])
    assert learner.scale_mode == "standard" and learner.scaler.scale == "standard"
    # the rows decided before the choice count in the statistics
    np.testing.assert_allclose(learner.scaler.means(), X[:100].mean(axis=0), rtol=1e-10)
    learner.decide(X[100:] / 1e6)  # later rows of another shape change nothing
    assert learner.scale_mode == "standard"


def test_auto_chooses_at_the_first_label_with_the_rows_seen_by_then():
    X = _dense_raw()
    learner = make("lr-ada-entropy", scale="auto", n_features=X.shape[1])
    learner.decide(X[:5])
    learner.learn_many(X[:1], [1])
    assert learner.scale_mode == "standard"
    np.testing.assert_allclose(learner.scaler.means(), X[:5].mean(axis=0), rtol=1e-10)


def test_auto_choice_is_restored_from_a_checkpoint():
    X, y = _dense_raw(), np.where(_rng().random(300) < 0.5, -1, 1)
    learner = make("lr-ada-entropy-rff", scale="auto", n_features=X.shape[1])
    d = learner.decide(X[:100])
    learner.learn_many(X[:100], y[:100], predicted=learner.encode(d.label))
    restored = make("lr-ada-entropy-rff", scale="auto", n_features=X.shape[1])
    restored.load_state_dict(learner.state_dict())
    assert restored.scale_mode == "standard"
    np.testing.assert_array_equal(restored.score(X[100:]).p, learner.score(X[100:]).p)


def test_auto_on_one_scale_is_the_learner_without_scaling():
    X, y = _one_hot(), np.where(_rng().random(300) < 0.5, -1, 1)
    auto, plain = (make("lr-ada-entropy-rff", scale=s, n_features=X.shape[1]) for s in ("auto", "none"))
    for learner in (auto, plain):
        replay(learner, Dataset(as_rows(X), y))
    assert auto.scale_mode == "none" and auto.scaler is None
    np.testing.assert_array_equal(auto.score(X).p, plain.score(X).p)


# -- before the map ---------------------------------------------------------------------------------
def test_scale_before_the_map_makes_the_kernel_learner_blind_to_units():
    """Standardised before the map, a column's unit and offset (x → a x + b, a > 0) change nothing."""
    X = _dense_raw()
    y = np.where(X[:, 0] / X[:, 0].std() + X[:, 5] / X[:, 5].std() > X[:, 0].mean() / X[:, 0].std()
                 + X[:, 5].mean() / X[:, 5].std(), 1, -1)
    units = X * np.array([1e3, 1.0, 1e-2, 5.0, 1.0, 1e-3]) + np.array([0.0, 1e4, 0.0, -3.0, 0.0, 2.0])
    traces = [replay(make("lr-ada-entropy-rff", scale="standard", n_features=6, seed=1), Dataset(as_rows(A), y))
              for A in (X, units)]
    np.testing.assert_allclose(traces[0].p, traces[1].p, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(traces[0].queried, traces[1].queried)
    unscaled = replay(make("lr-ada-entropy-rff", scale="none", n_features=6, seed=1), Dataset(as_rows(units), y))
    assert _accuracy(traces[1]) > _accuracy(unscaled)


def test_scale_before_the_map_observes_the_decided_records_only():
    X = _dense_raw()
    learner = make("lr-ada-entropy-rff", scale="standard", n_features=6)
    learner.score(X)  # scoring observes nothing
    assert not learner.scaler.Z[0].any()
    learner.decide(X[:50])
    np.testing.assert_allclose(learner.scaler.means(), X[:50].mean(axis=0), rtol=1e-10)
    learner.learn_many(X[:50], np.ones(50, dtype=int))  # labels of decided records: not counted again
    assert (learner.scaler.Z[0] == 50).all()
    learner.learn_many(X[50:60], np.ones(10, dtype=int), scored=False)  # labelled, never decided: counted
    assert (learner.scaler.Z[0] == 60).all()


def test_replay_permutations_scale_in_their_own_order():
    """Each permutation observes its rows in the order it replays them: no round reads the statistics
    of a row the permutation has not reached (an outlier replayed last changes no earlier round)."""
    X = _dense_raw()
    y = np.where(X[:, 1] > X[:, 1].mean(), 1, -1)
    learner = make("lr-ada-entropy-rff", scale="standard", n_features=6)
    order = np.random.default_rng(6).permutation(len(y))
    got = run(learner, Dataset(as_rows(X), y), permutations=2, seed=5)
    want = replay(learner.clone(seed=learner.seed + 1), Dataset(as_rows(X), y), order=order)
    assert got.metrics[1].accuracy == _accuracy(want)
    outlier = X.copy()
    outlier[order[-1]] *= 1e9
    late = replay(learner.clone(seed=learner.seed + 1), Dataset(as_rows(outlier), y), order=order)
    np.testing.assert_array_equal(late.p[:-1], want.p[:-1])


def test_sparse_standard_centres_a_table_column_and_only_divides_a_mostly_zero_one():
    """Column 0 is present in every row (an amount), column 1 in one row of ten (a word's rate): the
    first is standardised, the second divided by its root mean square where present, so that its
    values stay above its absences (centred over its own values, half of them would read below 0)."""
    rng = _rng()
    n = 400
    X = np.zeros((n, 2))
    X[:, 0] = 1000.0 + 50.0 * rng.standard_normal(n)
    present = np.arange(n) % 10 == 0
    X[present, 1] = rng.uniform(0.1, 3.0, present.sum())
    scaler = Scaler("sparse-standard", "scored", n_features=2, normalize=False)
    out = scaler.transform(as_rows(sp.csr_matrix(X)), OBSERVE_ALL).to_csr().toarray()
    late = slice(n // 2, n)
    assert abs(out[late, 0].mean()) < 0.2 and 0.7 < out[late, 0].std() < 1.3
    assert (out[present, 1] > 0).all()
    values = X[present, 1]
    np.testing.assert_allclose(out[present, 1][-1], values[-1] / np.sqrt(np.mean(values**2)), rtol=1e-9)
