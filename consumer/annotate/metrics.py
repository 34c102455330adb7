"""The connector's Prometheus metrics, prefix ``activestream_annotate_``, declared once."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["AnnotateMetrics"]

# From a label request to its label: humans answer in minutes to days.
_LATENCY_BUCKETS = (5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400, 259200)


class AnnotateMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry if registry is not None else CollectorRegistry()
        p = "activestream_annotate_"
        self.tasks_created = Counter(p + "tasks_created", "Tasks created, one per label request", registry=r)
        self.tasks_existing = Counter(p + "tasks_existing",
                                      "Label requests whose task already existed (replayed or repeated)", registry=r)
        self.tasks_closed = Counter(p + "tasks_closed", "Open tasks removed, by reason (expired, tombstone)",
                                    ["reason"], registry=r)
        self.tasks_open = Gauge(p + "tasks_open", "Tasks waiting for an annotation", registry=r)
        self.requests_invalid = Counter(p + "requests_invalid", "Label requests that could not become a task",
                                        registry=r)
        self.requests_expired = Counter(p + "requests_expired_on_arrival",
                                        "Label requests already expired when read (no task made)", registry=r)
        self.labels_produced = Counter(p + "labels_produced", "Label records produced and flushed", registry=r)
        self.annotations_ignored = Counter(
            p + "annotations_ignored", "Annotations that gave no label, by reason (skipped, no_class)", ["reason"],
            registry=r)
        self.annotations_deleted = Counter(p + "annotations_deleted",
                                           "Annotations deleted in Label Studio (their labels stand)", registry=r)
        self.annotation_latency = Histogram(p + "annotation_latency_seconds",
                                            "From a label request to its first label produced",
                                            buckets=_LATENCY_BUCKETS, registry=r)
        self.annotations_stale = Counter(
            p + "annotations_stale", "Annotation reads older than a version already seen (not forwarded)",
            registry=r)
        self.webhooks = Counter(p + "webhooks", "Webhook calls received, by outcome (ok, ignored, error)",
                                ["outcome"], registry=r)
        self.label_studio_errors = Counter(p + "label_studio_errors",
                                           "Label Studio calls that failed (retried)", registry=r)
        self.last_poll = Gauge(p + "poll_last_success_timestamp_seconds",
                               "When every task's annotations were last read", registry=r)
