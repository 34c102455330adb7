"""The JSON Schema files shipped in the package agree with the decoders on what they can express."""

from importlib import resources

import jsonschema
import orjson
import pytest

from tests.corpus.corpus import FEATURES, LABELS

# What the decoders reject beyond what JSON Schema can say (each schema's description names them):
# repeated keys, a dimension or class list known only to the model, an overflowing sum, lists that
# must be of one length, the range of an ISO time, and the records that are not JSON at all.
BEYOND = {
    "duplicate_key", "dimension_mismatch", "empty_value", "malformed_json",
}
BEYOND_KINDS = {"index_at_dimension", "repeated_index_overflows", "label_3", "label_unknown_name",
                "label_numeric_string", "lengths_differ", "ts_iso_before_1970",
                "exponent_index"}  # JSON Schema takes 1e0 for an integer; the decoders want 1


def schema(name: str) -> dict:
    return orjson.loads(resources.files("consumer").joinpath("schemas", name).read_bytes())


@pytest.mark.parametrize("name", ["feature.v1.json", "label.v1.json"])
def test_schemas_shipped_and_valid_json_schema(name):
    jsonschema.Draft202012Validator.check_schema(schema(name))


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(name), format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("value", [
    {"id": "a", "features": [0.1, 0.0, 2.5]}, {"id": 7, "features": {"indices": [3, 17], "values": [1.0, 0.5]}},
    {"id": "a", "features": {"country": "FR", "amount": 12.5, "vip": True}, "ts": "2023-11-14T22:13:20Z", "v": 1},
    {"id": "a", "features": [1], "ts": 1700000000.25, "extra": {"any": "thing"}},
])
def test_schemas_feature_accepts_the_documented_shapes(value):
    _validator("feature.v1.json").validate(value)


@pytest.mark.parametrize("value", [{"id": "a", "label": 1, "cost": 0.8}, {"id": "a", "label": "spam", "ts": 5},
                                   {"id": 3, "label": -1, "cost": None, "v": 1}])
def test_schemas_label_accepts_the_documented_shapes(value):
    _validator("label.v1.json").validate(value)


@pytest.mark.parametrize("name, kinds", [("feature.v1.json", FEATURES), ("label.v1.json", LABELS)])
def test_schemas_reject_every_corpus_kind_they_can_express(name, kinds):
    validator = _validator(name)
    for kind in kinds:
        if kind.reason in BEYOND or kind.kind in BEYOND_KINDS:
            continue
        assert not validator.is_valid(orjson.loads(kind.value)), kind.kind
