"""Label budget per record-time window, and labelling cost."""

import numpy as np

from consumer.budget import CostModel, LabelBudget, record_times


def test_budget_allows_at_most_n_per_window_and_resets_on_the_next():
    budget = LabelBudget(2, window_s=60)
    assert [budget.allow(t) for t in (0, 1, 2, 59)] == [True, True, False, False]
    assert budget.allow(60) and budget.allow(61) and not budget.allow(62)
    assert budget.remaining() == 0


def test_no_budget_allows_everything():
    budget = LabelBudget(None, 60)
    assert all(budget.allow(t) for t in range(1000)) and budget.remaining() == float("inf")


def test_budget_state_round_trip():
    a = LabelBudget(3, 10)
    a.allow(5)
    b = LabelBudget(3, 10)
    b.load_state_dict(a.state_dict())
    assert b.remaining() == 2


def test_cost_of_a_label_prefers_the_label_then_its_class():
    costs = CostModel(1.0, {"1": 5.0})
    assert costs.of_many([1, -1, 1, -1], np.array([np.nan, np.nan, 0.5, 0.0])).tolist() == [5.0, 1.0, 0.5, 0.0]
    assert costs.of_many(["1", 2.5]).tolist() == [5.0, 1.0]  # a class's cost is found by its text
    assert CostModel(2.0, {}).of_many([1, -1]).tolist() == [2.0, 2.0]


def test_budget_allows_many_in_turn():
    budget = LabelBudget(2, window_s=60)
    assert budget.allow_many([0, 1, 2, 60]) == [True, True, False, True] and budget.remaining() == 1
    assert LabelBudget(None, 60).allow_many([0, 1, 2]) == [True, True, True]


def test_record_times_follow_record_time_only_where_it_agrees_with_processing_time():
    now = 1000.0
    ts = np.array([990.0, 1000.0, 1003.0, 4.1e9, 600.0, np.nan, 800.0])
    # within the tolerance before now: its own; ahead of now, far behind or missing: now
    assert record_times(ts, now, 300.0).tolist() == [990.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 800.0]
