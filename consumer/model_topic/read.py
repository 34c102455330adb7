"""Reading the model topic back: the newest manifest of a kind, and the newest complete checkpoint."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from consumer.model_topic.codec import State, decode_state
from consumer.model_topic.manifest import CHECKPOINT, MODEL, PART, _assemble, _parse_key, _parse_manifest, _parts_of

__all__ = ["newest_manifest", "read_model_checkpoint"]

log = logging.getLogger(__name__)

# Backward search for the newest manifest: the first window, then each one this many times wider.
_FIRST_WINDOW, _WINDOW_GROWTH = 64, 4
_READ_BATCH = 256


def _read_range(consumer: Any, topic: str, start: int, end: int, deadline: float) -> Iterator[Any]:
    """The records at offsets [start, end) of partition 0 (compaction and transaction markers leave
    gaps; at the log's end only ``enable.partition.eof`` tells), one by one: a wide range of chunks
    is never held at once. ``TimeoutError`` if not read by ``deadline``."""
    consumer.assign([TopicPartition(topic, 0, start)])
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"reading offsets {start}..{end} of {topic} took too long")
        for msg in consumer.consume(_READ_BATCH, min(remaining, 0.5)):
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:  # the end of the log: nothing more
                    return
                log.warning("reading %s: %s", topic, msg.error().str())
                continue
            if msg.offset() >= end - 1:  # the last offset of the range, or past a gap at its end
                if msg.offset() < end:
                    yield msg
                return
            if msg.offset() >= start:
                yield msg


def _manifests_backward(consumer: Any, topic: str, prefix: str, deadline: float) -> Iterator[tuple[int, dict]]:
    """(offset, manifest) of ``prefix``'s valid manifests, newest first, reading windows backward
    from the end, each wider than the last."""
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0),
                                               timeout=max(0.1, deadline - time.monotonic()))
    end, width = high, _FIRST_WINDOW
    while end > low:
        start = max(low, end - width)
        found = []
        for msg in _read_range(consumer, topic, start, end, deadline):
            parsed = _parse_key(msg.key())
            if parsed is None or parsed[0] != prefix or parsed[1] != "manifest" or msg.value() is None:
                continue
            try:
                found.append((msg.offset(), _parse_manifest(msg.value())))
            except ValueError as exc:
                log.warning("skipping manifest at offset %d of %s: %s", msg.offset(), topic, exc)
        yield from sorted(found, key=lambda f: f[0], reverse=True)
        end, width = start, width * _WINDOW_GROWTH


def _with_consumer(consumer_factory: Callable[[], Any], use: Callable[[Any], Any]) -> Any:
    consumer = consumer_factory()
    try:
        return use(consumer)
    finally:
        consumer.close()


def newest_manifest(consumer_factory: Callable[[], Any], topic: str, kind: str = MODEL,
                    timeout_s: float = 30.0) -> dict[str, Any] | None:
    """The newest manifest of ``kind`` ("model" or "checkpoint") on ``topic``, or None if there is
    none. A new trainer continues numbering from its ``version``. ``TimeoutError`` if the topic
    cannot be read in ``timeout_s``."""
    if kind not in (MODEL, CHECKPOINT):
        raise ValueError(f"kind must be 'model' or 'checkpoint', not {kind!r}")
    deadline = time.monotonic() + timeout_s
    return _with_consumer(consumer_factory,
                          lambda c: next((m for _, m in _manifests_backward(c, topic, kind, deadline)), None))


def read_model_checkpoint(consumer_factory: Callable[[], Any], topic: str,
                    timeout_s: float = 60.0) -> tuple[dict[str, Any], State] | None:
    """(manifest, state) of the newest checkpoint on ``topic`` whose chunks are complete and match
    its checksum (older ones are tried if the newest is not); None if the topic holds none."""
    deadline = time.monotonic() + timeout_s

    def read(consumer: Any) -> tuple[dict[str, Any], State] | None:
        # Lazily: each window of the search is read whole before a manifest is yielded, and each
        # read assigns the consumer afresh, so reading chunks in between does not disturb it.
        for offset, manifest in _manifests_backward(consumer, topic, CHECKPOINT, deadline):
            chunks: dict[int, tuple[int, bytes]] = {}
            for msg in _read_range(consumer, topic, manifest["first_offset"], manifest["last_offset"] + 1,
                                   deadline):
                parsed = _parse_key(msg.key())
                if parsed is not None and parsed[:3] == (CHECKPOINT, "chunk", manifest["version"]) \
                        and msg.value() is not None:
                    chunks[parsed[3]] = (msg.offset(), msg.value())
            try:
                state = decode_state(_assemble(manifest, chunks))
                for name, where in _parts_of(manifest).items():
                    state.update({f"{name}.{key}": value for key, value in
                                  decode_state(_read_part(consumer, topic, where, deadline)).items()})
                return manifest, state
            except ValueError as exc:
                log.warning("skipping checkpoint %d at offset %d of %s: %s", manifest["version"], offset, topic, exc)
        return None

    return _with_consumer(consumer_factory, read)


def _read_part(consumer: Any, topic: str, where: Mapping[str, Any], deadline: float) -> bytes:
    """One part's payload, checked against its listing (``ValueError`` if incomplete or changed)."""
    chunks: dict[int, tuple[int, bytes]] = {}
    for msg in _read_range(consumer, topic, where["first_offset"], where["last_offset"] + 1, deadline):
        parsed = _parse_key(msg.key())
        if parsed is not None and parsed[:3] == (PART, "chunk", where["version"]) and msg.value() is not None:
            chunks[parsed[3]] = (msg.offset(), msg.value())
    return _assemble(where, chunks)
