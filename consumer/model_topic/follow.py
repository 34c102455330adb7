"""The scorers' side: follow the model topic and hold its newest complete, verified model."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from consumer.model_topic.codec import State, apply_delta, decode_state
from consumer.model_topic.manifest import MODEL, _assemble, _parse_key, _parse_manifest
from consumer.model_topic.read import _manifests_backward

__all__ = ["Model", "ModelFollower"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Model:
    """A complete, verified model version. Its arrays may be shared with the previous version's:
    read them, do not modify them (``load_state_dict`` copies)."""

    version: int
    epoch: int
    state: State
    manifest: dict[str, Any]
    received_at: float


class ModelFollower:
    """Follows the model topic and holds its newest complete model.

    ``consumer`` is a confluent_kafka Consumer with no subscription and ``enable.partition.eof``
    (a transactional trainer's log ends with a commit marker, which no consumer is handed): the
    follower assigns partition 0 itself. :meth:`start` finds where to begin, then :meth:`poll`
    (non-blocking) returns each newer model once it is complete. Bad data (corrupt payload, missing
    chunk, bad manifest) is logged and that version skipped; :meth:`poll` never raises for it. A
    state that does not fit the caller's learner is the caller's to find out
    (``learner.load_state_dict`` raises).
    """

    def __init__(self, consumer: Any, topic: str) -> None:
        self.consumer = consumer
        self.topic = topic
        self.model: Model | None = None
        self._chunks: dict[int, dict[int, tuple[int, bytes]]] = {}  # version → index → (offset, value)

    @property
    def version(self) -> int | None:
        return None if self.model is None else self.model.version

    def start(self, timeout_s: float = 30.0) -> dict[str, Any] | None:
        """Find the newest model manifest and read forward from the full snapshot its chain starts
        at (from the start of the log if there is none yet). Returns that manifest, or None."""
        deadline = time.monotonic() + timeout_s
        newest = next((m for _, m in _manifests_backward(self.consumer, self.topic, MODEL, deadline)), None)
        if newest is None:
            low, _ = self.consumer.get_watermark_offsets(TopicPartition(self.topic, 0),
                                                         timeout=max(0.1, deadline - time.monotonic()))
            self.seek(low)
        else:
            self.seek(newest["snapshot_offset"])
        return newest

    def seek(self, offset: int) -> None:
        """Read forward from ``offset``; buffered chunks are dropped, the model held is kept."""
        self._chunks.clear()
        self.consumer.assign([TopicPartition(self.topic, 0, offset)])

    def poll(self, max_records: int = 500) -> Model | None:
        """Read what is there (without waiting); the newest model completed by these records, or None."""
        newest = None
        for msg in self.consumer.consume(max_records, 0):
            if msg.error() is not None:
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    log.warning("reading %s: %s", self.topic, msg.error().str())
                continue
            key = msg.key()
            if key is None or not key.startswith(b"model/"):  # checkpoints are skipped unread
                continue
            parsed = _parse_key(key)
            if parsed is None:
                continue
            _, what, version, index = parsed
            if what == "chunk":
                self._chunk(version, index, msg)
            elif msg.value() is not None:
                newest = self._manifest(msg) or newest
        return newest

    def _chunk(self, version: int, index: int, msg: Any) -> None:
        if self.model is not None and version <= self.model.version:
            return
        value = msg.value()
        if value is None:
            self._chunks.get(version, {}).pop(index, None)
        else:
            self._chunks.setdefault(version, {})[index] = (msg.offset(), value)

    def _manifest(self, msg: Any) -> Model | None:
        """Apply a manifest's version if it is complete and fits; the new model, or None."""
        try:
            manifest = _parse_manifest(msg.value())
        except ValueError as exc:
            log.warning("skipping manifest at offset %d of %s: %s", msg.offset(), self.topic, exc)
            return None
        version, epoch, held = manifest["version"], manifest["epoch"], self.model
        if held is not None and epoch < held.epoch:
            log.warning("ignoring model version %d of epoch %d: epoch %d has begun (a replaced trainer?)",
                        version, epoch, held.epoch)
            return None
        if held is not None and version <= held.version:
            if epoch > held.epoch:
                log.warning("ignoring model version %d of epoch %d: not newer than the held version %d",
                            version, epoch, held.version)
            return None
        if manifest["kind"] == "delta" and (held is None or manifest["base_version"] != held.version):
            log.info("model version %d is a delta against %s, not the held %s: waiting for a full snapshot",
                     version, manifest["base_version"], None if held is None else held.version)
            self._chunks.pop(version, None)
            return None
        try:
            payload = _assemble(manifest, self._chunks.get(version, {}))
            state = decode_state(payload)
            if manifest["kind"] == "delta":
                state = apply_delta(held.state, state)
        except ValueError as exc:
            log.warning("skipping model version %d at offset %d of %s: %s", version, msg.offset(), self.topic, exc)
            self._chunks.pop(version, None)
            return None
        self.model = Model(version, manifest["epoch"], state, manifest, time.time())
        for old in [v for v in self._chunks if v <= version]:  # nothing older can apply any more
            del self._chunks[old]
        return self.model
