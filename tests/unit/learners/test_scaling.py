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


def test_scaling_with_support_vectors_is_refused():
    with pytest.raises(ValueError, match="cannot keep the scores"):
        make("kpa-1", scale="rms")


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


# -- "standard": online standardisation, dense x̃ ------------------------------------------------
def _offset_stream(n: int = 400, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """A dense stream whose columns have their own offset and spread (10⁻² … 10⁴), some zeros."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, D))
    z[rng.random((n, D)) < 0.2] = 0.0
    y = np.where(z @ rng.standard_normal(D) + 0.2 > 0, 1, -1)
    X = z * 10.0 ** np.linspace(-2, 4, D) + 10.0 ** np.linspace(4, -2, D) * (np.arange(D) % 3)
    return X, y


def _standardised_by_hand(X: np.ndarray, bias: float = 1.0) -> np.ndarray:
    """Row t through μ, σ of rows 0..t (zeros counted), σ = 0 read as 1, then the intercept."""
    out = np.empty((X.shape[0], X.shape[1] + 1))
    for t in range(X.shape[0]):
        mu, sigma = X[: t + 1].mean(axis=0), X[: t + 1].std(axis=0)
        out[t, :-1] = (X[t] - mu) / np.where(sigma > 0, sigma, 1.0)
    out[:, -1] = bias
    return out


def test_standard_learner_matches_a_numpy_transcription():
    X, y = _offset_stream()
    learner = make("paa-1", n_features=D, seed=3, scale="standard", delta=2.0)
    trace = replay(learner, Dataset(as_rows(X), y))
    # the transcription: x̃ by hand, fed to the same rule unscaled, with the intercept in x̃
    plain = make("paa-1", n_features=D + 1, seed=3, bias=0.0, delta=2.0)
    p = []
    for t, row in enumerate(_standardised_by_hand(X)):
        d = plain.decide(row[None, :], ids=[t])
        p.append(d.scores.p[0])
        if d.query[0]:
            plain.learn_many(row[None, :], y[t:t + 1], predicted=d.predicted)
    assert 0 < trace.queried.sum() < X.shape[0]
    np.testing.assert_allclose(trace.p, p, rtol=1e-8, atol=1e-9)  # margins of O(1): float error
    np.testing.assert_allclose(learner.rule.S_, plain.rule.S_, rtol=1e-8, atol=1e-9)


def test_standard_statistics_are_the_column_mean_and_deviation_with_zeros():
    learner = make("paa-1", n_features=D, scale="standard")
    X, y = _wide_stream(False)  # sparse: the zeros count
    d = learner.decide(X)
    A = X.toarray()
    np.testing.assert_allclose(learner.scaler.means(), A.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(learner.scaler.scales(), A.std(axis=0), rtol=1e-9)
    assert learner.scaler.state_dict()["Z"].shape == (7, D)
    before = learner.scaler.Z.copy()
    learner.learn_many(X[d.query], y[d.query], predicted=d.predicted[d.query])  # scored already: not recounted
    np.testing.assert_array_equal(learner.scaler.Z[[0, 1, 5, 6]], before[[0, 1, 5, 6]])
    learner.learn_many(X[:10], y[:10], scored=False)  # labelled rows never scored: counted
    assert (learner.scaler.Z[0] == X.shape[0] + 10).all()


def test_standard_learns_from_scored_rows_even_with_scale_from_labelled():
    learner = make("paa-1", n_features=D, scale="standard", scale_from="labelled")
    X, _ = _wide_stream(False)
    learner.decide(X[:50])
    assert (learner.scaler.Z[0] == 50).all()


@pytest.mark.parametrize("name", ["paa-1", "soal", "mpaa-1"])
def test_standard_column_times_1000_plus_offset_predictions_unchanged(name):
    learner, multiclass = _learner(name, scale="standard")
    X, _ = _offset_stream()
    _, y = stream(multiclass, n=X.shape[0], seed=4)
    a = replay(learner.clone(), Dataset(as_rows(X), y))
    Xk = X.copy()
    Xk[:, 4] = Xk[:, 4] * 1e3 + 1e4  # another unit and origin: centring removes both
    b = replay(learner.clone(), Dataset(as_rows(Xk), y))
    warm = slice(WARMUP, None)
    np.testing.assert_array_equal(a.y_pred[warm], b.y_pred[warm])
    np.testing.assert_array_equal(a.queried[warm], b.queried[warm])
    np.testing.assert_allclose(a.p, b.p, rtol=1e-6, atol=1e-9)


def test_rms_column_plus_offset_scores_change():
    learner, _ = _learner("paa-1", scale="rms")
    X, y = _offset_stream()
    a = replay(learner.clone(), Dataset(as_rows(X), y))
    Xk = X.copy()
    Xk[:, 4] = Xk[:, 4] * 1e3 + 1e4  # a unit change rms absorbs, an origin it does not
    b = replay(learner.clone(), Dataset(as_rows(Xk), y))
    assert not np.allclose(a.p, b.p, rtol=1e-3)


def test_standard_replay_equals_decide_then_learn_and_ask_then_learn():
    learner, _ = _learner("soal", scale="standard", delta=4.0)
    X, y = _offset_stream()
    trace = replay(learner.clone(), Dataset(as_rows(X), y))
    online, river = learner.clone(), learner.clone()
    predicted, asked = [], []
    for t in range(X.shape[0]):  # one record per batch: replay learns before the next round
        d = online.decide(X[t:t + 1], ids=[t])
        predicted.append(d.predicted[0])
        if d.query[0]:
            online.learn_many(X[t:t + 1], y[t:t + 1], predicted=d.predicted)
        label, _, query = river.ask(X[t], record_id=t)
        asked.append(query)
        if query:
            river.learn(X[t], y[t], predicted=label)
    np.testing.assert_array_equal(trace.y_pred, predicted)
    np.testing.assert_array_equal(trace.queried, asked)
    np.testing.assert_allclose(online.rule.S_, river.rule.S_, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(online.scaler.Z, river.scaler.Z)


def test_standard_state_dict_round_trip_gives_same_statistics_and_decisions():
    learner, _ = _learner("paa-1", scale="standard")
    X, y = _offset_stream()
    d = learner.decide(X[:200])
    learner.learn_many(X[:200][d.query], y[:200][d.query])
    copy = learner.clone()
    copy.load_state_dict(learner.state_dict())
    np.testing.assert_array_equal(copy.scaler.Z, learner.scaler.Z)
    a, b = learner.decide(X[200:], ids=range(200)), copy.decide(X[200:], ids=range(200))
    np.testing.assert_array_equal(a.probability, b.probability)
    np.testing.assert_array_equal(a.predicted, b.predicted)
    other, _ = _learner("paa-1", scale="rms")
    with pytest.raises(ValueError, match="scale: saved 'standard' vs this 'rms'"):
        other.load_state_dict(learner.state_dict())


def test_standard_with_normalize_gives_a_dense_unit_row_and_the_intercept():
    learner, _ = _learner("paa-1", scale="standard", bias=2.0, normalize=True)
    X, _ = _offset_stream(n=50)
    learner.decide(X)
    x = np.zeros(D)
    x[1] = 5.0
    idx, scaled = learner.scaler.scaled_row(*learner._row(x), 0, learner.rule)
    np.testing.assert_array_equal(idx, np.arange(D + 1))
    want = (x - learner.scaler.means()) / learner.scaler.scales()
    np.testing.assert_allclose(scaled[:D], want / np.linalg.norm(want), rtol=1e-12)
    assert scaled[D] == 2.0


def test_standard_budget_controller_holds_its_rate():
    from learners.budget import BudgetController

    rng = np.random.default_rng(7)
    z = rng.standard_normal((20000, D))
    y = np.where(z @ rng.standard_normal(D) > 0, 1, -1)
    X = z * 10.0 ** rng.uniform(-3, 3, D) + 10.0 ** rng.uniform(-3, 4, D)
    data = Dataset(as_rows(X), y)
    learner = make("paa-1", n_features=D, scale="standard")
    learner.budget = BudgetController(target=0.05)
    twin = learner.clone()
    trace = replay(learner, data, delay=100)
    assert abs(trace.queried.mean() - 0.05) <= 0.005
    assert trace.metrics(learner).f1 > 0.85
    blind = replay(twin.clone(), data, delay=10**6)  # the fused replay loop = the decide loop without labels
    d = twin.decide(data.rows)
    np.testing.assert_array_equal(blind.queried, d.query)
    np.testing.assert_allclose(blind.p, d.scores.p)


def test_standard_above_the_width_limit_is_refused_naming_the_setting():
    from learners.scaling import STANDARD_LIMIT

    with pytest.raises(ValueError, match=r"scale='standard'.*n_features=4097.*scale='rms'"):
        make("paa-1", scale="standard", n_features=STANDARD_LIMIT + 1)
    learner = make("paa-1", scale="standard")  # the width comes with the first record: hashed names
    with pytest.raises(ValueError, match=r"scale='standard'.*scale='rms'"):
        learner.decide(Rows.stack([hash_features({"amount": 2.0}, 2**20)], 2**20))
    assert not learner.rule.is_allocated
    make("paa-1", scale="standard", n_features=STANDARD_LIMIT)


def test_standard_moved_counts_a_tenfold_spread_change_once_per_window():
    learner, _ = _learner("paa-1", scale="standard")
    rng = np.random.default_rng(0)
    learner.decide(rng.standard_normal((4 * WARMUP, D)))
    learner.scaler.next_window()
    wide = rng.standard_normal((400, D))
    wide[:, :3] *= 100.0  # three features' σ grows past 10×
    learner.decide(wide)
    assert learner.scaler.moved == 3
