"""Where each partition is read from: a position its log does not hold, and topics held back while
the schema registry does not answer.

A position beyond its log means the log was truncated or re-created under the service (a broker
that lost its data, a topic deleted and made again): it is logged as an error and counted
(``activestream_offset_resets_total``), and the records the log holds now are read from its start
(``auto.offset.reset=earliest``, the default) or its end (``latest``); ``error`` stops the service.
The lag observer finds it where a broker answers a fetch beyond its log with nothing; with
``auto.offset.reset=error`` librdkafka reports it, and a partition it has no position for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

from consumer import messages
from consumer.clock import Clock
from consumer.errors import OffsetOutOfRange, RegistryUnavailable
from consumer.kafka import OffsetTracker
from consumer.metrics import Metrics

__all__ = ["Held", "Positions"]

log = logging.getLogger(__name__)


class Positions:
    """The partitions' positions of a process's consumers. ``consumers``: topic → (consumer, its
    batch reader or None); ``policies``: topic → ``auto.offset.reset``; ``paused(consumer)``:
    whether the loop keeps that consumer paused (a batch waiting for room)."""

    def __init__(self, offsets: OffsetTracker, metrics: Metrics,
                 consumers: Callable[[], Mapping[str, tuple[Any, Any]]], policies: Mapping[str, str],
                 paused: Callable[[Any], bool] = lambda consumer: False) -> None:
        self.offsets, self.metrics, self.consumers, self.policies, self.paused = (offsets, metrics, consumers,
                                                                                   policies, paused)
        self.out_of_range: list[tuple[str, int, int]] = []  # (topic, partition, offset) the logs did not hold
        # where reposition sent each partition, until a rebalance: kept through the next re-assignments
        self.starts: dict[tuple[str, int], int] = {}

    def reposition(self) -> None:
        """Move each partition whose position its log did not hold where ``auto.offset.reset`` says."""
        for _, reader in self.consumers().values():
            if reader is not None and reader.out_of_range:
                self.out_of_range.extend(reader.out_of_range)
                reader.out_of_range.clear()
        starts: dict[Any, dict[tuple[str, int], int]] = {}  # consumer -> partitions to send to a start
        while self.out_of_range:
            topic, partition, offset = self.out_of_range.pop(0)
            policy = self.policies.get(topic, "earliest")
            if offset >= 0:
                log.error("%s[%d]: offset %d is not in the log (truncated or re-created, or the broker lost its data): "
                          "reading from its %s (auto.offset.reset=%s)", topic, partition, offset,
                          "end" if policy == "latest" else "start", policy)
                self.metrics.offset_resets.labels(topic=topic).inc()
                if policy == "error":
                    raise OffsetOutOfRange(f"{topic}[{partition}]: offset {offset} is not in the log")
            consumer = self.consumers()[topic][0]
            start = OFFSET_END if policy == "latest" else OFFSET_BEGINNING
            if offset < 0:  # librdkafka lost the position (no committed offset, or none it could fetch)
                known = self.offsets.next.get((topic, partition))
                if known is not None:  # this process has one: it goes on from there
                    starts.setdefault(consumer, {})[(topic, partition)] = known
                    continue
                log.info("%s[%d]: no committed offset: reading from its %s", topic, partition,
                         "end" if policy == "latest" else "start")
            else:  # records of the old log still in hand are stored before the new log's
                self.offsets.restart(topic, partition)
                self.offsets.next.pop((topic, partition), None)
            starts.setdefault(consumer, {})[(topic, partition)] = start
        for consumer, partitions in starts.items():  # one assignment per consumer and round
            self.assign_from(partitions, consumer)

    def assign_from(self, starts: dict[tuple[str, int], int], consumer: Any) -> None:
        """Read each partition of ``starts`` from its start, every other one from where it is.

        A seek keeps the partition's records going to the batch reader. librdkafka refuses to seek
        a partition whose position it found outside the log (its error state): those are assigned
        again with an offset, in one assignment, paused until their records are forwarded to the
        reader again (records fetched before that land in the consumer's own queue, which nothing
        reads)."""
        self.starts.update(starts)
        refused = {}
        for (topic, partition), start in starts.items():
            try:
                consumer.seek(TopicPartition(topic, partition, start))
            except KafkaException:
                refused[(topic, partition)] = start
        if not refused:
            return
        partitions = consumer.position(consumer.assignment())
        for tp in partitions:
            # A partition sent to a start and not read since keeps that start: librdkafka may still
            # report the position its log did not hold.
            at = (tp.topic, tp.partition)
            if at in refused:
                tp.offset = refused[at]
            elif (at in self.starts and at not in self.offsets.next) or tp.offset < 0:
                tp.offset = self.starts.get(at, tp.offset)
        consumer.pause(partitions)
        consumer.assign(partitions)
        reader = next((r for c, r in self.consumers().values() if c is consumer), None)
        if reader is not None:
            reader.forward(partitions)
        if not self.paused(consumer):
            consumer.resume(partitions)


class Held:
    """Topics not read for a while after the schema registry failed for them (``backoffs``: what
    may be held, by name, each a :class:`consumer.registry_formats.Backoff`)."""

    def __init__(self, backoffs: Mapping[str, Any], positions: Positions, metrics: Metrics, clock: Clock) -> None:
        self.backoffs, self.positions, self.metrics, self.clock = dict(backoffs), positions, metrics, clock

    def may_read(self, what: str) -> bool:
        backoff = self.backoffs.get(what)
        return backoff is None or backoff.ready(self.clock.monotonic())

    def answered(self, what: str) -> None:
        """The registry answered for ``what``: its next failure waits the shortest time again."""
        self.backoffs[what].succeeded()

    def hold_back(self, what: str, consumer: Any, msgs: Sequence[Any], exc: RegistryUnavailable) -> None:
        """The registry did not answer for a batch: send each of its partitions back to the batch's
        first record there, and read none of ``what`` for a while. Nothing was decided, stored or
        committed for the batch, so its records are read again, in order, once the registry
        answers: an outage pauses the topic (its lag grows) rather than filling the dead-letter topic."""
        wait = self.backoffs[what].failed(self.clock.monotonic())
        partitions, offsets = messages.places_of(msgs)
        topic = msgs[0].topic()
        first: dict[tuple[str, int], int] = {}
        for p, o in zip(partitions.tolist(), offsets.tolist(), strict=True):
            first[(topic, p)] = min(o, first.get((topic, p), o))
        log.warning("schema registry unavailable (%s): %d %s held back, read again in %.0f s", exc, len(msgs),
                    what, wait)
        self.metrics.registry_holds.labels(topic=topic).inc()
        self.positions.assign_from(first, consumer)
