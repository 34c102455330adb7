"""Where the processes' logs go: one stream (stderr) in one format, librdkafka's lines included.

``ACTIVESTREAM_LOG_FORMAT=text`` (the default) writes ``<time> <LEVEL> <logger>: <message>``;
``json`` writes one JSON object per line: ``time`` (ISO 8601, UTC), ``level``, ``logger``,
``message``, ``exception`` (the traceback, when there is one), then the record's ``extra`` fields.

librdkafka does not print on its own: every Kafka client the service makes is given
:func:`kafka_logger` (confluent-kafka's ``logger`` property; the batch producer's own log callback),
and its lines are logged from the client's ``poll``/``flush`` under the logger ``librdkafka``, at
their syslog level mapped to Python's (3 ERROR, 4 WARNING, 5 and 6 INFO, 7 DEBUG), as
``FACILITY [client name] text``, with ``facility`` and ``client`` as fields of their own. What
librdkafka emits is still set by its ``log_level`` and ``debug`` properties
(``ACTIVESTREAM_KAFKA__LOG_LEVEL``, ``ACTIVESTREAM_KAFKA__DEBUG``): ``ACTIVESTREAM_LOG_LEVEL`` does
not filter them, so asking librdkafka for its debug contexts needs no Python debug logging.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any, TextIO

import orjson

__all__ = ["KAFKA_LOGGER", "TEXT_FORMAT", "JsonFormatter", "configure", "kafka_logger", "print_error",
           "requested_format"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
KAFKA_LOGGER = "librdkafka"

# What every LogRecord carries; anything else on a record came from ``extra=`` (or a filter).
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _iso_utc(created: float, msecs: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(msecs):03d}Z"


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON: time (ISO 8601 UTC, milliseconds), level, logger, message,
    exception and stack (when present), then its ``extra`` fields, each unless it would replace one
    of those. Values JSON cannot hold are written as their ``str``."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"time": _iso_utc(record.created, record.msecs), "level": record.levelname,
                               "logger": record.name, "message": record.getMessage()}
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in out:
                out[key] = value
        try:
            return orjson.dumps(out, default=str, option=_OPTIONS).decode()
        except TypeError:  # e.g. an int beyond 64 bits, which orjson refuses without asking `default`
            return orjson.dumps({k: v if isinstance(v, str) else repr(v) for k, v in out.items()}).decode()


class _KafkaFields(logging.Filter):
    """Splits confluent-kafka's ``log(level, "%s [%s] %s", facility, name, text)`` into fields."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 3 and record.msg == "%s [%s] %s":
            record.facility, record.client = args[0], args[1]
        return True


_kafka = logging.getLogger(KAFKA_LOGGER)
_kafka.addFilter(_KafkaFields())


def kafka_logger() -> logging.Logger:
    """The logger every Kafka client of the service logs through (confluent-kafka's ``logger``)."""
    return _kafka


def configure(level: str | int, fmt: str = "text", stream: TextIO | None = None) -> None:
    """Log ``level`` and above to ``stream`` (stderr) as ``fmt`` ("text" or "json"); every line
    librdkafka emits is logged (its own ``log_level`` and ``debug`` properties choose them)."""
    if fmt == "json":
        handler = logging.StreamHandler(stream)
        handler.setFormatter(JsonFormatter())
        logging.basicConfig(level=level, handlers=[handler])
        logging.captureWarnings(True)  # warnings.warn, as JSON too rather than as text on stderr
    else:
        logging.basicConfig(level=level, format=TEXT_FORMAT, stream=stream)
    _kafka.setLevel(logging.DEBUG)


def requested_format(settings_format: str | None = None) -> str:
    """The log format in effect: the settings' own, or where they could not be read, the
    environment's ``ACTIVESTREAM_LOG_FORMAT`` when it is a valid one, else text."""
    if settings_format is not None:
        return settings_format
    wanted = os.environ.get("ACTIVESTREAM_LOG_FORMAT", "").strip()
    return wanted if wanted in ("text", "json") else "text"


def print_error(text: str, fmt: str, logger: str = "activestream") -> None:
    """Write a refusal (bad configuration, exit code 2) to stderr: as it is in text, as one JSON
    object (level ERROR, ``logger``) in json, even before logging is configured."""
    if fmt == "json":
        now = time.time()
        line = {"time": _iso_utc(now, (now - int(now)) * 1000), "level": "ERROR", "logger": logger, "message": text}
        print(orjson.dumps(line).decode(), file=sys.stderr)
    else:
        print(text, file=sys.stderr)
