"""Online per-feature scaling: invariance, state, every rule family's rescaling, sparse cost."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from learners import make
from learners.checks import stream
from learners.datasets import Dataset
from learners.estimator import ActiveClassifier
from learners.hashing import hash_features
from learners.inputs import Rows, as_rows
from learners.kernels import ready
from learners.replay import replay
from learners.scaling import MOVE_FACTOR, WARMUP

D = 12


def _learner(name: str, **params):
    multiclass = name.startswith("m") and name not in ("md", "m-ada", "m-amd")
    extra = {"classes": [0, 1, 2]} if multiclass else {}
    return make(name, n_features=D, seed=3, **{**extra, **params}), multiclass


def _wide_stream(multiclass: bool, n: int = 400, seed: int = 1):
    """The check stream with its columns spread over 10⁻³ … 10⁶."""
    X, y = stream(multiclass, n=n, seed=seed)
    return sp.csr_matrix(X @ sp.diags(10.0 ** np.linspace(-3, 6, D))), y


# -- invariance ---------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", ["maxabs", "rms"])
@pytest.mark.parametrize("name", ["paa-1", "soal", "d-amd", "mpaa-1", "lasec-ss-diag", "sop-ss"])
def test_scaled_learner_column_times_1000_predictions_unchanged(name, scale):
    learner, multiclass = _learner(name, scale=scale)
    X, y = _wide_stream(multiclass)
    a = replay(learner.clone(), Dataset(as_rows(X), y))
    Xk = X.tolil()
    Xk[:, 4] = Xk[:, 4] * 1e3
    b = replay(learner.clone(), Dataset(as_rows(sp.csr_matrix(Xk)), y))
    np.testing.assert_array_equal(a.y_pred, b.y_pred)
    np.testing.assert_array_equal(a.queried, b.queried)
    np.testing.assert_allclose(a.p, b.p, rtol=1e-9, atol=1e-12)


def test_unscaled_learner_column_times_1000_predictions_change():
    learner, _ = _learner("paa-1")
    X, y = _wide_stream(False)
    a = replay(learner.clone(), Dataset(as_rows(X), y))
    b = replay(learner.clone(), Dataset(as_rows(sp.csr_matrix(X @ sp.diags(np.r_[np.ones(4), 1e3, np.ones(7)]))), y))
    assert np.any(a.y_pred != b.y_pred)


def test_scaled_replay_equals_decide_then_learn_in_batches():
    learner, _ = _learner("soal", scale="rms", delta=4.0)
    X, y = _wide_stream(False)
    trace = replay(learner.clone(), Dataset(as_rows(X), y))
    online = learner.clone()
    predicted = []
    for lo in range(0, X.shape[0], 1):  # one record per batch: replay learns before the next round
        d = online.decide(X[lo:lo + 1], ids=[lo])
        predicted.append(d.predicted[0])
        if d.query[0]:
            online.learn_many(X[lo:lo + 1], y[lo:lo + 1], predicted=d.predicted)
    np.testing.assert_array_equal(trace.y_pred, predicted)


# -- state ---------------------------------------------------------------------------------------
def test_scaled_state_dict_round_trip_gives_same_scale_and_decisions():
    learner, _ = _learner("paa-1", scale="rms", scale_from="scored")
    X, y = _wide_stream(False)
    d = learner.decide(X[:200])
    learner.learn_many(X[:200][d.query], y[:200][d.query])
    state = learner.state_dict()
    assert state["scale.Z"].shape == (5, D)
    copy = learner.clone()
    copy.load_state_dict(state)
    np.testing.assert_array_equal(copy.scaler.scales(), learner.scaler.scales())
    a, b = learner.decide(X[200:], ids=range(200)), copy.decide(X[200:], ids=range(200))
    np.testing.assert_array_equal(a.probability, b.probability)
    np.testing.assert_array_equal(a.predicted, b.predicted)


@pytest.mark.parametrize(("saved", "loading"), [("rms", "none"), ("none", "maxabs"), ("maxabs", "rms")])
def test_load_state_dict_of_another_scale_is_refused_naming_both(saved, loading):
    learner, _ = _learner("paa-1", scale=saved)
    learner.decide(np.ones((1, D)))
    other, _ = _learner("paa-1", scale=loading)
    with pytest.raises(ValueError, match=f"scale: saved '{saved}' vs this '{loading}'"):
        other.load_state_dict(learner.state_dict())


def test_load_state_dict_from_before_scaling_loads_as_scale_none():
    learner, _ = _learner("paa-1")
    learner.decide(np.ones((1, D)))
    state = learner.state_dict()
    meta = json.loads(str(state["meta"]))
    del meta["params"]["scale"], meta["params"]["scale_from"]
    state["meta"] = np.array(json.dumps(meta))
    copy, _ = _learner("paa-1")
    copy.load_state_dict(state)
    np.testing.assert_array_equal(copy.rule.w_, learner.rule.w_)


@pytest.mark.parametrize("params", [{"rff_components": 16}, {}])
def test_scaling_with_random_features_or_support_vectors_is_refused(params):
    name = "pa-1" if params else "kpa-1"
    with pytest.raises(ValueError, match="cannot keep the scores"):
        make(name, scale="rms", **params)


# -- what the statistics read ----------------------------------------------------------------------
def test_scale_from_labelled_decide_leaves_scale_alone_and_learn_updates_it():
    learner, _ = _learner("paa-1", scale="rms", scale_from="labelled")
    X, y = _wide_stream(False)
    learner.decide(X[:50])
    assert not learner.scaler.Z.any()
    learner.learn_many(X[:50], y[:50])
    assert learner.scaler.Z[0].sum() == X[:50].nnz


def test_scale_from_scored_learn_reads_only_unseen_coordinates():
    learner, _ = _learner("paa-1", scale="rms", scale_from="scored")
    X, y = _wide_stream(False)
    learner.decide(X[:50])
    before = learner.scaler.Z[:2].copy()
    learner.learn_many(X[:50], y[:50])  # every coordinate of these rows was seen when they were scored
    np.testing.assert_array_equal(learner.scaler.Z[:2], before)


@pytest.mark.parametrize("scale", ["maxabs", "rms"])
def test_scale_statistics_match_the_column_statistics(scale):
    learner, _ = _learner("paa-1", scale=scale, scale_from="scored")
    X, _ = _wide_stream(False)
    learner.decide(X)
    A = abs(X).toarray()
    nnz = (A != 0).sum(axis=0)
    want = A.max(axis=0) if scale == "maxabs" else np.sqrt((A**2).sum(axis=0) / np.maximum(nnz, 1))
    np.testing.assert_allclose(learner.scaler.scales(), want, rtol=1e-12)


def test_scaled_row_leaves_the_intercept_and_normalises_the_rest():
    learner, _ = _learner("paa-1", scale="maxabs", scale_from="scored", bias=2.0, normalize=True)
    x = np.array([3.0, -4e6] + [0.0] * (D - 2))
    learner.decide(x[None, :])
    idx, val = learner._row(x)
    scaled = learner.scaler.scale_row(idx, val, 0, learner.rule)
    np.testing.assert_allclose(scaled, [1 / np.sqrt(2), -1 / np.sqrt(2), 2.0])


def test_named_features_are_scaled_at_their_hashed_coordinate():
    learner = make("paa-1", scale="maxabs", scale_from="scored", n_features=2**10)
    records = [{"amount": 250.0, "country=FR": 1.0}, {"amount": -1000.0}]
    rows = [hash_features(r, 2**10) for r in records]
    learner.decide(Rows.stack(rows, 2**10))
    amount = hash_features({"amount": 1.0}, 2**10)[0][0]
    scales = learner.scaler.scales()
    assert scales[amount] == 1000.0
    assert sorted(scales[scales > 0].tolist()) == [1.0, 1000.0]


def test_moved_counts_each_tenfold_move_once_per_window():
    learner, _ = _learner("paa-1", scale="maxabs", scale_from="scored")
    rows = np.ones((WARMUP + 1, D))
    learner.decide(rows)
    assert learner.scaler.next_window() == 0
    jump = np.ones((3, D))
    jump[0, :3] = 0.5 * MOVE_FACTOR  # not yet a move
    jump[1, :3] = 2 * MOVE_FACTOR  # three features cross 10×
    jump[2, :3] = 4 * MOVE_FACTOR  # the same three again: counted once
    learner.decide(jump)
    assert learner.scaler.moved == 3
    assert learner.scaler.next_window() == 3
    assert learner.scaler.moved == 0


# -- sparse rows cost their non-zeros -------------------------------------------------------------
@pytest.mark.parametrize("name", ["paa-1", "soal-diag", "d-ada", "mpaa-1", "lasec-ss-diag", "sop-ss-diag"])
def test_scaled_sparse_row_touches_only_its_coordinates(name):
    learner = make(name, scale="rms", n_features=2**16, delta=1e6,
                   **({"classes": [0, 1, 2]} if name == "mpaa-1" else {}))
    rng = np.random.default_rng(0)
    for _ in range(40):  # a trained model whose scales keep moving
        cols = rng.choice(50, 5, replace=False)
        x = sp.csr_matrix((rng.lognormal(size=5) * 100, (np.zeros(5), cols)), shape=(1, 2**16))
        d = learner.decide(x)
        learner.learn_many(x, [learner.classes[rng.integers(len(learner.classes))]], predicted=d.predicted)
    cols = np.array([3, 7, 11])
    x = sp.csr_matrix((np.array([1e4, 2e4, 3e4]), (np.zeros(3), cols)), shape=(1, 2**16))
    S, Z = learner.rule.S_.copy(), learner.scaler.Z.copy()
    d = learner.decide(x)
    learner.learn_many(x, [learner.classes[0]], predicted=d.predicted)
    rule_cols = np.flatnonzero((S != learner.rule.S_).any(axis=0))
    scale_cols = np.flatnonzero((Z != learner.scaler.Z).any(axis=0))
    assert set(scale_cols.tolist()) == set(cols.tolist())
    assert set(rule_cols.tolist()) <= set(cols.tolist()) | {2**16}  # the row's coordinates and the intercept


# -- every rule family against a dense transcription ---------------------------------------------
def _trained(name: str):
    learner, multiclass = _learner(name, scale="rms")
    X, y = _wide_stream(multiclass, n=300, seed=5)
    learner.learn_many(X, y)  # labelled rows mark the state as learnt; the scale moves past warm-up
    return learner, X


def _dense_rescale(name: str, rule, S, a, P, d):
    """The transformation of each family, written densely with D = diag(d)."""
    S = S.copy()
    if name in ("paa-1", "mpaa-1", "shifting-perceptron", "pe"):
        return S * d  # w → Dw, every class row
    if name in ("soal-diag", "arow-diag"):
        return np.vstack([S[0] * d, S[1] * d**2])  # μ → Dμ, diag Σ → D²Σ
    if name == "sop-diag":
        return np.vstack([S[0] / d, S[1] / d**2])  # v → D⁻¹v, diag A → D⁻²A
    if name in ("d-amd", "md-amd"):
        k = S.shape[0] // 2
        return np.vstack([S[:k] * d, S[k:] / d])  # w → Dw, √G → D⁻¹√G
    if name in ("d-ada", "md-ada"):
        k = S.shape[0] // 2
        g, s = S[:k], S[k:]
        w = -P[1] * g / (P[0] + s)
        s_new = s / d
        return np.vstack([-(w * d) * (P[0] + s_new) / P[1], s_new])  # w → Dw kept through Σg
    if name in ("soal", "cw", "bbq", "sop"):
        M = S[1:]
        return np.vstack([S[0] * d, np.diag(d) @ M @ np.diag(d)])  # μ → Dμ, Σ → DΣD
    if name == "lasec":
        M = S[1:]
        return np.vstack([S[0] * d, np.diag(d) @ M @ np.diag(d) + P[1] * (np.diag(d**2) - np.eye(d.size))])
    if name == "lasec-diag":
        mu, sigma, last = S
        drifted = sigma + (a[0] + 1 - last) * P[1]
        moved = d != 1.0
        return np.vstack([mu * d, np.where(moved, drifted * d**2 - P[1], sigma), np.where(moved, a[0], last)])
    raise AssertionError(name)


FAMILIES = ["paa-1", "pe", "mpaa-1", "shifting-perceptron", "soal-diag", "arow-diag", "sop-diag", "d-amd", "md-amd",
            "d-ada", "md-ada", "soal", "cw", "bbq", "sop", "lasec", "lasec-diag"]


@pytest.mark.parametrize("name", FAMILIES)
def test_rescale_matches_dense_transcription_and_keeps_scores(name):
    learner, X = _trained(name)
    rule = learner.rule
    rows = learner._rows(X[:40])
    before = learner.scaler.score(rows, rule)
    idx = np.array([1, 4, 9], dtype=np.int32)
    ratio = np.array([3.0, 0.25, 1e3])
    d = np.ones(rule.S_.shape[1])
    d[idx] = ratio
    want = _dense_rescale(name, rule, rule.S_, rule.a_, rule._P, d)
    ready(type(rule).rescale_kernel)(rule.S_, rule.a_, rule._P, learner.scaler.R, idx, ratio)
    np.testing.assert_allclose(rule.S_, want, rtol=1e-12, atol=1e-300)
    # the same raw rows, now divided by the new scales s' = D s, score as before
    learner.scaler.Z[1, idx] *= ratio**2  # rms: Σx² moves by r² for s = √(Σx²/n) to move by r
    after = learner.scaler.score(rows, rule)
    np.testing.assert_allclose(after.p, before.p, rtol=1e-9, atol=1e-12)
    if before.v is not None and name not in ("d-amd", "md-amd", "d-ada", "md-ada", "pe", "shifting-perceptron"):
        np.testing.assert_allclose(after.v, before.v, rtol=1e-9, atol=1e-12)  # xᵀΣx, xᵀA⁻¹x move with Σ


def test_estimator_partial_fit_learns_the_scale_from_its_rows():
    X, y = _wide_stream(False)
    est = ActiveClassifier("paa-1", params={"scale": "rms"}).partial_fit(X, y)
    A = abs(X).toarray()
    want = np.sqrt((A**2).sum(axis=0) / np.maximum((A != 0).sum(axis=0), 1))
    np.testing.assert_allclose(est.learner_.scaler.scales(), want, rtol=1e-12)
    twin = make("paa-1", scale="rms", n_features=D)
    twin.learn_many(X, y, scored=False)
    np.testing.assert_array_equal(est.predict(X), twin.predict(X))
