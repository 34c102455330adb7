"""The totals of a service running elsewhere, read from its ``/metrics``: what ``activestream demo
--service URL`` reports on when it only feeds records and answers label requests.

Counts are taken relative to the first reading, so the report covers this demo run, not whatever
the service did before it. The query-rate target is the service's own, as last read.
"""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["RemoteTotals"]

# Prometheus sample → the key :class:`consumer.totals.Totals` uses for it.
_KEYS = {
    "activestream_records_scored_total": "records_scored",
    "activestream_label_requests_total": "label_requests",
    "activestream_label_requests_expired_total": "label_requests_expired",
    "activestream_labelling_cost_total": "labelling_cost",
    "activestream_importance_weighted_labels_total": "importance_weighted_labels",
    "activestream_importance_weighted_mistakes_total": "importance_weighted_mistakes",
}


def _key(name: str, labels: dict[str, str]) -> str | None:
    if name == "activestream_labels_total":
        return f"labels.{labels['outcome']}"
    if name == "activestream_dead_letters_total":
        return f"dead_letters.{labels['topic']}.{labels['reason']}"
    return _KEYS.get(name)


class RemoteTotals:
    """Totals-like view (``get``, ``values``, ``estimated_error_rate``) of a service's /metrics, and
    its ``query_rate_target`` (None when it has none)."""

    def __init__(self, url: str, timeout_s: float = 5.0) -> None:
        self.url = url.rstrip("/") + ("" if url.rstrip("/").endswith("/metrics") else "/metrics")
        self._timeout_s = timeout_s
        self.query_rate_target: float | None = None
        self._baseline = self._read()
        self.values: dict[str, float] = {}

    def _read(self) -> dict[str, float]:
        with urllib.request.urlopen(self.url, timeout=self._timeout_s) as response:
            text = response.read().decode()
        found: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "activestream_query_rate_target":  # a setting: its value, not a difference
                    # NaN when the service has no target (0 before it set the gauge)
                    self.query_rate_target = sample.value if sample.value > 0 else None
                    continue
                key = _key(sample.name, sample.labels)
                if key is not None:
                    found[key] = found.get(key, 0.0) + sample.value
        return found

    def refresh(self) -> None:
        now = self._read()
        self.values = {k: v - self._baseline.get(k, 0.0) for k, v in now.items()}

    def get(self, key: str) -> float:
        return self.values.get(key, 0.0)

    def estimated_error_rate(self) -> float:
        weight = self.get("importance_weighted_labels")
        return self.get("importance_weighted_mistakes") / weight if weight else float("nan")
