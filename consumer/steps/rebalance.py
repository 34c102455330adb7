"""Rebalance: partitions given to a process and taken away, for the consumers it reads in a group.

A partition given starts from the position this process holds for it (the restored checkpoint's, or
where it got to), else from the group's committed offset. Before partitions are taken away, a
checkpoint makes what was emitted durable and commits it; the batch in hand, not emitted, is read
again by the new owner (or by this process, from its position, if they come back here).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import TopicPartition

from consumer.checkpointing import Checkpoints
from consumer.clients import Opened
from consumer.errors import CheckpointError
from consumer.health import Health
from consumer.kafka import OffsetTracker
from consumer.metrics import Metrics
from consumer.steps.emit import Emit
from consumer.steps.positions import Positions
from consumer.steps.read import FeatureRead

__all__ = ["Rebalance"]

log = logging.getLogger(__name__)


class Rebalance:
    """The callbacks of a subscription (``started()``: whether the loop runs; ``checkpoints()``: the
    process's checkpoint protocol)."""

    def __init__(self, io: Opened, offsets: OffsetTracker, positions: Positions, emit: Emit,
                 features_read: FeatureRead, health: Health, metrics: Metrics, *, started: Callable[[], bool],
                 checkpoints: Callable[[], Checkpoints]) -> None:
        self.io, self.offsets, self.positions, self.emit = io, offsets, positions, emit
        self.features_read, self.health, self.metrics = features_read, health, metrics
        self.started, self.checkpoints = started, checkpoints

    def assigned(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        """Partitions given to this process: each from the position it holds, else the group's."""
        self.positions.starts.clear()
        # with no position and no committed offset, librdkafka reports it (auto.offset.reset=error)
        # and the positions step starts the partition by its policy
        for tp in partitions:
            known = self.offsets.next.get((tp.topic, tp.partition))
            if known is not None:
                tp.offset = known
        consumer.assign(partitions)
        reader = self.io.reader if consumer is self.io.features else self.io.label_reader
        if reader is not None:
            reader.forward(partitions)
        for tp in partitions:
            self.metrics.rebalances.labels(topic=tp.topic).inc()
        if consumer is self.io.features:
            self.emit.assigned(partitions)
            self.health.assigned = bool(partitions)
            self.metrics.ready.set(1.0 if self.health.restored and partitions else 0.0)
        log.info("assigned %s", ", ".join(f"{tp.topic}[{tp.partition}]@{tp.offset}" for tp in partitions))

    def revoked(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        """Partitions taken away: a checkpoint first, of what was emitted (the rest is read again)."""
        if self.started() and partitions:
            log.info("partitions revoked: checkpointing first")
            if consumer is self.io.features:
                self.emit.batch = None
                self.features_read.revoked()
            try:
                self.checkpoints().run()
            except CheckpointError as exc:
                # The broker is away (the usual cause of a revocation mid-run): nothing is committed, so
                # a new owner resumes from the last durable checkpoint, and if the partitions come back
                # here, assigned seeks to the offsets that match this process's model.
                log.warning("checkpoint before revocation failed, nothing committed: %s", exc)
                self.checkpoints().postpone()
        if consumer is self.io.features:
            self.health.assigned = False
            self.metrics.ready.set(0.0)
