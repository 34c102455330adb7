"""Labelling cost, and the record times the budget's clock follows."""

import numpy as np

from consumer.budget import CostModel, record_times


def test_cost_of_a_label_prefers_the_label_then_its_class():
    costs = CostModel(1.0, {"1": 5.0})
    assert costs.of_many([1, -1, 1, -1], np.array([np.nan, np.nan, 0.5, 0.0])).tolist() == [5.0, 1.0, 0.5, 0.0]
    assert costs.of_many(["1", 2.5]).tolist() == [5.0, 1.0]  # a class's cost is found by its text
    assert CostModel(2.0, {}).of_many([1, -1]).tolist() == [2.0, 2.0]


def test_record_times_follow_record_time_only_where_it_agrees_with_processing_time():
    now = 1000.0
    ts = np.array([990.0, 1000.0, 1003.0, 4.1e9, 600.0, np.nan, 800.0])
    # within the tolerance before now: its own; ahead of now, far behind or missing: now
    assert record_times(ts, now, 300.0).tolist() == [990.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 800.0]
