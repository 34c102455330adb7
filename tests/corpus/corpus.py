"""The corpus of bad records: ``features.jsonl`` and ``labels.jsonl``, one kind a line, each with the
reason every decoding path must give it. A line holds the record's text in ``value`` (null for a
message without a value) or its bytes in ``value_hex`` (for bytes that are not UTF-8).
The feature records are for a model of 8 features; the labels for the classes -1 and 1."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import orjson

HERE = Path(__file__).parent
N_FEATURES = 8
CLASSES = {-1: 0, 1: 1}


class Kind(NamedTuple):
    kind: str
    reason: str
    value: bytes | None


def load(name: str) -> list[Kind]:
    kinds = []
    for line in (HERE / f"{name}.jsonl").read_text().splitlines():
        entry = orjson.loads(line)
        if "value_hex" in entry:
            value = bytes.fromhex(entry["value_hex"])
        else:
            value = None if entry["value"] is None else entry["value"].encode()
        kinds.append(Kind(entry["kind"], entry["reason"], value))
    return kinds


FEATURES = load("features")
LABELS = load("labels")
