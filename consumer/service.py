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
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

from consumer import batch_reader, messages
from consumer.batch_reader import BatchReader, Fetched
from consumer.budget import CostModel
from consumer.checkpoint import CheckpointPolicy, CheckpointStore
from consumer.checkpointing import Checkpoints, FileSink, Sink, Snapshot, commit_offsets
from consumer.clients import KafkaClients, Opened
from consumer.clock import Clock, SystemClock
from consumer.config import Settings
from consumer.errors import (
    Backpressure,
    CheckpointError,
    ConfigError,
    IncompatibleCheckpoint,
    InvalidRecord,
    LeaseLost,
    OffsetOutOfRange,
    RegistryUnavailable,
)
from consumer.fastjson import ScanJob, run_scan, scan_job
from consumer.health import Health, HealthServer
from consumer.kafka import Emitter, OffsetTracker, consumer_config, offset_reset_policy
from consumer.learner import LearnerState, build_learner, warm_up
from consumer.lease import Lease
from consumer.metrics import Metrics
from consumer.output_ends import OutputEnds
from consumer.pending import Entry, PendingStore
from consumer.records import Label
from consumer.recovery import Recovery, read_tail
from consumer.state import Stateful, gather, scatter, upgrade
from consumer.steps.batch import Batch
from consumer.steps.join import Join
from consumer.steps.learn import Learn
from consumer.steps.observe import Observe
from consumer.steps.query import Query
from consumer.steps.score import Score
from consumer.stop import Stop
from consumer.totals import Totals

if TYPE_CHECKING:  # the registry's modules are loaded only where a framed format asks for them
    from consumer.output_formats import OutputFormat, OutputReader

__all__ = ["Service"]

log = logging.getLogger(__name__)

_STANDBY_LOG_EVERY_S = 30.0
_STANDBY_QUIET_S = 2.0  # a join takes about this long: no warning for the usual wait


def _release(read: _Read) -> None:
    """Give a batch reader's messages back to librdkafka (its columns stay readable)."""
    if isinstance(read.messages, Fetched):
        read.messages.release()


class _Read(NamedTuple):
    """A batch of feature messages as read: those without an error, their values, and their scan
    (laid out, and running in the scan thread) if it was read ahead."""

    messages: Sequence[Any]
    values: Sequence[bytes | None]
    job: ScanJob | None
    scan: Future | None
    refused: dict[int, InvalidRecord] | None = None  # framed values refused before decoding


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
        self.health = Health(self.clock, s.healthy_loop_age_s)
        self._clients = clients or KafkaClients(s)
        self.io = Opened()
        # ACTIVESTREAM_FORMAT json-schema or avro: the readers of framed features and labels, and when
        # each topic may be read again after the registry failed (``registry``: a client already
        # made, e.g. confluent-kafka's in-memory one; else one for the settings)
        self._framed: Any = None
        self._registry_backoff: dict[str, Any] = {}
        self._registry = registry
        if s.format != "json" or s.output_format != "json":
            from consumer.registry_formats import registry_client

            self._registry = registry_client(s) if registry is None else registry
        if s.format != "json":
            from consumer.registry_formats import Backoff, readers_for

            self._framed = readers_for(s, self._registry)
            self._registry_backoff = {role: Backoff(s.schema_registry.retry_max_s) for role in ("features", "labels")}
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
        self.recovery_attempts = 0  # start-up attempts to reach the brokers (lease topic, read-back)
        self._batch: Batch | None = None
        # the next batch, consumed while this one is decided; its compiled scan runs meanwhile in a
        # thread of its own (the scan releases the GIL), off the loop's critical path
        self._ahead: _Read | None = None
        self._revocations = 0  # of the features' partitions: a batch read before one is no longer ours
        self._out_of_range: list[tuple[str, int, int]] = []  # positions the logs did not hold (_reposition)
        # where _reposition sent each partition, until a rebalance: kept through the next re-assignments
        self._starts: dict[tuple[str, int], int] = {}
        self._reset_policies = {"features": "earliest", "labels": "earliest"}
        self._scanner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="activestream-scan")
        self._paused = False
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
                               self._consumers, self._out_of_range)
        self.query = Query(self.learner, self.pending, self.recovery, self.costs, s, keeps_pending=self.keeps_pending,
                           framing=lambda: self._outputs)
        self.score = Score(self.learner, self.query, s, self.clock, framing=lambda: self._outputs)
        self.learn = Learn(self.learner, s.n_features, self.costs, self.totals, self.metrics, scored=self.decides,
                           learnt=self.checkpoints.count_labels, audit=self._audit_learnt())
        self.join = Join(self.pending, self.learn, self.totals, s.labels, unknown=self._unknown,
                         retract=lambda rid: self.io.emitter.send(s.topics.label_requests, rid.encode(), None),
                         changed=self.observe.gauges)
        params = self.learner.get_params()
        if s.role != "all" and params.get("scale", "none") != "none" and params.get("scale_from") == "scored":
            raise ConfigError("ACTIVESTREAM_LEARNER_PARAMS: scale_from=scored learns the scales from scored records, "
                              f"which a {s.role} does not share with the other role; use scale_from=labelled, "
                              "or ACTIVESTREAM_ROLE=all")
        if s.labels.on_expiry == "default" and self.learner.learns_classes:
            raise ConfigError("ACTIVESTREAM_LABELS__EXPIRY_LABEL needs ACTIVESTREAM_CLASSES: the classes are "
                              "otherwise learnt from the labels, and the default label must be one of them")
        if s.labels.on_expiry == "default" and s.labels.expiry_label not in self.learner._codes:
            raise ConfigError(f"ACTIVESTREAM_LABELS__EXPIRY_LABEL: {s.labels.expiry_label!r} is not one of "
                              f"the classes {list(self.learner.classes)}")

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
        self._reset_policies = {role: offset_reset_policy(s, role) for role in ("features", "labels")}
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
        self._publish_io_paths([self.io.reader, self.io.label_reader])
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
        s = self.settings
        backoff = 1.0
        while True:  # brokers that are away are waited for, as the restore's read-back does
            try:
                self._clients.ensure_lease_topic(s.topics.lease)
                break
            except KafkaException as exc:
                self.recovery_attempts += 1
                log.warning("cannot reach the brokers to check the lease topic %s (%s); retrying in %.0f s",
                            s.topics.lease, exc, backoff)
                self.health.beat()
                if self._stop.wait(backoff):
                    return False
                backoff = min(30.0, 2 * backoff)
        self.lease = Lease(lambda: self._clients.consumer("lease"), s.topics.lease)
        self.lease.join()
        waited_since, told_at = self.clock.monotonic(), -math.inf
        while not self.lease.held:
            if self._stop.requested:
                return False
            self.lease.poll(0.2)
            self.health.beat()
            now = self.clock.monotonic()
            if now - told_at >= _STANDBY_LOG_EVERY_S and now - waited_since >= _STANDBY_QUIET_S:
                told_at = now
                log.warning("standby: another process of group %s holds the trainer lease (%s); waiting to take "
                            "over (role %s runs one active process per group; to scale out, run scorers and "
                            "trainers: docs, running at scale)", s.group_id, s.topics.lease, s.role)
        self.metrics.trainer_active.set(1.0)
        return True

    def _check_lease(self) -> None:
        """Stop if the lease went to another process."""
        if self.lease is None:
            return
        self.lease.poll(0)
        if self.lease.lost:
            self.metrics.trainer_active.set(0.0)
            raise LeaseLost(f"the trainer lease ({self.settings.topics.lease}) was taken away: stopping without a "
                            "checkpoint, as another process may be restoring the model")

    def _publish_io_paths(self, readers: Sequence[BatchReader | None]) -> None:
        """activestream_io_path, once the clients exist: whether ``readers`` (one per consumer of
        records, None where it reads through Consumer.consume) are batch readers, and whether the
        outputs go through the batch producer or one by one."""
        reads = {"consume" if reader is None else "batch-reader" for reader in readers}
        produce = "produce" if self.io.emitter.batch is None else "batch-producer"
        for direction, paths, used in (("read", ("batch-reader", "consume"), reads),
                                       ("produce", ("batch-producer", "produce"), {produce})):
            for path in paths:
                self.metrics.io_path.labels(direction=direction, path=path).set(1.0 if path in used else 0.0)
        log.info("records read by %s, outputs produced by %s", " and ".join(sorted(reads)), produce)

    def _warm_up(self) -> None:
        """Load every compiled loop the first batches need (from numba's on-disk cache, or compile it
        once), so readiness comes after the wait instead of the first records paying for it."""
        warm_up(self.learner, self.settings.n_features,
                batch_reads=self.io.reader is not None or self.io.label_reader is not None)

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self._starts.clear()
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
        if consumer is self.io.features and self._paused and self._batch is None:
            consumer.resume(partitions)  # the batch that paused it went with the revocation
            self._paused = False
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
                self._batch = None
                self._drop_ahead()
                self._revocations += 1
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
        self._batch = None  # consumed, not emitted: consumed again after a restart
        self._drop_ahead()
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
            self._scanner.shutdown(wait=True, cancel_futures=True)
            self.checkpoints.close()
            if self.lease is not None:  # last: a standby takes over once the final checkpoint is durable
                self.lease.close()
                self.metrics.trainer_active.set(0.0)

    # -- one iteration ---------------------------------------------------------------------------
    def run_once(self) -> None:
        s = self.settings
        self._check_lease()
        self.io.emitter.serve()
        self._serve_labels()
        if self._batch is None and (self._ahead is not None or self._may_read("features")):
            read, self._ahead = self._ahead or self._read(self._take_features(s.poll_timeout_s), scan=False), None
            if read is not None:
                revocations = self._revocations
                self._ahead = self._read(self._take_features(0), scan=True) if self._may_read("features") else None
                try:
                    # reading ahead serves the group's events: a revocation there takes `read` with it
                    # (its offsets are past the checkpoint the revocation committed)
                    if self._revocations == revocations:
                        self._batch = self.score(*read)
                finally:
                    _release(read)
        self._reposition()
        if self._batch is not None:
            self._try_emit()
        self.join.expire(self.clock.now())
        self.observe.lag()
        self.observe.scale_window()
        self.checkpoints.tick()
        self.health.beat()
        self.metrics.loop_last_iteration.set(self.clock.now())

    def _serve_labels(self) -> None:
        s = self.settings
        if not self._may_read("labels"):
            return
        # the consumer first: the group's events, and labels fetched before their partitions were
        # forwarded to the reader (older than any the reader holds)
        self._take_labels(self.io.labels.consume(s.batch_size, 0))
        if self.io.label_reader is not None and self._may_read("labels"):
            labels = self.io.label_reader.read(s.batch_size, 0)
            if labels is not None:
                try:
                    self._take_labels(labels)
                finally:
                    labels.release()

    def _take_features(self, wait_s: float) -> Sequence[Any]:
        """Up to one batch: wait up to ``wait_s`` for the first record, then take what is already
        there. With a reader, the consumer is polled first without waiting: for the group's events,
        and for the records fetched before their partitions were forwarded to the reader, which
        are older than any the reader holds."""
        s = self.settings
        first = self.io.features.poll(0 if self.io.reader is not None else wait_s)
        if first is not None:
            return [first, *self.io.features.consume(s.batch_size - 1, 0)]
        if self.io.reader is None:
            return []
        return self.io.reader.read(s.batch_size, wait_s) or []

    def _reposition(self) -> None:
        """Move each partition whose position its log did not hold where ``auto.offset.reset`` says.

        A position beyond the log means the log was truncated or re-created under the service (a
        broker that lost its data, a topic deleted and made again): it is logged as an error and
        counted (``activestream_offset_resets_total``), and the records the log holds now are read
        from its start (``earliest``, the default) or its end (``latest``); ``error`` stops the service.
        The lag observer finds it where a broker answers a fetch beyond its log with nothing; with
        ``auto.offset.reset=error`` librdkafka reports it, and a partition it has no position for."""
        for reader in (self.io.reader, self.io.label_reader):
            if reader is not None and reader.out_of_range:
                self._out_of_range.extend(reader.out_of_range)
                reader.out_of_range.clear()
        starts: dict[Any, dict[tuple[str, int], int]] = {}  # consumer -> partitions to send to a start
        while self._out_of_range:
            topic, partition, offset = self._out_of_range.pop(0)
            role = "features" if topic == self.settings.topics.features else "labels"
            policy = self._reset_policies[role]
            if offset >= 0:
                log.error("%s[%d]: offset %d is not in the log (truncated or re-created, or the broker lost its data): "
                          "reading from its %s (auto.offset.reset=%s)", topic, partition, offset,
                          "end" if policy == "latest" else "start", policy)
                self.metrics.offset_resets.labels(topic=topic).inc()
                if policy == "error":
                    raise OffsetOutOfRange(f"{topic}[{partition}]: offset {offset} is not in the log")
            consumer = self.io.features if role == "features" else self.io.labels
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
            self._assign_from(partitions, consumer)

    def _assign_from(self, starts: dict[tuple[str, int], int], consumer: Any) -> None:
        """Read each partition of ``starts`` from its start, every other one from where it is.

        A seek keeps the partition's records going to the batch reader. librdkafka refuses to seek
        a partition whose position it found outside the log (its error state): those are assigned
        again with an offset, in one assignment, paused until their records are forwarded to the
        reader again (records fetched before that land in the consumer's own queue, which nothing
        reads)."""
        self._starts.update(starts)
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
            elif (at in self._starts and at not in self.offsets.next) or tp.offset < 0:
                tp.offset = self._starts.get(at, tp.offset)
        consumer.pause(partitions)
        consumer.assign(partitions)
        reader = self.io.reader if consumer is self.io.features else self.io.label_reader
        if reader is not None:
            reader.forward(partitions)
        if not (consumer is self.io.features and self._paused):
            consumer.resume(partitions)

    def _drop_ahead(self) -> None:
        if self._ahead is not None:
            _release(self._ahead)
            self._ahead = None

    def _read(self, msgs: Sequence[Any], scan: bool) -> _Read | None:
        """A batch of feature messages as the score step takes it (None if there is none). With
        ``scan``, the batch is read ahead: its compiled scan starts now in the scan thread."""
        if not msgs:
            return None
        good = messages.without_errors(msgs, "features", self._out_of_range)
        values, joined = messages.values_of(good)
        refused = None
        if self._framed is not None and len(good):
            try:
                (values, refused), joined = self._framed[0].unframe(values), None
            except RegistryUnavailable as exc:
                self._hold_back("features", self.io.features, good, exc)
                if isinstance(good, Fetched):
                    good.release()
                return None
            self._registry_backoff["features"].succeeded()
        if not scan and joined is None:
            return _Read(good, values, None, None, refused)
        # Laid out here, so that the scan thread holds the GIL only to call the compiled loop: each
        # moment it holds it is one the loop waits for it.
        job = scan_job(values, self.settings.n_features, joined)
        return _Read(good, values, job, self._scanner.submit(run_scan, job) if scan else None, refused)

    def _may_read(self, role: str) -> bool:
        """Whether the features or labels may be read now: always, but for a while after the schema
        registry failed for them."""
        backoff = self._registry_backoff.get(role)
        return backoff is None or backoff.ready(self.clock.monotonic())

    def _hold_back(self, role: str, consumer: Any, msgs: Sequence[Any], exc: RegistryUnavailable) -> None:
        """The registry did not answer for a batch: send each of its partitions back to the batch's
        first record there, and read none of ``role`` for a while. Nothing was decided, stored or
        committed for the batch, so its records are read again, in order, once the registry
        answers: an outage pauses the topic (its lag grows) rather than filling the dead-letter topic."""
        wait = self._registry_backoff[role].failed(self.clock.monotonic())
        partitions, offsets = messages.places_of(msgs)
        topic = msgs[0].topic()
        first: dict[tuple[str, int], int] = {}
        for p, o in zip(partitions.tolist(), offsets.tolist(), strict=True):
            first[(topic, p)] = min(o, first.get((topic, p), o))
        log.warning("schema registry unavailable (%s): %d %s held back, read again in %.0f s", exc, len(msgs),
                    role, wait)
        self.metrics.registry_holds.labels(topic=topic).inc()
        self._assign_from(first, consumer)

    def _try_emit(self) -> None:
        try:
            self._emit(self._batch)
        except Backpressure:
            if not self._paused:
                self.io.features.pause(self.io.features.assignment())
                self._paused = True
            self.io.emitter.serve(0.05)  # wait for acknowledgements, not for a fixed time
            stray = self.io.features.poll(0)  # keeps the group membership alive while paused
            if stray is not None and stray.error() is None:
                self.io.features.seek(TopicPartition(stray.topic(), stray.partition(), stray.offset()))
            return
        self._batch = None
        if self._paused:
            self.io.features.resume(self.io.features.assignment())
            self._paused = False

    def _emit(self, batch: Batch) -> None:
        """Send a decided batch; raises :class:`Backpressure` before sending anything if it would
        exceed the in-flight limit."""
        self.io.emitter.reserve(len(batch.outgoing) + sum(len(values) for _, _, values, _ in batch.outputs))
        self.io.emitter.send_many(batch.outgoing)
        for topic, keys, values, sources in batch.outputs:
            if not self.pins_outputs:
                self.io.emitter.send_packed(topic, keys, values)
                continue
            for p in np.unique(sources).tolist():
                at = np.flatnonzero(sources == p)
                self.io.emitter.send_packed(topic, keys.select(at), values.select(at), partition=p)
        now = self.clock.now()
        for pushed_id, _ in self.pending.add_many(batch.pending, now):
            log.warning("pending store full: request %s expired early", pushed_id)
            self.totals.add("label_requests_expired")
        if self.recovery.parked:  # labels that arrived, after a restart, before their request was made again
            for rid, _ in batch.pending:
                parked = self.recovery.unpark(rid)
                if parked:
                    self.join([Label(rid, p["label"], p["cost"], p["ts"]) for p in parked], now)
        for (topic, partition), next_offset in batch.offsets.items():
            self.offsets.store(topic, partition, next_offset)
        self.observe.batch(batch, now)

    def _take_labels(self, msgs: Sequence[Any]) -> None:
        good = messages.without_errors(msgs, "labels", self._out_of_range)
        if not good:
            return
        now = self.clock.now()
        framed = None if self._framed is None else self._framed[1]
        try:
            if self.learner.learns_classes and len(self.learner.classes) < 2:  # the labels define the classes
                decoded = messages.decode_labels(good, messages.ANY_CLASS, now, adopt=self.learner.adopt, framed=framed)
            else:
                decoded = messages.decode_labels(good, self.learner._codes, now, framed=framed)
        except RegistryUnavailable as exc:
            self._hold_back("labels", self.io.labels, good, exc)
            return
        if framed is not None:
            self._registry_backoff["labels"].succeeded()
        for msg, err in decoded.rejected:
            self.io.emitter.send(self.settings.topics.dead_letters, *messages.dead_letter(msg, err))
            self.totals.add(f"dead_letters.{msg.topic()}.{err.reason}")
        self.join(decoded.records, now)
        # one topic (the subscription is a literal name): the last offset of each partition
        for partition, offset in messages.last_offsets(*messages.places_of(good)).items():
            self.offsets.store(self.settings.topics.labels, partition, offset + 1)
        self.observe.gauges()

    def _audit_learnt(self) -> Callable[[str, list[tuple[Entry, Label]]], None] | None:
        """What the learn step tells each batch it learnt (None: nothing)."""
        return None

    def _unknown(self, lab: Label) -> None:
        """A label for an id never requested here: parked if a replayed record will request it."""
        if self.recovery.expects(lab.id):
            self.recovery.park(lab.id, {"label": lab.label, "cost": lab.cost, "ts": lab.ts})
        else:
            self.totals.add("labels.unknown")

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
                self.output_ends, self.recovery, self.totals]

    def _snapshot(self) -> Snapshot:
        """Step 2: the offsets, where the outputs end, and copies of every part of the state."""
        offsets = dict(self.offsets.next)
        outputs = {} if self.io.features is None else self.output_ends.measure(
            lambda topic, timeout: self._partitions(topic, timeout=timeout), self.io.features)
        self.recovery.forget_before(offsets)
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
        """Read back what was produced after the checkpoint (see :mod:`consumer.recovery`); while the
        broker cannot be reached, keep trying (the loop is not running yet: /readyz says so)."""
        if self.restored_from is None:
            return
        topics = self.settings.topics
        backoff = 1.0
        while True:
            self.recovery_attempts += 1
            try:
                for topic, kind in ((topics.predictions, "prediction"), (topics.label_requests, "request")):
                    partitions = self._partitions(topic, required=True)
                    start = self.output_ends.from_topic(topic)
                    messages = read_tail(self._clients.reader, topic, start, partitions, timeout_s=120.0)
                    self.recovery.add_outputs(messages, kind, self._output_reader)
                break
            except (KafkaException, TimeoutError, RegistryUnavailable) as exc:
                log.warning("reading back recent decisions failed (%s); retrying in %.0f s", exc, backoff)
                self.recovery.clear()
                self.health.beat()
                if self._stop.wait(backoff):
                    return
                backoff = min(30.0, 2 * backoff)
        self.recovery.forget_before(self.offsets.next)
        log.info("recovery: %d decisions made after the checkpoint will be kept", len(self.recovery))

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
