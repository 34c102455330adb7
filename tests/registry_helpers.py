"""Records in the schema registry's wire format, written by confluent-kafka's own serializers with the
schemas shipped in consumer/schemas, for the unit tests and the tests against a real broker."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import consumer

SCHEMAS = Path(consumer.__file__).parent / "schemas"
FORMATS = ("json-schema", "avro")


def mock_registry() -> Any:
    """confluent-kafka's in-memory registry; each client holds its own schemas (a fresh URL anyway)."""
    return SchemaRegistryClient.new_client({"url": f"mock://{uuid.uuid4().hex}"})


class Writer:
    """Serializes features and labels for one topic each, as a producer using the registry would."""

    def __init__(self, client: Any, fmt: str, features_topic: str = "features", labels_topic: str = "labels") -> None:
        self.fmt = fmt
        self._serializers = {kind: self._serializer(client, fmt, kind) for kind in ("feature", "label")}
        self._contexts = {"feature": SerializationContext(features_topic, MessageField.VALUE),
                          "label": SerializationContext(labels_topic, MessageField.VALUE)}

    @staticmethod
    def _serializer(client: Any, fmt: str, kind: str) -> Any:
        if fmt == "avro":
            return AvroSerializer(client, (SCHEMAS / f"{kind}.v1.avsc").read_text())
        return JSONSerializer((SCHEMAS / f"{kind}.v1.json").read_text(), client)

    def feature(self, record: dict) -> bytes:
        return self._serializers["feature"](record, self._contexts["feature"])

    def label(self, record: dict) -> bytes:
        return self._serializers["label"](record, self._contexts["label"])


def with_schema_id(framed: bytes, schema_id: int) -> bytes:
    """The same payload under another schema id."""
    return framed[:1] + struct.pack(">I", schema_id) + framed[5:]
