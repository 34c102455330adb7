"""Role ``trainer``: join label requests with labels, learn, publish the model; one active at a time.

::

    label-requests ──► pending store (features, prediction, query probability, expiry)
    labels ──► join by id ──► learner.learn_many ──► every PUBLISH_EVERY_S / _LABELS: model topic
    every CHECKPOINT__EVERY_S: model + pending + offsets ──► model topic (kind checkpoint) ──► commit

The active trainer holds the lease (:mod:`consumer.lease`); a standby waits for it. Checkpoints
travel in the model topic, not on a volume: a standby on another node restores the newest one
without shared storage, and Kafka already keeps that topic replicated. On taking over, a trainer
restores the newest checkpoint, reads label requests and labels again from the offsets it holds
(each label is applied once to the model it restored, whatever the previous trainer did after that
checkpoint), starts a new epoch and publishes a full snapshot that the scorers swap in.

A label read before its request (the two topics are read independently) waits, parked, until the
requests consumer has read past the end the requests topic had a moment after the label came;
only then is it counted ``unknown``.

Partitions added to either topic while it runs are read from their start within
``_PARTITIONS_EVERY_S``: their offsets join the checkpoint as any other's, and a parked label waits
for a look at the topics taken after it came, so that its request's partition is among those read.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from consumer.checkpointing import Sink
from consumer.errors import (
    CheckpointError,
    IncompatibleCheckpoint,
)
from consumer.kafka import Emitter
from consumer.model_topic import ModelPublisher, newest_manifest, read_model_checkpoint
from consumer.pending import Entry
from consumer.records import Label
from consumer.service import Service
from consumer.steps.publish import ModelTopic
from consumer.steps.requests import RequestIntake

__all__ = ["Trainer"]

log = logging.getLogger(__name__)

_TOPIC_READ_TIMEOUT_S = 120.0
_PARK_SETTLE_S = 2.0  # how long after parking a label the requests topic's end is taken as its horizon
_PARKED_EVERY_S = 1.0
_PARTITIONS_EVERY_S = 2.0  # how often the topics' partitions are listed (a metadata request)
_PARTITIONS_TIMEOUT_S = 1.0


class Trainer(Service):
    """The trainer role (see the module docstring)."""

    decides = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parked_checked_at = -math.inf
        self.restored_version: int | None = None
        self._partitions_listed_at = -math.inf  # wall clock of the last look that the broker answered
        self.requests = RequestIntake(self.io, self.learner, self.settings, self.pending, self.parked, self.join,
                                      self.held, self.offsets, self.totals, self.clock, self.positions.out_of_range,
                                      reader=self._output_reader, changed=self.observe.gauges)
        if self._output_reader is not None:  # framed requests may name a schema to be asked for
            from consumer.registry_formats import Backoff

            self.held.backoffs["requests"] = Backoff(self.settings.schema_registry.retry_max_s)

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        s = self.settings
        self._clients.preflight()
        # a position its log does not hold: that partition is read again from its start
        self.positions.policies = {s.topics.label_requests: "earliest", s.topics.labels: "earliest"}
        for topic in (s.topics.label_requests, s.topics.labels):
            self.metrics.offset_resets.labels(topic=topic)
        self.metrics.trainer_active.set(0.0)
        self._serve()
        if not self._take_lease():
            return
        self.io.emitter = Emitter(self._clients.producer, self.metrics, s.max_in_flight,
                               dead_letter_topic=s.topics.dead_letters)
        self.model_topic.publisher = ModelPublisher(
            self._clients.model_producer(), s.topics.model, chunk_bytes=s.model.chunk_bytes,
            full_every=s.model.full_every, transactional=True)
        last = self._restore_from_topic()
        self.model_topic.publisher.start(self.epoch, last)
        self.io.requests = self._clients.consumer("trainer")
        self.io.labels = self._clients.consumer("labels")
        self._assign_all(self.io.requests, s.topics.label_requests)
        self._assign_all(self.io.labels, s.topics.labels)
        self._partitions_listed_at = self.clock.now()
        self.observe.io_paths([None], self.io.emitter)  # label requests and labels, through Consumer.consume
        self._warm_up()
        self._audit({"epoch": self.epoch, "restored": self.restored_version, "labels_": self.learner.labels_})
        # a full snapshot opens the epoch: the scorers drop what the last trainer sent after it
        self.model_topic.publish()
        self.health.restored = self.health.assigned = True
        self.metrics.ready.set(1.0)
        self._started = True
        self.observe.gauges()

    def _restore_from_topic(self) -> int:
        """Load the newest checkpoint in the model topic; the newest version published there."""
        s = self.settings
        try:
            found = read_model_checkpoint(self._clients.reader, s.topics.model, timeout_s=_TOPIC_READ_TIMEOUT_S)
            newest = newest_manifest(self._clients.reader, s.topics.model, kind="model",
                                     timeout_s=_TOPIC_READ_TIMEOUT_S)
        except (KafkaException, TimeoutError) as exc:
            raise CheckpointError(f"cannot read the model topic {s.topics.model}: {exc}") from None
        epochs = [0]
        last = 0
        if found is not None:
            manifest, state = found
            where = f"{s.topics.model} checkpoint version {manifest['version']}"
            try:
                self._load(state, where)
            except (KeyError, ValueError) as exc:
                raise IncompatibleCheckpoint(f"{where}: {exc}") from None
            self.restored_version = int(manifest["version"])
            self.model_topic.publisher.adopt_parts(manifest.get("parts", {}))
            epochs.append(int(manifest["epoch"]))
            last = max(last, int(manifest["version"]))
        else:
            log.info("no checkpoint in %s: starting a new model", s.topics.model)
        if newest is not None:
            epochs.append(int(newest["epoch"]))
            last = max(last, int(newest["version"]))
        self.model_topic.epoch = max(epochs) + 1
        return last

    def _assign_all(self, consumer: Any, topic: str) -> None:
        """Read every partition of ``topic``, from the restored offsets (else from its start)."""
        partitions = self._partitions(topic, required=True)
        consumer.assign(self._resumed(topic, partitions))
        self.metrics.rebalances.labels(topic=topic).inc(len(partitions))
        log.info("reading %s[%s]", topic, ",".join(map(str, partitions)))

    def _resumed(self, topic: str, partitions: Sequence[int]) -> list[TopicPartition]:
        """Each partition from the offset this trainer holds, else from its start."""
        return [TopicPartition(topic, p, self.offsets.next.get((topic, p), OFFSET_BEGINNING)) for p in partitions]

    def _watch_partitions(self, now: float) -> None:
        """Read the partitions added to the label requests and labels topics since the last look,
        each from its start (or the offset a checkpoint holds)."""
        if now - self._partitions_listed_at < _PARTITIONS_EVERY_S:
            return
        s = self.settings
        topics = ((self.io.requests, s.topics.label_requests), (self.io.labels, s.topics.labels))
        try:
            found = [self._partitions(topic, required=True, timeout=_PARTITIONS_TIMEOUT_S) for _, topic in topics]
        except KafkaException as exc:  # the broker is away: the next look will do
            log.debug("listing the partitions: %s", exc)
            return
        self._partitions_listed_at = now
        for (consumer, topic), partitions in zip(topics, found, strict=True):
            held = {tp.partition for tp in consumer.assignment()}
            added = [p for p in partitions if p not in held]
            if added:
                consumer.incremental_assign(self._resumed(topic, added))
                self.metrics.rebalances.labels(topic=topic).inc(len(added))
                log.info("reading %s[%s] too: partitions added", topic, ",".join(map(str, added)))

    def _consumers(self) -> list[Any]:
        return [c for c in (self.io.requests, self.io.labels) if c is not None]

    def _shutdown(self) -> None:
        if self._started and self.learner.labels_ > self.model_topic.published_labels:
            self.model_topic.publish()  # the scorers get every label learnt, not only those of the last interval
        super()._shutdown()

    def _close(self, final_checkpoint: bool) -> None:
        try:
            super()._close(final_checkpoint)
        finally:
            if self.io.requests is not None:
                try:
                    self.io.requests.close()
                except (KafkaException, RuntimeError) as exc:
                    log.warning("closing the requests consumer: %s", exc)
                self.io.requests = None

    # -- one iteration -------------------------------------------------------------------------------------
    def run_once(self) -> None:
        s = self.settings
        self._check_lease()
        self.io.emitter.serve()
        requests = self.requests()
        if self.held.may_read("labels"):  # not while the schema registry is being waited for
            self.label_read.take(self.io.labels.consume(s.batch_size, 0 if requests else s.poll_timeout_s))
        now = self.clock.now()
        self._watch_partitions(now)
        self.join.expire(now)
        self._settle_parked(now)
        self.positions.reposition()
        self.observe.lag()
        self.health.beat()
        if self.model_topic.due():
            self.model_topic.publish()
        self.checkpoints.tick()
        self.metrics.loop_last_iteration.set(self.clock.now())

    def _unknown(self, lab: Label) -> None:
        """Its request may not have been read yet: the label waits for it (see :meth:`_settle_parked`)."""
        self.parked.park(lab, self.clock.now())

    def _give_up_parked(self) -> None:
        pass  # a trainer's parked labels are given up by _settle_parked

    def _settle_parked(self, now: float) -> None:
        """Count as unknown the parked labels whose request cannot come any more: the requests
        consumer has read past the end the topic had once the label had settled, or a TTL passed."""
        parked = self.parked
        if not parked or now - self._parked_checked_at < _PARKED_EVERY_S:
            return
        self._parked_checked_at = now
        if parked.overflowed:
            log.warning("%d labels dropped unmatched: %d labels already wait for their requests "
                        "(ACTIVESTREAM_LABELS__MAX_PENDING)", parked.overflowed, len(parked))
            parked.overflowed = 0
        ends = self._request_ends()
        position = {p: o for (t, p), o in self.offsets.next.items() if t == self.settings.topics.label_requests}
        gone = []
        for rid, (_, at, horizon) in parked.waiting.items():
            if now - at > self.settings.labels.ttl_s:
                gone.append(rid)
            elif horizon is None:
                # the label's request was sent before the label: a look at the partitions after the
                # label came has its partition among those read
                if now - at >= _PARK_SETTLE_S and ends is not None and self._partitions_listed_at > at:
                    parked.waiting[rid][2] = ends
            elif all(position.get(p, 0) >= end for p, end in horizon.items()):
                gone.append(rid)
        if parked.give_up(gone):
            self.observe.gauges()

    def _request_ends(self) -> dict[int, int] | None:
        ends = {}
        for tp in self.io.requests.assignment():
            try:
                _, high = self.io.requests.get_watermark_offsets(tp, cached=True)
            except KafkaException:
                return None
            if high < 0:
                return None
            ends[tp.partition] = high
        return ends

    def _audit_learnt(self) -> Callable[[str, list[tuple[Entry, Label]]], None]:
        def audit(outcome: str, joined: list[tuple[Entry, Label]]) -> None:
            self._audit({"epoch": self.epoch, "outcome": outcome, "ids": [lab.id for _, lab in joined],
                         "labels": [lab.label for _, lab in joined]})

        return audit

    def _audit(self, line: dict[str, Any]) -> None:
        path = self.settings.audit_log
        if path is not None:
            with open(path, "ab") as f:
                f.write(orjson.dumps(line) + b"\n")

    def _read_by_topic(self) -> dict[str, tuple[Any, Any]]:
        topics = self.settings.topics
        return {topics.label_requests: (self.io.requests, None), topics.labels: (self.io.labels, None)}

    # -- publishing and checkpoints ------------------------------------------------------------------------
    def _sink(self) -> Sink:
        self.model_topic = ModelTopic(self.learner, self.settings.model, self.settings.topics.model, self.metrics,
                                      self.clock, audit=self._audit)
        return self.model_topic

    @property
    def epoch(self) -> int:
        """This trainer's epoch on the model topic (one more than any published before it took over)."""
        return self.model_topic.epoch
