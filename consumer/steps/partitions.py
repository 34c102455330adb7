"""Partitions: a trainer reads every partition of the label requests and labels topics, without a group.

Each partition is read from the offset the restored checkpoint holds, else from its start. Partitions
added to either topic while the trainer runs are read from their start within :data:`EVERY_S`: their
offsets join the checkpoint as any other's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from consumer.kafka import OffsetTracker
from consumer.metrics import Metrics

__all__ = ["EVERY_S", "EveryPartition"]

log = logging.getLogger(__name__)

EVERY_S = 2.0  # how often the topics' partitions are listed (a metadata request)
_TIMEOUT_S = 1.0


class EveryPartition:
    """``read()``: each topic read with the consumer that reads it; ``partitions(topic, timeout)``:
    the topic's partitions, raising while the broker does not answer."""

    def __init__(self, read: Callable[[], Sequence[tuple[Any, str]]], offsets: OffsetTracker, metrics: Metrics,
                 partitions: Callable[..., list[int]]) -> None:
        self.read, self.offsets, self.metrics, self.partitions = read, offsets, metrics, partitions
        self.listed_at = -math.inf  # wall clock of the last look that the broker answered

    def assign(self, now: float) -> None:
        """Read every partition of each topic, from the restored offsets (else from its start)."""
        for consumer, topic in self.read():
            partitions = self.partitions(topic)
            consumer.assign(self._resumed(topic, partitions))
            self.metrics.rebalances.labels(topic=topic).inc(len(partitions))
            log.info("reading %s[%s]", topic, ",".join(map(str, partitions)))
        self.listed_at = now

    def watch(self, now: float) -> None:
        """Read the partitions added since the last look, each from its start (or the offset a
        checkpoint holds)."""
        if now - self.listed_at < EVERY_S:
            return
        read = self.read()
        try:
            found = [self.partitions(topic, timeout=_TIMEOUT_S) for _, topic in read]
        except KafkaException as exc:  # the broker is away: the next look will do
            log.debug("listing the partitions: %s", exc)
            return
        self.listed_at = now
        for (consumer, topic), partitions in zip(read, found, strict=True):
            held = {tp.partition for tp in consumer.assignment()}
            added = [p for p in partitions if p not in held]
            if added:
                consumer.incremental_assign(self._resumed(topic, added))
                self.metrics.rebalances.labels(topic=topic).inc(len(added))
                log.info("reading %s[%s] too: partitions added", topic, ",".join(map(str, added)))

    def _resumed(self, topic: str, partitions: Sequence[int]) -> list[TopicPartition]:
        """Each partition from the offset this trainer holds, else from its start."""
        return [TopicPartition(topic, p, self.offsets.next.get((topic, p), OFFSET_BEGINNING)) for p in partitions]
