"""The pieces of a topic replay that need no broker: times and the dataset's width."""

from __future__ import annotations

import numpy as np
import pytest

from consumer.topic_replay import parse_time, used_width
from learners.inputs import Rows


def test_times_read_as_a_records_ts_is():
    assert parse_time("1750000000.5") == 1_750_000_000.5
    assert parse_time("2025-06-15T15:06:40Z") == 1_750_000_000.0
    assert parse_time("2025-06-15T17:06:40+02:00") == 1_750_000_000.0
    assert parse_time("2025-06-15T15:06:40") == 1_750_000_000.0  # no offset: UTC, never the machine's zone
    with pytest.raises(ValueError, match="--since takes epoch seconds or ISO 8601"):
        parse_time("last tuesday", "--since")


def test_the_width_is_one_past_the_largest_coordinate_used():
    rows = Rows.concatenate([np.array([0, 7]), np.array([41])], [np.ones(2), np.ones(1)], 2**20)
    assert used_width(rows) == 42
    assert used_width(Rows.concatenate([], [], 2**20)) == 1
