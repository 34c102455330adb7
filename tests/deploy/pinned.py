"""The metrics of the scorer/trainer split, pinned by name, type and labels.

The alerts, the dashboard and docs/scale-out.md were written against them: ``consumer/metrics.py``
must declare each with this type and these labels (``test_pinned_metrics_are_declared_as_pinned``).
Only scorers and trainers export data for them, so the end-to-end test reads what uses them on a
scorer and a trainer rather than on a single process.
"""

from __future__ import annotations

from consumer.metrics import Metrics

# name (without _total) -> (type, label names)
PINNED: dict[str, tuple[str, tuple[str, ...]]] = {
    "activestream_role": ("gauge", ("role",)),
    "activestream_trainer_active": ("gauge", ()),
    "activestream_model_published_version": ("gauge", ()),
    "activestream_model_version_in_use": ("gauge", ()),
    "activestream_model_age_seconds": ("gauge", ()),
    "activestream_model_publications": ("counter", ("kind",)),
    "activestream_model_published_bytes": ("histogram", ()),
    "activestream_model_swap_delay_seconds": ("histogram", ()),
}
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def declared() -> dict[str, tuple[str, tuple[str, ...]]]:
    """The families the service's metrics declare: name -> (type, label names)."""
    found = {}
    for collector in set(Metrics().registry._collector_to_names):  # the label names of families with no child yet
        for family in collector.describe() if hasattr(collector, "describe") else collector.collect():
            found[family.name] = (family.type, tuple(getattr(collector, "_labelnames", ())))
    return found


def sample_names(families: dict[str, tuple[str, tuple[str, ...]]]) -> set[str]:
    return {name + suffix for name, (kind, _) in families.items() for suffix in SUFFIXES[kind]}

