"""Records in the schema registry's wire format, written by confluent-kafka's own serializers with the
schemas shipped in consumer/schemas, for the unit tests and the tests against a real broker."""

from __future__ import annotations

import json
import re
import struct
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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

    def __init__(self, client: Any, fmt: str, features_topic: str = "features", labels_topic: str = "labels",
                 revised: bool = False) -> None:
        self.fmt = fmt
        self._serializers = {kind: self._serializer(client, fmt, kind, revised) for kind in ("feature", "label")}
        self._contexts = {"feature": SerializationContext(features_topic, MessageField.VALUE),
                          "label": SerializationContext(labels_topic, MessageField.VALUE)}

    @staticmethod
    def _serializer(client: Any, fmt: str, kind: str, revised: bool) -> Any:
        """``revised``: the shipped schema with another description, which the registry holds under an
        id of its own (a reader that cached the first must ask for it)."""
        schema = json.loads((SCHEMAS / f"{kind}.v1.{'avsc' if fmt == 'avro' else 'json'}").read_text())
        if revised:
            schema["doc" if fmt == "avro" else "description"] += " Revised."
        if fmt == "avro":
            return AvroSerializer(client, json.dumps(schema))
        return JSONSerializer(json.dumps(schema), client)

    def feature(self, record: dict) -> bytes:
        return self._serializers["feature"](record, self._contexts["feature"])

    def label(self, record: dict) -> bytes:
        return self._serializers["label"](record, self._contexts["label"])


def with_schema_id(framed: bytes, schema_id: int) -> bytes:
    """The same payload under another schema id."""
    return framed[:1] + struct.pack(">I", schema_id) + framed[5:]


class RegistryStub:
    """A schema registry over HTTP, enough of Confluent's REST API for confluent-kafka's serializers
    and deserializers: register a schema under a subject (``subjects`` keeps which), fetch a schema
    by id. While ``down``,
    every request is answered 503, as a registry in an outage answers."""

    def __init__(self) -> None:
        self.schemas: list[dict] = []  # id k + 1 is schemas[k]
        self.subjects: dict[str, list[int]] = {}  # subject → the ids registered under it, in order
        self.down = False
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # no line per request on stderr
                pass

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if stub.down:
                    return self._answer(503, {"error_code": 50301, "message": "unavailable"})
                found = re.fullmatch(r"/schemas/ids/(\d+)", urlsplit(self.path).path)
                k = int(found.group(1)) - 1 if found else -1
                if not 0 <= k < len(stub.schemas):
                    return self._answer(404, {"error_code": 40403, "message": "Schema not found"})
                return self._answer(200, stub.schemas[k])

            def do_POST(self) -> None:
                if stub.down:
                    return self._answer(503, {"error_code": 50301, "message": "unavailable"})
                found = re.fullmatch(r"/subjects/([^/]+)/versions", urlsplit(self.path).path)
                if not found:
                    return self._answer(404, {"error_code": 404, "message": "not found"})
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                schema = {"schema": body["schema"], "schemaType": body.get("schemaType", "AVRO")}
                if schema not in stub.schemas:
                    stub.schemas.append(schema)
                sid = stub.schemas.index(schema) + 1
                versions = stub.subjects.setdefault(found.group(1), [])
                if sid not in versions:
                    versions.append(sid)
                return self._answer(200, {"id": sid, "subject": found.group(1), "version": 1, **schema})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
