"""Records (features, labels) read a batch at a time from librdkafka, without a Python object per message.

confluent-kafka's ``Consumer.consume`` makes a ``Message`` per record (its value, key and topic
copied into new Python objects), and the loop then calls ``value()``, ``partition()``,
``offset()`` and ``error()`` on each and joins the values. Read from librdkafka directly, a batch
of 2,000 comes out as columns: one buffer of values laid end to end (what the compiled scan reads),
their keys, partitions, offsets and timestamps, filled by one compiled loop.

How: the assigned partitions' fetch queues are forwarded to a queue of the reader's own
(``rd_kafka_queue_forward``, which librdkafka keeps over its own forwarding to the consumer queue),
and :meth:`BatchReader.read` takes a batch from it with ``rd_kafka_consume_batch_queue``. The
consumer queue keeps the group's events (rebalances, errors, statistics), which
``Consumer.poll`` still serves; librdkafka drops fetched messages of partitions that were revoked
or sought, as it does for the consumer queue. The consumer's ``rd_kafka_t`` is the first field of
confluent-kafka's client object; :func:`attach` checks it by its client name and otherwise
returns None, and the loop reads through ``Consumer.consume`` as before.

A batch keeps its messages alive until :meth:`Fetched.release`: a record the loop rejects goes to
the dead-letter topic with its key, value and headers, read from the message then.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from confluent_kafka import Consumer, TopicPartition
from llvmlite import ir
from numba import carray, njit, types
from numba.extending import intrinsic

from consumer import rdkafka

__all__ = ["BatchReader", "Fetched", "FetchedMessage", "attach"]

log = logging.getLogger(__name__)

_p = ctypes.c_void_p
_SIGNATURES = {
    "rd_kafka_name": (_p, [_p]),  # the address of the handle's name: read through _read_memory
    "rd_kafka_type": (ctypes.c_int, [_p]),
    "rd_kafka_queue_new": (_p, [_p]),
    "rd_kafka_queue_destroy": (None, [_p]),
    "rd_kafka_queue_get_partition": (_p, [_p, ctypes.c_char_p, ctypes.c_int32]),
    "rd_kafka_queue_get_consumer": (_p, [_p]),
    "rd_kafka_queue_forward": (None, [_p, _p]),
    "rd_kafka_queue_length": (ctypes.c_size_t, [_p]),
    "rd_kafka_consume_batch_queue": (ctypes.c_ssize_t, [_p, ctypes.c_int, _p, ctypes.c_size_t]),
    "rd_kafka_message_destroy": (None, [_p]),
    "rd_kafka_message_timestamp": (ctypes.c_int64, [_p, _p]),
    "rd_kafka_message_headers": (ctypes.c_int, [_p, _p]),
    "rd_kafka_header_cnt": (ctypes.c_size_t, [_p]),
    "rd_kafka_header_get_all": (ctypes.c_int, [_p, ctypes.c_size_t, _p, _p, _p]),
}
_CONSUMER = 1
_AUTO_OFFSET_RESET = -140  # RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET: a position the log does not hold


def _cast(to: types.Type) -> Any:
    """A compiled cast of an integer address to the pointer type ``to``."""

    @intrinsic
    def cast(typingctx, value):
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(to))

        return to(types.uint64), codegen

    return cast


_address = _cast(types.CPointer(types.int64))  # a message's fields, as 64-bit words
_bytes_at = _cast(types.CPointer(types.uint8))
_void = _cast(types.voidptr)


# rd_kafka_message_t (rdkafka.h) as 64-bit words: err, rkt, partition, payload, len, key, key_len, offset
_ERR, _PARTITION, _PAYLOAD, _LEN, _KEY, _KEY_LEN, _OFFSET = 0, 2, 3, 4, 5, 6, 7


def _call_at(address: Any, builder: Any, result: ir.Type, args: list) -> Any:
    """LLVM: call the C function at the integer ``address`` with ``args`` (each a ``void*``).

    librdkafka's functions are called at addresses passed in, not baked in as constants, so that the
    loops calling them compile once into numba's on-disk cache, not in every process: each start of
    the service spent 5-7 s of CPU compiling them before it read a record."""
    function = ir.FunctionType(result, [ir.IntType(8).as_pointer()] * len(args))
    return builder.call(builder.inttoptr(address, function.as_pointer()), args)


@intrinsic
def _message_timestamp(typingctx, address, message, kind):
    """int64_t rd_kafka_message_timestamp(const rd_kafka_message_t *, rd_kafka_timestamp_type_t *)"""

    def codegen(context, builder, signature, args):
        return _call_at(args[0], builder, ir.IntType(64), [args[1], args[2]])

    return types.int64(types.uint64, types.voidptr, types.voidptr), codegen


@intrinsic
def _message_destroy(typingctx, address, message):
    """void rd_kafka_message_destroy(rd_kafka_message_t *)"""

    def codegen(context, builder, signature, args):
        _call_at(args[0], builder, ir.VoidType(), [args[1]])
        return context.get_dummy_value()

    return types.none(types.uint64, types.voidptr), codegen


@njit(nogil=True, inline="always")
def _append(out, at, address, size):
    """Copy the ``size`` bytes at ``address`` to out[at:]; returns where they end."""
    if size > 0:
        out[at:at + size] = carray(_bytes_at(np.uint64(address)), size)
        return at + size
    return at


@njit(nogil=True, cache=True)
def _gather(ptrs, n, timestamp_fn):
    """Columns of messages ptrs[:n]: values and keys end to end with their bounds (a null value or
    key flagged), partitions, offsets, timestamps and their types, error codes; ``timestamp_fn`` is
    the address of rd_kafka_message_timestamp."""
    value_len = 0
    key_len = 0
    for k in range(n):
        m = carray(_address(ptrs[k]), 8)
        value_len += m[_LEN]
        key_len += m[_KEY_LEN]
    values = np.empty(value_len, dtype=np.uint8)
    keys = np.empty(key_len, dtype=np.uint8)
    bounds = np.zeros(n + 1, dtype=np.int64)
    key_bounds = np.zeros(n + 1, dtype=np.int64)
    null_value = np.zeros(n, dtype=np.bool_)
    null_key = np.zeros(n, dtype=np.bool_)
    partitions = np.empty(n, dtype=np.int32)
    offsets = np.empty(n, dtype=np.int64)
    stamps = np.empty(n, dtype=np.int64)
    kinds = np.zeros(n, dtype=np.int32)
    errors = np.empty(n, dtype=np.int32)
    at = 0
    key_at = 0
    for k in range(n):
        m = carray(_address(ptrs[k]), 8)
        errors[k] = np.int32(m[_ERR] & 0xFFFFFFFF)
        partitions[k] = np.int32(m[_PARTITION] & 0xFFFFFFFF)
        offsets[k] = m[_OFFSET]
        null_value[k] = m[_PAYLOAD] == 0
        at = bounds[k + 1] = _append(values, at, m[_PAYLOAD], m[_LEN])
        null_key[k] = m[_KEY] == 0
        key_at = key_bounds[k + 1] = _append(keys, key_at, m[_KEY], m[_KEY_LEN])
        stamps[k] = _message_timestamp(timestamp_fn, _void(ptrs[k]), _void(np.uint64(kinds[k:].ctypes.data)))
    return values, bounds, null_value, keys, key_bounds, null_key, partitions, offsets, stamps, kinds, errors


@njit(nogil=True, cache=True)
def _destroy_all(ptrs, destroy_fn):
    """rd_kafka_message_destroy (at address ``destroy_fn``) on every message of ``ptrs``."""
    for k in range(ptrs.size):
        _message_destroy(destroy_fn, _void(ptrs[k]))


def warm_up() -> None:
    """Load the loops from numba's cache (or compile them) now, reading nothing: with no message
    the function addresses are never called."""
    empty = np.zeros(0, dtype=np.uint64)
    _gather(empty, 0, np.uint64(0))
    _destroy_all(empty, np.uint64(0))


def _function_address(function: Any) -> np.uint64:
    return np.uint64(ctypes.cast(function, ctypes.c_void_p).value)


class BatchReader:
    """Reads the records of ``consumer``'s assigned partitions a batch at a time. Make it
    with :func:`attach`; call :meth:`forward` with the partitions of each assignment, right after
    ``assign``; :meth:`close` before the consumer closes."""

    def __init__(self, lib: ctypes.CDLL, rk: int, topic: str) -> None:
        self._lib, self._rk, self.topic = lib, rk, topic
        self._queue = lib.rd_kafka_queue_new(rk)
        self._timestamp_fn = _function_address(lib.rd_kafka_message_timestamp)
        self._destroy_fn = _function_address(lib.rd_kafka_message_destroy)
        self._ptrs = np.zeros(0, dtype=np.uint64)
        self._outstanding: set[Fetched] = set()
        self._forwarded: set[tuple[str, int]] = set()
        # (topic, partition, offset) of each position librdkafka found outside the log: the service's to act on
        self.out_of_range: list[tuple[str, int, int]] = []

    def warm_up(self) -> None:
        """Load the loops from numba's cache (or compile them) now, reading nothing."""
        warm_up()

    def _gather(self, ptrs: np.ndarray, n: int) -> tuple:
        return _gather(ptrs, n, self._timestamp_fn)

    def _destroy(self, ptrs: np.ndarray) -> None:
        _destroy_all(ptrs, self._destroy_fn)

    def forward(self, partitions: list[TopicPartition]) -> None:
        """Have these partitions' fetched records come to this reader."""
        for tp in partitions:
            if self._forward_partition(tp.topic, tp.partition, self._queue):
                self._forwarded.add((tp.topic, tp.partition))

    def _forward_partition(self, topic: str, partition: int, to: int) -> bool:
        queue = self._lib.rd_kafka_queue_get_partition(self._rk, topic.encode(), partition)
        if not queue:
            return False
        self._lib.rd_kafka_queue_forward(queue, to)
        self._lib.rd_kafka_queue_destroy(queue)
        return True

    def queued(self) -> int:
        """Records fetched for this reader and not read yet."""
        return self._lib.rd_kafka_queue_length(self._queue) if self._queue else 0

    def read(self, most: int, timeout_s: float) -> Fetched | None:
        """Up to ``most`` records: waits up to ``timeout_s`` for the first, then takes what is
        there (None if nothing came). Messages that carry an error instead of a record are logged
        and left out."""
        if self._ptrs.size < most:
            self._ptrs = np.zeros(most, dtype=np.uint64)
        # librdkafka waits until the whole batch is there: so the wait is for the first alone
        take, at = self._lib.rd_kafka_consume_batch_queue, self._ptrs.ctypes.data
        n = take(self._queue, int(timeout_s * 1000), at, 1)
        if n <= 0:
            return None
        if most > 1:
            n += max(0, take(self._queue, 0, at + self._ptrs.itemsize, most - 1))
        ptrs = self._ptrs[:n].copy()
        columns = self._gather(ptrs, n)
        errors = columns[-1]
        if errors.any():
            bad = np.flatnonzero(errors)
            values, bounds, partitions, offsets = columns[0], columns[1], columns[6], columns[7]
            for k in bad.tolist():  # an error message's payload is its text
                if errors[k] == _AUTO_OFFSET_RESET:
                    self.out_of_range.append((self.topic, int(partitions[k]), int(offsets[k])))
                    continue
                text = values[bounds[k]:bounds[k + 1]].tobytes()
                log.warning("consumer of %s: %s (%s)", self.topic, text.decode(errors="replace"), int(errors[k]))
            self._destroy(ptrs[bad])
            good = np.flatnonzero(errors == 0)
            if good.size == 0:
                return None
            return self._keep(Fetched.subset(self, ptrs[good], columns, good))
        return self._keep(Fetched(self, ptrs, *columns[:-1]))

    def _keep(self, batch: Fetched) -> Fetched:
        self._outstanding.add(batch)
        return batch

    def release(self, batch: Fetched) -> None:
        if batch in self._outstanding:
            self._outstanding.discard(batch)
            self._destroy(batch.ptrs)

    def close(self) -> None:
        """Free every batch still held, give the partitions back to the consumer's queue and free
        this reader's (before the consumer closes)."""
        for batch in list(self._outstanding):
            self.release(batch)
        # A partition left forwarded to a destroyed queue loses what is fetched for it next, and the
        # consumer's close, which unassigns it, could wait on that queue for good.
        consumer_queue = self._lib.rd_kafka_queue_get_consumer(self._rk) if self._forwarded else None
        if consumer_queue:
            for topic, partition in self._forwarded:
                self._forward_partition(topic, partition, consumer_queue)
            self._lib.rd_kafka_queue_destroy(consumer_queue)
        self._forwarded.clear()
        if self._queue:
            self._lib.rd_kafka_queue_destroy(self._queue)
            self._queue = None

    # -- a message's headers, for a rejected record --------------------------------------------
    def headers(self, ptr: int) -> list[tuple[str, bytes | None]] | None:
        hdrs = ctypes.c_void_p()
        if self._lib.rd_kafka_message_headers(ptr, ctypes.byref(hdrs)) != 0 or not hdrs.value:
            return None
        out = []
        name, value, size = ctypes.c_char_p(), ctypes.c_void_p(), ctypes.c_size_t()
        for i in range(self._lib.rd_kafka_header_cnt(hdrs)):
            self._lib.rd_kafka_header_get_all(hdrs, i, ctypes.byref(name), ctypes.byref(value), ctypes.byref(size))
            out.append(((name.value or b"").decode(errors="replace"),
                        ctypes.string_at(value.value, size.value) if value.value else None))
        return out


class Fetched(Sequence):
    """A batch read by :class:`BatchReader`: a sequence of :class:`FetchedMessage` (made on demand)
    over columns; ``values`` is the sequence of the values, ``blob`` and ``bounds`` the values end
    to end (value k is ``blob[bounds[k]:bounds[k+1]]``)."""

    def __init__(self, reader: BatchReader, ptrs: np.ndarray, values: np.ndarray, bounds: np.ndarray,
                 null_value: np.ndarray, keys: np.ndarray, key_bounds: np.ndarray, null_key: np.ndarray,
                 partitions: np.ndarray, offsets: np.ndarray, stamps: np.ndarray, kinds: np.ndarray) -> None:
        self.reader, self.ptrs = reader, ptrs
        self.blob, self.bounds, self.null_value = values.tobytes(), bounds, null_value
        self.keys, self.key_bounds, self.null_key = keys.tobytes(), key_bounds, null_key
        self.partitions, self.offsets, self.stamps, self.kinds = partitions, offsets, stamps, kinds
        self.values = _Values(self)

    @classmethod
    def subset(cls, reader: BatchReader, ptrs: np.ndarray, columns: tuple, keep: np.ndarray) -> Fetched:
        """The messages at ``keep`` of gathered ``columns`` (the others carried errors)."""
        values, bounds, null_value, keys, key_bounds, null_key, partitions, offsets, stamps, kinds, _ = columns
        return cls(reader, ptrs, *_spans(values, bounds, keep), null_value[keep], *_spans(keys, key_bounds, keep),
                   null_key[keep], partitions[keep], offsets[keep], stamps[keep], kinds[keep])

    def __len__(self) -> int:
        return len(self.ptrs)

    def __getitem__(self, k):  # type: ignore[override]
        return FetchedMessage(self, k if k >= 0 else k + len(self))

    def release(self) -> None:
        """Give the messages back to librdkafka (the columns stay readable)."""
        self.reader.release(self)


def _spans(data: np.ndarray, bounds: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    parts = [data[bounds[k]:bounds[k + 1]] for k in keep.tolist()]
    lengths = np.array([p.size for p in parts], dtype=np.int64)
    new_bounds = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_bounds[1:])
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)), new_bounds


class _Values(Sequence):
    """The values of a batch, each sliced out of its blob when asked for (None for a null value)."""

    def __init__(self, batch: Fetched) -> None:
        self._batch = batch

    def __len__(self) -> int:
        return len(self._batch)

    def __getitem__(self, k):  # type: ignore[override]
        b = self._batch
        return None if b.null_value[k] else b.blob[b.bounds[k]:b.bounds[k + 1]]


class FetchedMessage:
    """Message k of a batch, with confluent-kafka's ``Message`` interface (what the loop reads of a
    record it rejects)."""

    __slots__ = ("_batch", "_k")

    def __init__(self, batch: Fetched, k: int) -> None:
        if not 0 <= k < len(batch):
            raise IndexError(k)
        self._batch, self._k = batch, k

    def topic(self) -> str:
        return self._batch.reader.topic

    def partition(self) -> int:
        return int(self._batch.partitions[self._k])

    def offset(self) -> int:
        return int(self._batch.offsets[self._k])

    def value(self) -> bytes | None:
        return self._batch.values[self._k]

    def key(self) -> bytes | None:
        b, k = self._batch, self._k
        return None if b.null_key[k] else b.keys[b.key_bounds[k]:b.key_bounds[k + 1]]

    def timestamp(self) -> tuple[int, int]:
        return int(self._batch.kinds[self._k]), int(self._batch.stamps[self._k])

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self._batch.reader.headers(int(self._batch.ptrs[self._k]))

    def error(self) -> None:
        return None


def _library() -> Any | None:
    """librdkafka with this module's signatures set, or None where it cannot be loaded or lacks one."""
    lib = rdkafka.load()
    if lib is None:
        return None
    try:
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
    except AttributeError as exc:
        log.debug("librdkafka lacks %s", exc)
        return None
    return lib


def _read_memory(address: int, size: int) -> bytes | None:
    """``size`` bytes of this process's memory at ``address``, or None where they are not all mapped.

    Read through ``/proc/self/mem``, which answers an unmapped address with an error where a direct
    read would end the process."""
    try:
        fd = os.open("/proc/self/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.pread(fd, size, address)
    except (OSError, OverflowError, ValueError):
        return None
    finally:
        os.close(fd)
    return data if len(data) == size else None


_HANDLE_SPAN = 1024  # bytes of rd_kafka_t that must be mapped before librdkafka is handed the pointer
_NAME_SPAN = 128  # rd_kafka_t.rk_name is a char[128]


def _named_handle(lib: Any, rk: int, client_id: str) -> bool:
    """Whether ``rk`` is the ``rd_kafka_t`` of a consumer named ``client_id``, checked without trusting it.

    ``rd_kafka_name`` only adds the name's offset to the pointer; the memory at both is read through
    :func:`_read_memory` before librdkafka reads any of it, so a wrong pointer returns False."""
    if not rk or _read_memory(rk, _HANDLE_SPAN) is None:
        return False
    name = _read_memory(lib.rd_kafka_name(rk) or 0, _NAME_SPAN)
    if name is None or not name.split(b"\0", 1)[0].decode(errors="replace").startswith(f"{client_id}#consumer-"):
        return False
    return lib.rd_kafka_type(rk) == _CONSUMER


def _handle_of(consumer: Any) -> int:
    """The pointer in the first field after ``PyObject_HEAD`` of confluent-kafka's client object (``Handle.rk``),
    or 0 where the object has no room for it."""
    width = ctypes.sizeof(_p)
    if type(consumer).__basicsize__ < object.__basicsize__ + width:
        return 0
    raw = _read_memory(id(consumer) + object.__basicsize__, width)
    return int.from_bytes(raw, sys.byteorder) if raw else 0


def attach(consumer: Any, client_id: str, topic: str) -> BatchReader | None:
    """A reader of ``consumer``'s partitions of ``topic``, or None: where librdkafka cannot be
    loaded, ``consumer`` is not a confluent-kafka consumer (a test's fake), or its handle is not
    the client named ``client_id`` (a client library whose object layout differs)."""
    if not isinstance(consumer, Consumer):
        return None
    lib = _library()
    if lib is None:
        log.info("no librdkafka with the reader's functions: %s is read through Consumer.consume", topic)
        return None
    rk = _handle_of(consumer)
    if not _named_handle(lib, rk, client_id):
        log.info("the consumer's librdkafka handle was not found: %s is read through Consumer.consume", topic)
        return None
    return BatchReader(lib, rk, topic)
