"""Replay: delay semantics against a step-by-step simulation, permutations, the budget search."""

import importlib

import numpy as np
import pytest

from learners import make
from learners.budget import BudgetController
from learners.datasets import Dataset
from learners.inputs import as_rows
from learners.replay import find_budget, replay, run
from learners.synthetic import synthetic_sparse


def simulate(learner, X, y, delay):
    """Round t predicts row t; queried labels are applied once round t + delay is predicted."""
    pending, preds, queried = [], [], []
    for t in range(X.shape[0]):
        prediction, _, query = learner.ask(X[t], record_id=t)
        preds.append(prediction)
        queried.append(query)
        if query:
            pending.append(t)
        while pending and pending[0] <= t - delay:
            s = pending.pop(0)
            learner.learn(X[s], y[s], predicted=preds[s])
    for s in pending:
        learner.learn(X[s], y[s], predicted=preds[s])
    return np.array(preds), np.array(queried)


@pytest.mark.parametrize("name", ["pe", "paa-1", "sel-ada", "rpa-2"])
@pytest.mark.parametrize("delay", [0, 1, 7])
def test_replay_with_delay_matches_step_by_step_simulation(name, delay):
    data = synthetic_sparse(n=400, d=64, seed=2)
    X = data.rows.to_csr()
    a = make(name, n_features=64, seed=5)
    preds, queried = simulate(a, X, data.labels, delay)
    b = make(name, n_features=64, seed=5)
    trace = replay(b, data, delay=delay)
    np.testing.assert_array_equal(trace.queried, queried)
    np.testing.assert_array_equal(b.decode(trace.y_pred), preds)
    np.testing.assert_allclose(b.rule.w_, a.rule.w_, rtol=1e-12, atol=1e-12)


def test_delay_changes_predictions():
    data = synthetic_sparse(n=2000, d=256, seed=1)
    m0 = replay(make("pa-1", n_features=256), data).y_pred
    m50 = replay(make("pa-1", n_features=256), data, delay=50).y_pred
    assert (m0 != m50).any()


def test_run_is_deterministic_and_permutations_differ():
    data = synthetic_sparse(n=3000, d=512, seed=0)
    a = run(make("paa-1", delta=0.2), data, permutations=3, seed=9)
    b = run(make("paa-1", delta=0.2), data, permutations=3, seed=9)
    assert [m.f1 for m in a.metrics] == [m.f1 for m in b.metrics]
    assert len({m.mistakes for m in a.metrics}) > 1


@pytest.mark.parametrize("target", [0.1, 0.25])
def test_find_budget_lands_the_query_ratio(target):
    data = synthetic_sparse(n=4000, d=1024, seed=3)
    learner, result = find_budget(make("paa-2"), data, target, permutations=3, tol=0.005)
    assert abs(result.mean("query_ratio") - target) <= 0.005
    assert learner.query.delta == result.params["delta"]


def test_find_budget_raises_a_decreasing_knob_to_ask_less():
    data = synthetic_sparse(n=4000, d=1024, seed=3)
    landed = {}
    for target in (0.2, 0.4):  # the entropy query's discount: a larger one asks less
        learner, result = find_budget(make("paa-1-entropy", n_features=1024), data, target, permutations=2)
        assert abs(result.mean("query_ratio") - target) <= 0.005
        landed[target] = learner.query.discount
    assert landed[0.2] > landed[0.4]


def test_find_budget_sets_a_fixed_rate_directly():
    data = synthetic_sparse(n=1000, d=64, seed=3)
    learner, result = find_budget(make("rpa-1"), data, 0.2, permutations=2)
    assert learner.query.rate == 0.2 and abs(result.mean("query_ratio") - 0.2) < 0.05


def test_find_budget_refuses_a_supervised_learner():
    with pytest.raises(ValueError, match="every label"):
        find_budget(make("pa-1"), synthetic_sparse(n=100, d=16), 0.1)


def test_replay_of_multilabel_binary_dataset_uses_explicit_classes():
    X = np.array([[1.0, 0.0], [0.0, 1.0]] * 50)
    data = Dataset(as_rows(X), np.array([2, 1] * 50))
    learner = make("pa-1", classes=(2, 1))
    trace = replay(learner, data)
    assert set(learner.decode(trace.y_true).tolist()) == {1, 2}
    assert trace.metrics(learner).accuracy > 0.9


def test_run_and_find_budget_weight_the_binary_metrics_with_costs():
    data = synthetic_sparse(n=2000, d=256, seed=4)
    costs = {"eta_p": 0.9, "eta_n": 0.1, "c_p": 0.8, "c_n": 0.2}
    learner = make("cspaa-sum", n_features=256, ratio=3.0)
    for result in (run(learner, data, costs=costs), find_budget(learner, data, 0.3, costs=costs)[1]):
        m = result.metrics[0]
        assert m.weighted_sum == pytest.approx(0.9 * m.sensitivity + 0.1 * m.specificity)
        assert m.cost == pytest.approx(0.8 * m.fn + 0.2 * m.fp)
        assert 0.5 < m.auc_roc <= 1.0


def test_warmup_leaves_the_first_rounds_out_of_the_metrics_but_not_out_of_learning():
    data = synthetic_sparse(n=3000, d=512, seed=5)
    learner = make("paa-1", n_features=512, delta=0.3)
    trace = replay(learner.clone(), data, order=np.random.default_rng(0).permutation(3000), delay=10)
    warm = run(learner, data, delay=10, warmup=1000).metrics[0]
    assert warm.queries == int(trace.queried[1000:].sum())
    assert warm.query_ratio == pytest.approx(trace.queried[1000:].mean())
    assert warm.query_ratio < trace.queried[:1000].mean()  # a model that has learnt asks less
    _, result = find_budget(learner, data, 0.1, delay=10, warmup=1000)
    assert abs(result.mean("query_ratio") - 0.1) <= 0.005
    with pytest.raises(ValueError, match="warmup"):
        trace.after(3000)


@pytest.mark.parametrize(("name", "budget", "delay"), [("paa-1", False, 0), ("lr-ada-entropy", True, 13),
                                                       ("lr-ada-entropy-rff", True, 0),
                                                       ("mlr-factored-entropy", False, 5)])
def test_a_pass_that_reports_its_progress_gives_the_same_results(monkeypatch, name, budget, delay):
    module = importlib.import_module("learners.replay")  # the package's name "replay" is the function

    data = synthetic_sparse(n=700, d=30, nnz=5, seed=4)
    if name.startswith("mlr"):  # three classes: the label's sign and the first coordinate's
        first = np.asarray(data.rows.to_csr()[:, 0].todense()).ravel() > 0
        data = Dataset(data.rows, (data.labels > 0).astype(np.int64) + first, "three classes")
    learner = make(name, n_features=data.rows.n_features, classes=list(np.unique(data.labels)))
    if budget:
        learner.budget = BudgetController(target=0.1)
    monkeypatch.setattr(module, "PROGRESS_ROUNDS", 64)  # eleven driver calls a pass
    seen = []
    quiet = run(learner, data, permutations=2, delay=delay)
    shown = run(learner, data, permutations=2, delay=delay, progress=lambda *counts: seen.append(counts))
    assert quiet.metrics == shown.metrics
    assert [s[:2] for s in seen] == [(k, r) for k in range(2) for r in [*range(64, 700, 64), 700]]
    for k, metrics in enumerate(shown.metrics):
        _, _, mistakes, queries = seen[11 * (k + 1) - 1]
        assert (mistakes, queries) == (metrics.mistakes, metrics.queries)
