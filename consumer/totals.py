"""Running totals kept in the checkpoint and mirrored into the Prometheus counters.

Counters survive a restart: a restored service starts its counters at the checkpoint's totals, so
cumulative panels (labelling cost against budget) do not fall back to zero, and records replayed
after a crash are counted once. Keys are dotted: ``labels.applied``, ``predictions.<class>``,
``dead_letters.<topic>.<reason>``, ``labelled_records.["<class>", "<predicted>"]`` (JSON: class names
may hold dots).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from consumer.metrics import Metrics

__all__ = ["Totals"]


class Totals:
    def __init__(self, metrics: Metrics) -> None:
        self._m = metrics
        self.values: defaultdict[str, float] = defaultdict(float)
        self._counters: dict[str, object] = {}  # a labelled child found once, not on every add

    def _counter(self, key: str):
        m = self._m
        head, _, rest = key.partition(".")
        if head == "predictions":
            return m.predictions.labels(rest)
        if head == "labels":
            return m.labels.labels(rest)
        if head == "labelled_records":
            actual, predicted = json.loads(rest)
            return m.labelled_records.labels(**{"class": actual, "predicted": predicted,
                                                "correct": str(actual == predicted).lower()})
        if head == "dead_letters":
            topic, _, reason = rest.rpartition(".")
            return m.dead_letters.labels(reason=reason, topic=topic)
        return {
            "records_scored": m.records_scored,
            "key_id_mismatches": m.key_id_mismatches,
            "label_requests": m.label_requests,
            "label_requests_suppressed": m.requests_suppressed,
            "label_requests_refused": m.requests_refused,
            "label_requests_expired": m.requests_expired,
            "labelling_cost": m.labelling_cost,
            "labelled_mistakes": m.labelled_mistakes,
            "importance_weighted_labels": m.weighted_labels,
            "importance_weighted_mistakes": m.weighted_mistakes,
        }[key]

    def add(self, key: str, amount: float = 1.0) -> None:
        if amount:
            self.values[key] += amount
            counter = self._counters.get(key)
            if counter is None:
                counter = self._counters[key] = self._counter(key)
            counter.inc(amount)

    @staticmethod
    def labelled_key(actual: object, predicted: object) -> str:
        """The key counting applied labels of class ``actual`` whose record was predicted ``predicted``."""
        return "labelled_records." + json.dumps([str(actual), str(predicted)])

    def get(self, key: str) -> float:
        return self.values.get(key, 0.0)

    def estimated_error_rate(self) -> float:
        """Self-normalised importance-weighted error rate over all scored records: each labelled
        record stands for 1/q records, q its query probability (Horvitz-Thompson / Hájek)."""
        weight = self.get("importance_weighted_labels")
        return self.get("importance_weighted_mistakes") / weight if weight else float("nan")

    # -- checkpoint form (consumer.state.Stateful) -------------------------------------------------
    namespace = "totals"
    format_version = 1

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"counts": np.array(json.dumps(dict(self.values), sort_keys=True))}

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        """Adds the saved counts to these (a process restores into fresh totals)."""
        for key, value in json.loads(str(state["counts"])).items():
            self.add(key, value)
