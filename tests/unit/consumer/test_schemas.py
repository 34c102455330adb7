"""The JSON Schema files shipped in the package: the input schemas agree with the decoders on what
they can express (what they reject, the decoders reject; the other way round, with generated records:
test_schemas_generated.py), and what the service writes validates against the output schemas."""

from importlib import resources

import jsonschema
import numpy as np
import orjson
import pytest
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from consumer.config import load_settings
from consumer.dead_letters import HEADER_PREFIX, truncated
from consumer.errors import ConfigError
from consumer.fastwrite import pack, write_label_requests, write_predictions
from consumer.records import FRAMED_REASONS, REASONS
from learners.defaults import DEFAULT_LEARNERS
from tests.bad_records import BAD_LABELS, bad_features
from tests.corpus.corpus import FEATURES, LABELS
from tests.unit.consumer.conftest import Harness

INPUTS = ("feature.v1.json", "label.v1.json")
OUTPUTS = ("prediction.v1.json", "label-request.v1.json", "dead-letter.v1.json")

# What the decoders reject beyond what JSON Schema can say (each schema's description names them):
# repeated keys, a dimension or class list known only to the model, an overflowing sum, lists that
# must be of one length, and the records that are not JSON at all.
BEYOND = {
    "duplicate_key", "dimension_mismatch", "empty_value", "malformed_json",
}
BEYOND_KINDS = {"index_at_dimension", "repeated_index_overflows", "label_3", "label_unknown_name",
                "label_numeric_string", "lengths_differ",
                "exponent_index"}  # JSON Schema takes 1e0 for an integer; the decoders want 1


def schema(name: str) -> dict:
    return orjson.loads(resources.files("consumer").joinpath("schemas", name).read_bytes())


# every shipped schema by its $id, so that label-request.v1.json's "$ref" to feature.v1.json resolves
# without the network, as a user's validator given both files resolves it
REGISTRY = Registry().with_resources((schema(name)["$id"], DRAFT202012.create_resource(schema(name)))
                                     for name in INPUTS + OUTPUTS)


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(name), registry=REGISTRY, format_checker=jsonschema.FormatChecker())


def test_schemas_shipped_are_the_inputs_and_outputs():
    shipped = {p.name for p in resources.files("consumer").joinpath("schemas").iterdir() if p.name.endswith(".json")}
    assert shipped == set(INPUTS + OUTPUTS)


@pytest.mark.parametrize("name", INPUTS + OUTPUTS)
def test_schemas_shipped_and_valid_json_schema(name):
    jsonschema.Draft202012Validator.check_schema(schema(name))
    assert schema(name)["$id"] == f"https://activestream.dev/schemas/{name}"


@pytest.mark.parametrize("value", [
    {"id": "a", "features": [0.1, 0.0, 2.5]}, {"id": 7, "features": {"indices": [3, 17], "values": [1.0, 0.5]}},
    {"id": "a", "features": {"country": "FR", "amount": 12.5, "vip": True}, "ts": "2023-11-14T22:13:20Z", "v": 1},
    {"id": "a", "features": [1], "ts": 1700000000.25, "extra": {"any": "thing"}},
    {"id": 18446744073709551615, "features": [1], "ts": "2199-12-31T23:59:59.999999+05:00"},
])
def test_schemas_feature_accepts_the_documented_shapes(value):
    validator("feature.v1.json").validate(value)


@pytest.mark.parametrize("value", [{"id": "a", "label": 1, "cost": 0.8}, {"id": "a", "label": "spam", "ts": 5},
                                   {"id": 3, "label": -1, "cost": None, "v": 1}])
def test_schemas_label_accepts_the_documented_shapes(value):
    validator("label.v1.json").validate(value)


@pytest.mark.parametrize("name, kinds", [("feature.v1.json", FEATURES), ("label.v1.json", LABELS)])
def test_schemas_reject_every_corpus_kind_they_can_express(name, kinds):
    check = validator(name)
    for kind in kinds:
        if kind.reason in BEYOND or kind.kind in BEYOND_KINDS:
            continue
        assert not check.is_valid(orjson.loads(kind.value)), kind.kind


@pytest.mark.parametrize("name", INPUTS)
@pytest.mark.parametrize("field, value", [
    ("id", 18446744073709551616), ("id", -9223372036854775809),  # orjson reads them as floats: bad_id
    ("ts", "1969-12-31T23:59:59Z"), ("ts", "2200-01-01T00:00:00Z"),  # out of range: bad_timestamp
    ("ts", "2023-11-14t22:13:20z"), ("ts", "2016-12-31T23:59:60Z"),  # RFC 3339, not Python's ISO: bad_timestamp
])
def test_schemas_reject_what_json_schema_allows_and_the_decoders_do_not(name, field, value):
    record = {"id": "a", "features": [1.0], "label": 1, field: value}
    assert not validator(name).is_valid(record)


# -- outputs ---------------------------------------------------------------------------------------

def _check(name: str, record: dict) -> None:
    """``record`` is valid, with the fields in the order the schema lists them (the writers' order)."""
    validator(name).validate(record)
    assert list(record) == schema(name)["required"]


def dead_letter_headers(headers: list[tuple[str, bytes]]) -> dict[str, str]:
    """A dead letter's headers as the schema sees them: each name's first value, as text."""
    out: dict[str, str] = {}
    for name, value in headers:
        out.setdefault(name, value.decode(errors="replace"))
    return out


def test_schemas_dead_letter_reasons_are_the_decoders():
    enum = schema("dead-letter.v1.json")["properties"][HEADER_PREFIX + "reason"]["enum"]
    assert enum == list(REASONS + FRAMED_REASONS)


def test_schemas_writers_outputs_validate():
    ids = ["a", "0", "18446744073709551615", "ü-名前", 'quote" and \\ backslash']
    n = len(ids)
    labels = [None, "spam", 1, -2.5, 0]
    scores = np.array([0.0, -0.0, 1e-300, -3.5e12, 0.25])
    probabilities = np.array([1.0, 5e-324, 0.5, 1e-9, 1.0])
    ts = np.array([0.0, 1.7e9, 7258118399.999, 1700000000.25, 3.0])
    partitions, offsets = [0, 1, 2, 3, 2**31 - 1], [0, 7, 2**40, 3, 2**63 - 1]
    predictions = write_predictions(ids, labels, scores, probabilities, [True, False, True, False, True], ts, 12345,
                                    1700000000.5, "features.v-1_x", partitions, offsets)
    features = pack([b"[0.1,0.0,2.5]", b'{"indices":[3,17],"values":[1.0,0.5]}', b'{"country":"FR","vip":true}',
                     orjson.dumps({"ü": "名前", "x": -0.0}), b"[1e308]"])
    requests = write_label_requests(ids, features, labels, scores, probabilities, 1 / (1 + np.abs(scores)),
                                    np.array([1.0, 0.0, 2.5, 1e6, 3.0]), 1700000000.5, 1700003600.5, 0, "features",
                                    [0] * n, list(range(n)))
    for value in predictions:
        _check("prediction.v1.json", orjson.loads(value))
    for value in requests:
        _check("label-request.v1.json", orjson.loads(value))
    assert len(predictions) == len(requests) == n


@pytest.mark.parametrize("name, change", [
    ("prediction.v1.json", {"id": 7}), ("prediction.v1.json", {"probability": 1.5}),
    ("prediction.v1.json", {"source": "features:0"}), ("prediction.v1.json", {"label_requested": 1}),
    ("prediction.v1.json", {"extra": 1}), ("prediction.v1.json", {"v": 2}), ("prediction.v1.json", {"score": None}),
    ("label-request.v1.json", {"features": {"indices": [1], "values": [1], "x": 2}}),
    ("label-request.v1.json", {"features": []}), ("label-request.v1.json", {"probability": 0.0}),
    ("label-request.v1.json", {"cost": -1.0}), ("label-request.v1.json", {"model_version": 1.5}),
])
def test_schemas_outputs_refuse_what_the_writers_never_write(name, change):
    good = {"prediction.v1.json": {"v": 1, "id": "a", "label": 1, "score": 0.5, "probability": 0.5,
                                   "label_requested": True, "model_version": 3, "ts": 1.0, "predicted_at": 2.0,
                                   "source": "features:0:4"},
            "label-request.v1.json": {"v": 1, "id": "a", "features": [1.0], "prediction": 1, "score": 0.5,
                                      "probability": 0.5, "uncertainty": 0.6, "cost": 1.0, "requested_at": 2.0,
                                      "expires_at": 3.0, "model_version": 3, "source": "features:0:4"}}[name]
    check = validator(name)
    check.validate(good)
    assert not check.is_valid({**good, **change})


def _feed(h: Harness, prefix: str, n: int = 40) -> None:
    """Records of every shape, id kind and time kind, for a model of 4 features."""
    rng = np.random.default_rng(n)
    for i in range(n):
        x = rng.standard_normal(4).round(6).tolist()
        shape = i % 4
        if shape == 0:
            record = {"id": f"{prefix}-{i}", "features": x}
        elif shape == 1:
            record = {"id": 10**18 + i if prefix == "a" else -i, "features": {"indices": [1, 3], "values": x[:2]},
                      "ts": 1700000000.25 + i}
        elif shape == 2:
            record = {"id": f"ü-名前-{prefix}{i}", "ts": "2023-11-14T22:13:20.25+01:00", "v": 1,
                      "features": {"country": ["FR", "DE"][i % 2], "amount": x[0], "vip": x[1] > 0}}
        else:
            record = {"id": f"{prefix}{i}", "features": {"indices": [0, 0, 2], "values": x[:3]}, "ts": None,
                      "extra": {"a": [1, None]}}
        h.broker.append("features", orjson.dumps(record), str(record["id"]).encode())


def outputs_validate(h: Harness) -> dict[str, int]:
    """Every message the service wrote validates; how many records of each topic there are."""
    h.deliver()
    counts = {"predictions": 0, "label-requests": 0}
    for topic, name in (("predictions", "prediction.v1.json"), ("label-requests", "label-request.v1.json")):
        for msg in h.broker.messages(topic):
            if msg.value() is None:  # a retracted request's tombstone: no record
                continue
            record = orjson.loads(msg.value())
            _check(name, record)
            assert msg.key() == record["id"].encode() and not msg.headers()
            counts[topic] += 1
    dead = validator("dead-letter.v1.json")
    for msg in h.broker.messages("dead-letters"):
        dead.validate(dead_letter_headers(msg.headers()))
        cut = dead_letter_headers(truncated(msg.key(), msg.value(), msg.headers())[2])
        dead.validate(cut)
        assert not dead.is_valid({**cut, "own-header": "x"})  # a truncated one keeps none of the record's own
    counts["dead-letters"] = len(h.broker.messages("dead-letters"))
    return counts


@pytest.mark.parametrize("scenario", ["binary", "learnt classes", "multiclass"])
def test_schemas_service_outputs_validate(tmp_path, scenario):
    """The service loop against the in-memory broker: good and bad features, answers, good and bad
    labels, more features; every prediction, label request and dead letter validates."""
    settings = {"binary": {"labels": {"cost_per_class": {"1": 2.5}, "ttl_s": 30, "retract_expired": True}},
                "learnt classes": {"classes": None, "learner": "lr-ada-entropy", "learner_params": {}},
                "multiclass": {"classes": [0, 1, 2], "learner": DEFAULT_LEARNERS["multiclass"], "learner_params": {}}}
    answers = {"binary": [1, -1], "learnt classes": ["ham", "spam"], "multiclass": [0, 1, 2]}[scenario]
    h = Harness(tmp_path, **settings[scenario])
    h.service.start()
    _feed(h, "a")
    for value in bad_features(4).values():
        h.raw_feature(value, b"bad")
    h.service.run_once()
    for i, rid in enumerate(h.requested_ids()):
        h.label(rid, answers[i % len(answers)])
    if scenario == "binary":  # with the classes given, an unknown label is refused, not learnt
        for value in BAD_LABELS.values():
            h.broker.append("labels", value, b"bad")
    h.service.run_once()
    _feed(h, "b")
    h.service.run_once()
    h.clock.advance(60)  # the binary scenario's unanswered requests expire, retracted by tombstones
    h.service.run_once()
    counts = outputs_validate(h)
    if scenario == "binary":
        assert None in h.broker.values("label-requests")
    assert counts["predictions"] == 80 and counts["label-requests"] > 0
    assert counts["dead-letters"] == len(bad_features(4)) + (len(BAD_LABELS) if scenario == "binary" else 0)
    predicted = {orjson.loads(v)["label"] for v in h.broker.values("predictions")}
    assert predicted <= {None, *answers} and predicted & set(answers)


@pytest.mark.xfail(strict=True, raises=jsonschema.ValidationError,
                   reason="a learner bug, not a schema's: with scale=auto choosing standard scaling, "
                                       "a feature value of 2**1023 or more makes the score NaN, which orjson writes "
                                       "as null (found by test_schemas_generated.py)")
def test_schemas_prediction_of_a_value_near_the_float64_limit(tmp_path):
    h = Harness(tmp_path, learner="lr-ada-entropy", learner_params={})
    h.service.start()
    records = [{"id": "a", "features": {"indices": [0], "values": [0.0]}},
               {"id": "a", "features": [0, 0, 0, 2.0**1023]}]
    for record in records:
        h.broker.append("features", orjson.dumps(record), b"a")
    h.service.run_once()
    h.label("a", 1)
    h.service.run_once()
    for record in records:
        h.broker.append("features", orjson.dumps(record), b"a")
    h.service.run_once()
    assert outputs_validate(h)["predictions"] == 4


@pytest.mark.parametrize("labels", [{"cost_per_class": {"1": 2.5, "-1": 0.0}}, {"cost_per_request": 1e6}])
def test_schemas_label_request_of_a_configured_cost(tmp_path, labels):
    h = Harness(tmp_path, labels=labels)
    h.service.start()
    _feed(h, "a", 8)
    h.service.run_once()
    assert outputs_validate(h)["label-requests"] > 0


@pytest.mark.parametrize("labels", [{"cost_per_class": {"1": -2.0}}, {"cost_per_class": {"1": float("nan")}},
                                    {"cost_per_request": float("inf")}, {"cost_per_request": 1e7}])
def test_a_cost_a_label_request_could_not_carry_is_refused_at_start_up(labels):
    with pytest.raises(ConfigError, match="ACTIVESTREAM_LABELS__COST_PER"):
        load_settings(labels=labels)
