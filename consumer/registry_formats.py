"""Input records in the schema registry's wire format (``ACTIVESTREAM_FORMAT`` json-schema or avro).

A framed record is what confluent-kafka's ``JSONSerializer`` and ``AvroSerializer`` write: the magic
byte 0, the schema's id in the registry (4 bytes, big-endian), then the payload. A
:class:`FramedReader` turns a batch of such values into the plain JSON records of
:mod:`consumer.records` (``docs/records.md``), which the usual decoders then read, rule for rule:

- json-schema: the payload is validated against its schema by ``JSONDeserializer``; then the payload
  itself, a JSON object, is the record (every strictness rule applies to it as to a plain one);
- avro: ``AvroDeserializer`` reads the payload with its schema, and the object it makes is written
  out again as JSON (a ``timestamp-millis``/``-micros`` field as ISO 8601 in UTC).

A value that is not framed, names a schema the registry does not hold, or does not match its schema
is refused with its own reason (:data:`consumer.records.FRAMED_REASONS`). A registry that does not
answer refuses nothing: :class:`~consumer.errors.RegistryUnavailable` is raised for the whole batch,
which the service reads again later (:class:`Backoff`).

confluent-kafka's registry modules (the ``schema-registry`` extra) are imported here only, when a
reader is made: the plain JSON path never loads them.
"""

from __future__ import annotations

import importlib
import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from consumer.errors import ConfigError, InvalidRecord, RegistryUnavailable

__all__ = ["FRAMED_FORMATS", "HEADER_BYTES", "Backoff", "FramedReader", "is_transport_error", "readers_for",
           "registry_client", "registry_module"]

FRAMED_FORMATS = ("json-schema", "avro")
HEADER_BYTES = 5  # the magic byte and the schema id
_MAGIC = 0
_NOT_FOUND = 404
# Modules whose exceptions mean the registry was not reached: the HTTP clients confluent-kafka uses
# (httpx before 2.13, httpx2 where installed) and their transports.
_TRANSPORT_MODULES = ("httpx", "httpx2", "httpcore", "httpcore2", "h11", "ssl")
_EXTRA = "activestream[schema-registry]"


def registry_client(settings: Any) -> Any:
    """A ``SchemaRegistryClient`` for ``settings.schema_registry`` (a ``mock://`` URL: confluent-kafka's
    in-memory registry, for tests); a missing extra is a :class:`ConfigError` naming it."""
    sr = registry_module("ACTIVESTREAM_FORMAT" if settings.format != "json" else "ACTIVESTREAM_OUTPUT_FORMAT")
    conf = _client_conf(settings.schema_registry)
    return sr.SchemaRegistryClient.new_client(conf) if conf["url"].startswith("mock://") else \
        sr.SchemaRegistryClient(conf)


def _client_conf(section: Any) -> dict[str, Any]:
    conf: dict[str, Any] = {"url": section.url, "timeout": section.timeout_s,
                            # one retry inside the client: the service's own backoff reads the records
                            # again later, without holding the loop (labels, checkpoints) meanwhile
                            "max.retries": 1}
    if section.basic_auth_user_info is not None:
        conf["basic.auth.user.info"] = section.basic_auth_user_info.get_secret_value()
    for name in ("ssl_ca_location", "ssl_certificate_location", "ssl_key_location"):
        path = getattr(section, name)
        if path is not None:
            conf[name.replace("_", ".")] = str(path)
    return conf


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the connection's failure (a socket's, TLS's, the HTTP client's), not an answer."""
    return isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in _TRANSPORT_MODULES


def registry_module(setting: str = "ACTIVESTREAM_FORMAT") -> Any:
    """confluent-kafka's registry package; ``setting``: the setting that needs it, named if it is missing."""
    try:
        # the package (httpx, authlib, cachetools, attrs) and both formats' modules (fastavro, jsonschema)
        sr = importlib.import_module("confluent_kafka.schema_registry")
        for fmt in ("avro", "json_schema"):
            importlib.import_module(f"confluent_kafka.schema_registry.{fmt}")
    except ImportError as exc:
        raise ConfigError(f"{setting} json-schema and avro need the schema-registry extra: "
                          f"pip install '{_EXTRA}' ({exc})") from None
    return sr


def readers_for(settings: Any, client: Any = None) -> tuple[FramedReader, FramedReader]:
    """The readers of the features topic and of the labels topic (``client``: a registry client
    already made, else one for the settings)."""
    client = registry_client(settings) if client is None else client
    return (FramedReader(settings.format, client, settings.topics.features),
            FramedReader(settings.format, client, settings.topics.labels))


class FramedReader:
    """Framed values of one topic → plain JSON records (see the module's docstring)."""

    def __init__(self, fmt: str, client: Any, topic: str) -> None:
        if fmt not in FRAMED_FORMATS:
            raise ValueError(f"format {fmt!r} is not one of {FRAMED_FORMATS}")
        sr = registry_module()
        from confluent_kafka.serialization import MessageField, SerializationContext

        self.format, self.topic = fmt, topic
        # the subject a reader would use for this topic (TopicNameStrategy): the deserializers ask
        # the registry for the writer's schema with it
        self._context = SerializationContext(topic, MessageField.VALUE)
        if fmt == "avro":
            self._deserialize: Callable[..., Any] = sr.avro.AvroDeserializer(schema_registry_client=client)
            self._plain = _avro_as_json
        else:
            self._deserialize = sr.json_schema.JSONDeserializer(None, schema_registry_client=client)
            self._plain = _json_payload
        self._registry_error = sr.SchemaRegistryError

    def unframe(self, values: Sequence[bytes | None]) -> tuple[list[bytes | None], dict[int, InvalidRecord]]:
        """(the plain JSON record of each value, {position: why} of those refused, whose place holds
        None). An empty value is passed on as it is, for the decoders to refuse. Raises
        :class:`RegistryUnavailable` if the registry does not answer for any of them."""
        out: list[bytes | None] = []
        refused: dict[int, InvalidRecord] = {}
        for k, value in enumerate(values):
            if not value:
                out.append(value)
                continue
            try:
                out.append(self._one(bytes(value)))
            except InvalidRecord as err:
                refused[k] = err
                out.append(None)
        return out, refused

    def _one(self, value: bytes) -> bytes:
        if len(value) <= HEADER_BYTES or value[0] != _MAGIC:
            raise InvalidRecord("not_framed", f"expected the magic byte {_MAGIC} and a 4-byte schema id before a "
                                f"payload, got {value[:HEADER_BYTES]!r} ({len(value)} bytes)")
        try:
            obj = self._deserialize(value, self._context)
        except Exception as exc:  # the deserializers raise whatever their parsers and the registry raise
            raise self._verdict(exc, struct.unpack(">I", value[1:HEADER_BYTES])[0]) from None
        return self._plain(value, obj)

    def _verdict(self, exc: Exception, schema_id: int) -> InvalidRecord | RegistryUnavailable:
        """What an exception of a deserializer means: no such schema, no registry, or a payload its
        schema does not read."""
        seen: BaseException | None = exc
        while seen is not None:
            if isinstance(seen, self._registry_error):
                if seen.http_status_code == _NOT_FOUND:
                    return InvalidRecord("unknown_schema", f"schema id {schema_id} is not in the registry ({seen})")
                return RegistryUnavailable(f"schema id {schema_id}: {seen}")
            if is_transport_error(seen):
                return RegistryUnavailable(f"schema id {schema_id}: {type(seen).__name__}: {seen}")
            seen = seen.__cause__ or seen.__context__
        return InvalidRecord("schema_mismatch", f"the payload does not match schema {schema_id}: "
                             f"{type(exc).__name__}: {exc}")


def _json_payload(value: bytes, obj: Any) -> bytes:
    """A JSON Schema record is its payload, as sent: the decoders apply every rule of a plain
    record to it (a repeated key, NaN), which the deserializer's own parser lets through."""
    return value[HEADER_BYTES:]


def _avro_as_json(value: bytes, obj: Any) -> bytes:
    """An Avro record as its JSON record: a null field is an absent one (Avro has no absent field: an
    optional one is a union with null), so a null "v" or "label" is refused as a missing one would be."""
    if type(obj) is dict and None in obj.values():
        obj = {name: field for name, field in obj.items() if field is not None}
    if not _finite(obj):  # JSON has no NaN or infinity: orjson would write null, which reads as absent
        raise InvalidRecord("bad_value", "a value is NaN or infinite")
    try:
        return orjson.dumps(obj, option=orjson.OPT_UTC_Z)
    except orjson.JSONEncodeError as exc:  # bytes, fixed, decimal: no field of a record takes them
        raise InvalidRecord("bad_value", f"a value JSON cannot carry: {exc}") from None


def _finite(obj: Any) -> bool:
    if type(obj) is float:
        return math.isfinite(obj)
    if isinstance(obj, dict):
        return all(map(_finite, obj.values()))
    if isinstance(obj, list):
        return all(map(_finite, obj))
    return True


class Backoff:
    """When a topic's records may be read again after the registry failed: 1 s after the first
    failure, twice as long after each next one, at most ``most_s``; a success starts over."""

    def __init__(self, most_s: float) -> None:
        self.most_s = most_s
        self.failures = 0
        self.until = -math.inf  # monotonic time

    def ready(self, now: float) -> bool:
        return now >= self.until

    def failed(self, now: float) -> float:
        """Count a failure at ``now``; the wait before the next attempt."""
        wait = min(self.most_s, 2.0 ** self.failures)
        self.failures += 1
        self.until = now + wait
        return wait

    def succeeded(self) -> None:
        self.failures = 0
        self.until = -math.inf
