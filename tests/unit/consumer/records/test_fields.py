"""The fields feature and label records share."""

import orjson

from consumer.records import decode_feature


def test_iso_timestamp():
    f = decode_feature(orjson.dumps({"id": "a", "features": [1.0], "ts": "2023-11-14T22:13:20Z"}), 1, 0)
    assert f.ts == 1700000000.0
