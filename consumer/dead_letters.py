"""Dead letters: a rejected record's original bytes, with why and where it came from, in headers.

A dead letter carries the record's key, value and own headers untouched, followed by the service's
headers ``activestream.dlq.reason``, ``.detail``, ``.topic``, ``.partition`` and ``.offset``. A
record's own header with one of these names is dropped: a reader must never take a producer's
forgery for the service's verdict.

A dead letter the producer or the broker refuses as it is (too large, or an invalid record) is
written again :func:`truncated`: the first :data:`TRUNCATED_VALUE_BYTES` of its value, the first
:data:`TRUNCATED_KEY_BYTES` of its key, none of the record's own headers, and
``activestream.dlq.truncated`` = ``true`` with the original sizes, beside the source topic,
partition and offset (which tell where the whole record can still be read).
"""

from __future__ import annotations

from typing import Any

from consumer.errors import InvalidRecord

__all__ = [
    "HEADER_PREFIX",
    "TRUNCATED_KEY_BYTES",
    "TRUNCATED_VALUE_BYTES",
    "dead_letter",
    "is_truncated",
    "truncated",
]

HEADER_PREFIX = "activestream.dlq."
_FIELDS = ("reason", "detail", "topic", "partition", "offset")
_OWN = frozenset(HEADER_PREFIX + name for name in (*_FIELDS, "truncated", "original_size", "original_key_size",
                                                     "original_headers"))
# Far below librdkafka's and Kafka's 1 MB default message limit, far above what a reader needs to
# recognise a record.
TRUNCATED_VALUE_BYTES = 64 * 1024
TRUNCATED_KEY_BYTES = 1024
_DETAIL_CHARS = 1000

Headers = list[tuple[str, bytes]]


def dead_letter(msg: Any, err: InvalidRecord) -> tuple[bytes | None, bytes | None, Headers]:
    """(key, value, headers) for the dead-letter topic: the original bytes, untouched, and why."""
    meta = (err.reason, err.detail[:_DETAIL_CHARS], msg.topic(), str(msg.partition()), str(msg.offset()))
    headers = [(name, value) for name, value in msg.headers() or () if name not in _OWN]
    headers += [(HEADER_PREFIX + name, value.encode()) for name, value in zip(_FIELDS, meta, strict=True)]
    return msg.key(), msg.value(), headers


def truncated(key: bytes | None, value: bytes | None, headers: Headers | None,
              ) -> tuple[bytes | None, bytes | None, Headers]:
    """The dead letter cut down to fit any broker: see the module's docstring."""
    own = [(name, v) for name, v in headers or () if name in _OWN]
    sizes = [("truncated", b"true"), ("original_size", b"%d" % len(value or b"")),
             ("original_key_size", b"%d" % len(key or b"")),
             ("original_headers", b"%d" % (len(headers or ()) - len(own)))]
    own += [(HEADER_PREFIX + name, v) for name, v in sizes]
    return (None if key is None else key[:TRUNCATED_KEY_BYTES],
            None if value is None else value[:TRUNCATED_VALUE_BYTES], own)


def is_truncated(headers: Headers | None) -> bool:
    return any(name == HEADER_PREFIX + "truncated" for name, _ in headers or ())
