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

from consumer import messages
from consumer.checkpointing import Sink, Snapshot
from consumer.errors import (
    CheckpointError,
    Fenced,
    IncompatibleCheckpoint,
    LeaseLost,
    PublishFailed,
    RegistryUnavailable,
)
from consumer.kafka import Emitter
from consumer.model_topic import ModelPublisher, Published, newest_manifest, read_model_checkpoint
from consumer.pending import Entry
from consumer.records import Label
from consumer.service import Service

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
        self.publisher: ModelPublisher | None = None
        self.epoch = 0
        self._parked_checked_at = -math.inf
        self._published_labels = 0  # learner.labels_ at the last publication
        self._last_publish_at = -math.inf
        self.restored_version: int | None = None
        self._partitions_listed_at = -math.inf  # wall clock of the last look that the broker answered
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
        self.publisher = ModelPublisher(self._clients.model_producer(), s.topics.model, chunk_bytes=s.model.chunk_bytes,
                                        full_every=s.model.full_every, transactional=True)
        last = self._restore_from_topic()
        self.publisher.start(self.epoch, last)
        self.io.requests = self._clients.consumer("trainer")
        self.io.labels = self._clients.consumer("labels")
        self._assign_all(self.io.requests, s.topics.label_requests)
        self._assign_all(self.io.labels, s.topics.labels)
        self._partitions_listed_at = self.clock.now()
        self._publish_io_paths([None])  # label requests and labels, through Consumer.consume
        self._warm_up()
        self._audit({"epoch": self.epoch, "restored": self.restored_version, "labels_": self.learner.labels_})
        self._publish()  # a full snapshot opens the epoch: the scorers drop what the last trainer sent after it
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
            self.publisher.adopt_parts(manifest.get("parts", {}))
            epochs.append(int(manifest["epoch"]))
            last = max(last, int(manifest["version"]))
        else:
            log.info("no checkpoint in %s: starting a new model", s.topics.model)
        if newest is not None:
            epochs.append(int(newest["epoch"]))
            last = max(last, int(newest["version"]))
        self.epoch = max(epochs) + 1
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
        if self._started and self.learner.labels_ > self._published_labels:
            self._publish()  # the scorers get every label learnt, not only those of the last interval
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
        # not while the schema registry is being waited for (framed requests of a schema not seen yet)
        requests = self.io.requests.consume(s.batch_size, 0) if self.held.may_read("requests") else []
        self._take_requests(requests)
        if self.held.may_read("labels"):  # not while the schema registry is being waited for
            self.label_read.take(self.io.labels.consume(s.batch_size, 0 if requests else s.poll_timeout_s))
        now = self.clock.now()
        self._watch_partitions(now)
        self.join.expire(now)
        self._settle_parked(now)
        self.positions.reposition()
        self.observe.lag()
        self.health.beat()
        if self._publish_due():
            self._publish()
        self.checkpoints.tick()
        self.metrics.loop_last_iteration.set(self.clock.now())

    def _take_requests(self, msgs: Sequence[Any]) -> None:
        """Label requests → pending entries (one shared copy of the batch's features); a request for
        an id already pending or already answered is the same request made again, and ignored."""
        s = self.settings
        good = messages.without_errors(msgs, "label-requests", self.positions.out_of_range)
        if not good:
            return
        now = self.clock.now()
        live = [m for m in good if m.value() is not None]  # a tombstone retracts an expired request
        values, refused = None, None
        if self._output_reader is not None:  # requests in the schema registry's wire format, or plain
            try:
                values, refused = self._output_reader.plain_many([m.value() for m in live])
            except RegistryUnavailable as exc:
                self.held.hold_back("requests", self.io.requests, good, exc)
                return
            self.held.answered("requests")
        decoded, positions, rejected = messages.decode_features(live, s.n_features, now, values=values, refused=refused)
        for msg, err in rejected:
            self.io.emitter.send(s.topics.dead_letters, *messages.dead_letter(msg, err))
            self.totals.add(f"dead_letters.{msg.topic()}.{err.reason}")
        items: list[tuple[str, Entry]] = []
        statuses = self.pending.statuses(decoded.ids)
        for row, (rid, k, status) in enumerate(zip(decoded.ids, positions, statuses, strict=True)):
            if status != "unknown":
                continue
            r = orjson.loads(live[k].value() if values is None else values[k])
            try:
                code = self.learner.code_of_prediction(r["prediction"])
                items.append((rid, Entry(decoded.rows, row, code, float(r["probability"]), float(r["score"]),
                                         float(r["requested_at"]), float(r["expires_at"]), float(r["cost"]))))
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("label request %s unusable (%s): skipped", rid, exc)
                self.totals.add(f"dead_letters.{live[k].topic()}.invalid_request")
        for pushed_id, _ in self.pending.add_many(items, now):
            log.warning("pending store full: request %s expired early", pushed_id)
            self.totals.add("label_requests_expired")
        waited = self.parked.take(rid for rid, _ in items)  # labels read before their requests
        if waited:
            self.join(waited, now)
        for partition, offset in messages.last_offsets(*messages.places_of(good)).items():
            self.offsets.store(s.topics.label_requests, partition, offset + 1)
        self.observe.gauges()

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
    def _publish_due(self) -> bool:
        fresh = self.learner.labels_ - self._published_labels
        if fresh <= 0:
            return False
        m = self.settings.model
        return fresh >= m.publish_every_labels or self.clock.monotonic() - self._last_publish_at >= m.publish_every_s

    def _publish(self) -> None:
        try:
            published = self.publisher.publish(self.learner.state_dict(), epoch=self.epoch)
        except Fenced as exc:
            raise _zombie(exc) from None
        except PublishFailed as exc:  # the next one is a full snapshot; keep learning meanwhile
            log.warning("model publication failed: %s", exc)
            self._last_publish_at = self.clock.monotonic()
            return
        self._published_labels = self.learner.labels_
        self._last_publish_at = self.clock.monotonic()
        m = self.metrics
        m.model_publications.labels(kind=published.kind).inc()
        m.model_published_bytes.observe(published.bytes)
        m.model_published_version.set(published.version)

    def _sink(self) -> Sink:
        return _ModelTopic(self)


class _ModelTopic:
    """A trainer's checkpoint sink: the model topic (kind checkpoint), where a standby on another
    node finds it; the offsets it holds are committed after, for lag monitoring only."""

    background = False

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def persist(self, snapshot: Snapshot) -> Published:
        t = self.trainer
        try:
            published = t.publisher.publish_checkpoint(snapshot.state, epoch=t.epoch, parts=snapshot.parts)
        except Fenced as exc:
            raise _zombie(exc) from None
        except PublishFailed as exc:
            raise CheckpointError(f"checkpoint not published to {t.settings.topics.model}: {exc}") from None
        t._audit({"epoch": t.epoch, "checkpoint": published.version, "labels_": t.learner.labels_})
        t.metrics.model_publications.labels(kind="checkpoint").inc()
        return published

    def committed(self, snapshot: Snapshot) -> None:
        pass


def _zombie(exc: Fenced) -> LeaseLost:
    return LeaseLost(f"a newer trainer fenced this one's model producer ({exc}): it wrote nothing more; stopping "
                     "without a checkpoint")
