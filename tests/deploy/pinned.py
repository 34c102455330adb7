"""The metrics of the scorer/trainer split, pinned by name, type and labels before the service
declares them all.

The alerts, the dashboard and docs/scale-out.md read them; until ``consumer/metrics.py`` declares a
family, the static checks accept it from this list, and the end-to-end test skips what reads it
(a running service cannot show a series it does not export). Once declared, its type and labels must
be these (``test_pinned_metrics_are_declared_as_pinned``), and the end-to-end test reads it like any
other: a family may then leave this list.
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


def undeclared() -> dict[str, tuple[str, tuple[str, ...]]]:
    names = declared()
    return {name: spec for name, spec in PINNED.items() if name not in names}


def sample_names(families: dict[str, tuple[str, tuple[str, ...]]]) -> set[str]:
    return {name + suffix for name, (kind, _) in families.items() for suffix in SUFFIXES[kind]}


def undeclared_sample_names() -> set[str]:
    """The sample names of the pinned families the service does not declare yet."""
    return sample_names(undeclared())
