"""Outputs (predictions, label requests) written in the schema registry's wire format: what
confluent-kafka's own deserializers read of them, where their schemas are registered, and how the
service reads them back, against confluent-kafka's in-memory registry."""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest
from confluent_kafka.schema_registry import SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from consumer.config import load_settings
from consumer.errors import ConfigError, InvalidRecord, RegistryUnavailable
from consumer.fastwrite import pack, write_label_requests, write_predictions
from consumer.output_formats import (
    OUTPUT_SCHEMAS,
    SCHEMAS,
    OutputFormat,
    OutputReader,
    output_schema,
    register_outputs,
    subject_of,
)
from tests.registry_helpers import FORMATS, mock_registry, with_schema_id

N = 6
IDS = ["r0", "r1", 'quote"and\\slash', "ünïcødé", "r4", "r5"]
LABELS = [1, -1, "cat", None, 2.5, 0]
FEATURES = [b"[0.5,0.0,2.0,1.0]", b'{"indices":[3,1,3],"values":[1.0,0.5,2.0]}',
            b'{"country":"FR","amount":12.5,"vip":true}', b"[1,2,3,4]", b'{"a":1}', b'{"indices":[0],"values":[-1.5]}']


def settings(fmt: str, **overrides):
    return load_settings(**{"output_format": fmt, "schema_registry": {"url": "http://registry.invalid:8081"},
                            **overrides})


def never_wait(seconds: float) -> bool:
    raise AssertionError(f"waited {seconds} s for a registry that answers")


def predictions(framing: OutputFormat | None, topic: str = "predictions"):
    rng = np.random.default_rng(1)
    values = write_predictions(IDS, LABELS, rng.standard_normal(N), rng.random(N), [True, False] * 3,
                               1.7e9 + rng.random(N), 12, 1.7e9 + 1.5, "features", [0, 1, 0, 2, 0, 1], range(N),
                               b"" if framing is None else framing.prefix(topic))
    return values if framing is None else framing.frame(topic, values)


def label_requests(framing: OutputFormat | None, topic: str = "label-requests"):
    rng = np.random.default_rng(2)
    values = write_label_requests(IDS, pack(FEATURES), LABELS, rng.standard_normal(N), rng.random(N) + 0.01,
                                  rng.random(N), rng.random(N) * 3, 1.7e9, 1.7e9 + 3600.0, 12, "features",
                                  [0] * N, range(N), b"" if framing is None else framing.prefix(topic))
    return values if framing is None else framing.frame(topic, values)


def deserializer(fmt: str, client):
    """What a consumer using the registry reads outputs with (the JSON one validates each record
    against the schema its id names)."""
    if fmt == "avro":
        return AvroDeserializer(schema_registry_client=client)
    return JSONDeserializer(None, schema_registry_client=client)


@pytest.mark.parametrize("fmt", FORMATS)
def test_confluent_deserializers_read_framed_outputs_as_the_plain_records(fmt):
    client = mock_registry()
    framing = register_outputs(settings(fmt), client, never_wait)
    read = deserializer(fmt, client)
    for make, topic in ((predictions, "predictions"), (label_requests, "label-requests")):
        plain, framed = list(make(None)), list(make(framing, topic))
        context = SerializationContext(topic, MessageField.VALUE)
        assert all(value[0] == 0 and value[1:5] == framing.ids[topic].to_bytes(4, "big") for value in framed)
        assert [read(value, context) for value in framed] == [orjson.loads(value) for value in plain]


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_schemas_are_registered_under_the_topic_subjects(fmt):
    client = mock_registry()
    s = settings(fmt, topics={"predictions": "scored", "label_requests": "to-label"})
    framing = register_outputs(s, client, never_wait)
    assert set(framing.ids) == {"scored", "to-label"}
    for topic in ("scored", "to-label"):
        latest = client.get_latest_version(subject_of(topic))
        assert latest.subject == f"{topic}-value"
        assert latest.schema_id == framing.ids[topic]
        assert latest.schema.schema_type == ("AVRO" if fmt == "avro" else "JSON")
    again = register_outputs(s, client, never_wait)  # a restart: the same schemas keep their ids
    assert again.ids == framing.ids


def test_json_schema_framing_is_the_header_before_the_plain_bytes():
    framing = register_outputs(settings("json-schema"), mock_registry(), never_wait)
    for make, topic in ((predictions, "predictions"), (label_requests, "label-requests")):
        header = b"\x00" + framing.ids[topic].to_bytes(4, "big")
        assert list(make(framing, topic)) == [header + value for value in make(None)]


def test_the_registered_label_request_schema_stands_alone():
    registered = json.loads(output_schema("label-request.v1", "json-schema"))
    assert "$ref" not in json.dumps(registered)
    feature = json.loads((SCHEMAS / "feature.v1.json").read_text())
    assert registered["properties"]["features"]["oneOf"] == feature["properties"]["features"]["oneOf"]
    assert registered["properties"]["features"]["description"].startswith("The feature record's features")


@pytest.mark.parametrize("stem", OUTPUT_SCHEMAS.values())
def test_the_avro_schemas_have_the_json_schemas_fields_in_order(stem):
    avro = json.loads((SCHEMAS / f"{stem}.avsc").read_text())
    plain = json.loads((SCHEMAS / f"{stem}.json").read_text())
    assert [f["name"] for f in avro["fields"]] == list(plain["properties"]) == plain["required"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_outputs_read_back_are_the_plain_records_whatever_wrote_them(fmt):
    client = mock_registry()
    framing = register_outputs(settings(fmt), client, never_wait)
    plain = list(label_requests(None))
    framed = list(label_requests(framing))
    known = OutputReader(client, framing.known_schemas())
    asks = OutputReader(client)  # e.g. a trainer, which registers nothing: asks the registry by id
    for reader in (known, asks):
        assert [orjson.loads(reader.plain(v)) for v in framed] == [orjson.loads(v) for v in plain]
        assert [reader.plain(v) for v in plain] == plain  # written before the format changed
    values, refused = known.plain_many([framed[0], None, framed[1][:5], with_schema_id(framed[2], 9999)])
    assert values[0] == (plain[0] if fmt == "json-schema" else orjson.dumps(orjson.loads(plain[0])))
    assert values[1:] == [None, None, None]
    assert {k: err.reason for k, err in refused.items()} == {2: "not_framed", 3: "unknown_schema"}


class Flaky:
    """A registry client that fails ``failures`` times with ``error``, then answers as ``client``."""

    def __init__(self, client, error: Exception, failures: int) -> None:
        self._client, self._error, self.failures = client, error, failures

    def register_schema(self, *args, **kwargs):
        if self.failures:
            self.failures -= 1
            raise self._error
        return self._client.register_schema(*args, **kwargs)

    def get_schema(self, *args, **kwargs):
        if self.failures:
            self.failures -= 1
            raise self._error
        return self._client.get_schema(*args, **kwargs)


@pytest.mark.parametrize("error", [SchemaRegistryError(503, 50301, "unavailable"), ConnectionRefusedError(111, "no")])
def test_a_registry_down_at_start_up_is_waited_for_with_a_growing_backoff(error):
    client = Flaky(mock_registry(), error, failures=4)
    waits: list[float] = []
    framing = register_outputs(settings("avro", schema_registry={"url": "http://r.invalid", "retry_max_s": 3.0}),
                               client, lambda s: waits.append(s) or False)
    assert waits == [1.0, 2.0, 3.0, 3.0]
    assert set(framing.ids) == {"predictions", "label-requests"}


def test_a_stop_requested_while_waiting_for_the_registry_registers_nothing():
    client = Flaky(mock_registry(), SchemaRegistryError(503, 50301, "unavailable"), failures=1)
    assert register_outputs(settings("json-schema"), client, lambda s: True) is None


@pytest.mark.parametrize(("status", "named"), [(409, "ACTIVESTREAM_OUTPUT_FORMAT=avro"), (422, "predictions-value"),
                                               (401, "ACTIVESTREAM_SCHEMA_REGISTRY__BASIC_AUTH_USER_INFO")])
def test_a_registry_refusing_a_schema_fails_at_start_up_naming_the_setting(status, named):
    client = Flaky(mock_registry(), SchemaRegistryError(status, status * 100, "refused"), failures=1)
    with pytest.raises(ConfigError, match=named):
        register_outputs(settings("avro"), client, never_wait)


def test_reading_back_a_schema_the_registry_cannot_give_now_raises_unavailable():
    client = mock_registry()
    framed = list(predictions(register_outputs(settings("avro"), client, never_wait)))
    reader = OutputReader(Flaky(client, SchemaRegistryError(503, 50301, "unavailable"), failures=1))
    with pytest.raises(RegistryUnavailable):
        reader.plain(framed[0])
    assert orjson.loads(reader.plain(framed[0]))["id"] == IDS[0]  # asked again once it answers
    with pytest.raises(InvalidRecord) as refused:
        reader.plain(b"\x00\x00\x00\x00\x01")
    assert refused.value.reason == "not_framed"


def test_a_framed_output_format_needs_a_registry_url():
    with pytest.raises(ConfigError, match="ACTIVESTREAM_OUTPUT_FORMAT=avro needs ACTIVESTREAM_SCHEMA_REGISTRY__URL"):
        load_settings(output_format="avro")
    assert load_settings().output_format == "json"
