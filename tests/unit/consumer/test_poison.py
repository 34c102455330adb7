"""Poison records: one bad record never makes a decoder raise, and never fails its batch."""

import numpy as np
import orjson
import pytest

from consumer.errors import InvalidRecord
from consumer.records import decode_feature, decode_feature_batch, decode_label

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


def one_batch(value: bytes, n_features: int = N_FEATURES):
    """Record ``value`` decoded in a batch of good ones through the compiled scanner."""
    batch = decode_feature_batch([GOOD[0], value, GOOD[1]], n_features, no_times)
    return batch, batch.positions.index(1) if 1 in batch.positions else None


@pytest.mark.parametrize("indices", [[True, 2], [1, False], [True]])
def test_decoders_boolean_index_rejected_on_every_path(indices):
    value = orjson.dumps({"id": "b", "features": {"indices": indices, "values": [1.0] * len(indices)}})
    with pytest.raises(InvalidRecord, match="bad_index"):
        decode_feature(value, N_FEATURES, 0.0)
    for neighbours in ([GOOD[0]], [GOOD[0], GOOD_NAMED]):
        batch = decode_feature_batch([*neighbours, value], N_FEATURES, no_times)
        assert [err.reason for _, err in batch.rejected] == ["bad_index"]


def test_decoders_repeated_indices_past_sixteen_summed_left_to_right_on_every_path():
    rng = np.random.default_rng(7)
    indices = rng.integers(0, 3, 40).tolist()
    values = (rng.standard_normal(40) * 10.0 ** rng.integers(-8, 8, 40)).tolist()
    record = orjson.dumps({"id": "dup", "features": {"indices": indices, "values": values}})
    expected = {}
    for i, v in zip(indices, values, strict=True):
        expected[i] = expected.get(i, 0.0) + v
    f = decode_feature(record, N_FEATURES, 0.0)
    assert dict(zip(f.idx.tolist(), f.val.tolist(), strict=True)) == expected
    batch, j = one_batch(record)
    idx, val = batch.rows.row(j)
    assert idx.tolist() == f.idx.tolist() and val.tobytes() == f.val.tobytes()
    slow = decode_feature_batch([GOOD_NAMED, record.replace(b'"dup"', b'"d\\u0075p"')], N_FEATURES, no_times)
    assert slow.rows.row(1)[1].tobytes() == f.val.tobytes()


def test_decoders_repeated_index_sum_beyond_float64_rejected_on_every_path():
    record = b'{"id": "o", "features": {"indices": [2, 2], "values": [1e308, 1e308]}}'
    with pytest.raises(InvalidRecord, match="bad_value"):
        decode_feature(record, N_FEATURES, 0.0)
    batch, j = one_batch(record)
    assert j is None and [(k, e.reason) for k, e in batch.rejected] == [(1, "bad_value")]
    assert batch.rows.n == 2


def test_decoders_unsorted_sparse_indices_sorted_on_every_path():
    record = b'{"id": "u", "features": {"indices": [5, 2, 7], "values": [1, 0, 3]}}'
    f = decode_feature(record, N_FEATURES, 0.0)
    batch, j = one_batch(record)
    assert f.idx.tolist() == batch.rows.row(j)[0].tolist() == [5, 7]
    assert f.val.tolist() == batch.rows.row(j)[1].tolist() == [1.0, 3.0]


@pytest.mark.parametrize("text", [b"-0", b"0", b"-0.0", b"-0e3"])
def test_decoders_negative_zero_sign_as_orjson_on_every_path(text):
    from consumer.records import decode_label_batch

    expected = float(orjson.loads(text))
    feature = b'{"id": "z", "features": [1, 0, 0, 0, 0, 0, 0, 0], "ts": ' + text + b"}"
    batch, j = one_batch(feature)
    assert np.float64(batch.ts[j]).tobytes() == np.float64(expected).tobytes()
    assert np.float64(decode_feature(feature, N_FEATURES, 1.0).ts).tobytes() == np.float64(expected).tobytes()
    label = b'{"id": "z", "label": 1, "cost": ' + text.lstrip(b"-") + b', "ts": ' + text + b"}"
    [got], _, _ = decode_label_batch([label], {-1: 0, 1: 1}, no_times)
    alone = decode_label(label, {-1: 0, 1: 1}, 1.0)
    assert np.float64(got.ts).tobytes() == np.float64(alone.ts).tobytes() == np.float64(expected).tobytes()


# 2**53 + 1 digits: the mantissa that is not a double, with the point and exponent anywhere
ULP_TEXTS = [b"9007199254740993", b"900719925.4740993", b"9.007199254740993e5", b"0.9007199254740993",
             b"-90071992547.40993"]


@pytest.mark.parametrize("text", ULP_TEXTS)
def test_decoders_mantissa_two_to_53_plus_one_read_as_orjson_on_every_path(text):
    from tests.verdicts import CLASSES, feature_verdicts, label_verdicts, one_verdict

    want = np.float64(orjson.loads(text)).tobytes()
    dense = b'{"id": "u", "features": [' + text + b", 1, 1, 1, 1, 1, 1, 1]}"
    assert one_verdict(feature_verdicts(dense))[2][:8] == want
    sparse = b'{"id": "u", "features": {"indices": [0], "values": [' + text + b"]}}"
    assert one_verdict(feature_verdicts(sparse))[2] == want
    positive = text.lstrip(b"-")
    if float(positive) < 7258118400:
        stamped = b'{"id": "u", "features": {"indices": [0], "values": [1]}, "ts": ' + positive + b"}"
        assert one_verdict(feature_verdicts(stamped))[3] == np.float64(orjson.loads(positive)).tobytes()
    if float(positive) <= 1e6:
        costly = b'{"id": "u", "label": 1, "cost": ' + positive + b"}"
        assert one_verdict(label_verdicts(costly))[3] == np.float64(orjson.loads(positive)).tobytes()
    classes = {**CLASSES, orjson.loads(text): 9}
    labelled = b'{"id": "u", "label": ' + text + b"}"
    assert one_verdict(label_verdicts(labelled, classes))[2] == orjson.loads(text)
