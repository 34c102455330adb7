"""One bad record of every kind the service rejects, keyed by the reason it gets (see
:data:`consumer.records.REASONS`), for the unit tests and the tests against a real broker."""

from __future__ import annotations

import orjson


def bad_features(n_features: int) -> dict[str, bytes | None]:
    """A bad feature record for each feature reason, for a model of ``n_features`` dimensions."""
    dense = [0.0] * n_features
    return {
        "malformed_json": b"{not json",
        "empty_value": None,
        "not_an_object": b"[1, 2]",
        "duplicate_key": b'{"id": "x", "id": "y", "features": {"a": 1}}',
        "missing_id": orjson.dumps({"features": dense}),
        "bad_id": orjson.dumps({"id": {"a": 1}, "features": dense}),
        "missing_features": orjson.dumps({"id": "x"}),
        "empty_features": orjson.dumps({"id": "x", "features": {}}),
        "bad_features": orjson.dumps({"id": "x", "features": "abc"}),
        "bad_value": orjson.dumps({"id": "x", "features": [1, "a", *dense[2:]]}),
        "bad_index": orjson.dumps({"id": "x", "features": {"indices": [n_features], "values": [1.0]}}),
        "dimension_mismatch": orjson.dumps({"id": "x", "features": [1, 2]}),
        "bad_timestamp": orjson.dumps({"id": "x", "features": dense, "ts": "yesterday"}),
        "unsupported_version": orjson.dumps({"v": 7, "id": "x", "features": dense}),
    }


# A bad label record for each reason a label can get (classes -1 and 1).
BAD_LABELS: dict[str, bytes | None] = {
    "malformed_json": b"{not json",
    "empty_value": None,
    "not_an_object": b'"just a string"',
    "duplicate_key": b'{"id": "x", "label": 1, "label": -1}',
    "unsupported_version": orjson.dumps({"v": 2, "id": "x", "label": 1}),
    "missing_id": orjson.dumps({"label": 1}),
    "bad_id": orjson.dumps({"id": [1], "label": 1}),
    "missing_label": orjson.dumps({"id": "x"}),
    "unknown_class": orjson.dumps({"id": "x", "label": "not-a-class"}),
    "bad_cost": orjson.dumps({"id": "x", "label": 1, "cost": -3}),
    "bad_timestamp": orjson.dumps({"id": "x", "label": 1, "ts": "yesterday"}),
}
