"""Outputs in the schema registry's wire format (``ACTIVESTREAM_OUTPUT_FORMAT`` json-schema or avro).

Predictions and label requests are written as confluent-kafka's ``JSONSerializer`` and
``AvroSerializer`` write: the magic byte 0, the id of the output's schema in the registry (4 bytes,
big-endian), then the payload. The schemas are registered at start-up under the subjects of
TopicNameStrategy, ``<topic>-value`` (:func:`register_outputs`):

- json-schema: ``prediction.v1.json`` and ``label-request.v1.json`` (its reference to the features
  of ``feature.v1.json`` inlined: a registered schema stands alone). The payload is the plain JSON
  record, byte for byte: the compiled writer lays the header before each record as one more
  constant part (:meth:`OutputFormat.prefix`), so a framed record costs what a plain one does. It
  is not validated record by record: the tests hold the writer to the schemas.
- avro: ``prediction.v1.avsc`` and ``label-request.v1.avsc``. Each plain JSON record is read again
  and written with its Avro schema (:meth:`OutputFormat.frame`): one fastavro call per record.

The service reads its own outputs back (the restart recovery and a scorer's read-back read the
predictions and label requests, a trainer the label requests): :class:`OutputReader` turns an
output written in any format, under any schema id, into its plain JSON record again.

Dead letters are not framed: a dead letter is the record that could not be read, as it came.
"""

from __future__ import annotations

import io
import json
import logging
import struct
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from consumer.errors import ConfigError, InvalidRecord, RegistryUnavailable
from consumer.fastwrite import Packed
from consumer.registry_formats import FRAMED_FORMATS, HEADER_BYTES, is_transport_error, registry_module

__all__ = ["OUTPUT_SCHEMAS", "OutputFormat", "OutputReader", "output_schema", "register_outputs", "subject_of"]

log = logging.getLogger(__name__)

SCHEMAS = Path(__file__).parent / "schemas"
# the topic setting of each output → the stem of its schemas in consumer/schemas
OUTPUT_SCHEMAS = {"predictions": "prediction.v1", "label_requests": "label-request.v1"}
_MAGIC = 0
_NOT_FOUND = 404
# HTTP answers that registering again will not change: the schema or the credentials are refused
# (408 and 429 are a busy registry, retried as an outage is)
_CREDENTIALS = (401, 403)


def subject_of(topic: str) -> str:
    """The subject a topic's values are registered under (TopicNameStrategy)."""
    return f"{topic}-value"


def output_schema(stem: str, fmt: str) -> str:
    """The text of the schema registered for the outputs of ``stem`` (e.g. "prediction.v1") in ``fmt``."""
    if fmt == "avro":
        return (SCHEMAS / f"{stem}.avsc").read_text()
    return json.dumps(_inlined(json.loads((SCHEMAS / f"{stem}.json").read_text())), separators=(",", ":"))


def _inlined(node: Any) -> Any:
    """``node`` with every ``{"$ref": "<file>#/<pointer>"}`` to a shipped schema replaced by what it
    points at (its own keywords beside the reference kept): the registry resolves no file names."""
    if isinstance(node, list):
        return [_inlined(item) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    out = {k: _inlined(v) for k, v in node.items() if k != "$ref"}
    if isinstance(ref, str) and not ref.startswith("#"):
        name, _, pointer = ref.partition("#")
        target: Any = json.loads((SCHEMAS / name).read_text())
        for part in filter(None, pointer.split("/")):
            target = target[part]
        out = {**_inlined(target), **out}
    elif ref is not None:
        out["$ref"] = ref
    return out


def _header(schema_id: int) -> bytes:
    return struct.pack(">bI", _MAGIC, schema_id)


class OutputFormat:
    """How the outputs of each topic are framed: ``ids`` {topic: the id of its registered schema},
    ``schemas`` {topic: the schema's text}."""

    def __init__(self, fmt: str, ids: Mapping[str, int], schemas: Mapping[str, str]) -> None:
        if fmt not in FRAMED_FORMATS:
            raise ValueError(f"output format {fmt!r} is not one of {FRAMED_FORMATS}")
        self.format = fmt
        self.ids = dict(ids)
        self._headers = {topic: _header(sid) for topic, sid in ids.items()}
        self._avro: dict[str, Any] = {}
        if fmt == "avro":
            import fastavro

            self._avro = {topic: fastavro.parse_schema(json.loads(text)) for topic, text in schemas.items()}

    def prefix(self, topic: str) -> bytes:
        """What the compiled writer lays before each record of ``topic``: the header for json-schema,
        whose payload is the plain record; nothing for avro, which :meth:`frame` writes anew."""
        return self._headers[topic] if self.format == "json-schema" else b""

    def frame(self, topic: str, values: Packed) -> Packed:
        """``values`` (the compiled writer's records, with :meth:`prefix`) as ``topic``'s framed records."""
        if self.format != "avro" or not len(values):
            return values
        from fastavro import schemaless_writer

        schema, header, loads = self._avro[topic], self._headers[topic], orjson.loads
        out = io.BytesIO()
        ends = np.empty(len(values), dtype=np.int64)
        for k, value in enumerate(values):
            out.write(header)
            schemaless_writer(out, schema, loads(value))
            ends[k] = out.tell()
        starts = np.empty_like(ends)
        starts[0], starts[1:] = 0, ends[:-1]
        return Packed(out.getvalue(), starts, ends)

    def known_schemas(self) -> dict[int, Any]:
        """{schema id: the parsed Avro schema, or None for a JSON Schema}: what an
        :class:`OutputReader` needs not ask the registry for."""
        return {sid: self._avro.get(topic) for topic, sid in self.ids.items()}


def register_outputs(settings: Any, client: Any, wait: Callable[[float], bool]) -> OutputFormat | None:
    """Register the outputs' schemas under ``<topic>-value`` (an unchanged schema keeps its id) and
    return how to frame them; None if ``wait`` (seconds → whether to stop) says to stop first.

    A registry that does not answer is asked again after 1 s, then twice as long each time, up to
    ``ACTIVESTREAM_SCHEMA_REGISTRY__RETRY_MAX_S``. A refusal (credentials, a schema the subject's
    compatibility rules refuse, one the registry finds invalid) raises :class:`ConfigError`."""
    sr = registry_module("ACTIVESTREAM_OUTPUT_FORMAT")
    fmt, topics = settings.output_format, settings.topics
    kind = "AVRO" if fmt == "avro" else "JSON"
    ids: dict[str, int] = {}
    texts: dict[str, str] = {}
    for setting, stem in OUTPUT_SCHEMAS.items():
        topic = getattr(topics, setting)
        texts[topic] = output_schema(stem, fmt)
        subject = subject_of(topic)
        backoff = 1.0
        while topic not in ids:
            try:
                ids[topic] = int(client.register_schema(subject, sr.Schema(texts[topic], kind)))
            except Exception as exc:  # the client raises whatever its HTTP stack raises
                if not _unreachable(exc, sr.SchemaRegistryError):
                    raise _refusal(exc, fmt, setting, subject, sr.SchemaRegistryError) from None
                log.warning("schema registry unavailable (%s: %s): registering %s again in %.0f s",
                            type(exc).__name__, exc, subject, backoff)
                if wait(backoff):
                    return None
                backoff = min(settings.schema_registry.retry_max_s, 2 * backoff)
        log.info("outputs to %s written as %s, schema id %d (subject %s)", topic, fmt, ids[topic], subject)
    return OutputFormat(fmt, ids, texts)


def _unreachable(exc: BaseException, registry_error: type) -> bool:
    """Whether ``exc`` means the registry did not answer (or answered that it cannot now)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, registry_error):
            status = seen.http_status_code
            return not (400 <= status < 500) or status in (408, 429)
        if is_transport_error(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _refusal(exc: Exception, fmt: str, setting: str, subject: str, registry_error: type) -> Exception:
    if not isinstance(exc, registry_error):
        return exc  # not the registry's answer: a fault of its own, raised as it is
    if exc.http_status_code in _CREDENTIALS:
        return ConfigError(f"ACTIVESTREAM_SCHEMA_REGISTRY__BASIC_AUTH_USER_INFO: the registry refused to register "
                           f"{subject} ({exc})")
    return ConfigError(f"ACTIVESTREAM_OUTPUT_FORMAT={fmt}: the registry refused the schema of "
                       f"ACTIVESTREAM_TOPICS__{setting.upper()} under the subject {subject} ({exc}); a subject "
                       "whose compatibility rules refuse it needs another topic, or its rules changed")


class OutputReader:
    """The service's own outputs read back as plain JSON records, whatever format wrote them: a
    plain record as it is, a framed one by its schema id (a JSON Schema payload is the record; an
    Avro one is written out as JSON). ``known``: schemas by id already at hand; others are asked of
    ``client`` once each."""

    def __init__(self, client: Any, known: Mapping[int, Any] | None = None) -> None:
        self._client = client
        self._schemas: dict[int, Any] = dict(known or {})

    def plain(self, value: bytes) -> bytes:
        """``value``'s plain JSON record. Raises :class:`InvalidRecord` for a framed value without a
        payload or naming a schema the registry does not hold, :class:`RegistryUnavailable` if the
        registry does not answer."""
        if not value or value[0] != _MAGIC:  # plain JSON: written unframed, e.g. before the format changed
            return value
        if len(value) <= HEADER_BYTES:
            raise InvalidRecord("not_framed", f"a header and no payload ({len(value)} bytes)")
        schema = self._schema(struct.unpack(">I", value[1:HEADER_BYTES])[0])
        if schema is None:
            return value[HEADER_BYTES:]
        from fastavro import schemaless_reader

        try:
            return orjson.dumps(schemaless_reader(io.BytesIO(value[HEADER_BYTES:]), schema, None))
        except (EOFError, ValueError, IndexError, UnicodeDecodeError) as exc:
            raise InvalidRecord("schema_mismatch", f"the payload does not match its Avro schema: {exc}") from None

    def plain_many(self, values: Sequence[bytes | None]) -> tuple[list[bytes | None], dict[int, InvalidRecord]]:
        """(the plain record of each value, {position: why} of those refused, whose place holds None),
        as :meth:`consumer.registry_formats.FramedReader.unframe` returns them."""
        out: list[bytes | None] = []
        refused: dict[int, InvalidRecord] = {}
        for k, value in enumerate(values):
            try:
                out.append(value if value is None else self.plain(bytes(value)))
            except InvalidRecord as err:
                refused[k] = err
                out.append(None)
        return out, refused

    def _schema(self, schema_id: int) -> Any:
        if schema_id in self._schemas:
            return self._schemas[schema_id]
        sr = registry_module("ACTIVESTREAM_OUTPUT_FORMAT")
        try:
            found = self._client.get_schema(schema_id)
        except Exception as exc:  # whatever the client's HTTP stack raises
            if isinstance(exc, sr.SchemaRegistryError) and exc.http_status_code == _NOT_FOUND:
                raise InvalidRecord("unknown_schema", f"schema id {schema_id} is not in the registry") from None
            if _unreachable(exc, sr.SchemaRegistryError) or isinstance(exc, sr.SchemaRegistryError):
                raise RegistryUnavailable(f"schema id {schema_id}: {type(exc).__name__}: {exc}") from None
            raise
        parsed = None
        if (found.schema_type or "AVRO") == "AVRO":  # the registry leaves the type out for Avro
            import fastavro

            parsed = fastavro.parse_schema(json.loads(found.schema_str))
        self._schemas[schema_id] = parsed
        return parsed
