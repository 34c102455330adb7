"""Observe: the totals and the metrics of what the loop did, for Prometheus and for checkpoints."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from confluent_kafka import KafkaException

from consumer.clock import Clock
from consumer.config import Settings
from consumer.kafka import OffsetTracker
from consumer.metrics import Metrics
from consumer.pending import PendingStore
from consumer.records import FRAMED_REASONS, REASONS
from consumer.totals import Totals

__all__ = ["LABEL_OUTCOMES", "Observe"]

log = logging.getLogger(__name__)

LABEL_OUTCOMES = ("applied", "duplicate", "expired", "unknown", "defaulted")
_MAX_CLASSES_INITIALISED = 20  # labelled records: one series per (class, predicted) pair, k² of them
_LAG_EVERY_S = 1.0


class Observe:
    """The process's totals and metrics. ``consumers()``: the consumers whose lag is observed;
    ``out_of_range``: where a position found beyond its log goes."""

    def __init__(self, settings: Settings, metrics: Metrics, totals: Totals, learner: Any, pending: PendingStore,
                 offsets: OffsetTracker, clock: Clock, consumers: Callable[[], list[Any]],
                 out_of_range: list[tuple[str, int, int]]) -> None:
        self.settings, self.metrics, self.totals, self.learner = settings, metrics, totals, learner
        self.pending, self.offsets, self.clock = pending, offsets, clock
        self.consumers, self.out_of_range = consumers, out_of_range
        self.refused_seen = 0  # the budget controller's refusals already counted
        self._last_lag_at = -1e9
        self._scale_window_at = clock.monotonic()
        self.publish_settings()
        self.initialise_series()

    def batch(self, batch: Any, now: float) -> None:
        """A batch emitted: its records, predictions, requests and dead letters counted."""
        m, t = self.metrics, self.totals
        t.add("records_scored", batch.records)
        t.add("key_id_mismatches", batch.key_id_mismatches)
        counts = np.bincount(batch.predicted + 1)  # codes are >= -1 (±1, or a class index)
        codes = np.flatnonzero(counts)
        for label, n in zip(self.learner.decode(codes - 1).tolist(), counts[codes].tolist(), strict=True):
            t.add(f"predictions.{label}", n)
        t.add("label_requests", batch.requests)
        t.add("label_requests_suppressed", batch.suppressed)
        controller = self.learner.budget
        if controller is not None:  # refusals by the hard cap, counted once (the controller's total is in the model)
            t.add("label_requests_refused", max(0, controller.refused - self.refused_seen))
            self.refused_seen = controller.refused
        for (topic, reason), n in batch.dead.items():
            t.add(f"dead_letters.{topic}.{reason}", n)
        if batch.records:
            m.query_probability.observe_many(batch.probability)
            m.processing_latency.observe_many(now - batch.record_ts)
            m.batch_size.observe(batch.records)
        m.batch_duration.observe(self.clock.monotonic() - batch.started)
        self.gauges()

    def publish_settings(self) -> None:
        """What alerts compare against: the budget, the checkpoint interval, the query rate target."""
        s, m = self.settings, self.metrics
        m.budget_requests.set(math.inf if s.labels.budget is None else s.labels.budget)
        m.checkpoint_interval.set(s.checkpoint.every_s)
        m.query_rate_target.set(math.nan if s.query_rate_target is None else s.query_rate_target)
        m.dead_letter_ratio_limit.set(s.dead_letter_ratio_limit)

    def initialise_series(self) -> None:
        """Create the labelled series that can be known in advance at zero: a counter series born at
        40 shows no increase to rate(), so a first burst of dead letters would go unseen by alerts."""
        m, topics = self.metrics, self.settings.topics
        for topic in (topics.features, topics.labels):
            for reason in REASONS + (FRAMED_REASONS if self.settings.format != "json" else ()):
                m.dead_letters.labels(reason=reason, topic=topic)
        for outcome in LABEL_OUTCOMES:
            m.labels.labels(outcome)
        for topic in (topics.predictions, topics.label_requests, topics.dead_letters):
            m.produce_errors.labels(topic=topic)
        for kind in ("full", "delta", "checkpoint"):
            m.model_publications.labels(kind=kind)
        classes = [str(c) for c in self.learner.classes]
        for c in classes:
            m.predictions.labels(c)
        if len(classes) <= _MAX_CLASSES_INITIALISED:
            for actual in classes:
                for predicted in classes:
                    m.labelled_records.labels(**{"class": actual, "predicted": predicted,
                                                 "correct": str(actual == predicted).lower()})

    def gauges(self) -> None:
        """The gauges of the pending store, the model and the budget controller, as they are now."""
        m = self.metrics
        m.pending.set(len(self.pending))
        for kind, count in self.pending.remembered().items():
            m.remembered.labels(kind=kind).set(count)
        m.model_version.set(self.learner.labels_)
        controller = self.learner.budget
        if controller is None:
            m.budget_remaining.set(math.inf)
            for gauge in (m.query_knob, m.query_rate_aimed, m.query_rate_recent, m.budget_warmup_debt):
                gauge.set(math.nan)  # nothing aimed at: no alert may compare against it
        else:
            m.budget_remaining.set(controller.remaining())
            m.query_knob.set(controller.knob_value)
            m.query_rate_aimed.set(controller.rate if controller.records else math.nan)
            m.query_rate_recent.set(controller.recent_rate())
            m.budget_warmup_debt.set(controller.debt)
        m.estimated_error.set(self.totals.estimated_error_rate())

    def scale_window(self) -> None:
        """Every ``scale_window_s``: export how many features' scales moved >10× in the window."""
        now = self.clock.monotonic()
        scaler = self.learner.scaler
        if scaler is None or now - self._scale_window_at < self.settings.scale_window_s:
            return
        self._scale_window_at = now
        self.metrics.scale_moved.set(scaler.next_window())

    def lag(self) -> None:
        """Each second: the lag and position of every partition read; a position beyond its log's end
        goes to ``out_of_range`` (the log lost records: see the read step's repositioning)."""
        now = self.clock.monotonic()
        if now - self._last_lag_at < _LAG_EVERY_S:
            return
        self._last_lag_at = now
        for consumer in self.consumers():
            for tp in consumer.assignment():
                try:
                    _, high = consumer.get_watermark_offsets(tp, cached=True)
                except KafkaException:
                    continue
                position = self.offsets.next.get((tp.topic, tp.partition))
                if high >= 0 and position is not None and position > high \
                        and (tp.topic, tp.partition) not in self.offsets.restarted:
                    self.out_of_range.append((tp.topic, tp.partition, position))  # the log lost records
                    continue
                if high >= 0 and position is not None:
                    where = {"topic": tp.topic, "partition": str(tp.partition)}
                    self.metrics.consumer_lag.labels(**where).set(max(0, high - position))
                    self.metrics.consumer_offset.labels(**where).set(position)

    def io_paths(self, readers: Sequence[Any], emitter: Any) -> None:
        """activestream_io_path, once the clients exist: whether ``readers`` (one per consumer of
        records, None where it reads through Consumer.consume) are batch readers, and whether the
        outputs go through the batch producer or one by one."""
        reads = {"consume" if reader is None else "batch-reader" for reader in readers}
        produce = "produce" if emitter.batch is None else "batch-producer"
        for direction, paths, used in (("read", ("batch-reader", "consume"), reads),
                                       ("produce", ("batch-producer", "produce"), {produce})):
            for path in paths:
                self.metrics.io_path.labels(direction=direction, path=path).set(1.0 if path in used else 0.0)
        log.info("records read by %s, outputs produced by %s", " and ".join(sorted(reads)), produce)
