"""Role ``scorer``: score feature records with the newest published model; learn nothing.

::

    features ──► read ──► score ──► query ──► emit ──► predictions[p], label-requests[p]
    (group)                                            (p: the record's features partition)
    model topic ──► follow ──► a complete version swapped in between two batches
    checkpoints: the group's committed offsets and the output floors (consumer.steps.floors)

Many scorers share the features in one consumer group; the trainer joins their requests with the
labels. Positions: a partition new to this scorer starts at the group's committed offset, with the
decisions produced past it read back from the output floors; a revoked partition's position is
forgotten (another scorer may own it next). It takes the budget caps' share of its partitions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from confluent_kafka import TopicPartition

from consumer.checkpointing import Snapshot
from consumer.kafka import offset_reset_policy
from consumer.process import close_quietly
from consumer.records import Label
from consumer.steps.floors import Floors, check_output_partitions
from consumer.steps.follow import Follow

if TYPE_CHECKING:
    from consumer.process import Process

__all__ = ["Scorer"]


class Scorer:
    keeps_pending = False
    pins_outputs = True
    decides = True

    def __init__(self, process: Process) -> None:
        self.p = p = process
        self.follow = Follow(p.learner, p.metrics, p.clock)
        self.sink = Floors(p.io, p.settings, p.recovery)

    def start(self) -> None:
        p, s = self.p, self.p.settings
        p.clients.preflight()
        p.positions.policies = {s.topics.features: offset_reset_policy(s, "features")}
        p.metrics.offset_resets.labels(topic=s.topics.features)
        p.metrics.model_version_in_use.set(0.0)
        p.metrics.model_age.set(math.nan)
        p.serve()
        if not p.register_outputs():
            return
        p.open_emitter()
        check_output_partitions(s, lambda topic: p.io.partitions(topic, required=True))
        self.follow.open(p.clients.reader(), s.topics.model)
        self.sink.consumer = p.clients.consumer("outputs")
        p.subscribe("features", self.assigned, self.revoked)
        p.observe.io_paths([p.io.reader], p.io.emitter)
        p.ready(batch_reads=p.io.reader is not None)
        self.follow()  # what was published while this scorer started is a catch-up, not a swap
        self.follow.swapping = True

    def step(self) -> None:
        p = self.p
        self.follow()  # between two batches: the newest complete model version
        p.score_and_emit()
        p.join.expire(p.clock.now())
        p.observe.lag()
        p.observe.scale_window()

    def assigned(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        p = self.p
        fresh = [tp for tp in partitions if (tp.topic, tp.partition) not in p.offsets.next]
        if fresh:
            p.read_back.taken_over(fresh, p.io.features, self.sink.consumer)
        p.rebalance.assigned(consumer, partitions)
        self.share_budget(partitions)

    def revoked(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self.p.rebalance.revoked(consumer, partitions)
        for tp in partitions:
            self.p.offsets.next.pop((tp.topic, tp.partition), None)
        self.share_budget([])

    def share_budget(self, assigned: list[TopicPartition]) -> None:
        """Caps per budget window are the deployment's: this scorer takes its share of partitions."""
        controller = self.p.learner.budget
        if controller is not None:
            total = len(self.p.io.partitions_seen.get(self.p.settings.topics.features, [])) or 1
            controller.set_share(min(1.0, len(assigned) / total))

    def unknown(self, label: Label) -> None:
        self.p.totals.add("labels.unknown")  # a scorer reads no labels

    def snapshot(self) -> Snapshot:
        """The features offsets and where the output partitions end (after the flush): no state."""
        p = self.p
        return Snapshot(dict(p.offsets.next), p.output_ends.measure(
            lambda topic, timeout: p.io.partitions(topic, timeout=timeout), p.io.features))

    def consumers(self) -> list[Any]:
        return [c for c in (self.p.io.features,) if c is not None]

    def read_by_topic(self) -> dict[str, tuple[Any, Any]]:
        return {self.p.settings.topics.features: (self.p.io.features, self.p.io.reader)}

    def stopping(self) -> None:
        pass

    def close(self) -> None:
        close_quietly(self.sink.consumer, "the floors consumer")
        close_quietly(self.follow.consumer, "the model follower")
