"""Publish: a trainer's model to the model topic, which the scorers follow; and its checkpoints there.

The model is published every ``ACTIVESTREAM_MODEL__PUBLISH_EVERY_S`` seconds or ``__PUBLISH_EVERY_LABELS``
labels, a full snapshot or a delta (:mod:`consumer.model_topic`). Each trainer that takes the lease
starts a new epoch with a full snapshot; a trainer whose producer a newer one fenced stops at once
(:class:`consumer.errors.LeaseLost`). Checkpoints travel in the same topic (kind checkpoint), where a
standby on another node finds them without shared storage.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException

from consumer.checkpointing import Snapshot
from consumer.clock import Clock
from consumer.config import ModelSettings
from consumer.errors import CheckpointError, Fenced, IncompatibleCheckpoint, LeaseLost, PublishFailed
from consumer.metrics import Metrics
from consumer.model_topic import ModelPublisher, Published, newest_manifest, read_model_checkpoint

__all__ = ["ModelTopic"]

log = logging.getLogger(__name__)

_READ_TIMEOUT_S = 120.0


class ModelTopic:
    """The trainer's side of the model topic: the model when due, and checkpoints (a checkpoint sink,
    :class:`consumer.checkpointing.Sink`). ``audit(line)``: a line for the trainer's audit log."""

    background = False

    def __init__(self, learner: Any, settings: ModelSettings, topic: str, metrics: Metrics, clock: Clock, *,
                 audit: Callable[[dict[str, Any]], None]) -> None:
        self.learner, self.settings, self.topic, self.metrics, self.clock = learner, settings, topic, metrics, clock
        self.audit = audit
        self.publisher: ModelPublisher | None = None  # once the trainer holds the lease
        self.epoch = 0
        self.published_labels = 0  # learner.labels_ at the last publication
        self._last_at = -math.inf

    def open(self, producer: Any) -> None:
        """Publish with ``producer`` (the trainer's transactional one), once it holds the lease."""
        s = self.settings
        self.publisher = ModelPublisher(producer, self.topic, chunk_bytes=s.chunk_bytes, full_every=s.full_every,
                                        transactional=True)

    def restore(self, reader: Callable[[], Any], load: Callable[[dict[str, Any], str], None]) -> int | None:
        """On taking the lease: load the newest checkpoint in the topic (``load(state, where)``) and
        open a new epoch, one past any published there; the version restored (None: there was none)."""
        try:
            found = read_model_checkpoint(reader, self.topic, timeout_s=_READ_TIMEOUT_S)
            newest = newest_manifest(reader, self.topic, kind="model", timeout_s=_READ_TIMEOUT_S)
        except (KafkaException, TimeoutError) as exc:
            raise CheckpointError(f"cannot read the model topic {self.topic}: {exc}") from None
        restored = None
        if found is not None:
            manifest, state = found
            where = f"{self.topic} checkpoint version {manifest['version']}"
            try:
                load(state, where)
            except (KeyError, ValueError) as exc:
                raise IncompatibleCheckpoint(f"{where}: {exc}") from None
            restored = int(manifest["version"])
            self.publisher.adopt_parts(manifest.get("parts", {}))
        else:
            log.info("no checkpoint in %s: starting a new model", self.topic)
        manifests = [m for m in (found and found[0], newest) if m is not None]
        self.epoch = max([0, *(int(m["epoch"]) for m in manifests)]) + 1
        self.publisher.start(self.epoch, max([0, *(int(m["version"]) for m in manifests)]))
        return restored

    def due(self) -> bool:
        fresh = self.learner.labels_ - self.published_labels
        if fresh <= 0:
            return False
        return (fresh >= self.settings.publish_every_labels
                or self.clock.monotonic() - self._last_at >= self.settings.publish_every_s)

    def publish(self) -> None:
        """The model now (a failed publication is logged: the next is a full snapshot)."""
        try:
            published = self.publisher.publish(self.learner.state_dict(), epoch=self.epoch)
        except Fenced as exc:
            raise fenced(exc) from None
        except PublishFailed as exc:  # the next one is a full snapshot; keep learning meanwhile
            log.warning("model publication failed: %s", exc)
            self._last_at = self.clock.monotonic()
            return
        self.published_labels = self.learner.labels_
        self._last_at = self.clock.monotonic()
        m = self.metrics
        m.model_publications.labels(kind=published.kind).inc()
        m.model_published_bytes.observe(published.bytes)
        m.model_published_version.set(published.version)

    # -- checkpoint sink: the offsets it holds are committed after, for lag monitoring only -----------
    def persist(self, snapshot: Snapshot) -> Published:
        try:
            published = self.publisher.publish_checkpoint(snapshot.state, epoch=self.epoch, parts=snapshot.parts)
        except Fenced as exc:
            raise fenced(exc) from None
        except PublishFailed as exc:
            raise CheckpointError(f"checkpoint not published to {self.topic}: {exc}") from None
        self.audit({"checkpoint": published.version, "labels_": self.learner.labels_})
        self.metrics.model_publications.labels(kind="checkpoint").inc()
        return published

    def committed(self, snapshot: Snapshot) -> None:
        pass


def fenced(exc: Fenced) -> LeaseLost:
    return LeaseLost(f"a newer trainer fenced this one's model producer ({exc}): it wrote nothing more; stopping "
                     "without a checkpoint")
