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
from consumer.errors import ConfigError, RegistryUnavailable
from consumer.kafka import Emitter, consumer_config, offset_reset_policy
from consumer.model_topic import Model, ModelFollower
from consumer.recovery import read_tail
from consumer.service import Service

__all__ = ["Scorer"]

log = logging.getLogger(__name__)

_MODEL_START_TIMEOUT_S = 60.0
_READ_BACK_TIMEOUT_S = 120.0


class Scorer(Service):
    """A scoring replica (see the module docstring)."""

    keeps_pending = False
    pins_outputs = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.follower: ModelFollower | None = None
        self.model: Model | None = None  # the published version scored with (None: the initial model)
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
        self.follower = ModelFollower(self._follower_consumer, s.topics.model)
        self.follower.start(timeout_s=_MODEL_START_TIMEOUT_S)
        self._follow_model()
        self._floors = self._clients.consumer("outputs")
        self.io.features = self._clients.consumer("features")
        self.io.reader = batch_reader.attach(self.io.features, consumer_config(s, "features").get("client.id", ""),
                                           s.topics.features)
        self.io.features.subscribe([s.topics.features], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._publish_io_paths([self.io.reader])
        self._warm_up()
        self._follow_model()  # what was published while this scorer started is a catch-up, not a swap
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
        self._follow_model()

    def _follow_model(self) -> None:
        model = self.follower.poll()
        if model is not None:
            self._use(model)
        if self.model is not None:
            self.metrics.model_age.set(max(0.0, self.clock.now() - self.model.manifest["published_at"]))

    def _use(self, model: Model) -> None:
        """Score with ``model`` from the next batch on. The query coin's records and this scorer's
        budget controller stay this scorer's own: the controller paces what this replica asks."""
        state = {k: v for k, v in model.state.items() if not k.startswith("budget.")}
        rounds, fresh = self.learner.rounds_, self.learner.updates_ == 0
        try:
            self.learner.load_state_dict(state, allow_param_change=True)
        except (ValueError, KeyError) as exc:
            log.error("model version %d refused, still scoring with version %s: %s (ACTIVESTREAM_LEARNER, "
                      "ACTIVESTREAM_N_FEATURES and ACTIVESTREAM_CLASSES must match the trainer's)", model.version,
                      self.model.version if self.model is not None else "none (the initial model)", exc)
            return
        self.learner.rounds_ = rounds
        if fresh and self.learner.updates_ > 0 and self.learner.budget is not None:
            # the first learnt model: the fresh model's zero scores leave the controller's window, as
            # a single process does on its first update (BudgetController.forget_scores)
            self.learner.budget.forget_scores()
        self.model = model
        published_at = model.manifest["published_at"]
        self.metrics.model_version_in_use.set(model.version)
        if self._started:  # a swap, not the catch-up of a scorer starting
            self.metrics.model_swap_delay.observe(max(0.0, self.clock.now() - published_at))
        self.metrics.model_version.set(self.learner.labels_)
        log.debug("scoring with model version %d (%d labels)", model.version, self.learner.labels_)

    # -- partitions ---------------------------------------------------------------------------------
    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        fresh = [tp for tp in partitions if (tp.topic, tp.partition) not in self.offsets.next]
        if fresh and consumer is self.io.features:
            self._read_back(fresh)
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

    def _read_back(self, fresh: list[TopicPartition]) -> None:
        """Keep the decisions already produced for the records of ``fresh`` past their committed offset."""
        s = self.settings
        ps = [tp.partition for tp in fresh]
        try:
            committed = {tp.partition: tp.offset for tp in self.io.features.committed(
                [TopicPartition(s.topics.features, p) for p in ps], timeout=10)}
            asked = [TopicPartition(t, p) for t in (s.topics.predictions, s.topics.label_requests) for p in ps]
            floors = {(tp.topic, tp.partition): tp.offset for tp in self._floors.committed(asked, timeout=10)}
            found = 0
            for topic, kind in ((s.topics.predictions, "prediction"), (s.topics.label_requests, "request")):
                start = {p: max(0, floors.get((topic, p), 0)) for p in ps}
                messages = read_tail(self._clients.reader, topic, start, ps, timeout_s=_READ_BACK_TIMEOUT_S)
                self.recovery.add_outputs(messages, kind, self._output_reader)
                found += len(messages)
        except (KafkaException, TimeoutError, RegistryUnavailable) as exc:
            log.warning("reading back the outputs of %s failed (%s): records after the last commit may be "
                        "predicted again", ps, exc)
            return
        self.recovery.forget_before({(s.topics.features, p): o for p, o in committed.items() if o >= 0})
        log.info("%s[%s]: %d outputs read back, %d decisions after the committed offsets kept",
                 s.topics.features, ",".join(map(str, ps)), found, len(self.recovery))

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
        owned = {tp.partition for tp in s._features.assignment()}
        floors = [TopicPartition(t, p, snapshot.outputs[(t, p)]) for t in (topics.predictions, topics.label_requests)
                  for p in sorted(owned) if (t, p) in snapshot.outputs]
        if floors:
            try:
                s._floors.commit(offsets=floors, asynchronous=False)
            except KafkaException as exc:  # older floors stay: lower, so still safe
                log.warning("committing the output floors failed: %s", exc)
        s._floors.poll(0)  # nothing else polls this consumer: its log lines and errors wait for this
        s.recovery.forget_before(snapshot.offsets)
