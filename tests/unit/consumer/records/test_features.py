"""The careful feature-record decoder: every input form, every rejection reason."""

import orjson
import pytest

from consumer.errors import InvalidRecord
from consumer.records import REASONS, decode_feature


def test_dense_sparse_and_named_features_decode():
    f = decode_feature(orjson.dumps({"id": "a", "features": [0.0, 2.0, 0.0]}), 3, 1.0)
    assert f.idx.tolist() == [1] and f.val.tolist() == [2.0] and f.ts == 1.0
    f = decode_feature(orjson.dumps({"id": 7, "features": {"indices": [2, 0, 2], "values": [1.0, 3.0, 1.0]}}), 3, 0)
    assert f.id == "7" and dict(zip(f.idx.tolist(), f.val.tolist(), strict=True)) == {0: 3.0, 2: 2.0}
    f = decode_feature(orjson.dumps({"id": "n", "features": {"country": "FR", "amount": 2.5}, "ts": 5}), 2**20, 0)
    assert sorted(f.val.tolist()) == [1.0, 2.5] and f.ts == 5.0


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
