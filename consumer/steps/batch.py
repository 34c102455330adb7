"""A decided batch of feature records: what the score and query steps made, waiting to be emitted."""

from __future__ import annotations

from collections import Counter as Tally
from dataclasses import dataclass, field

import numpy as np

from consumer.fastwrite import Packed
from consumer.pending import Entry

__all__ = ["Batch"]


@dataclass(slots=True)
class Batch:
    """The outputs of one batch of feature records, its pending entries, offsets and counts."""

    started: float
    outgoing: list[tuple[str, bytes | None, bytes | None, list | None]] = field(default_factory=list)
    # (topic, keys, values, the partition of each value's feature record)
    outputs: list[tuple[str, Packed, Packed, np.ndarray]] = field(default_factory=list)
    pending: list[tuple[str, Entry]] = field(default_factory=list)
    requested_ids: set[str] = field(default_factory=set)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)  # next offset per partition
    predicted: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))  # codes, per class
    probability: np.ndarray = field(default_factory=lambda: np.empty(0))
    record_ts: np.ndarray = field(default_factory=lambda: np.empty(0))
    requests: int = 0
    suppressed: int = 0
    dead: Tally = field(default_factory=Tally)
    records: int = 0
    key_id_mismatches: int = 0
