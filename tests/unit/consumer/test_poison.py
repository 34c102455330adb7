"""Poison records: one bad record never makes a decoder raise, and never fails its batch."""

import numpy as np
import orjson
import pytest

from consumer.errors import InvalidRecord
from consumer.records import decode_feature, decode_feature_batch

N_FEATURES = 8
GOOD = [orjson.dumps({"id": f"g{k}", "features": {"indices": [k], "values": [1.5]}}) for k in range(3)]
GOOD_NAMED = orjson.dumps({"id": "named", "features": {"colour": "red"}})


def no_times(ks: np.ndarray) -> np.ndarray:
    return np.zeros(len(ks))


POISON = {
    "index_2_63": (b'{"id": "p", "features": {"indices": [9223372036854775808], "values": [1]}}', "bad_index"),
    "index_2_64_minus_1": (b'{"id": "p", "features": {"indices": [18446744073709551615], "values": [1]}}',
                           "bad_index"),
    "index_2_63_among_small": (b'{"id": "p", "features": {"indices": [1, 9223372036854775808], "values": [1, 2]}}',
                               "bad_index"),
    "nested_values": (b'{"id": "p", "features": {"indices": [1], "values": [[1]]}}', "bad_features"),
    "nested_indices": (b'{"id": "p", "features": {"indices": [[1]], "values": [1]}}', "bad_index"),
    "dense_of_lists": (b'{"id": "p", "features": [[1], [2], [3], [4], [5], [6], [7], [8]]}', "bad_features"),
    "dense_one_list_inside": (b'{"id": "p", "features": [1, 2, 3, 4, 5, 6, 7, [8]]}', "bad_features"),
}


@pytest.mark.parametrize("name", list(POISON))
def test_decode_feature_poison_record_named_rejection(name):
    value, reason = POISON[name]
    with pytest.raises(InvalidRecord) as err:
        decode_feature(value, N_FEATURES, 0.0)
    assert err.value.reason == reason


@pytest.mark.parametrize("name", list(POISON))
@pytest.mark.parametrize("neighbours", [GOOD, [*GOOD, GOOD_NAMED]], ids=["compiled", "with_named"])
def test_decode_feature_batch_poison_record_rejected_alone(name, neighbours):
    value, reason = POISON[name]
    values = [neighbours[0], value, *neighbours[1:]]
    batch = decode_feature_batch(values, N_FEATURES, no_times)
    assert [(k, err.reason) for k, err in batch.rejected] == [(1, reason)]
    assert batch.positions == [0, *range(2, len(values))]
    assert batch.rows.n == len(neighbours)
    assert batch.rows.row(0)[0].tolist() == [0] and batch.rows.row(0)[1].tolist() == [1.5]
