"""A compiled writer of the service's output records (predictions, label requests), for a whole
batch at once.

Every value is formatted by orjson, one column per call (the ids, the labels, each float or integer
column as a numpy array), so the output is byte for byte what ``orjson.dumps`` makes of the
record's dict; the compiled loop only cuts those columns apart and lays each record out between
the constant parts of the schema. No per-record work is left in Python: the records stay in one
buffer (:class:`Packed`), which the producer sends as it is (:mod:`consumer.rdkafka`), where a dict
per record and its serialisation cost several times more (see ``benchmarks/service_throughput.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from llvmlite import ir
from numba import njit, types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

__all__ = ["Packed", "pack", "write_label_requests", "write_predictions"]

_NUMPY = orjson.OPT_SERIALIZE_NUMPY


@dataclass(frozen=True, slots=True)
class Packed:
    """Messages laid end to end in one buffer: message k is ``data[starts[k]:ends[k]]``. A sequence
    of bytes to Python; the producer sends the buffer without cutting it (:mod:`consumer.rdkafka`).
    ``data`` is bytes, or the uint8 array a compiled writer filled (not copied into bytes)."""

    data: bytes | np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, k: int) -> bytes:
        return bytes(self.data[int(self.starts[k]):int(self.ends[k])])

    def __iter__(self) -> Iterator[bytes]:
        data = self.data
        return (bytes(data[a:b]) for a, b in zip(self.starts.tolist(), self.ends.tolist(), strict=True))

    def select(self, which: Any) -> Packed:
        """The messages at ``which`` (positions or a boolean mask), in that order."""
        return Packed(self.data, self.starts[which], self.ends[which])


def pack(items: Sequence[bytes]) -> Packed:
    """``items`` laid end to end."""
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    ends = np.cumsum(lengths)
    return Packed(b"".join(items), ends - lengths, ends)


@intrinsic
def _word_at(typingctx, buf, i):
    """The 8 bytes at buf[i:] as one little-endian uint64, read where they lie (unaligned)."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.load(builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(64).as_pointer()), align=1)

    return types.uint64(buf, types.int64), codegen


@intrinsic
def _put_word(typingctx, buf, i, word):
    """Write the 8 bytes of ``word`` (little-endian) to buf[i:i + 8], unaligned."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        builder.store(args[2], builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(64).as_pointer()), align=1)
        return context.get_dummy_value()

    return types.void(buf, types.int64, types.uint64), codegen


_SLACK = 8  # bytes past the end of every buffer the compiled copies read or write a word at a time
_ONES, _HIGH = np.uint64(0x0101010101010101), np.uint64(0x8080808080808080)
_COMMAS, _BRACKETS = np.uint64(ord(",") * 0x0101010101010101), np.uint64(ord("]") * 0x0101010101010101)


@njit(cache=True, nogil=True, inline="always")
def _copy(out, at, src, lo, hi):
    """Copy src[lo:hi] to out[at:] a word at a time (up to 7 bytes more are read, and written
    past the copy, where the next copy overwrites them); returns where the copy ends."""
    for j in range(0, hi - lo, 8):
        _put_word(out, at + j, _word_at(src, lo + j))
    return at + hi - lo


@njit(cache=True, nogil=True, inline="always")
def _separator(word):
    """The position of the first ',' or ']' among the 8 bytes of ``word``, 8 if there is none.
    (x - 0x01..) & ~x & 0x80.. marks the lowest zero byte of x exactly; only bytes above it can
    be marked wrongly (by the borrow), and only the lowest mark is read."""
    commas, brackets = word ^ _COMMAS, word ^ _BRACKETS
    marks = ((commas - _ONES) & ~commas | (brackets - _ONES) & ~brackets) & _HIGH
    return 8 if marks == 0 else np.int64(trailing_zeros(marks)) >> 3


@njit(cache=True, nogil=True, inline="always")
def _put_element(out, at, src, i):
    """Copy the element of a compact JSON array of scalars that starts at src[i]; returns (where
    the copy ends, where the next element starts)."""
    if src[i] == 34:  # a string: up to the closing quote that is not escaped, a byte at a time
        out[at] = 34
        at += 1
        i += 1
        while src[i] != 34:
            if src[i] == 92:
                out[at] = 92
                at += 1
                i += 1
            out[at] = src[i]
            at += 1
            i += 1
        out[at] = 34
        return at + 1, i + 2  # past the quote and the ',' or ']'
    while True:  # a number, true, false or null: up to the separator, a word at a time
        word = _word_at(src, i)
        _put_word(out, at, word)
        k = _separator(word)
        if k < 8:
            return at + k, i + k + 1
        at += 8
        i += 8


@njit(cache=True, nogil=True)
def _interleave(src, arrays, lo, hi, pieces, cuts, out, bounds):
    """Record k = piece 0, value k of column 0, piece 1, ..., value k of column m-1, piece m.
    Column c is either the compact JSON array of scalars at src[arrays[c]:] (its elements read
    in order, in the same pass as they are copied) or, when arrays[c] < 0, the texts
    src[lo[c, k]:hi[c, k]]. ``src``, ``pieces`` and ``out`` have :data:`_SLACK` bytes to spare."""
    m, n = lo.shape
    cursor = arrays + 1  # past each array's '['
    at = 0
    for k in range(n):
        bounds[k] = at
        for c in range(m):
            at = _copy(out, at, pieces, cuts[c], cuts[c + 1])
            if arrays[c] >= 0:
                at, cursor[c] = _put_element(out, at, src, cursor[c])
            else:
                at = _copy(out, at, src, lo[c, k], hi[c, k])
        at = _copy(out, at, pieces, cuts[m], cuts[m + 1])
    bounds[n] = at


def _json_array(values: Any, kind: str = "") -> bytes:
    """``values`` as the JSON array orjson writes ("f": as float64, "i": as int64, "b": as bool)."""
    if kind:
        return orjson.dumps(np.asarray(values, dtype={"f": np.float64, "i": np.int64, "b": np.bool_}[kind]),
                            option=_NUMPY)
    return orjson.dumps(values)


def _records(parts: Sequence[bytes], columns: Sequence[bytes | Packed], n: int) -> Packed:
    """n records laid end to end: record k = parts[0], value k of columns[0], parts[1], ..., parts[m].
    A column is a compact JSON array of n scalars (:func:`_json_array`) or a :class:`Packed` of n
    JSON texts, written as they are."""
    buffers = [c.data if isinstance(c, Packed) else c for c in columns]
    src = np.frombuffer(b"".join([*buffers, bytes(_SLACK)]), dtype=np.uint8)
    arrays = np.full(len(columns), -1, dtype=np.int64)
    lo, hi = np.zeros((len(columns), n), dtype=np.int64), np.zeros((len(columns), n), dtype=np.int64)
    base, size = 0, 0
    for c, column in enumerate(columns):
        if isinstance(column, Packed):
            lo[c], hi[c] = column.starts + base, column.ends + base
            size += int((column.ends - column.starts).sum())
        else:
            arrays[c] = base
            size += len(column) - 1 - n if n else 0  # the array without its brackets and commas
        base += len(buffers[c])
    pieces = np.frombuffer(b"".join([*parts, bytes(_SLACK)]), dtype=np.uint8)
    cuts = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=cuts[1:])
    size += n * int(cuts[-1])
    out = np.empty(size + _SLACK, dtype=np.uint8)
    bounds = np.empty(n + 1, dtype=np.int64)
    _interleave(src, arrays, lo, hi, pieces, cuts, out, bounds)
    return Packed(out[:size], bounds[:-1], bounds[1:])


def write_predictions(ids: Sequence[str], labels: Sequence[Any], scores: Any, probabilities: Any,
                      requested: Sequence[bool], ts: Any, model_version: int, predicted_at: float, topic: str,
                      partitions: Sequence[int], offsets: Sequence[int], prefix: bytes = b"") -> Packed:
    """The prediction record of each feature record, as ``orjson.dumps`` would write its dict::

        {"v": 1, "id", "label", "score", "probability", "label_requested", "model_version", "ts",
         "predicted_at", "source": "<topic>:<partition>:<offset>"}

    ``topic`` is a Kafka topic name (letters, digits, ``._-``: nothing to escape). ``prefix`` goes
    before each record (a schema registry's header, :mod:`consumer.output_formats`).
    """
    parts = (prefix + b'{"v":1,"id":', b',"label":', b',"score":', b',"probability":', b',"label_requested":',
             b',"model_version":%d,"ts":' % model_version,
             b',"predicted_at":%b,"source":"%b:' % (orjson.dumps(predicted_at), topic.encode()), b":", b'"}')
    columns = (_json_array(ids), _json_array(labels), _json_array(scores, "f"), _json_array(probabilities, "f"),
               _json_array(requested, "b"), _json_array(ts, "f"), _json_array(partitions, "i"),
               _json_array(offsets, "i"))
    return _records(parts, columns, len(ids))


def write_label_requests(ids: Sequence[str], features: Packed, predictions: Sequence[Any], scores: Any,
                         probabilities: Any, uncertainty: Any, costs: Any, requested_at: float, expires_at: float,
                         model_version: int, topic: str, partitions: Sequence[int], offsets: Sequence[int],
                         prefix: bytes = b"") -> Packed:
    """The label request of each record, as ``orjson.dumps`` would write its dict::

        {"v": 1, "id", "features", "prediction", "score", "probability", "uncertainty", "cost",
         "requested_at", "expires_at", "model_version", "source": "<topic>:<partition>:<offset>"}

    ``features`` holds each record's features as JSON text (the received text, written as is).
    ``prefix`` goes before each record, as in :func:`write_predictions`.
    """
    parts = (prefix + b'{"v":1,"id":', b',"features":', b',"prediction":', b',"score":', b',"probability":',
             b',"uncertainty":', b',"cost":',
             b',"requested_at":%b,"expires_at":%b,"model_version":%d,"source":"%b:' % (
                 orjson.dumps(requested_at), orjson.dumps(expires_at), model_version, topic.encode()),
             b":", b'"}')
    columns = (_json_array(ids), features, _json_array(predictions), _json_array(scores, "f"),
               _json_array(probabilities, "f"), _json_array(uncertainty, "f"), _json_array(costs, "f"),
               _json_array(partitions, "i"), _json_array(offsets, "i"))
    return _records(parts, columns, len(ids))
