"""The strictness rules of the record schemas, enforced alike by every decoding path."""

import pytest

from tests.verdicts import feature_verdicts, label_verdicts, one_verdict

DENSE = b"[1, 0, 0, 0, 0, 0, 0, 0]"


@pytest.mark.parametrize("value, reason", [
    (b'{"id": "a", "features": ' + DENSE + b', "v": true}', "unsupported_version"),
    (b'{"id": "a", "features": ' + DENSE + b', "v": "1"}', "unsupported_version"),
    (b'{"id": "a", "features": {}}', "empty_features"),
    (b'{"id": "a", "features": []}', "empty_features"),
    (b'{"id": "a", "features": {"indices": [], "values": []}}', "empty_features"),
    (b'{"id": "a", "features": ["1", 0, 0, 0, 0, 0, 0, 0]}', "bad_value"),
    (b'{"id": "a", "features": [true, 0, 0, 0, 0, 0, 0, 0]}', "bad_value"),
    (b'{"id": "a", "features": {"indices": ["1"], "values": [1]}}', "bad_index"),
    (b'{"id": "a", "features": {"indices": [1], "values": ["1"]}}', "bad_value"),
    (b'{"id": "a", "features": {"indices": [1], "values": [false]}}', "bad_value"),
    (b'{"id": "a", "features": ' + DENSE + b', "ts": -5}', "bad_timestamp"),
    (b'{"id": "a", "features": ' + DENSE + b', "ts": 1e300}', "bad_timestamp"),
    (b'{"id": "a", "features": ' + DENSE + b', "ts": 7258118400}', "bad_timestamp"),
    (b'{"id": "a", "features": ' + DENSE + b', "ts": "1700000000"}', "bad_timestamp"),
    (b'{"id": "a", "features": ' + DENSE + b', "ts": true}', "bad_timestamp"),
    (b'{"id": "a", "features": ' + DENSE + b', "ts": "1969-12-31T23:59:59Z"}', "bad_timestamp"),
    (b'{"id": "a", "features": ' + DENSE + b', "ts": "2200-01-01T00:00:00Z"}', "bad_timestamp"),
])
def test_feature_rules_rejected_alike_on_every_path(value, reason):
    assert one_verdict(feature_verdicts(value)) == reason


@pytest.mark.parametrize("ts, seconds", [(b"0", 0.0), (b"7258118399.5", 7258118399.5),
                                          (b'"2023-11-14T22:13:20"', 1700000000.0),
                                          (b'"2023-11-14T23:13:20+01:00"', 1700000000.0)])
def test_feature_rules_times_in_range_accepted_naive_iso_as_utc(ts, seconds):
    import numpy as np

    verdict = one_verdict(feature_verdicts(b'{"id": "a", "features": ' + DENSE + b', "ts": ' + ts + b"}"))
    assert verdict[3] == np.float64(seconds).tobytes()


def test_feature_rules_explicit_zeros_are_a_row_not_an_empty_one():
    verdict = one_verdict(feature_verdicts(b'{"id": "a", "features": [0, 0, 0, 0, 0, 0, 0, 0]}'))
    assert verdict[0] == "a" and verdict[1] == []


@pytest.mark.parametrize("value, reason", [
    (b'{"id": "a", "label": true}', "unknown_class"),
    (b'{"id": "a", "label": false}', "unknown_class"),
    (b'{"id": "a", "label": "1"}', "unknown_class"),
    (b'{"id": "a", "label": 1, "v": true}', "unsupported_version"),
    (b'{"id": "a", "label": 1, "cost": 1e29}', "bad_cost"),
    (b'{"id": "a", "label": 1, "cost": 1000000.5}', "bad_cost"),
    (b'{"id": "a", "label": 1, "cost": -0.5}', "bad_cost"),
    (b'{"id": "a", "label": 1, "cost": "3"}', "bad_cost"),
    (b'{"id": "a", "label": 1, "cost": true}', "bad_cost"),
    (b'{"id": "a", "label": 1, "ts": -5}', "bad_timestamp"),
    (b'{"id": "a", "label": 1, "ts": 1e300}', "bad_timestamp"),
])
def test_label_rules_rejected_alike_on_every_path(value, reason):
    assert one_verdict(label_verdicts(value)) == reason


def test_label_rules_cost_at_its_bound_accepted():
    verdict = one_verdict(label_verdicts(b'{"id": "a", "label": 1, "cost": 1000000}'))
    assert verdict[1:3] == ("int", 1)


@pytest.mark.parametrize("value", [
    b'{"id": "a", "id": "b", "features": ' + DENSE + b"}",
    b'{"id": "a", "features": ' + DENSE + b', "features": ' + DENSE + b"}",
    b'{"id": "a", "features": {"indices": [1], "indices": [2], "values": [1]}}',
    b'{"id": "a", "features": {"colour": "red", "colour": "blue"}}',
    b'{"id": "a", "i\\u0064": "b", "features": ' + DENSE + b"}",
    b'{"id": "a", "features": ' + DENSE + b', "ts": 1, "ts": 2}',
    b'{"id": "a", "features": ' + DENSE + b', "extra": {"k": 1, "k": 2}}',
])
def test_feature_rules_duplicate_key_rejected_alike_on_every_path(value):
    assert one_verdict(feature_verdicts(value)) == "duplicate_key"


@pytest.mark.parametrize("value", [
    b'{"id": "a", "label": 1, "label": -1}',
    b'{"id": "a", "label": 1, "cost": 1, "cost": 2}',
    b'{"id": "a", "\\u0069d": "b", "label": 1}',
])
def test_label_rules_duplicate_key_rejected_alike_on_every_path(value):
    assert one_verdict(label_verdicts(value)) == "duplicate_key"


def test_feature_rules_same_key_in_sibling_objects_is_no_duplicate():
    verdict = one_verdict(feature_verdicts(b'{"id": "a", "features": {"x": 1, "y": 2}, "meta": {"x": 1}}'))
    assert verdict[0] == "a"
