from dataclasses import dataclass

import numpy as np
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_NOT_AVAILABLE

from consumer.messages import decode_features, decode_labels, last_offsets, message_times, places_of
from tests.fakes import FakeMessage


@dataclass
class Stamped(FakeMessage):
    _kind: int = TIMESTAMP_CREATE_TIME

    def timestamp(self) -> tuple[int, int]:
        return self._kind, self._timestamp_ms


def message(value: bytes, ms: int, kind: int = TIMESTAMP_CREATE_TIME, offset: int = 0) -> Stamped:
    return Stamped("t", 0, offset, None, value, _timestamp_ms=ms, _kind=kind)


def test_message_times_are_seconds_or_the_default_when_the_broker_gave_none():
    msgs = [message(b"", 1_700_000_000_250), message(b"", 5, kind=TIMESTAMP_NOT_AVAILABLE), message(b"", -1)]
    np.testing.assert_array_equal(message_times(msgs, 42.0), [1_700_000_000.25, 42.0, 42.0])
    assert message_times([], 42.0).shape == (0,)


def test_a_record_without_ts_takes_its_message_time_and_one_with_ts_keeps_its_own():
    msgs = [message(b'{"id": "a", "features": [1.0, 2.0]}', 1_000_500, offset=0),
            message(b'{"id": "b", "features": [1.0, 2.0], "ts": 7.5}', 2_000_000, offset=1),
            message(b'{"id": "c", "features": {"x": 1.0}}', 3_000_000, offset=2),  # not for the compiled scan
            message(b'{"id": "d", "features": [1.0, 2.0]}', 0, kind=TIMESTAMP_NOT_AVAILABLE, offset=3)]
    batch, positions, rejected = decode_features(msgs, 2, now=99.0)
    assert (batch.ids, batch.ts, positions, rejected) == (["a", "b", "c", "d"], [1000.5, 7.5, 3000.0, 99.0],
                                                          [0, 1, 2, 3], [])


def test_a_label_without_ts_takes_its_message_time():
    msgs = [message(b'{"id": "a", "label": 1}', 4_000_000), message(b'{"id": "b", "label": -1, "ts": 3.25}', 5_000)]
    decoded = decode_labels(msgs, {-1: -1, 1: 1}, now=99.0)
    assert [(lab.id, lab.ts) for lab in decoded.records] == [("a", 4000.0), ("b", 3.25)]


def test_places_are_columns_and_each_partition_ends_at_its_last_offset():
    # a consumed batch: runs of partitions, one partition coming back after another's run
    places = [(0, 10), (0, 11), (2, 5), (0, 12), (1, 7), (2, 6), (2, 7)]
    msgs = [Stamped("t", p, o, None, b"", _timestamp_ms=0) for p, o in places]
    partitions, offsets = places_of(msgs)
    assert (partitions.dtype, offsets.dtype) == (np.int64, np.int64)
    assert list(zip(partitions.tolist(), offsets.tolist(), strict=True)) == places
    assert last_offsets(partitions, offsets) == {0: 12, 1: 7, 2: 7}
    assert last_offsets(*places_of([])) == {}
