"""The process: the parts every role shares, its loop and its lifecycle.

::

    features ──► read ──► score ──► query ──► emit ──► predictions, label-requests
                                                  └─► pending store
    labels ──► read ──► join with pending ──► learn
    every N s or M labels: checkpoint (flush → snapshot → persist → commit → record)

What a process reads, how it starts and what one iteration runs is its role's
(:mod:`consumer.roles`): ``all`` runs every step above, a scorer the first line, a trainer the second
(with the scorers' requests as its pending store). Delivery is at-least-once for outputs, exactly-once
for labels into the model: offsets are committed to Kafka only after the state that reflects them is
durable (:mod:`consumer.checkpointing`), and the decisions produced after it are read back on restart
(:mod:`consumer.steps.replayed`) so that replayed records keep them.
"""

from __future__ import annotations

import gc
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from confluent_kafka import KafkaException

from consumer import batch_reader
from consumer.budget import CostModel
from consumer.checkpoint import CheckpointPolicy, CheckpointStore
from consumer.checkpointing import Checkpoints, Sink, Snapshot, commit_offsets
from consumer.clients import KafkaClients, Opened
from consumer.clock import Clock, SystemClock
from consumer.config import Settings
from consumer.errors import ConfigError, IncompatibleCheckpoint, LeaseLost
from consumer.framing import Framing
from consumer.health import Health, HealthServer
from consumer.kafka import Emitter, OffsetTracker, consumer_config
from consumer.learner import LearnerState, build_learner, warm_up
from consumer.lease import Lease, take_lease
from consumer.metrics import Metrics
from consumer.output_ends import OutputEnds
from consumer.pending import PendingStore
from consumer.recovery import Recovery
from consumer.state import Stateful, gather, scatter, upgrade
from consumer.steps.emit import Emit
from consumer.steps.join import Join
from consumer.steps.learn import Learn
from consumer.steps.observe import Observe
from consumer.steps.parked import Parked
from consumer.steps.positions import Held, Positions
from consumer.steps.query import Query
from consumer.steps.read import FeatureRead, LabelRead
from consumer.steps.rebalance import Rebalance
from consumer.steps.replayed import ReadBack
from consumer.steps.score import Score
from consumer.stop import Stop
from consumer.totals import Totals

__all__ = ["Process", "Role"]

log = logging.getLogger(__name__)


class Role(Protocol):
    """What a role module gives the process (:mod:`consumer.roles`)."""

    keeps_pending: bool  # whether it joins its own requests with their labels (a scorer's go to the trainer)
    pins_outputs: bool  # whether the outputs of features partition p go to partition p
    decides: bool  # whether it decided on the records whose labels it learns (a trainer did not)
    sink: Sink  # where its checkpoints go

    def start(self) -> None: ...
    def step(self) -> None: ...
    def stopping(self) -> None: ...
    def close(self) -> None: ...
    def consumers(self) -> list[Any]: ...
    def read_by_topic(self) -> dict[str, tuple[Any, Any]]: ...
    def snapshot(self) -> Snapshot: ...
    def unknown(self, label: Any) -> None: ...


class Process:
    """One activestream process in the role ``settings.role`` names (``role``: its class).

    ``run()`` starts, loops until :meth:`request_stop`, then shuts down cleanly (final checkpoint,
    offsets committed, consumers closed) and returns the exit code."""

    def __init__(self, settings: Settings, role: Callable[[Process], Role], *, clock: Clock | None = None,
                 clients: Any = None, serve_http: bool = True, registry: Any = None) -> None:
        self.settings = s = settings
        self.clock = clock or SystemClock()
        self.metrics = Metrics()
        self.totals = Totals(self.metrics)
        self.learner = build_learner(s)
        self.pending = PendingStore(s.labels.max_pending, memory_s=s.labels.ttl_s)
        self.costs = CostModel(s.labels.cost_per_request, s.labels.cost_per_class)
        self.store = CheckpointStore(s.checkpoint_dir, s.checkpoint.keep)
        self.output_ends = OutputEnds((s.topics.predictions, s.topics.label_requests), self.clock)
        self.offsets = OffsetTracker()
        self.recovery = Recovery()
        self.parked = Parked(s.labels.max_pending, self.totals)
        self.health = Health(self.clock, s.healthy_loop_age_s)
        self.clients = clients or KafkaClients(s)
        self.io = Opened()
        self.framing = Framing(s, registry)
        self.stop = Stop()  # what a signal handler may set (consumer.stop)
        self._serve_http = serve_http
        self.started = self._closed = False
        self.restored_from: Path | None = None
        self.http: HealthServer | None = None
        self.lease: Lease | None = None
        self._lease_attempts = 0
        self.metrics.role.labels(role=s.role).set(1.0)
        # the other role's model gauges: NaN, so that per-scorer panels and lags show scorers only
        if s.role != "scorer":
            self.metrics.model_version_in_use.set(math.nan)
            self.metrics.model_age.set(math.nan)
        if s.role != "trainer":
            self.metrics.model_published_version.set(math.nan)
        self._steps(s, role)
        self.role = role(self)
        self.checkpoints = Checkpoints(self.role.sink, policy=CheckpointPolicy(s.checkpoint.every_s,
                                                                               s.checkpoint.every_labels),
                                       clock=self.clock, metrics=self.metrics, flush=lambda t: self.io.emitter.flush(t),
                                       pending=lambda: len(self.io.emitter), snapshot=lambda: self.role.snapshot(),
                                       commit=lambda offsets: commit_offsets(self.role.consumers(), offsets))

    def _steps(self, s: Settings, role: Any) -> None:
        """The steps a role may run, each given the parts it works on."""
        self.read_back = ReadBack(self.recovery, s, self.clients.reader, lambda: self.framing.output_reader,
                                  lambda topic: self.io.partitions(topic, required=True))
        self.positions = Positions(self.offsets, self.metrics, lambda: self.role.read_by_topic(), {},
                                   paused=lambda consumer: consumer is self.io.features and self.emit.paused)
        self.held = Held(self.framing.backoffs, self.positions, self.metrics, self.clock)
        self.features_read = FeatureRead(self.io, s, self.held, self.positions.out_of_range, self.framing.features)
        self.observe = Observe(s, self.metrics, self.totals, self.learner, self.pending, self.offsets, self.clock,
                               lambda: self.role.consumers(), self.positions.out_of_range)
        self.query = Query(self.learner, self.pending, self.recovery, self.costs, s, keeps_pending=role.keeps_pending,
                           framing=lambda: self.framing.outputs)
        self.score = Score(self.learner, self.query, s, self.clock, framing=lambda: self.framing.outputs)
        self.learn = Learn(self.learner, s.n_features, self.costs, self.totals, self.metrics, scored=role.decides,
                           learnt=lambda n: self.checkpoints.count_labels(n))
        self.join = Join(self.pending, self.learn, self.totals, s.labels, unknown=lambda lab: self.role.unknown(lab),
                         retract=lambda rid: self.io.emitter.send(s.topics.label_requests, rid.encode(), None),
                         changed=self.observe.gauges)
        self.emit = Emit(self.io, self.pending, self.offsets, self.parked, self.join, self.observe, self.totals,
                         self.clock, pins_outputs=role.pins_outputs)
        self.rebalance = Rebalance(self.io, self.offsets, self.positions, self.emit, self.features_read, self.health,
                                   self.metrics, started=lambda: self.started, checkpoints=lambda: self.checkpoints)
        self.label_read = LabelRead(self.io, self.learner, s, self.held, self.join, self.offsets, self.totals,
                                    self.clock, self.positions.out_of_range, unframe=self.framing.labels,
                                    changed=self.observe.gauges)

    # -- lifecycle -------------------------------------------------------------------------------
    def run(self) -> int:
        """Serve until asked to stop; 0 after a clean shutdown, 2 when the configuration or the
        checkpoint on disk does not allow starting, 1 after any other failure."""
        try:
            self.start()
            # What exists now (modules, compiled kernels, the restored state) lives as long as the
            # process: out of the cyclic collector's sight, a full collection no longer stalls a batch.
            gc.freeze()
            while not self.stop.requested:
                self.run_once()
            self.shutdown()
            return 0
        except (ConfigError, IncompatibleCheckpoint) as exc:
            log.error("%s", exc)
            self.close(final_checkpoint=False)
            return 2
        except LeaseLost as exc:  # another process may be restoring the model: nothing more is written
            log.error("%s", exc)
            self.close(final_checkpoint=False)
            return 1
        except Exception:
            log.exception("activestream stopped on an error")
            self.close(final_checkpoint=False)
            return 1

    def request_stop(self, *_: object) -> None:
        """Signal handler: set a flag and nothing else; the loop finishes its iteration."""
        self.stop.request()

    def start(self) -> None:
        """The role's start-up: restore, open the clients, take what to read (consumer.roles)."""
        self.role.start()

    def run_once(self) -> None:
        """One iteration: the role's steps between the lease check and the checkpoint's turn."""
        self.check_lease()
        self.io.emitter.serve()
        self.role.step()
        self.checkpoints.tick()
        self.health.beat()
        self.metrics.loop_last_iteration.set(self.clock.now())

    def score_and_emit(self) -> None:
        """Read and score a batch of features, unless one waits to be emitted; emit it."""
        read = None if self.emit.batch is not None else self.features_read()
        if read is not None:
            try:
                self.emit.batch = self.score(*read)
            finally:
                read.release()
        self.positions.reposition()
        if self.emit.batch is not None:
            self.emit()

    def shutdown(self) -> None:
        """Stop consuming, flush the producer, checkpoint, commit, close."""
        log.info("stopping: final checkpoint")
        self.health.stopping = True
        if self.started:
            self.role.stopping()
        self.emit.batch = None  # consumed, not emitted: consumed again after a restart
        self.features_read.drop_ahead()
        self.close(final_checkpoint=True)

    def close(self, final_checkpoint: bool) -> None:
        """Close every client, after a final checkpoint if asked (without one: as a crash leaves
        the state, with the outputs flushed)."""
        if self._closed:  # e.g. the final checkpoint failed and run() closes again on its way out
            return
        self._closed = True
        started, self.started = self.started, False  # closing consumers revokes: no second checkpoint
        try:
            if final_checkpoint and started:
                self.checkpoint()
        finally:
            for name in ("reader", "label_reader"):  # their messages and queues go before the consumers
                reader = getattr(self.io, name)
                if reader is not None:
                    reader.close()
                    setattr(self.io, name, None)
            for name in ("features", "labels", "requests"):
                close_quietly(getattr(self.io, name), name)
            if self.io.emitter is not None:
                if not final_checkpoint:
                    self.io.emitter.flush(5.0)
                self.io.emitter.close()
            if self.http is not None:
                self.http.close()
            self.features_read.close()
            self.checkpoints.close()
            self.role.close()
            if self.lease is not None:  # last: a standby takes over once the final checkpoint is durable
                self.lease.close()
                self.metrics.trainer_active.set(0.0)

    # -- what the roles' start-ups are made of ----------------------------------------------------
    def serve(self) -> None:
        """/healthz, /readyz and /metrics, from before the restore: a standby is alive, not ready."""
        if self._serve_http:
            self.http = HealthServer(self.health, self.metrics.registry, self.settings.metrics_port).start()

    def take_lease(self) -> bool:
        """Wait until this process is the active trainer of its group; False if asked to stop first."""
        def attempted() -> None:
            self._lease_attempts += 1

        self.lease = take_lease(self.clients, self.settings, self.clock, self.stop, self.health.beat,
                                attempted=attempted)
        if self.lease is None or not self.lease.held:
            return False
        self.metrics.trainer_active.set(1.0)
        return True

    def check_lease(self) -> None:
        """Stop if the lease went to another process."""
        if self.lease is None:
            return
        self.lease.poll(0)
        if self.lease.lost:
            self.metrics.trainer_active.set(0.0)
            raise LeaseLost(f"the trainer lease ({self.settings.topics.lease}) was taken away: stopping without a "
                            "checkpoint, as another process may be restoring the model")

    def register_outputs(self) -> bool:
        """Register framed outputs' schemas, waiting for the registry (/readyz says not ready)."""
        def wait(seconds: float) -> bool:
            self.health.beat()
            return self.stop.wait(seconds)

        return self.framing.register_outputs(wait)

    def open_emitter(self, batched: bool = True) -> None:
        s = self.settings
        self.io.emitter = Emitter(self.clients.producer, self.metrics, s.max_in_flight,
                                  self.clients.batch_producer if batched else None,
                                  dead_letter_topic=s.topics.dead_letters)

    def subscribe(self, name: str, on_assign: Callable[..., None], on_revoke: Callable[..., None]) -> None:
        """Consume the features or the labels topic (``name``) in the group, with its batch reader."""
        s = self.settings
        topic = {"features": s.topics.features, "labels": s.topics.labels}[name]
        consumer = self.clients.consumer(name)
        reader = batch_reader.attach(consumer, consumer_config(s, name).get("client.id", ""), topic)
        setattr(self.io, name, consumer)
        setattr(self.io, "reader" if name == "features" else "label_reader", reader)
        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)

    def ready(self, batch_reads: bool = True) -> None:
        """Load every compiled loop the first batches need (from numba's on-disk cache, or compile it
        once), so that readiness comes after the wait instead of the first records paying for it."""
        warm_up(self.learner, self.settings.n_features, batch_reads=batch_reads)
        self.health.restored = True
        self.started = True
        self.observe.gauges()

    # -- state ---------------------------------------------------------------------------------------
    def checkpoint(self) -> Any:
        """Make progress durable, then tell Kafka (:mod:`consumer.checkpointing`); what it wrote."""
        return self.checkpoints.run()

    def state_parts(self) -> list[Stateful]:
        """What a checkpoint holds (:mod:`consumer.state`)."""
        return [LearnerState(self.learner, self.settings.checkpoint.allow_param_change), self.pending, self.offsets,
                self.output_ends, self.recovery, self.totals, self.parked]

    def snapshot(self, settle: Callable[[], None] = lambda: None) -> Snapshot:
        """The offsets, where the outputs end, and copies of every part of the state (``settle()``:
        run once the decisions before the offsets are forgotten, before the copies)."""
        offsets = dict(self.offsets.next)
        outputs = {} if self.io.features is None else self.output_ends.measure(
            lambda topic, timeout: self.io.partitions(topic, timeout=timeout), self.io.features)
        self.recovery.forget_before(offsets)
        settle()
        s = self.settings
        state = gather(self.state_parts(), {"created_at": self.clock.now(), "instance": s.instance,
                                            "learner": self.learner.name, "role": s.role,
                                            "topics": s.topics.model_dump()})
        return Snapshot(offsets, outputs, state, tuple(f"pending.{part}" for part in self.pending.parts()))

    def load(self, state: dict[str, np.ndarray], path: str) -> None:
        """Restore every part of the state from a checkpoint's arrays (``path``: where it came from,
        for messages)."""
        state = upgrade(state, path)
        scatter(state, self.state_parts(), path)
        if self.learner.budget is not None and "learner.budget.format_version" not in state:
            log.warning("%s holds no budget controller state: the controller starts afresh", path)
        self.observe.refused_seen = 0 if self.learner.budget is None else self.learner.budget.refused
        log.info("restored %s: %d labels learnt, %d pending, offsets %s", path, self.learner.labels_,
                 len(self.pending), self.offsets.next)

    @property
    def recovery_attempts(self) -> int:
        """Start-up attempts to reach the brokers (the lease topic, the read-back of recent decisions)."""
        return self._lease_attempts + self.read_back.attempts


def close_quietly(client: Any, name: str) -> None:
    """Close a Kafka client on the way out, where a failure is only worth a line in the log."""
    if client is None:
        return
    try:
        client.close()
    except (KafkaException, RuntimeError) as exc:
        log.warning("closing %s: %s", name, exc)
