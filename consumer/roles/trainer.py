"""Role ``trainer``: join the scorers' label requests with labels, learn, publish the model.

::

    label-requests ──► requests ──► pending store (features, prediction, query probability, expiry)
    labels ──► read ──► join by id ──► learn ──► every PUBLISH_EVERY_S / _LABELS: model topic
    checkpoints: model + pending + offsets ──► model topic (kind checkpoint) ──► commit

One trainer is active at a time, the holder of the lease; a standby waits for it. Checkpoints travel
in the model topic (:mod:`consumer.steps.publish`), where a standby on another node restores the
newest one without shared storage; on taking over it starts a new epoch with a full snapshot that
the scorers swap in. Positions: every partition of both topics, from the restored offsets, else from
its start (:mod:`consumer.steps.partitions`). A label read before its request waits, parked, until
its request cannot come any more (:class:`consumer.steps.requests.RequestHorizon`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from consumer.audit import AuditLog
from consumer.checkpointing import Snapshot
from consumer.records import Label
from consumer.steps.partitions import EveryPartition
from consumer.steps.publish import ModelTopic
from consumer.steps.requests import RequestHorizon, RequestIntake

if TYPE_CHECKING:
    from consumer.process import Process

__all__ = ["Trainer"]


class Trainer:
    keeps_pending = True
    pins_outputs = False
    decides = False  # the scorers decided: an online scale learns from the labelled rows

    def __init__(self, process: Process) -> None:
        self.p = p = process
        s = p.settings
        self.audit = AuditLog(s.audit_log, lambda: self.model_topic.epoch)
        self.model_topic = self.sink = ModelTopic(p.learner, s.model, s.topics.model, p.metrics, p.clock,
                                                  audit=self.audit)
        self.restored_version: int | None = None
        p.framing.back_off_requests(p.held.backoffs)
        self.requests = RequestIntake(p.io, p.learner, s, p.pending, p.parked, p.join, p.held, p.offsets, p.totals,
                                      p.clock, p.positions.out_of_range, reader=p.framing.output_reader,
                                      changed=p.observe.gauges)
        self.partitions = EveryPartition(lambda: ((p.io.requests, s.topics.label_requests),
                                                  (p.io.labels, s.topics.labels)), p.offsets, p.metrics,
                                         lambda topic, timeout=10.0: p.io.partitions(topic, True, timeout))
        self.horizon = RequestHorizon(p.io, p.parked, p.offsets, s, lambda: self.partitions.listed_at,
                                      p.observe.gauges)
        p.learn.audit = self.audit.learnt

    def start(self) -> None:
        p, s = self.p, self.p.settings
        p.clients.preflight()
        # a position its log does not hold: that partition is read again from its start
        p.positions.policies = {s.topics.label_requests: "earliest", s.topics.labels: "earliest"}
        for topic in p.positions.policies:
            p.metrics.offset_resets.labels(topic=topic)
        p.metrics.trainer_active.set(0.0)
        p.serve()
        if not p.take_lease():
            return
        p.open_emitter(batched=False)
        self.model_topic.open(p.clients.model_producer())
        self.restored_version = self.model_topic.restore(p.clients.reader, p.load)
        p.io.requests = p.clients.consumer("trainer")
        p.io.labels = p.clients.consumer("labels")
        self.partitions.assign(p.clock.now())
        p.observe.io_paths([None], p.io.emitter)  # label requests and labels, through Consumer.consume
        self.audit({"restored": self.restored_version, "labels_": p.learner.labels_})
        self.model_topic.publish()  # a full snapshot opens the epoch: the scorers drop what came after it
        p.health.assigned = True
        p.metrics.ready.set(1.0)
        p.ready(batch_reads=False)

    def step(self) -> None:
        p, s = self.p, self.p.settings
        requests = self.requests()
        if p.held.may_read("labels"):  # not while the schema registry is being waited for
            p.label_read.take(p.io.labels.consume(s.batch_size, 0 if requests else s.poll_timeout_s))
        now = p.clock.now()
        self.partitions.watch(now)
        p.join.expire(now)
        self.horizon.settle(now)
        p.positions.reposition()
        p.observe.lag()
        if self.model_topic.due():
            self.model_topic.publish()

    def unknown(self, label: Label) -> None:
        """Its request may not have been read yet: the label waits for it."""
        self.p.parked.park(label, self.p.clock.now())

    def snapshot(self) -> Snapshot:
        return self.p.snapshot()

    def consumers(self) -> list[Any]:
        return [c for c in (self.p.io.requests, self.p.io.labels) if c is not None]

    def read_by_topic(self) -> dict[str, tuple[Any, Any]]:
        io, topics = self.p.io, self.p.settings.topics
        return {topics.label_requests: (io.requests, None), topics.labels: (io.labels, None)}

    def stopping(self) -> None:
        if self.p.learner.labels_ > self.model_topic.published_labels:
            self.model_topic.publish()  # the scorers get every label learnt, not only the last interval's

    def close(self) -> None:
        pass

    @property
    def epoch(self) -> int:
        """This trainer's epoch on the model topic (one more than any published before it took over)."""
        return self.model_topic.epoch
