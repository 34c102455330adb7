"""Floors: a scorer's progress, the group's committed offsets and where its outputs ended.

Many scorers share the features in one consumer group, and keep no pending store and no checkpoint
file. Exactly one prediction per record across a crash rests on two things:

- the outputs of features partition p go to partition p of the predictions and label-requests
  topics (:func:`check_output_partitions`), so each of those partitions has one writer at a time;
- with each commit of the features offsets, the scorer commits where those output partitions
  ended (after a flush) as the offsets of the group ``<group_id>-outputs``: the *floors*.

A scorer given a partition it has no position in reads that partition's outputs from their floor
to their end, and keeps the decisions it finds for the records it is about to consume again
(:meth:`consumer.steps.replayed.ReadBack.taken_over`), as a restarted single process does from its
checkpoint. The features offsets are committed before the floors: a crash between the two leaves
older, lower floors, which only make the next owner read a little more.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from consumer.checkpointing import Snapshot
from consumer.clients import Opened
from consumer.config import Settings
from consumer.errors import ConfigError
from consumer.recovery import Recovery

__all__ = ["Floors", "check_output_partitions"]

log = logging.getLogger(__name__)


class Floors:
    """A scorer's checkpoint sink (:class:`consumer.checkpointing.Sink`): no state, and after the
    features offsets the floors of the output partitions it owns. ``consumer``: a consumer of the
    group ``<group_id>-outputs``, for its commits only (set at start-up)."""

    background = False

    def __init__(self, io: Opened, settings: Settings, recovery: Recovery) -> None:
        self.io, self.settings, self.recovery = io, settings, recovery
        self.consumer: Any = None

    def persist(self, snapshot: Snapshot) -> str:
        return "offsets"  # the group's committed offsets are a scorer's progress

    def committed(self, snapshot: Snapshot) -> None:
        topics = self.settings.topics
        owned = {tp.partition for tp in self.io.features.assignment()}
        floors = [TopicPartition(t, p, snapshot.outputs[(t, p)]) for t in (topics.predictions, topics.label_requests)
                  for p in sorted(owned) if (t, p) in snapshot.outputs]
        if floors:
            try:
                self.consumer.commit(offsets=floors, asynchronous=False)
            except KafkaException as exc:  # older floors stay: lower, so still safe
                log.warning("committing the output floors failed: %s", exc)
        self.consumer.poll(0)  # nothing else polls this consumer: its log lines and errors wait for this
        self.recovery.forget_before(snapshot.offsets)


def check_output_partitions(settings: Settings, partitions: Callable[[str], list[int]]) -> None:
    """Outputs of features partition p go to partition p: the output topics need as many
    (``partitions(topic)``: its partitions)."""
    topics = settings.topics
    features = len(partitions(topics.features))
    for setting, topic in (("PREDICTIONS", topics.predictions), ("LABEL_REQUESTS", topics.label_requests)):
        have = len(partitions(topic))
        if have < features:
            raise ConfigError(f"ACTIVESTREAM_TOPICS__{setting}: {topic!r} has {have} partitions, fewer than the "
                              f"{features} of {topics.features!r}; a scorer writes the outputs of features "
                              "partition p to partition p")
