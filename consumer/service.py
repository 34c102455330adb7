"""The service loop: score feature records, request labels, learn from labels, checkpoint.

::

    features ──► decode ──► score batch ──► predictions
                   │ bad        └─► query? ──► label-requests + pending store
                   ▼
              dead-letters
    labels ──► decode ──► join with pending ──► learner.learn_many
                              │ unknown / expired / duplicate: counted, never applied twice
    every N s or M labels: flush producer → checkpoint (model, pending, offsets) → commit offsets

Delivery is at-least-once for outputs, exactly-once for labels into the model: offsets are committed
to Kafka only after the checkpoint holding the model that reflects them is durable, and on restart
the decisions already produced are read back (:mod:`consumer.recovery`) so replayed records keep them.
"""

from __future__ import annotations

import gc
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from confluent_kafka import KafkaException, TopicPartition

from consumer import batch_reader
from consumer.budget import CostModel
from consumer.checkpoint import CheckpointPolicy, CheckpointStore
from consumer.checkpointing import Checkpoints, FileSink, Sink, Snapshot, commit_offsets
from consumer.clients import KafkaClients, Opened
from consumer.clock import Clock, SystemClock
from consumer.config import Settings
from consumer.errors import (
    CheckpointError,
    ConfigError,
    IncompatibleCheckpoint,
    LeaseLost,
)
from consumer.health import Health, HealthServer
from consumer.kafka import Emitter, OffsetTracker, consumer_config, offset_reset_policy
from consumer.learner import LearnerState, build_learner, warm_up
from consumer.lease import Lease, take_lease
from consumer.metrics import Metrics
from consumer.output_ends import OutputEnds
from consumer.pending import Entry, PendingStore
from consumer.records import Label
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
from consumer.steps.replayed import ReadBack
from consumer.steps.score import Score
from consumer.stop import Stop
from consumer.totals import Totals

if TYPE_CHECKING:  # the registry's modules are loaded only where a framed format asks for them
    from consumer.output_formats import OutputFormat, OutputReader

__all__ = ["Service"]

log = logging.getLogger(__name__)



class Service:
    """One activestream process in role ``all``: scoring and training over the five topics.

    ``run()`` restores, loops until :meth:`request_stop`, then shuts down cleanly (final
    checkpoint, offsets committed, consumers closed) and returns the exit code. Another process of
    the same group in role ``all`` waits as a standby on the trainer lease (:mod:`consumer.lease`)
    instead of splitting the partitions with it, which would cross requests and labels. The roles
    ``scorer`` and ``trainer`` are :class:`consumer.scorer.Scorer` and :class:`consumer.trainer.Trainer`.
    """

    keeps_pending = True  # a scorer's requests are joined with their labels by the trainer
    pins_outputs = False  # a scorer sends the outputs of features partition p to partition p (consumer.scorer)
    # whether this process decided on the records whose labels it learns; a trainer did not, so an
    # online scale learns from the labelled rows there (and the scorers follow its model)
    decides = True

    def __init__(self, settings: Settings, *, clock: Clock | None = None, clients: Any = None,
                 serve_http: bool = True, registry: Any = None) -> None:
        self.settings = s = settings
        self.clock = clock or SystemClock()
        self.metrics = Metrics()
        self.totals = Totals(self.metrics)
        self.learner = build_learner(s)
        self.pending = PendingStore(s.labels.max_pending, memory_s=s.labels.ttl_s)
        self.costs = CostModel(s.labels.cost_per_request, s.labels.cost_per_class)
        self.store = CheckpointStore(s.checkpoint_dir, s.checkpoint.keep)
        policy = CheckpointPolicy(s.checkpoint.every_s, s.checkpoint.every_labels)
        self.checkpoints = Checkpoints(self._sink(), policy=policy, clock=self.clock, metrics=self.metrics,
                                       flush=lambda t: self.io.emitter.flush(t), pending=lambda: len(self.io.emitter),
                                       snapshot=self._snapshot,
                                       commit=lambda offsets: commit_offsets(self._consumers(), offsets))
        self.output_ends = OutputEnds((s.topics.predictions, s.topics.label_requests), self.clock)
        self.offsets = OffsetTracker()
        self.recovery = Recovery()
        self.parked = Parked(s.labels.max_pending, self.totals)
        self.health = Health(self.clock, s.healthy_loop_age_s)
        self._clients = clients or KafkaClients(s)
        self.io = Opened()
        # ACTIVESTREAM_FORMAT json-schema or avro: the readers of framed features and labels, and when
        # each topic may be read again after the registry failed (``registry``: a client already
        # made, e.g. confluent-kafka's in-memory one; else one for the settings)
        self._framed: Any = (None, None)
        backoffs: dict[str, Any] = {}
        self._registry = registry
        if s.format != "json" or s.output_format != "json":
            from consumer.registry_formats import registry_client

            self._registry = registry_client(s) if registry is None else registry
        if s.format != "json":
            from consumer.registry_formats import Backoff, readers_for

            self._framed = readers_for(s, self._registry)
            backoffs = {role: Backoff(s.schema_registry.retry_max_s) for role in ("features", "labels")}
        # ACTIVESTREAM_OUTPUT_FORMAT json-schema or avro: how the outputs are framed, once their schemas
        # are registered (start-up); with a registry, outputs read back (recovery, a trainer's requests)
        # may be framed, whatever the format is now
        self._outputs: OutputFormat | None = None
        self._output_reader: OutputReader | None = None
        if self._registry is not None:
            from consumer.output_formats import OutputReader

            self._output_reader = OutputReader(self._registry)
        self._serve_http = serve_http
        self._stop = Stop()  # what a signal handler may set (consumer.stop)
        self._partitions_seen: dict[str, list[int]] = {}
        self._lease_attempts = 0
        self.read_back = ReadBack(self.recovery, s, self._clients.reader, lambda: self._output_reader,
                                  lambda topic: self._partitions(topic, required=True))
        self.positions = Positions(self.offsets, self.metrics, self._read_by_topic, {},
                                   paused=lambda consumer: consumer is self.io.features and self.emit.paused)
        self.held = Held(backoffs, self.positions, self.metrics, self.clock)
        self.features_read = FeatureRead(self.io, s, self.held, self.positions.out_of_range, self._framed[0])
        self._started = False
        self._closed = False
        self.restored_from: Path | None = None
        self.http: HealthServer | None = None
        self.lease: Lease | None = None
        self.metrics.role.labels(role=s.role).set(1.0)
        # the other role's model gauges: NaN, so that per-scorer panels and lags show scorers only
        if s.role != "scorer":
            self.metrics.model_version_in_use.set(math.nan)
            self.metrics.model_age.set(math.nan)
        if s.role != "trainer":
            self.metrics.model_published_version.set(math.nan)
        self.observe = Observe(s, self.metrics, self.totals, self.learner, self.pending, self.offsets, self.clock,
                               self._consumers, self.positions.out_of_range)
        self.query = Query(self.learner, self.pending, self.recovery, self.costs, s, keeps_pending=self.keeps_pending,
                           framing=lambda: self._outputs)
        self.score = Score(self.learner, self.query, s, self.clock, framing=lambda: self._outputs)
        self.learn = Learn(self.learner, s.n_features, self.costs, self.totals, self.metrics, scored=self.decides,
                           learnt=self.checkpoints.count_labels, audit=self._audit_learnt())
        self.join = Join(self.pending, self.learn, self.totals, s.labels, unknown=self._unknown,
                         retract=lambda rid: self.io.emitter.send(s.topics.label_requests, rid.encode(), None),
                         changed=self.observe.gauges)
        self.emit = Emit(self.io, self.pending, self.offsets, self.parked, self.join, self.observe, self.totals,
                         self.clock, pins_outputs=self.pins_outputs)
        self.label_read = LabelRead(self.io, self.learner, s, self.held, self.join, self.offsets, self.totals,
                                    self.clock, self.positions.out_of_range, unframe=self._framed[1],
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
            while not self._stop.requested:
                self.run_once()
            self._shutdown()
            return 0
        except (ConfigError, IncompatibleCheckpoint) as exc:
            log.error("%s", exc)
            self._close(final_checkpoint=False)
            return 2
        except LeaseLost as exc:  # another process may be restoring the model: nothing more is written
            log.error("%s", exc)
            self._close(final_checkpoint=False)
            return 1
        except Exception:
            log.exception("activestream stopped on an error")
            self._close(final_checkpoint=False)
            return 1

    def request_stop(self, *_: object) -> None:
        """Signal handler: set a flag and nothing else; the loop finishes its iteration."""
        self._stop.request()

    def start(self) -> None:
        """Restore the newest checkpoint, open the clients, subscribe, read back recent decisions."""
        s = self.settings
        try:
            self.store.prepare()
        except CheckpointError as exc:
            raise ConfigError(f"ACTIVESTREAM_CHECKPOINT_DIR: {exc}") from None
        self._clients.preflight()
        self.positions.policies = {topic: offset_reset_policy(s, role) for role, topic in
                                   (("features", s.topics.features), ("labels", s.topics.labels))}
        for topic in (s.topics.features, s.topics.labels):
            self.metrics.offset_resets.labels(topic=topic)  # at zero from the start, as alerts expect
        self._serve()
        if not self._take_lease():
            return
        if not self._register_outputs():
            return
        self._restore()
        self.io.emitter = Emitter(self._clients.producer, self.metrics, s.max_in_flight, self._clients.batch_producer,
                               dead_letter_topic=s.topics.dead_letters)
        self.io.features = self._clients.consumer("features")
        self.io.reader = batch_reader.attach(self.io.features, consumer_config(s, "features").get("client.id", ""),
                                           s.topics.features)
        self.io.labels = self._clients.consumer("labels")
        self.io.label_reader = batch_reader.attach(self.io.labels, consumer_config(s, "labels").get("client.id", ""),
                                                 s.topics.labels)
        self.io.features.subscribe([s.topics.features], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self.io.labels.subscribe([s.topics.labels], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._recover_decisions()
        self.observe.io_paths([self.io.reader, self.io.label_reader], self.io.emitter)
        self._warm_up()
        self.health.restored = True
        self._started = True
        self.observe.gauges()

    def _register_outputs(self) -> bool:
        """With ACTIVESTREAM_OUTPUT_FORMAT json-schema or avro, register the outputs' schemas, waiting
        for the registry while it does not answer (the loop is not running yet: /readyz says so);
        False if asked to stop first."""
        if self.settings.output_format == "json":
            return True
        from consumer.output_formats import OutputReader, register_outputs

        def wait(seconds: float) -> bool:
            self.health.beat()
            return self._stop.wait(seconds)

        self._outputs = register_outputs(self.settings, self._registry, wait)
        if self._outputs is None:
            return False
        self._output_reader = OutputReader(self._registry, self._outputs.known_schemas())
        return True

    def _serve(self) -> None:
        """/healthz, /readyz and /metrics, from before the restore: a standby is alive, not ready."""
        if self._serve_http:
            self.http = HealthServer(self.health, self.metrics.registry, self.settings.metrics_port).start()

    def _take_lease(self) -> bool:
        """Wait until this process is the active trainer of its group; False if asked to stop first."""
        self.lease = take_lease(self._clients, self.settings, self.clock, self._stop, self.health.beat,
                                attempted=self._count_lease_attempt)
        if self.lease is None or not self.lease.held:
            return False
        self.metrics.trainer_active.set(1.0)
        return True

    def _count_lease_attempt(self) -> None:
        self._lease_attempts += 1

    def _check_lease(self) -> None:
        """Stop if the lease went to another process."""
        if self.lease is None:
            return
        self.lease.poll(0)
        if self.lease.lost:
            self.metrics.trainer_active.set(0.0)
            raise LeaseLost(f"the trainer lease ({self.settings.topics.lease}) was taken away: stopping without a "
                            "checkpoint, as another process may be restoring the model")

    def _warm_up(self) -> None:
        """Load every compiled loop the first batches need (from numba's on-disk cache, or compile it
        once), so readiness comes after the wait instead of the first records paying for it."""
        warm_up(self.learner, self.settings.n_features,
                batch_reads=self.io.reader is not None or self.io.label_reader is not None)

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self.positions.starts.clear()
        # A partition this process has no position in starts at the group's committed offset; with
        # none, librdkafka reports it (auto.offset.reset=error) and _reposition starts it.
        for tp in partitions:
            known = self.offsets.next.get((tp.topic, tp.partition))
            if known is not None:
                tp.offset = known
        consumer.assign(partitions)
        reader = self.io.reader if consumer is self.io.features else self.io.label_reader
        if reader is not None:
            reader.forward(partitions)
        if consumer is self.io.features:
            self.emit.assigned(partitions)
        for tp in partitions:
            self.metrics.rebalances.labels(topic=tp.topic).inc()
        if consumer is self.io.features:
            self.health.assigned = bool(partitions)
            self.metrics.ready.set(1.0 if self.health.restored and partitions else 0.0)
        log.info("assigned %s", ", ".join(f"{tp.topic}[{tp.partition}]@{tp.offset}" for tp in partitions))

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if self._started and partitions:
            log.info("partitions revoked: checkpointing first")
            if consumer is self.io.features:
                # not emitted: the new owner consumes these records again, or this process after
                # _on_assign has sought back to the offsets of what it did emit
                self.emit.batch = None
                self.features_read.revoked()
            try:
                self.checkpoint()
            except CheckpointError as exc:
                # The broker is away (the usual cause of a revocation mid-run): nothing is committed, so
                # a new owner resumes from the last durable checkpoint, and if the partitions come back
                # here, _on_assign seeks to the offsets that match this process's model.
                log.warning("checkpoint before revocation failed, nothing committed: %s", exc)
                self.checkpoints.postpone()
        if consumer is self.io.features:
            self.health.assigned = False
            self.metrics.ready.set(0.0)

    def _shutdown(self) -> None:
        """Stop consuming, flush the producer, checkpoint, commit, close."""
        log.info("stopping: final checkpoint")
        self.health.stopping = True
        self.emit.batch = None  # consumed, not emitted: consumed again after a restart
        self.features_read.drop_ahead()
        self._close(final_checkpoint=True)

    def _close(self, final_checkpoint: bool) -> None:
        if self._closed:  # e.g. the final checkpoint failed and run() closes again on its way out
            return
        self._closed = True
        started, self._started = self._started, False  # closing consumers revokes: no second checkpoint
        try:
            if final_checkpoint and started:
                self.checkpoint()
        finally:
            for name in ("reader", "label_reader"):  # their messages and queues go before the consumers
                reader = getattr(self.io, name)
                if reader is not None:
                    reader.close()
                    setattr(self.io, name, None)
            for name in ("features", "labels"):
                client = getattr(self.io, name)
                if client is not None:
                    try:
                        client.close()
                    except (KafkaException, RuntimeError) as exc:
                        log.warning("closing %s: %s", name, exc)
            if self.io.emitter is not None:
                if not final_checkpoint:
                    self.io.emitter.flush(5.0)
                self.io.emitter.close()
            if self.http is not None:
                self.http.close()
            self.features_read.close()
            self.checkpoints.close()
            if self.lease is not None:  # last: a standby takes over once the final checkpoint is durable
                self.lease.close()
                self.metrics.trainer_active.set(0.0)

    # -- one iteration ---------------------------------------------------------------------------
    def run_once(self) -> None:
        self._check_lease()
        self.io.emitter.serve()
        self._serve_labels()
        read = None if self.emit.batch is not None else self.features_read()
        if read is not None:
            try:
                self.emit.batch = self.score(*read)
            finally:
                read.release()
        self.positions.reposition()
        if self.emit.batch is not None:
            self.emit()
        self.join.expire(self.clock.now())
        self.observe.lag()
        self.observe.scale_window()
        self.checkpoints.tick()
        self.health.beat()
        self.metrics.loop_last_iteration.set(self.clock.now())

    def _read_by_topic(self) -> dict[str, tuple[Any, Any]]:
        """The consumers of this process's records, by topic, each with its batch reader (or None)."""
        topics = self.settings.topics
        return {topics.features: (self.io.features, self.io.reader),
                topics.labels: (self.io.labels, self.io.label_reader)}

    def _serve_labels(self) -> None:
        self.label_read()

    def _audit_learnt(self) -> Callable[[str, list[tuple[Entry, Label]]], None] | None:
        """What the learn step tells each batch it learnt (None: nothing)."""
        return None

    def _unknown(self, lab: Label) -> None:
        """A label for an id never requested here: parked if a replayed record will request it."""
        if self.recovery.expects(lab.id):
            self.parked.park(lab, self.clock.now())
        else:
            self.totals.add("labels.unknown")

    def _give_up_parked(self) -> None:
        """Labels parked for records that will not be read again (their requests cannot be made again)."""
        if self.parked:
            self.parked.give_up([rid for rid in list(self.parked.waiting) if not self.recovery.expects(rid)])

    def _consumers(self) -> list[Any]:
        """The consumers of the topics this process reads records from (not the lease)."""
        return [c for c in (self.io.features, self.io.labels) if c is not None]

    def checkpoint(self) -> Any:
        """Make progress durable, then tell Kafka (:mod:`consumer.checkpointing`); what it wrote."""
        return self.checkpoints.run()

    def _sink(self) -> Sink:
        return FileSink(self.store, self.metrics)

    def _state_parts(self) -> list[Stateful]:
        """What a checkpoint holds (:mod:`consumer.state`)."""
        return [LearnerState(self.learner, self.settings.checkpoint.allow_param_change), self.pending, self.offsets,
                self.output_ends, self.recovery, self.totals, self.parked]

    def _snapshot(self) -> Snapshot:
        """Step 2: the offsets, where the outputs end, and copies of every part of the state."""
        offsets = dict(self.offsets.next)
        outputs = {} if self.io.features is None else self.output_ends.measure(
            lambda topic, timeout: self._partitions(topic, timeout=timeout), self.io.features)
        self.recovery.forget_before(offsets)
        self._give_up_parked()
        s = self.settings
        state = gather(self._state_parts(), {"created_at": self.clock.now(), "instance": s.instance,
                                             "learner": self.learner.name, "role": s.role,
                                             "topics": s.topics.model_dump()})
        return Snapshot(offsets, outputs, state, tuple(f"pending.{part}" for part in self.pending.parts()))

    def _restore(self) -> None:
        found = self.store.latest()
        if found is None:
            log.info("no checkpoint in %s: starting a new model", self.store.directory)
            return
        path, state = found
        self._load(state, str(path))
        self.restored_from = path

    def _load(self, state: dict[str, np.ndarray], path: str) -> None:
        """Restore every part of the state from a checkpoint's arrays (``path``: where it came from,
        for messages)."""
        state = upgrade(state, path)
        scatter(state, self._state_parts(), path)
        if self.learner.budget is not None and "learner.budget.format_version" not in state:
            log.warning("%s holds no budget controller state: the controller starts afresh", path)
        self.observe.refused_seen = 0 if self.learner.budget is None else self.learner.budget.refused
        log.info("restored %s: %d labels learnt, %d pending, offsets %s", path, self.learner.labels_,
                 len(self.pending), self.offsets.next)

    def _recover_decisions(self) -> None:
        if self.restored_from is not None:
            self.read_back.since_checkpoint(self.output_ends.from_topic, self.offsets.next, self._stop,
                                            self.health.beat)

    @property
    def recovery_attempts(self) -> int:
        """Start-up attempts to reach the brokers (the lease topic, the read-back of recent decisions)."""
        return self._lease_attempts + self.read_back.attempts

    def _partitions(self, topic: str, required: bool = False, timeout: float = 10.0) -> list[int]:
        """The topic's partitions; the last known list when the broker does not answer within
        ``timeout`` seconds (unless ``required``, where the error is raised)."""
        try:
            metadata = self.io.producer.list_topics(topic, timeout=timeout)
        except KafkaException:
            if required or topic not in self._partitions_seen:
                raise
            return self._partitions_seen[topic]
        info = metadata.topics.get(topic)
        found = [] if info is None or info.error is not None else sorted(info.partitions)
        self._partitions_seen[topic] = found
        return found
