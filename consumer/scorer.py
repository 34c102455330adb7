"""Role ``scorer``: score feature records with the newest published model; learn nothing.

::

    features ──► decode ──► score batch ──► predictions[p]       (p: the record's features partition)
    (group)                    └─► query? ──► label-requests[p]  (the trainer joins them with labels)
    model topic ──► ModelFollower ──► a complete version swapped in between two batches

Many scorers share the features in one consumer group. A scorer keeps no pending store and no
checkpoint file: its progress is the group's committed offsets. Exactly one prediction per record
across a crash rests on two things:

- the outputs of features partition p go to partition p of the predictions and label-requests
  topics, so each of those partitions has one writer at a time;
- with each commit of the features offsets, the scorer commits where those output partitions
  ended (after a flush) as the offsets of the group ``<group_id>-outputs``: the *floors*.

A scorer given a partition it has no position in reads that partition's outputs from their floor
to their end and keeps the decisions it finds for the records it is about to consume again
(:class:`consumer.recovery.Recovery`), as a restarted single process does from its checkpoint.
The features offsets are committed before the floors: a crash between the two leaves older,
lower floors, which only make the next owner read a little more.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from consumer import batch_reader
from consumer.checkpointing import Sink, Snapshot
from consumer.errors import ConfigError
from consumer.kafka import Emitter, consumer_config, offset_reset_policy
from consumer.model_topic import ModelFollower
from consumer.service import Service
from consumer.steps.follow import Follow

__all__ = ["Scorer"]

log = logging.getLogger(__name__)

_MODEL_START_TIMEOUT_S = 60.0


class Scorer(Service):
    """A scoring replica (see the module docstring)."""

    keeps_pending = False
    pins_outputs = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.follow = Follow(self.learner, self.metrics, self.clock)
        self._floors: Any = None  # a consumer of the group <group_id>-outputs, for its commits only
        self._follower_consumer: Any = None

    def start(self) -> None:
        s = self.settings
        self._clients.preflight()
        self.positions.policies = {s.topics.features: offset_reset_policy(s, "features")}
        self.metrics.offset_resets.labels(topic=s.topics.features)
        self.metrics.model_version_in_use.set(0.0)
        self.metrics.model_age.set(math.nan)
        self._serve()
        if not self._register_outputs():
            return
        self.io.emitter = Emitter(self._clients.producer, self.metrics, s.max_in_flight, self._clients.batch_producer,
                               dead_letter_topic=s.topics.dead_letters)
        self._check_output_partitions()
        self._follower_consumer = self._clients.reader()
        self.follow.follower = ModelFollower(self._follower_consumer, s.topics.model)
        self.follow.follower.start(timeout_s=_MODEL_START_TIMEOUT_S)
        self.follow()
        self._floors = self._clients.consumer("outputs")
        self.io.features = self._clients.consumer("features")
        self.io.reader = batch_reader.attach(self.io.features, consumer_config(s, "features").get("client.id", ""),
                                           s.topics.features)
        self.io.features.subscribe([s.topics.features], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.observe.io_paths([self.io.reader], self.io.emitter)
        self._warm_up()
        self.follow()  # what was published while this scorer started is a catch-up, not a swap
        self.follow.swapping = True
        self.health.restored = True
        self._started = True
        self.observe.gauges()

    def _check_output_partitions(self) -> None:
        """Outputs of features partition p go to partition p: the output topics need as many."""
        s = self.settings
        features = len(self._partitions(s.topics.features, required=True))
        for setting, topic in (("PREDICTIONS", s.topics.predictions), ("LABEL_REQUESTS", s.topics.label_requests)):
            have = len(self._partitions(topic, required=True))
            if have < features:
                raise ConfigError(f"ACTIVESTREAM_TOPICS__{setting}: {topic!r} has {have} partitions, fewer than the "
                                  f"{features} of {s.topics.features!r}; a scorer writes the outputs of features "
                                  "partition p to partition p")

    # -- the model ---------------------------------------------------------------------------------
    def _serve_labels(self) -> None:
        """A scorer reads no labels: between two batches it takes the newest complete model version."""
        self.follow()

    # -- partitions ---------------------------------------------------------------------------------
    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        fresh = [tp for tp in partitions if (tp.topic, tp.partition) not in self.offsets.next]
        if fresh and consumer is self.io.features:
            self.read_back.taken_over(fresh, self.io.features, self._floors)
        super()._on_assign(consumer, partitions)
        self._share_budget(partitions)

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        super()._on_revoke(consumer, partitions)
        # Another scorer may own them before they come back here: their position then is the
        # group's committed offset, with the outputs read back from their floors, not this one's.
        for tp in partitions:
            self.offsets.next.pop((tp.topic, tp.partition), None)
        self._share_budget([])

    def _share_budget(self, assigned: list[TopicPartition]) -> None:
        """Caps per budget window are the deployment's: this scorer takes its share of partitions."""
        controller = self.learner.budget
        if controller is None:
            return
        total = len(self._partitions_seen.get(self.settings.topics.features, [])) or 1
        controller.set_share(min(1.0, len(assigned) / total))

    # -- progress -------------------------------------------------------------------------------------
    def _sink(self) -> Sink:
        return _Floors(self)

    def _snapshot(self) -> Snapshot:
        """The features offsets and where the output partitions end (after the flush): no state."""
        outputs = self.output_ends.measure(lambda topic, timeout: self._partitions(topic, timeout=timeout),
                                           self.io.features)
        return Snapshot(dict(self.offsets.next), outputs)

    def _close(self, final_checkpoint: bool) -> None:
        try:
            super()._close(final_checkpoint)
        finally:
            for name in ("_floors", "_follower_consumer"):
                client = getattr(self, name)
                if client is not None:
                    try:
                        client.close()
                    except (KafkaException, RuntimeError) as exc:
                        log.warning("closing %s: %s", name, exc)
                    setattr(self, name, None)


class _Floors:
    """A scorer's checkpoint sink: it keeps no state, and after the features offsets it commits the
    floors of the output partitions it owns (see the module docstring)."""

    background = False

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer

    def persist(self, snapshot: Snapshot) -> str:
        return "offsets"  # the group's committed offsets are a scorer's progress

    def committed(self, snapshot: Snapshot) -> None:
        s = self.scorer
        topics = s.settings.topics
        owned = {tp.partition for tp in s.io.features.assignment()}
        floors = [TopicPartition(t, p, snapshot.outputs[(t, p)]) for t in (topics.predictions, topics.label_requests)
                  for p in sorted(owned) if (t, p) in snapshot.outputs]
        if floors:
            try:
                s._floors.commit(offsets=floors, asynchronous=False)
            except KafkaException as exc:  # older floors stay: lower, so still safe
                log.warning("committing the output floors failed: %s", exc)
        s._floors.poll(0)  # nothing else polls this consumer: its log lines and errors wait for this
        s.recovery.forget_before(snapshot.offsets)
