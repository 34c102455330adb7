"""Pure translations between the service's records and Label Studio's tasks and annotations.

- A label request becomes a task whose ``data`` holds the record id (``activestream_id``, the key
  that makes task creation idempotent), the features as a table, the prediction, the uncertainty,
  and the request and expiry times.
- The project's labeling configuration is one single-choice question, ``label``, whose choices are
  the service's classes as text.
- An annotation becomes a label record ``{"id", "label", "cost"}`` keyed by the id.
"""

from __future__ import annotations

import datetime as dt
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import quoteattr

__all__ = [
    "ID_FIELD",
    "BadRequest",
    "Request",
    "annotation_label",
    "choices_of",
    "feature_table",
    "label_config",
    "label_record",
    "parse_request",
    "task_data",
]

ID_FIELD = "activestream_id"  # the task data field that holds the record id
CHOICES = "label"  # the name of the labeling config's question


class BadRequest(ValueError):
    """A label request the connector cannot turn into a task."""


@dataclass(frozen=True, slots=True)
class Request:
    id: str
    features: Any
    prediction: Any
    uncertainty: float | None
    requested_at: float | None
    expires_at: float | None


def parse_request(value: Any) -> Request:
    """A decoded label-request record (docs: record schemas) as a :class:`Request`."""
    if not isinstance(value, dict):
        raise BadRequest("not a JSON object")
    rid = value.get("id")
    if not isinstance(rid, str) or not rid:
        raise BadRequest("missing id")
    if "features" not in value:
        raise BadRequest("missing features")

    def number(key: str) -> float | None:
        got = value.get(key)
        if got is None:
            return None
        if isinstance(got, bool) or not isinstance(got, int | float) or not math.isfinite(got):
            raise BadRequest(f"{key} is not a number")
        return float(got)

    return Request(rid, value["features"], value.get("prediction"), number("uncertainty"),
                   number("requested_at"), number("expires_at"))


def feature_table(features: Any) -> dict[str, Any]:
    """Features as rows of a table: named ones by name, sparse by index, dense by position."""
    if isinstance(features, list):
        return {str(i): v for i, v in enumerate(features)}
    if isinstance(features, dict) and set(features) == {"indices", "values"} and isinstance(features["indices"], list):
        return {str(i): v for i, v in zip(features["indices"], features["values"], strict=False)}
    if isinstance(features, dict):
        return {str(k): v for k, v in features.items()}
    raise BadRequest("features are neither a list nor an object")


def _iso(ts: float | None) -> str:
    return "" if ts is None else dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds")


def task_data(req: Request) -> dict[str, Any]:
    """The ``data`` of the task for ``req``."""
    summary = [f"prediction {req.prediction}"]
    if req.uncertainty is not None:
        summary.append(f"uncertainty {req.uncertainty:.3f}")
    if req.expires_at is not None:
        summary.append(f"expires {_iso(req.expires_at)}")
    return {
        ID_FIELD: req.id,
        "features": feature_table(req.features),
        "prediction": req.prediction,
        "uncertainty": req.uncertainty,
        "requested_at": req.requested_at,
        "expires_at": req.expires_at,
        "summary": " · ".join(summary),
    }


def label_config(classes: list[Any]) -> str:
    """The project's labeling configuration: the record, its table, one choice per class."""
    choices = "\n".join(f"    <Choice value={quoteattr(str(c))}/>" for c in classes)
    return (
        "<View>\n"
        f'  <Header value="${ID_FIELD}"/>\n'
        '  <Text name="summary" value="$summary"/>\n'
        '  <Table name="features" value="$features"/>\n'
        f'  <Choices name="{CHOICES}" toName="summary" choice="single-radio" required="true" showInline="true">\n'
        f"{choices}\n"
        "  </Choices>\n"
        "</View>"
    )


def choices_of(config: str) -> list[str] | None:
    """The choices of the ``label`` question of a labeling configuration, or None without one."""
    try:
        root = ET.fromstring(config)
    except ET.ParseError:
        return None
    for node in root.iter("Choices"):
        if node.get("name") == CHOICES:
            return [c.get("value", "") for c in node.iter("Choice")]
    return None


def annotation_label(annotation: dict[str, Any], classes: list[Any]) -> Any | None:
    """The class an annotation chose, or None (skipped, empty, or a choice that is no class)."""
    if annotation.get("was_cancelled"):
        return None
    by_text = {str(c): c for c in classes}
    for item in annotation.get("result") or []:
        if item.get("from_name") == CHOICES and item.get("type") == "choices":
            chosen = (item.get("value") or {}).get("choices") or []
            if len(chosen) == 1 and chosen[0] in by_text:
                return by_text[chosen[0]]
    return None


def label_record(record_id: str, label: Any, annotation: dict[str, Any], cost: str, cost_per_label: float,
                 cost_per_second: float) -> dict[str, Any]:
    """The label record for an annotation; cost "fixed" or "lead_time" (the annotator's seconds)."""
    if cost == "lead_time":
        seconds = annotation.get("lead_time")
        seconds = float(seconds) if isinstance(seconds, int | float) and seconds >= 0 else 0.0
        value = seconds * cost_per_second
    else:
        value = cost_per_label
    return {"id": record_id, "label": label, "cost": value}
