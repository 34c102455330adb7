"""Generic checks every registry entry must pass.

``yield_checks(name)`` yields one callable per property; ``tests/unit/learners/test_checks.py``
runs them all for every name in :data:`learners.ALGORITHMS`. A new algorithm gets the whole suite
by being registered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import numpy as np
import scipy.sparse as sp

from learners.base import Learner
from learners.inputs import as_rows
from learners.registry import ALGORITHMS, LEARNER_DEFAULTS, make
from learners.scaling import choose_mode

__all__ = ["stream", "yield_checks"]

D = 12  # features of the check stream


def stream(multiclass: bool, n: int = 300, seed: int = 0, n_classes: int = 3) -> tuple[sp.csr_matrix, np.ndarray]:
    """A small sparse stream with learnable labels (±1, or 0..n_classes-1 for multiclass) and empty rows."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, D, density=0.3, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.data.size)
    X = X.tolil()
    X[5] = 0.0  # an all-zero row, as in w8a
    X = X.tocsr()
    X.eliminate_zeros()
    scores = X @ rng.standard_normal((D, n_classes if multiclass else 1))
    y = scores.argmax(axis=1) if multiclass else np.where(scores[:, 0] >= 0, 1, -1)
    return X, np.asarray(y).astype(np.int64)


def _fresh(name: str, **overrides) -> Learner:
    params = {"n_features": D, "seed": 11, **overrides}
    if ALGORITHMS[name].rule.multiclass:
        params.setdefault("classes", [0, 1, 2])
    if "scale" not in params and ALGORITHMS[name].defaults.get("scale") == "auto":
        # "auto" picks its mode from the first rows, which differ between the paths compared here
        # (the first label of one record at a time, a replay's whole file): the checks run the mode
        # it picks on their stream, or the one the check suite is run with
        wanted = LEARNER_DEFAULTS.get("scale", "none")
        params["scale"] = wanted if wanted != "none" else choose_mode(as_rows(stream(False)[0]))
    return make(name, **params)


def _budget(learner: Learner) -> dict:
    """Query parameters that make a learner ask often enough for its updates to show."""
    param = learner.query.budget_param
    if param is None:
        return {}
    if param == "rate":
        return {param: 0.5}
    knob = type(learner.query).knob
    return {param: 4.0 if knob is None or knob.increasing else 0.25}  # a decreasing knob asks more when small


def _trained(name: str, n: int = 200) -> tuple[Learner, sp.csr_matrix, np.ndarray]:
    probe = _fresh(name)
    learner = _fresh(name, **_budget(probe))
    X, y = stream(learner.multiclass)
    learner.learn_many(X[:n], y[:n])
    return learner, X, y


def check_sparse_equals_dense(name: str) -> None:
    learner, X, _ = _trained(name)
    a, b = learner.score(X), learner.score(X.toarray())
    np.testing.assert_allclose(a.p, b.p, rtol=1e-12, atol=1e-12)
    for term in ("gap", "v"):
        if getattr(a, term) is not None:
            np.testing.assert_allclose(getattr(a, term), getattr(b, term), rtol=1e-12, atol=1e-12)


def check_update_leaves_input_alone_and_touches_only_its_coordinates(name: str) -> None:
    learner, X, y = _trained(name, n=50)
    rows = learner._rows(X)
    for i in range(60, 90):
        idx, val = rows.row(i)
        idx_copy, val_copy = idx.copy(), val.copy()
        before = learner.rule.S_.copy()
        learner.rule.update(idx, val, learner.encode([y[i]])[0])
        np.testing.assert_array_equal(idx, idx_copy)
        np.testing.assert_array_equal(val, val_copy)
        if not learner.rule.has_sparse_update:  # full matrices, support vectors: O(d) by design
            continue
        changed = np.flatnonzero((before != learner.rule.S_).any(axis=0))
        assert set(changed.tolist()) <= set(idx.tolist()), (
            f"update of row {i} wrote coordinates {sorted(set(changed) - set(idx))} outside its non-zeros"
        )


def check_state_round_trip_gives_same_decisions(name: str) -> None:
    learner, X, _ = _trained(name)
    state = learner.state_dict()
    copy = _fresh(name, **_budget(learner))
    copy.load_state_dict(state)
    ids = [f"r{i}" for i in range(X.shape[0])]
    a, b = learner.decide(X, ids), copy.decide(X, ids)
    np.testing.assert_array_equal(a.query, b.query)
    np.testing.assert_array_equal(a.predicted, b.predicted)
    np.testing.assert_array_equal(a.probability, b.probability)
    for key, value in learner.state_dict().items():
        if key != "meta":
            np.testing.assert_array_equal(value, copy.state_dict()[key], err_msg=key)


def check_same_seed_same_decisions(name: str) -> None:
    X, y = stream(ALGORITHMS[name].rule.multiclass)
    runs = []
    for _ in range(2):
        learner = _fresh(name, **_budget(_fresh(name)))
        decisions = learner.decide(X[:100], [f"id-{i}" for i in range(100)])
        learner.learn_many(X[:100][decisions.query], y[:100][decisions.query])
        runs.append((decisions.query, learner.decide(X[100:]).query))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def check_probabilities_in_unit_interval(name: str) -> None:
    learner, X, _ = _trained(name)
    prob = learner.decide(X * 1e6).probability
    assert np.all((prob >= 0.0) & (prob <= 1.0)), prob[(prob < 0) | (prob > 1)]
    prob = learner.decide(X * 1e-6).probability
    assert np.all((prob >= 0.0) & (prob <= 1.0)), prob[(prob < 0) | (prob > 1)]


def check_zero_row_is_harmless(name: str) -> None:
    learner, _, _ = _trained(name)
    before = learner.state_dict()
    zero = np.zeros(D)
    prediction, prob, _ = learner.ask(zero, record_id="zero")
    assert prediction in learner.classes and 0.0 <= prob <= 1.0
    learner.learn(zero, learner.classes[0])
    after = learner.state_dict()
    for key in before:
        if key.startswith("rule.") and learner.bias == 0.0:
            np.testing.assert_array_equal(before[key], after[key], err_msg=f"zero row changed {key}")
        if key.startswith("rule."):
            assert np.isfinite(after[key]).all(), f"zero row made {key} non-finite"


def check_clone_is_fresh(name: str) -> None:
    learner, X, _ = _trained(name)
    twin = learner.clone()
    assert twin.get_params() == learner.get_params()
    assert twin.rounds_ == 0 and twin.labels_ == 0
    fresh = _fresh(name, **_budget(learner))
    np.testing.assert_array_equal(twin.decide(X).scores.p, fresh.decide(X).scores.p)


def _one_at_a_time_equals_batch(name: str, **overrides) -> None:
    from learners.datasets import Dataset
    from learners.inputs import as_rows
    from learners.replay import replay

    classes = overrides.get("classes")
    X, y = stream(ALGORITHMS[name].rule.multiclass, n_classes=len(classes) if classes else 3)
    if classes:
        y = np.asarray(classes)[y]
    a = _fresh(name, **_budget(_fresh(name)), **overrides)
    asked = []
    for i in range(X.shape[0]):
        prediction, prob, query = a.ask(X[i], record_id=i)
        asked.append((prediction, prob, query))
        if query:
            a.learn(X[i], y[i], predicted=prediction, probability=prob)
    b = _fresh(name, **_budget(_fresh(name)), **overrides)
    trace = replay(b, Dataset(as_rows(X), y))
    assert trace.queried.sum() > 0 and np.all((trace.probability >= 0) & (trace.probability <= 1))
    np.testing.assert_array_equal([q for _, _, q in asked], trace.queried)
    np.testing.assert_allclose([p for _, p, _ in asked], trace.probability, rtol=1e-12)
    np.testing.assert_array_equal([p for p, _, _ in asked], b.decode(trace.y_pred))
    for key, value in a.state_dict().items():
        if key.startswith(("rule.", "query.")):
            np.testing.assert_allclose(value, b.state_dict()[key], rtol=1e-12, atol=1e-12, err_msg=key)


def check_one_at_a_time_equals_batch(name: str) -> None:
    """ask/learn record by record == replay's compiled loop, decision for decision."""
    _one_at_a_time_equals_batch(name)


def check_two_class_multiclass_model_works(name: str) -> None:
    """A multiclass entry built with two classes behaves like any other (binary entries: nothing to do)."""
    if ALGORITHMS[name].rule.multiclass:
        _one_at_a_time_equals_batch(name, classes=["no", "yes"])


def check_bad_input_is_refused_without_touching_state(name: str) -> None:
    learner, _, _ = _trained(name)
    before = learner.state_dict()
    bad_inputs = [
        {"indices": [0, D + 3], "values": [1.0, 1.0]},  # beyond the dimension
        {"indices": [-1], "values": [1.0]},  # negative index
        np.full(D, np.nan),  # NaN
        np.r_[np.ones(D - 1), np.inf],  # inf
        np.ones(D + 1),  # wrong width
    ]
    for bad in bad_inputs:
        for call in (lambda x=bad: learner.ask(x), lambda x=bad: learner.learn(x, learner.classes[0])):
            try:
                call()
            except ValueError:
                pass
            else:
                raise AssertionError(f"{name} accepted {bad!r}")
    try:
        learner.learn(np.ones(D), "not-a-class")
    except ValueError:
        pass
    else:
        raise AssertionError(f"{name} accepted an unknown label")
    after = learner.state_dict()
    for key in before:
        if key != "meta":
            np.testing.assert_array_equal(before[key], after[key], err_msg=key)


CHECKS: tuple[Callable[[str], None], ...] = (
    check_sparse_equals_dense,
    check_update_leaves_input_alone_and_touches_only_its_coordinates,
    check_state_round_trip_gives_same_decisions,
    check_same_seed_same_decisions,
    check_probabilities_in_unit_interval,
    check_zero_row_is_harmless,
    check_clone_is_fresh,
    check_one_at_a_time_equals_batch,
    check_two_class_multiclass_model_works,
    check_bad_input_is_refused_without_touching_state,
)


def yield_checks(name: str) -> Iterator[Callable[[], None]]:
    """Every generic check, bound to the registry entry ``name``."""
    for check in CHECKS:
        bound = partial(check, name)
        bound.__name__ = check.__name__  # type: ignore[attr-defined]
        yield bound
