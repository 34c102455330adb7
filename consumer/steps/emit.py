"""Emit: a decided batch sent; its requests stored as pending, its offsets as consumed, all counted.

A batch is sent whole or not at all: when the producer already holds ``max_in_flight`` messages
(:class:`consumer.errors.Backpressure`), the batch stays in hand and the features consumer is
paused, so that nothing more is read while the broker catches up; the consumer is still polled,
to stay in its group, and a record it returns is sought back to, to be read again once resumed.
"""

from __future__ import annotations

import logging

import numpy as np
from confluent_kafka import TopicPartition

from consumer.clients import Opened
from consumer.clock import Clock
from consumer.errors import Backpressure
from consumer.kafka import OffsetTracker
from consumer.pending import PendingStore
from consumer.steps.batch import Batch
from consumer.steps.join import Join
from consumer.steps.observe import Observe
from consumer.steps.parked import Parked
from consumer.totals import Totals

__all__ = ["Emit"]

log = logging.getLogger(__name__)


class Emit:
    """The batch in hand, sent when the producer has room. ``pins_outputs``: the outputs of features
    partition p go to partition p (a scorer's, see :mod:`consumer.steps.floors`)."""

    def __init__(self, io: Opened, pending: PendingStore, offsets: OffsetTracker, parked: Parked, join: Join,
                 observe: Observe, totals: Totals, clock: Clock, *, pins_outputs: bool) -> None:
        self.io, self.pending, self.offsets, self.parked, self.join = io, pending, offsets, parked, join
        self.observe, self.totals, self.clock, self.pins_outputs = observe, totals, clock, pins_outputs
        self.batch: Batch | None = None  # decided, not sent yet
        self.paused = False  # the features consumer, while a batch waits for room

    def __call__(self) -> None:
        """Send the batch in hand if there is room; else pause reading until there is."""
        features = self.io.features
        try:
            self._send(self.batch)
        except Backpressure:
            if not self.paused:
                features.pause(features.assignment())
                self.paused = True
            self.io.emitter.serve(0.05)  # wait for acknowledgements, not for a fixed time
            stray = features.poll(0)  # keeps the group membership alive while paused
            if stray is not None and stray.error() is None:
                features.seek(TopicPartition(stray.topic(), stray.partition(), stray.offset()))
            return
        self.batch = None
        if self.paused:
            features.resume(features.assignment())
            self.paused = False

    def assigned(self, partitions: list[TopicPartition]) -> None:
        """Features partitions assigned: resumed if the batch that paused reading went with a revocation."""
        if self.paused and self.batch is None:
            self.io.features.resume(partitions)
            self.paused = False

    def _send(self, batch: Batch) -> None:
        """Raises :class:`Backpressure` before sending anything if the batch would exceed the in-flight limit."""
        emitter = self.io.emitter
        emitter.reserve(len(batch.outgoing) + sum(len(values) for _, _, values, _ in batch.outputs))
        emitter.send_many(batch.outgoing)
        for topic, keys, values, sources in batch.outputs:
            if not self.pins_outputs:
                emitter.send_packed(topic, keys, values)
                continue
            for p in np.unique(sources).tolist():
                at = np.flatnonzero(sources == p)
                emitter.send_packed(topic, keys.select(at), values.select(at), partition=p)
        now = self.clock.now()
        for pushed_id, _ in self.pending.add_many(batch.pending, now):
            log.warning("pending store full: request %s expired early", pushed_id)
            self.totals.add("label_requests_expired")
        waited = self.parked.take(rid for rid, _ in batch.pending)  # labels that came before their request
        if waited:
            self.join(waited, now)
        for (topic, partition), next_offset in batch.offsets.items():
            self.offsets.store(topic, partition, next_offset)
        self.observe.batch(batch, now)
