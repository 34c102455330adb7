"""Record codecs: every input form, every rejection reason."""

import orjson
import pytest

from consumer.errors import InvalidRecord
from consumer.records import (
    REASONS,
    decode_feature,
    decode_label,
    encode_predictions,
    pack_keys,
    parse_source,
    source_of,
)


def test_dense_sparse_and_named_features_decode():
    f = decode_feature(orjson.dumps({"id": "a", "features": [0.0, 2.0, 0.0]}), 3, 1.0)
    assert f.idx.tolist() == [1] and f.val.tolist() == [2.0] and f.ts == 1.0
    f = decode_feature(orjson.dumps({"id": 7, "features": {"indices": [2, 0, 2], "values": [1.0, 3.0, 1.0]}}), 3, 0)
    assert f.id == "7" and dict(zip(f.idx.tolist(), f.val.tolist(), strict=True)) == {0: 3.0, 2: 2.0}
    f = decode_feature(orjson.dumps({"id": "n", "features": {"country": "FR", "amount": 2.5}, "ts": 5}), 2**20, 0)
    assert sorted(f.val.tolist()) == [1.0, 2.5] and f.ts == 5.0


def test_iso_timestamp():
    f = decode_feature(orjson.dumps({"id": "a", "features": [1.0], "ts": "2023-11-14T22:13:20Z"}), 1, 0)
    assert f.ts == 1700000000.0


@pytest.mark.parametrize("value, reason", [
    (None, "empty_value"), (b"", "empty_value"), (b"{", "malformed_json"), (b"3", "not_an_object"),
    (b'{"v": 2, "id": "a", "features": [1]}', "unsupported_version"),
    (b'{"features": [1]}', "missing_id"), (b'{"id": "", "features": [1]}', "missing_id"),
    (b'{"id": true, "features": [1]}', "bad_id"), (b'{"id": "a"}', "missing_features"),
    (b'{"id": "a", "features": 3}', "bad_features"),
    (b'{"id": "a", "features": {"indices": [1], "values": [1, 2]}}', "bad_features"),
    (b'{"id": "a", "features": {"indices": [1.5], "values": [1]}}', "bad_index"),
    (b'{"id": "a", "features": {"indices": [-1], "values": [1]}}', "bad_index"),
    (b'{"id": "a", "features": {"indices": [4], "values": [1]}}', "bad_index"),
    (b'{"id": "a", "features": [1, 2]}', "dimension_mismatch"),
    (b'{"id": "a", "features": [[1, 2, 3, 4]]}', "bad_features"),
    (b'{"id": "a", "features": [1, "x", 3, 4]}', "bad_value"),
    (b'{"id": "a", "features": {"k": [1]}}', "bad_value"),
    (b'{"id": "a", "features": [1, 2, 3, 4], "ts": "soon"}', "bad_timestamp"),
])
def test_bad_feature_records_are_rejected_with_their_reason(value, reason):
    with pytest.raises(InvalidRecord) as err:
        decode_feature(value, 4, 0.0)
    assert err.value.reason == reason and reason in REASONS


def test_non_finite_numbers_never_pass():
    with pytest.raises(InvalidRecord, match="malformed_json: number is infinity"):  # orjson refuses it
        decode_feature(b'{"id": "a", "features": [1e999, 0, 0, 0]}', 4, 0.0)
    with pytest.raises(InvalidRecord, match="malformed_json"):  # NaN is not JSON
        decode_feature(b'{"id": "a", "features": [NaN, 0, 0, 0]}', 4, 0.0)


@pytest.mark.parametrize("value, reason", [
    (b'{"id": "a"}', "missing_label"), (b'{"id": "a", "label": 3}', "unknown_class"),
    (b'{"id": "a", "label": [1]}', "unknown_class"), (b'{"id": "a", "label": 1, "cost": -1}', "bad_cost"),
    (b'{"label": 1}', "missing_id"),
])
def test_bad_labels_are_rejected_with_their_reason(value, reason):
    with pytest.raises(InvalidRecord) as err:
        decode_label(value, {-1: -1, 1: 1}, 0.0)
    assert err.value.reason == reason


def test_label_with_cost():
    lab = decode_label(b'{"id": "a", "label": "spam", "cost": 2.5}', {"ham": -1, "spam": 1}, 0.0)
    assert (lab.id, lab.label, lab.cost) == ("a", "spam", 2.5)


def test_prediction_schema_is_versioned():
    out = orjson.loads(encode_predictions(["a"], [1], [0.5], [0.2], [True], [10.0], 3, 11.0, "features", [2], [7])[0])
    assert out == {"v": 1, "id": "a", "label": 1, "score": 0.5, "probability": 0.2, "label_requested": True,
                   "model_version": 3, "ts": 10.0, "predicted_at": 11.0, "source": "features:2:7"}


def test_sources_read_back_as_written():
    assert parse_source(source_of("my.topic-1", 3, 12345678901)) == ("my.topic-1", 3, 12345678901)


def test_keys_are_the_ids_in_utf8_whatever_they_hold():
    for ids in (["a", "b"], ["line\nbreak", "ü", ""], [], ["x"]):
        assert list(pack_keys(ids)) == [rid.encode() for rid in ids]
