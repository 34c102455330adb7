"""A producer that sends a whole batch of messages with one librdkafka call.

confluent-kafka's ``Producer.produce`` costs one Python call per message, and its
``delivery.report.only.error`` is applied in Python, so librdkafka still queues a delivery report
for every message and ``poll`` serves each. The predictions (one per record) and the
label requests already lie end to end in one buffer each (:class:`consumer.fastwrite.Packed`), so
this sends them with ``rd_kafka_produce_batch`` on the librdkafka that the confluent-kafka wheel
ships, through ctypes: one call for the batch (all in C, with the GIL released) and librdkafka's
own ``delivery.report.only.error``, so a successful message costs nothing more.

Only failed deliveries reach Python, through the ``on_failed`` callback, while :meth:`poll` or
:meth:`flush` runs; the :class:`consumer.kafka.Emitter` re-sends or stops on them as for any other
message. :func:`load` returns None where no librdkafka can be loaded; the emitter then produces
every output one by one.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import glob
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["MESSAGE", "BatchProducer", "load"]

log = logging.getLogger(__name__)

_PRODUCER, _PARTITION_UA, _MSG_F_COPY = 0, -1, 0x2
_ERR_FATAL = -150
_PURGE_QUEUE, _PURGE_INFLIGHT = 0x1, 0x2

_p = ctypes.c_void_p
_DR_CB = ctypes.CFUNCTYPE(None, _p, _p, _p)  # (rk, const rd_kafka_message_t *, opaque)
_ERROR_CB = ctypes.CFUNCTYPE(None, _p, ctypes.c_int, ctypes.c_char_p, _p)  # (rk, err, reason, opaque)
# (rk, json, json_len, opaque) -> 0: librdkafka frees the json (a char * kept raw: it is not NUL-bound)
_STATS_CB = ctypes.CFUNCTYPE(ctypes.c_int, _p, _p, ctypes.c_size_t, _p)
_LOG_CB = ctypes.CFUNCTYPE(None, _p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)  # (rk, level, fac, text)
_SIGNATURES = {
    "rd_kafka_conf_new": (_p, []),
    "rd_kafka_conf_destroy": (None, [_p]),
    "rd_kafka_conf_set": (ctypes.c_int, [_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "rd_kafka_conf_set_dr_msg_cb": (None, [_p, _DR_CB]),
    "rd_kafka_conf_set_error_cb": (None, [_p, _ERROR_CB]),
    "rd_kafka_conf_set_stats_cb": (None, [_p, _STATS_CB]),
    "rd_kafka_conf_set_log_cb": (None, [_p, _LOG_CB]),
    "rd_kafka_set_log_queue": (ctypes.c_int, [_p, _p]),
    "rd_kafka_name": (_p, [_p]),  # as consumer.batch_reader declares it (the same function object)
    "rd_kafka_new": (_p, [ctypes.c_int, _p, ctypes.c_char_p, ctypes.c_size_t]),
    "rd_kafka_destroy": (None, [_p]),
    "rd_kafka_topic_new": (_p, [_p, ctypes.c_char_p, _p]),
    "rd_kafka_topic_destroy": (None, [_p]),
    "rd_kafka_topic_name": (ctypes.c_char_p, [_p]),
    "rd_kafka_produce_batch": (ctypes.c_int, [_p, ctypes.c_int32, ctypes.c_int, _p, ctypes.c_int]),
    "rd_kafka_poll": (ctypes.c_int, [_p, ctypes.c_int]),
    "rd_kafka_flush": (ctypes.c_int, [_p, ctypes.c_int]),
    "rd_kafka_purge": (ctypes.c_int, [_p, ctypes.c_int]),
    "rd_kafka_outq_len": (ctypes.c_int, [_p]),
    "rd_kafka_err2str": (ctypes.c_char_p, [ctypes.c_int]),
    "rd_kafka_fatal_error": (ctypes.c_int, [_p, ctypes.c_char_p, ctypes.c_size_t]),
}


class _Message(ctypes.Structure):
    """rd_kafka_message_t (rdkafka.h)."""

    _fields_ = [("err", ctypes.c_int), ("rkt", _p), ("partition", ctypes.c_int32), ("payload", _p),
                ("len", ctypes.c_size_t), ("key", _p), ("key_len", ctypes.c_size_t), ("offset", ctypes.c_int64),
                ("private", _p)]


MESSAGE = np.dtype(_Message)  # the same layout as a NumPy record, to fill a whole batch at once


def _library_paths() -> list[str]:
    import confluent_kafka  # the wheel's own librdkafka first: the one its clients run on

    here = os.path.dirname(confluent_kafka.__file__)
    found = sorted(glob.glob(os.path.join(here, "..", "confluent_kafka.libs", "librdkafka*.so*")))
    system = ctypes.util.find_library("rdkafka")
    return [os.path.realpath(p) for p in found] + ([system] if system else [])


_lib: ctypes.CDLL | None = None


def load() -> ctypes.CDLL | None:
    """librdkafka with the signatures used here, or None where none can be loaded."""
    global _lib
    if _lib is None:
        for path in _library_paths():
            try:
                lib = ctypes.CDLL(path)
                for name, (restype, argtypes) in _SIGNATURES.items():
                    fn = getattr(lib, name)
                    fn.restype, fn.argtypes = restype, argtypes
            except (OSError, AttributeError) as exc:
                log.debug("librdkafka at %s not usable: %s", path, exc)
                continue
            _lib = lib
            break
    return _lib


# (topic, error code, error text, key, value) of a message that was not delivered
FailedCallback = Callable[[str, int, str, bytes | None, bytes | None, int], None]  # ..., partition
# (error code, reason, fatal) of a client-level error
ErrorCallback = Callable[[int, str, bool], None]
# librdkafka's statistics (JSON), every ``statistics.interval.ms``
StatsCallback = Callable[[bytes], None]
# librdkafka's syslog levels (0 emergency ... 7 debug) as Python's, as confluent-kafka maps them
_LEVELS = (logging.CRITICAL, logging.CRITICAL, logging.CRITICAL, logging.ERROR, logging.WARNING, logging.INFO,
           logging.INFO, logging.DEBUG)


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


class BatchProducer:
    """A librdkafka producer of its own, fed many messages per call.

    ``config`` holds librdkafka properties (the emitter's producer settings); values that are not
    properties (Python callbacks) must be left out. A property librdkafka refuses raises
    ``ValueError`` naming it. ``on_stats`` receives librdkafka's statistics while :meth:`poll`
    runs, when ``statistics.interval.ms`` is set. With a ``logger``, librdkafka's log lines go to
    it while :meth:`poll` or :meth:`flush` runs, as confluent-kafka's clients send them to theirs
    (``"%s [%s] %s"``: facility, client name, text); without one librdkafka prints them to stderr.
    """

    def __init__(self, lib: ctypes.CDLL, config: Mapping[str, Any], on_failed: FailedCallback,
                 on_error: ErrorCallback, on_stats: StatsCallback | None = None,
                 logger: logging.Logger | None = None) -> None:
        self._lib = lib
        self._on_failed, self._on_error, self._on_stats = on_failed, on_error, on_stats
        self._dr_cb, self._error_cb = _DR_CB(self._delivered), _ERROR_CB(self._errored)  # kept alive with self
        self._stats_cb = _STATS_CB(self._statistics)
        self._logger, self._log_cb, self._name = logger, _LOG_CB(self._logged), ""
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        # with a logger, the lines queue until poll/flush serves them on the caller's thread
        own = {"delivery.report.only.error": "true", **({"log.queue": "true"} if logger is not None else {})}
        for name, value in {**config, **own}.items():
            if lib.rd_kafka_conf_set(conf, name.encode(), _text(value).encode(), errstr, len(errstr)) != 0:
                lib.rd_kafka_conf_destroy(conf)
                raise ValueError(f"{name}: {errstr.value.decode(errors='replace')}")
        lib.rd_kafka_conf_set_dr_msg_cb(conf, self._dr_cb)
        lib.rd_kafka_conf_set_error_cb(conf, self._error_cb)
        if on_stats is not None:
            lib.rd_kafka_conf_set_stats_cb(conf, self._stats_cb)
        if logger is not None:
            lib.rd_kafka_conf_set_log_cb(conf, self._log_cb)
        self._rk = lib.rd_kafka_new(_PRODUCER, conf, errstr, len(errstr))  # owns conf from here on
        if not self._rk:
            lib.rd_kafka_conf_destroy(conf)
            raise ValueError(errstr.value.decode(errors="replace"))
        if logger is not None:
            self._name = ctypes.string_at(lib.rd_kafka_name(self._rk)).decode(errors="replace")
            lib.rd_kafka_set_log_queue(self._rk, None)  # the main queue: what rd_kafka_poll serves
        self._topics: dict[str, int] = {}
        self._closing = False

    def _topic(self, name: str) -> int:
        rkt = self._topics.get(name)
        if rkt is None:
            rkt = self._topics[name] = self._lib.rd_kafka_topic_new(self._rk, name.encode(), None)
            if not rkt:
                raise ValueError(f"cannot produce to topic {name!r}")
        return rkt

    def __len__(self) -> int:
        """Messages not yet acknowledged by the broker."""
        return self._lib.rd_kafka_outq_len(self._rk) if self._rk else 0

    def produce_batch(self, topic: str, keys: bytes | np.ndarray, key_starts: np.ndarray, key_ends: np.ndarray,
                      values: bytes | np.ndarray, starts: np.ndarray, ends: np.ndarray,
                      partition: int = _PARTITION_UA) -> np.ndarray:
        """Queue message k = (key ``keys[key_starts[k]:key_ends[k]]``, value ``values[starts[k]:ends[k]]``)
        for every k, in order (librdkafka copies them), each to the partition of its key, or all to
        ``partition``. Returns the positions of the messages librdkafka did not take (its queue was
        full), usually none."""
        if not self._rk:
            raise ValueError("the producer is closed")
        n = len(starts)
        messages = np.zeros(n, dtype=MESSAGE)
        # The buffers only have to live through the call (the messages are copied): the views below
        # keep them, and the addresses are their data pointers plus each message's offset.
        value_view, key_view = np.frombuffer(values, dtype=np.uint8), np.frombuffer(keys, dtype=np.uint8)
        messages["payload"] = value_view.ctypes.data + np.asarray(starts, dtype=np.uintp)
        messages["len"] = np.asarray(ends, dtype=np.uintp) - np.asarray(starts, dtype=np.uintp)
        messages["key"] = key_view.ctypes.data + np.asarray(key_starts, dtype=np.uintp)
        messages["key_len"] = np.asarray(key_ends, dtype=np.uintp) - np.asarray(key_starts, dtype=np.uintp)
        taken = self._lib.rd_kafka_produce_batch(self._topic(topic), partition, _MSG_F_COPY,
                                                 messages.ctypes.data, n)
        if taken == n:
            return np.empty(0, dtype=np.int64)
        return np.flatnonzero(messages["err"] != 0)

    def _delivered(self, rk: int, message: int, opaque: int) -> None:
        # Runs inside poll/flush for a failed message only; an exception here cannot cross C.
        if self._closing:
            return  # dropped on purpose by close()
        try:
            m = _Message.from_address(message)
            topic = self._lib.rd_kafka_topic_name(m.rkt).decode()
            key = ctypes.string_at(m.key, m.key_len) if m.key else None
            value = ctypes.string_at(m.payload, m.len) if m.payload else None
            self._on_failed(topic, m.err, self._lib.rd_kafka_err2str(m.err).decode(), key, value, m.partition)
        except Exception:
            log.exception("handling a failed delivery")

    def _errored(self, rk: int, err: int, reason: bytes | None, opaque: int) -> None:
        try:
            text = (reason or b"").decode(errors="replace")
            fatal = err == _ERR_FATAL
            if fatal:  # the idempotent producer cannot go on: which error made it so
                buf = ctypes.create_string_buffer(512)
                err = self._lib.rd_kafka_fatal_error(self._rk, buf, len(buf))
                text = buf.value.decode(errors="replace") or text
            self._on_error(err, text, fatal)
        except Exception:
            log.exception("handling a producer error")

    def _statistics(self, rk: int, json: int, length: int, opaque: int) -> int:
        try:
            self._on_stats(ctypes.string_at(json, length))
        except Exception:
            log.exception("handling librdkafka statistics")
        return 0  # librdkafka frees the JSON

    def _logged(self, rk: int, level: int, facility: bytes | None, text: bytes | None) -> None:
        with contextlib.suppress(Exception):  # an exception cannot cross C
            self._logger.log(_LEVELS[min(max(level, 0), 7)], "%s [%s] %s", (facility or b"").decode(errors="replace"),
                             self._name, (text or b"").decode(errors="replace"))

    def poll(self, timeout_s: float = 0.0) -> None:
        """Serve failed deliveries, client errors and log lines (nothing once closed)."""
        if self._rk:
            self._lib.rd_kafka_poll(self._rk, int(timeout_s * 1000))

    def flush(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for every message to be acknowledged; returns how many are left
        (none once closed: what was left went with the client)."""
        if self._rk:
            self._lib.rd_kafka_flush(self._rk, max(0, int(timeout_s * 1000)))
        return len(self)

    def close(self, timeout_s: float = 0.0) -> None:
        """Flush for up to ``timeout_s``, drop what is left, and free the client."""
        if not self._rk:
            return
        if timeout_s > 0:
            self.flush(timeout_s)
        self._closing = True
        self._lib.rd_kafka_purge(self._rk, _PURGE_QUEUE | _PURGE_INFLIGHT)
        self._lib.rd_kafka_poll(self._rk, 0)
        for rkt in self._topics.values():
            self._lib.rd_kafka_topic_destroy(rkt)
        self._topics.clear()
        self._lib.rd_kafka_destroy(self._rk)
        self._rk = None
