"""Every Prometheus metric the service exports, declared once.

Names follow Prometheus conventions: prefix ``activestream_``, base units (seconds), ``_total`` on
counters. ``reason`` and ``topic`` are the only many-valued labels; ``class`` and ``predicted``
(bounded by the model's classes), ``correct``, ``outcome`` and ``partition`` (bounded by partition
counts) are small sets.
Rates and ratios (query rate, accuracy) are left to PromQL, e.g. the query rate is
``rate(activestream_label_requests_total[5m]) / rate(activestream_records_scored_total[5m])``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, disable_created_metrics
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

# *_created series double the exposition for no use on a long-running service.
disable_created_metrics()

__all__ = ["BulkHistogram", "Metrics"]


class BulkHistogram(Collector):
    """A histogram fed a whole batch of observations at once (one numpy call, not one per record)."""

    def __init__(self, name: str, documentation: str, buckets: Iterable[float],
                 registry: CollectorRegistry) -> None:
        self.name, self.documentation = name, documentation
        self.bounds = np.asarray(sorted(buckets), dtype=np.float64)
        self.counts = np.zeros(self.bounds.size + 1, dtype=np.int64)  # last bucket: above every bound
        self.sum = 0.0
        registry.register(self)

    def observe_many(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64)
        if values.size:
            self.counts += np.bincount(np.searchsorted(self.bounds, values, side="left"),
                                       minlength=self.counts.size)
            self.sum += float(values.sum())

    def describe(self):
        """Its name without its samples: what ``registry.restricted_registry`` (``/metrics?name[]=``) finds."""
        yield HistogramMetricFamily(self.name, self.documentation)

    def collect(self):
        cumulative = np.cumsum(self.counts)
        buckets = [(floatToGoString(b), int(c)) for b, c in zip(self.bounds, cumulative[:-1], strict=True)]
        buckets.append(("+Inf", int(cumulative[-1])))
        yield HistogramMetricFamily(self.name, self.documentation, buckets=buckets, sum_value=self.sum)

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_DELAY_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
_PROBABILITY_BUCKETS = (0.001, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 0.9, 0.99, 1.0)
_BATCH_BUCKETS = (1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
_SWAP_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300)  # 2: the scale-out bar
_BYTES_BUCKETS = (1e3, 1e4, 1e5, 1e6, 4e6, 1.6e7, 6.4e7, 2.56e8)


class Metrics:
    """The service's metrics, registered in their own registry (one per service instance)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry or CollectorRegistry()
        p = "activestream_"
        # the scoring side
        self.records_scored = Counter(p + "records_scored", "Feature records scored", registry=r)
        self.predictions = Counter(p + "predictions", "Predictions produced, by predicted class", ["class"],
                                   registry=r)
        self.label_requests = Counter(p + "label_requests", "Label requests produced", registry=r)
        self.requests_suppressed = Counter(
            p + "label_requests_suppressed",
            "Queries not sent: the label budget was spent, or the id was already pending", registry=r)
        self.query_probability = BulkHistogram(p + "query_probability", "Query probability of each scored record",
                                               _PROBABILITY_BUCKETS, r)
        self.batch_size = Histogram(p + "batch_size_records", "Feature records per processed batch",
                                    buckets=_BATCH_BUCKETS, registry=r)
        self.processing_latency = BulkHistogram(
            p + "processing_latency_seconds", "From a record's timestamp to its prediction being produced",
            _LATENCY_BUCKETS, r)
        self.batch_duration = Histogram(p + "batch_duration_seconds", "Wall time to decode, score and emit a batch",
                                        buckets=_LATENCY_BUCKETS, registry=r)
        # the labelling side
        self.labels = Counter(p + "labels", "Labels consumed, by outcome (applied, unknown, expired, duplicate, "
                              "defaulted, overflow)",
                              ["outcome"], registry=r)
        self.requests_expired = Counter(p + "label_requests_expired", "Label requests that expired unanswered",
                                        registry=r)
        self.labelling_cost = Counter(p + "labelling_cost", "Cost of the labels applied", registry=r)
        self.label_delay = BulkHistogram(p + "label_delay_seconds", "From a label request to its label being applied",
                                         _DELAY_BUCKETS, r)
        # correct ("true"/"false") is predicted == class, spelt out: PromQL cannot compare two labels.
        self.labelled_records = Counter(p + "labelled_records",
                                        "Applied labels by true class and by the class predicted for the record",
                                        ["class", "predicted", "correct"], registry=r)
        self.labelled_mistakes = Counter(p + "labelled_mistakes",
                                         "Applied labels whose prediction had been wrong (online mistakes)",
                                         registry=r)
        self.weighted_labels = Counter(p + "importance_weighted_labels",
                                       "Sum of 1/query probability over applied labels", registry=r)
        self.weighted_mistakes = Counter(p + "importance_weighted_mistakes",
                                         "Sum of 1/query probability over applied labels that were mistakes",
                                         registry=r)
        self.estimated_error = Gauge(p + "estimated_error_rate",
                                     "Importance-weighted estimate of the error rate over all scored records",
                                     registry=r)
        self.pending = Gauge(p + "pending_label_requests", "Label requests waiting for their label", registry=r)
        self.remembered = Gauge(p + "remembered_label_ids",
                                "Ids remembered for a label TTL after their label was applied or their request "
                                "expired, so that a later label for one is told apart, by kind (applied, expired)",
                                ["kind"], registry=r)
        self.budget_remaining = Gauge(p + "label_budget_remaining",
                                      "Label requests left in the current budget window (+Inf without budget)",
                                      registry=r)
        self.budget_requests = Gauge(p + "label_budget_requests",
                                     "Label requests allowed per budget window (+Inf without budget)", registry=r)
        self.query_rate_target = Gauge(p + "query_rate_target",
                                       "The query rate this deployment is expected to run at (NaN when not set)",
                                       registry=r)
        self.query_knob = Gauge(p + "query_knob",
                                "Value of the query strategy's knob the budget controller moves (δ, b, rate, κ)",
                                registry=r)
        self.query_rate_aimed = Gauge(p + "query_rate_aimed",
                                      "Query rate the budget controller aims at now: the target, or a cap paced "
                                      "over its window; more during a warm-up, less while its debt is repaid "
                                      "(NaN without a controller)", registry=r)
        self.budget_warmup_debt = Gauge(p + "budget_warmup_debt",
                                        "Label requests the budget controller's warm-up made beyond the rate and "
                                        "has not repaid yet (NaN without a controller)", registry=r)
        self.query_rate_recent = Gauge(p + "query_rate_recent",
                                       "Label requests per record over the last 500 records the controller decided",
                                       registry=r)
        self.requests_refused = Counter(p + "label_requests_refused",
                                        "Queries the hard cap (requests or cost per budget window) refused",
                                        registry=r)
        self.model_version = Gauge(p + "model_version", "Labels applied to the model since it was created",
                                   registry=r)
        # a drift signal: a unit change upstream (cents → euros) moves a feature's scale by orders of magnitude
        self.scale_moved = Gauge(p + "scale_moved_features",
                                 "Features whose online scale moved by more than 10x in the last closed window "
                                 "(learner parameter scale; 0 without it)", registry=r)
        # scale-out: roles, the lease, the model topic
        self.role = Gauge(p + "role", "1 for the role this process runs (all, scorer, trainer)", ["role"], registry=r)
        self.trainer_active = Gauge(p + "trainer_active",
                                    "1 while this process holds the trainer lease (roles trainer and all)", registry=r)
        self.model_published_version = Gauge(p + "model_published_version",
                                             "Version number of the trainer's last model publication", registry=r)
        self.model_version_in_use = Gauge(p + "model_version_in_use",
                                          "Version number of the published model this scorer scores with "
                                          "(0: none read yet)", registry=r)
        self.model_age = Gauge(p + "model_age_seconds",
                               "Since the model this scorer scores with was published (NaN: none read yet)",
                               registry=r)
        self.model_publications = Counter(p + "model_publications", "Model publications, by kind",
                                          ["kind"], registry=r)
        self.model_published_bytes = Histogram(p + "model_published_bytes", "Bytes of each model publication",
                                               buckets=_BYTES_BUCKETS, registry=r)
        self.model_swap_delay = Histogram(p + "model_swap_delay_seconds",
                                          "From a model version's publication to this scorer scoring with it",
                                          buckets=_SWAP_BUCKETS, registry=r)
        # health of the pipeline
        self.dead_letters = Counter(p + "dead_letters", "Records sent to the dead-letter topic", ["reason", "topic"],
                                    registry=r)
        self.dead_letter_ratio_limit = Gauge(
            p + "dead_letter_ratio_limit",
            "Share of consumed records sent to the dead-letter topic above which the alert fires", registry=r)
        self.produce_errors = Counter(p + "produce_errors", "Failed deliveries (retried unless fatal)", ["topic"],
                                      registry=r)
        self.key_id_mismatches = Counter(p + "key_id_mismatches",
                                         "Feature records whose message key is not their id (still scored)",
                                         registry=r)
        self.backpressure = Counter(p + "backpressure_events",
                                    "Times emitting waited for the producer to drain", registry=r)
        self.checkpoint_duration = Histogram(p + "checkpoint_duration_seconds", "Time to make a checkpoint durable",
                                             buckets=_LATENCY_BUCKETS, registry=r)
        self.checkpoint_last_success = Gauge(p + "checkpoint_last_success_timestamp_seconds",
                                             "When the last checkpoint became durable", registry=r)
        self.checkpoint_interval = Gauge(p + "checkpoint_interval_seconds",
                                         "Configured time between checkpoints", registry=r)
        self.checkpoint_failures = Counter(p + "checkpoint_failures", "Checkpoints that failed", registry=r)
        self.checkpoint_bytes = Gauge(p + "checkpoint_bytes",
                                      "Size of the last durable checkpoint: written (its file and the parts it added) "
                                      "and held (its file and every part it refers to)", ["kind"], registry=r)
        self.consumer_lag = Gauge(p + "consumer_lag_records", "Records behind the end of each consumed partition",
                                  ["topic", "partition"], registry=r)
        self.consumer_offset = Gauge(p + "consumer_offset", "Next offset to read in each consumed partition",
                                     ["topic", "partition"], registry=r)
        self.offset_resets = Counter(p + "offset_resets",
                                     "Partitions whose position was not in the log any more (truncated or re-created)",
                                     ["topic"], registry=r)
        self.registry_holds = Counter(p + "schema_registry_holds",
                                      "Batches held back because the schema registry did not answer, to be read "
                                      "again after a backoff (ACTIVESTREAM_FORMAT json-schema and avro; the "
                                      "trainer's framed label requests)", ["topic"],
                                      registry=r)
        self.rebalances = Counter(p + "rebalances", "Partitions assigned to this service", ["topic"], registry=r)
        self.loop_last_iteration = Gauge(p + "loop_last_iteration_timestamp_seconds",
                                         "When the poll loop last completed an iteration", registry=r)
        self.ready = Gauge(p + "ready", "1 when restored and assigned partitions", registry=r)
        self.io_path = Gauge(
            p + "io_path",
            "The read and produce paths in use (1) and not (0): direction read, path batch-reader (batches straight "
            "from librdkafka) or consume (Consumer.consume); direction produce, path batch-producer (a batch per "
            "librdkafka call) or produce (Producer.produce, one by one). consume or produce in roles all and "
            "scorer: librdkafka could not be loaded through ctypes (role trainer always uses them)",
            ["direction", "path"], registry=r)
        # process_* (start time, memory, CPU, open files): the checkpoint-age alert counts from the
        # process start until the first checkpoint of a new process.
        ProcessCollector(registry=r)
