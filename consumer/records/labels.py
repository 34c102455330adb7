"""Label records: the careful decoder of one, and a batch at a time through the compiled reader."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np

from consumer.errors import InvalidRecord
from consumer.records.fields import DefaultTimes, _default, _id, _loads, _timestamp, _with_defaults
from consumer.records.schema import _NUMBER_TYPES, MAX_COST, MAX_TS

__all__ = ["Label", "decode_label", "decode_label_batch"]


class Label(NamedTuple):
    """A decoded label (a tuple: cheaper to make than a frozen dataclass)."""

    id: str
    label: Any
    cost: float | None
    ts: float


def decode_label(value: bytes | None, classes: Mapping[Any, int], default_ts: float) -> Label:
    """A label record; ``classes`` maps the model's labels to codes (a label outside is refused)."""
    obj = _loads(value)
    rid = _id(obj)
    if "label" not in obj:
        raise InvalidRecord("missing_label", "the record has no label")
    label = obj["label"]
    if isinstance(label, (dict, list, bool)) or label not in classes:
        raise InvalidRecord("unknown_class", f"label {label!r:.60} is not one of {list(classes)}")
    cost = obj.get("cost")
    if cost is not None and (type(cost) not in _NUMBER_TYPES or not 0 <= cost <= MAX_COST):
        raise InvalidRecord("bad_cost", f"cost must be a number in 0..{MAX_COST:g}, got {cost!r:.60}")
    return Label(rid, label, None if cost is None else float(cost), _timestamp(obj, default_ts))


def decode_label_batch(values: Sequence[bytes | None], classes: Mapping[Any, int], default_ts: DefaultTimes,
                       joined: tuple[bytes, np.ndarray] | None = None,
                       ) -> tuple[list[Label], list[int], list[tuple[int, InvalidRecord]]]:
    """Decode many label records at once, in input order: (labels, the position of each in
    ``values``, [(position, why)] of the unusable ones). ``default_ts(ks)`` are the times of
    records ``ks``, which have no "ts"; ``joined``: the values already end to end, with their bounds.

    The common shapes are read by the compiled scanner of :mod:`consumer.fastjson`; a record it
    leaves aside, or whose label is not one of ``classes`` or whose cost or time is out of range, is read again
    by :func:`decode_label`, which names the rejection.
    """
    from consumer.fastjson import LABEL_INTEGER, LABEL_TEXT, gather_lines, scan_label_batch

    values = values if isinstance(values, Sequence) else list(values)
    blob, status, id_lo, id_hi, kind, label_lo, label_hi, number, cost, has_cost, ts, has_ts = scan_label_batch(
        values, joined)
    out_of_range = (has_cost & ~((cost >= 0.0) & (cost <= MAX_COST))) | (has_ts & ~((ts >= 0.0) & (ts < MAX_TS)))
    fast = np.flatnonzero((status == 0) & ~out_of_range)
    ids = gather_lines(blob, id_lo[fast], id_hi[fast]).decode().split("\n") if fast.size else []
    kinds = kind[fast]
    integer = kinds == LABEL_INTEGER  # exact: the scanner reads integers of at most 15 digits
    if integer.all():
        labels: list[Any] = number[fast].astype(np.int64).tolist()
    else:
        labels = number[fast].tolist()
        for j in np.flatnonzero(integer).tolist():
            labels[j] = int(labels[j])
    text = np.flatnonzero(kinds == LABEL_TEXT)
    if text.size:
        names = gather_lines(blob, label_lo[fast[text]], label_hi[fast[text]]).decode().split("\n")
        for j, name in zip(text.tolist(), names, strict=True):
            labels[j] = name
    stated = has_cost[fast]
    costs = (cost[fast].tolist() if stated.all() else [None] * fast.size if not stated.any() else
             [c if h else None for c, h in zip(cost[fast].tolist(), stated.tolist(), strict=True)])
    stamps = _with_defaults(ts[fast], has_ts[fast], fast, default_ts)
    if fast.size == len(values) and classes.keys() >= set(labels):  # the usual batch
        # tuple.__new__ makes each Label without a Python call per label (Label(...) costs twice as much)
        made = map(tuple.__new__, repeat(Label), zip(ids, labels, costs, stamps, strict=True))
        return list(made), list(range(len(values))), []
    read = dict(zip(fast.tolist(), zip(ids, labels, costs, stamps, strict=True), strict=True))
    out: list[Label] = []
    positions, rejected = [], []
    for k, value in enumerate(values):
        fields = read.get(k)
        try:
            out.append(Label(*fields) if fields is not None and fields[1] in classes
                       else decode_label(value, classes, _default(default_ts, k)))
            positions.append(k)
        except InvalidRecord as err:
            rejected.append((k, err))
    return out, positions, rejected
