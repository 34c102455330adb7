"""Framed records (the schema registry's wire format) read into the plain JSON records the decoders
take, against confluent-kafka's in-memory registry, for JSON Schema and Avro."""

from __future__ import annotations

import math
import sys

import numpy as np
import orjson
import pytest
from confluent_kafka.schema_registry import SchemaRegistryError

from consumer.config import load_settings
from consumer.errors import ConfigError, RegistryUnavailable
from consumer.messages import decode_features, decode_labels
from consumer.records import FRAMED_REASONS, REASONS, decode_feature_batch, decode_label_batch
from consumer.registry_formats import Backoff, FramedReader, readers_for
from tests.fakes import FakeMessage
from tests.registry_helpers import FORMATS, Writer, mock_registry, with_schema_id

N_FEATURES = 4
GOOD_FEATURES = [
    {"id": "dense", "features": [0.5, 0.0, 2.0, 1.0]},
    {"id": "sparse", "features": {"indices": [3, 1, 3], "values": [1.0, 0.5, 2.0]}, "ts": 1700000000.25},
    {"id": "named", "features": {"country": "FR", "amount": 12.5, "vip": True}, "ts": "2023-11-14T22:13:20Z"},
    {"id": 7, "features": [1.0, 2.0, 3.0, 4.0]},
]
GOOD_LABELS = [
    {"id": "dense", "label": 1},
    {"id": "sparse", "label": -1, "cost": 0.8},
    {"id": 7, "label": 1, "ts": 1700000360.0},
]
CLASSES = {-1: 0, 1: 1}


@pytest.fixture(params=FORMATS)
def fmt(request) -> str:
    return request.param


@pytest.fixture
def registry():
    return mock_registry()


def times(ks: np.ndarray) -> np.ndarray:
    return np.full(len(ks), 1_600_000_000.0)


def messages(topic: str, values: list[bytes | None]) -> list[FakeMessage]:
    return [FakeMessage(topic, 0, k, None, v) for k, v in enumerate(values)]


def assert_same_batch(a, b) -> None:
    assert a.ids == b.ids and a.ts == b.ts and a.positions == b.positions
    np.testing.assert_array_equal(a.rows.indptr, b.rows.indptr)
    np.testing.assert_array_equal(a.rows.indices, b.rows.indices)
    np.testing.assert_array_equal(a.rows.data, b.rows.data)


def test_good_features_decode_exactly_as_their_plain_json(fmt, registry):
    writer = Writer(registry, fmt)
    reader = FramedReader(fmt, registry, "features")
    plain, refused = reader.unframe([writer.feature(r) for r in GOOD_FEATURES])
    assert refused == {}
    framed = decode_feature_batch(plain, N_FEATURES, times)
    reference = decode_feature_batch([orjson.dumps(r) for r in GOOD_FEATURES], N_FEATURES, times)
    assert framed.ids == ["dense", "sparse", "named", "7"] and framed.rejected == []
    assert_same_batch(framed, reference)


def test_good_labels_decode_exactly_as_their_plain_json(fmt, registry):
    writer = Writer(registry, fmt)
    reader = FramedReader(fmt, registry, "labels")
    plain, refused = reader.unframe([writer.label(r) for r in GOOD_LABELS])
    assert refused == {}
    framed = decode_label_batch(plain, CLASSES, times)
    reference = decode_label_batch([orjson.dumps(r) for r in GOOD_LABELS], CLASSES, times)
    assert framed == reference
    assert [(lab.id, lab.label, lab.cost) for lab in framed[0]] == [("dense", 1, None), ("sparse", -1, 0.8),
                                                                    ("7", 1, None)]


def mismatching(fmt: str, writer: Writer) -> bytes:
    """A payload under the feature schema's id that the schema does not read: a record without
    "features" (JSON Schema), the first bytes of a record (Avro)."""
    good = writer.feature(GOOD_FEATURES[0])
    return good[:5] + b'{"id": "x"}' if fmt == "json-schema" else good[:7]


def test_each_refusal_has_its_reason_and_the_good_records_flow(fmt, registry):
    writer = Writer(registry, fmt)
    good = writer.feature(GOOD_FEATURES[0])
    values = [good, with_schema_id(good, 9999), orjson.dumps(GOOD_FEATURES[1]), mismatching(fmt, writer), None,
              b"\x00\x00\x00\x00\x01", writer.feature(GOOD_FEATURES[2])]
    reader = FramedReader(fmt, registry, "features")
    plain, refused = reader.unframe(values)
    msgs = messages("features", values)
    batch, positions, rejected = decode_features(msgs, N_FEATURES, 0.0, values=plain, refused=refused)
    assert batch.ids == ["dense", "named"] and positions == [0, 6]
    verdicts = [(msg.offset(), err.reason) for msg, err in rejected]
    assert verdicts == [(1, "unknown_schema"), (2, "not_framed"), (3, "schema_mismatch"), (4, "empty_value"),
                        (5, "not_framed")]
    assert "9999" in rejected[0][1].detail
    assert all(msg is msgs[msg.offset()] and err.topic == "features" for msg, err in rejected)  # the framed bytes


def test_a_framed_record_still_meets_every_rule_of_a_plain_one(fmt, registry):
    writer = Writer(registry, fmt)
    values = [writer.feature({"id": "short", "features": [1.0, 2.0]}),  # the schemas cannot know the dimension
              writer.feature({"id": "wide", "features": {"indices": [N_FEATURES], "values": [1.0]}})]
    plain, refused = FramedReader(fmt, registry, "features").unframe(values)
    batch, _, rejected = decode_features(messages("features", values), N_FEATURES, 0.0, values=plain,
                                         refused=refused)
    assert batch.ids == [] and [err.reason for _, err in rejected] == ["dimension_mismatch", "bad_index"]


def test_framed_labels_are_refused_with_their_reasons(fmt, registry):
    writer = Writer(registry, fmt)
    good = writer.label(GOOD_LABELS[0])
    values = [good, with_schema_id(good, 4242), orjson.dumps(GOOD_LABELS[1]), writer.label({"id": "x", "label": 5})]
    decoded = decode_labels(messages("labels", values), CLASSES, 0.0, framed=FramedReader(fmt, registry, "labels"))
    assert [lab.id for lab in decoded.records] == ["dense"]
    assert [(msg.offset(), err.reason) for msg, err in decoded.rejected] == [
        (1, "unknown_schema"), (2, "not_framed"), (3, "unknown_class")]


def test_json_schema_payload_keeps_the_strict_json_rules(registry):
    """The deserializer's parser takes a repeated key; the record is its payload, which the decoder refuses."""
    good = Writer(registry, "json-schema").feature(GOOD_FEATURES[0])
    value = good[:5] + b'{"id": "a", "id": "b", "features": [1, 2, 3, 4]}'
    plain, refused = FramedReader("json-schema", registry, "features").unframe([value])
    _, _, rejected = decode_features(messages("features", [value]), N_FEATURES, 0.0, values=plain, refused=refused)
    assert [err.reason for _, err in rejected] == ["duplicate_key"]


def test_avro_nulls_are_absent_fields_and_nan_is_a_bad_value(registry):
    writer = Writer(registry, "avro")
    reader = FramedReader("avro", registry, "features")
    plain, refused = reader.unframe([writer.feature({"id": "a", "features": [1.0, 0.0, 0.0, 0.0], "ts": None}),
                                     writer.feature({"id": "b", "features": [math.nan, 0.0, 0.0, 0.0]})])
    assert orjson.loads(plain[0]) == {"id": "a", "features": [1.0, 0.0, 0.0, 0.0]}  # the Kafka timestamp is used
    assert plain[1] is None and refused[1].reason == "bad_value"


class Unreachable:
    """The mock registry behind a failing network: every lookup raises ``error`` while ``down``."""

    def __init__(self, client, error: Exception) -> None:
        self.client, self.error, self.down = client, error, True

    def __getattr__(self, name: str):
        return getattr(self.client, name)

    def get_schema(self, *args, **kwargs):
        if self.down:
            raise self.error
        return self.client.get_schema(*args, **kwargs)


@pytest.mark.parametrize("error", [ConnectionRefusedError(111, "Connection refused"),
                                   SchemaRegistryError(503, 50301, "Service unavailable"),
                                   SchemaRegistryError(401, 40101, "Unauthorized")],
                         ids=["refused", "unavailable", "unauthorized"])
def test_a_registry_that_does_not_answer_refuses_nothing(fmt, registry, error):
    values = [Writer(registry, fmt).feature(GOOD_FEATURES[0])]
    flaky = Unreachable(registry, error)
    reader = FramedReader(fmt, flaky, "features")
    with pytest.raises(RegistryUnavailable, match="schema id 1"):
        reader.unframe(values)
    flaky.down = False
    assert reader.unframe(values)[1] == {}


def test_backoff_doubles_up_to_its_most_and_starts_over_after_a_success():
    backoff = Backoff(most_s=5.0)
    assert backoff.ready(0.0)
    assert [backoff.failed(0.0) for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert not backoff.ready(4.9) and backoff.ready(5.0)
    backoff.succeeded()
    assert backoff.ready(0.0) and backoff.failed(10.0) == 1.0


def test_framed_reasons_are_apart_from_the_plain_ones():
    assert set(FRAMED_REASONS) == {"not_framed", "unknown_schema", "schema_mismatch"}
    assert not set(FRAMED_REASONS) & set(REASONS)


def test_readers_read_the_configured_topics(registry):
    settings = load_settings(format="avro", schema_registry={"url": "http://registry:8081"},
                             topics={"features": "f-in", "labels": "l-in"})
    features, labels = readers_for(settings, registry)
    assert (features.format, features.topic, labels.topic) == ("avro", "f-in", "l-in")


def test_a_missing_extra_fails_naming_it(monkeypatch, registry):
    monkeypatch.setitem(sys.modules, "confluent_kafka.schema_registry", None)  # as if never installed
    with pytest.raises(ConfigError, match=r"activestream\[schema-registry\]"):
        FramedReader("avro", registry, "features")
