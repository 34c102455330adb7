"""The metrics reference tables (README, docs/) against the metrics the service really registers."""

from __future__ import annotations

import re
from pathlib import Path

from consumer.metrics import BulkHistogram, Metrics

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ROW = re.compile(r"^\| `(activestream_[a-z_]+)` \| (counter|gauge|histogram) \|([^|]*)\|", re.M)


def registered() -> dict[str, tuple[str, tuple[str, ...]]]:
    """name as exposed → (type, label names), for every activestream metric of a fresh service."""
    out = {}
    for attribute in vars(Metrics()).values():
        if isinstance(attribute, BulkHistogram):
            out[attribute.name] = ("histogram", ())
        elif hasattr(attribute, "_type") and attribute._name.startswith("activestream_"):
            name = attribute._name + ("_total" if attribute._type == "counter" else "")
            out[name] = (attribute._type, tuple(attribute._labelnames))
    return out


def test_the_readme_lists_every_metric_with_its_type_and_labels_and_nothing_else():
    documented = {name: (kind, tuple(re.findall(r"`([a-z_]+)`", labels)))
                  for page in PAGES for name, kind, labels in ROW.findall(page.read_text())}
    assert documented == registered()
