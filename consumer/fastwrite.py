"""A compiled writer of prediction records, for a whole batch at once.

Every value is formatted by orjson, one column per call (the ids, the labels, and each float
column as a numpy array), so the output is byte for byte what ``orjson.dumps`` makes of the
record's dict; the compiled loop only cuts those columns apart and lays each record out between
the constant parts of the schema, with the source (``topic:partition:offset``) written in. The per
record work left in Python is nothing: the records stay in one buffer (:class:`Packed`), which the
producer sends as it is (:mod:`consumer.rdkafka`), where a dict per record and its serialisation
cost several times more (see ``benchmarks/service_throughput.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from numba import njit

__all__ = ["Packed", "pack", "write_predictions"]

_NUMPY = orjson.OPT_SERIALIZE_NUMPY
_TRUE, _FALSE = np.frombuffer(b"true", dtype=np.uint8), np.frombuffer(b"false", dtype=np.uint8)


@dataclass(frozen=True, slots=True)
class Packed:
    """Messages laid end to end in one buffer: message k is ``data[starts[k]:ends[k]]``. A sequence
    of bytes to Python; the producer sends the buffer without cutting it (:mod:`consumer.rdkafka`)."""

    data: bytes
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, k: int) -> bytes:
        return self.data[int(self.starts[k]):int(self.ends[k])]

    def __iter__(self) -> Iterator[bytes]:
        data = self.data
        return (data[a:b] for a, b in zip(self.starts.tolist(), self.ends.tolist(), strict=True))

    def select(self, which: Any) -> Packed:
        """The messages at ``which`` (positions or a boolean mask), in that order."""
        return Packed(self.data, self.starts[which], self.ends[which])


def pack(items: Sequence[bytes]) -> Packed:
    """``items`` laid end to end."""
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    ends = np.cumsum(lengths)
    return Packed(b"".join(items), ends - lengths, ends)


@njit(cache=True, nogil=True)
def _spans(buf, i, lo, hi):
    """Cut the compact JSON array of scalars at buf[i:] into its elements; returns where it ends."""
    i += 1  # '['
    for k in range(lo.size):
        lo[k] = i
        if buf[i] == 34:  # a string: up to the closing quote that is not escaped
            i += 1
            while buf[i] != 34:
                i += 2 if buf[i] == 92 else 1
            i += 1
        else:  # a number, true, false or null: up to the separator
            while buf[i] != 44 and buf[i] != 93:
                i += 1
        hi[k] = i
        i += 1  # ',' or ']'
    return i if lo.size else i + 1


@njit(cache=True, nogil=True, inline="always")
def _put(out, at, src, lo, hi):
    for j in range(lo, hi):
        out[at] = src[j]
        at += 1
    return at


@njit(cache=True, nogil=True, inline="always")
def _put_int(out, at, value):
    if value == 0:
        out[at] = 48
        return at + 1
    digits = 0
    v = value
    while v > 0:
        v //= 10
        digits += 1
    for j in range(digits - 1, -1, -1):
        out[at + j] = 48 + value % 10
        value //= 10
    return at + digits


@njit(cache=True, nogil=True)
def _write(columns, n, requested, partitions, offsets, pieces, cuts, out, bounds):
    """Record k = piece 0, id, piece 1, label, piece 2, score, piece 3, probability, piece 4,
    true|false, piece 5, ts, piece 6, partition, ':', offset, piece 7; ``columns`` holds the five
    JSON arrays (ids, labels, scores, probabilities, ts) back to back."""
    lo = np.empty((5, n), dtype=np.int64)
    hi = np.empty((5, n), dtype=np.int64)
    at = 0
    for c in range(5):
        at = _spans(columns, at, lo[c], hi[c])
    at = 0
    for k in range(n):
        bounds[k] = at
        for c in range(4):  # id, label, score, probability
            at = _put(out, at, pieces, cuts[c], cuts[c + 1])
            at = _put(out, at, columns, lo[c, k], hi[c, k])
        at = _put(out, at, pieces, cuts[4], cuts[5])
        word = _TRUE if requested[k] else _FALSE
        at = _put(out, at, word, 0, word.size)
        at = _put(out, at, pieces, cuts[5], cuts[6])
        at = _put(out, at, columns, lo[4, k], hi[4, k])  # ts
        at = _put(out, at, pieces, cuts[6], cuts[7])
        at = _put_int(out, at, partitions[k])
        out[at] = 58  # ':'
        at = _put_int(out, at + 1, offsets[k])
        at = _put(out, at, pieces, cuts[7], cuts[8])
    bounds[n] = at
    return at


def write_predictions(ids: Sequence[str], labels: Sequence[Any], scores: Any, probabilities: Any,
                      requested: Sequence[bool], ts: Any, model_version: int, predicted_at: float, topic: str,
                      partitions: Sequence[int], offsets: Sequence[int]) -> Packed:
    """The prediction record of each feature record, as ``orjson.dumps`` would write its dict::

        {"v": 1, "id", "label", "score", "probability", "label_requested", "model_version", "ts",
         "predicted_at", "source": "<topic>:<partition>:<offset>"}

    ``topic`` is a Kafka topic name (letters, digits, ``._-``: nothing to escape).
    """
    n = len(ids)
    columns = b"".join((orjson.dumps(ids), orjson.dumps(labels),
                        *(orjson.dumps(np.asarray(c, dtype=np.float64), option=_NUMPY)
                          for c in (scores, probabilities, ts))))
    parts = (b'{"v":1,"id":', b',"label":', b',"score":', b',"probability":', b',"label_requested":',
             b',"model_version":%d,"ts":' % model_version,
             b',"predicted_at":%b,"source":"%b:' % (orjson.dumps(predicted_at), topic.encode()), b'"}')
    pieces = np.frombuffer(b"".join(parts), dtype=np.uint8)
    cuts = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=cuts[1:])
    out = np.empty(len(columns) + n * (len(pieces) + 5 + 41), dtype=np.uint8)
    bounds = np.empty(n + 1, dtype=np.int64)
    used = _write(np.frombuffer(columns, dtype=np.uint8), n, np.asarray(requested, dtype=np.bool_),
                  np.asarray(partitions, dtype=np.int64), np.asarray(offsets, dtype=np.int64), pieces, cuts, out,
                  bounds)
    return Packed(out[:used].tobytes(), bounds[:-1], bounds[1:])
