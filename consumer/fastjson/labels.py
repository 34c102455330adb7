"""The compiled scan of label records: a plain string or a number as the label, cost and ts optional."""

from __future__ import annotations

import numpy as np
from numba import njit

from consumer.fastjson.blob import _joined, _reread_ts
from consumer.fastjson.lexing import (
    CAREFUL,
    OK,
    _after_member,
    _member,
    _number,
    _open_object,
    _shared_member,
    _string,
    _ws,
)

__all__ = ["LABEL_INTEGER", "LABEL_NUMBER", "LABEL_TEXT", "scan_label_batch", "scan_labels"]

LABEL_TEXT, LABEL_INTEGER, LABEL_NUMBER = 1, 2, 3


@njit(cache=True, nogil=True)
def scan_labels(buf, bounds, status, id_lo, id_hi, kind, label_lo, label_hi, number, cost, has_cost, ts, has_ts,
                ts_lo, ts_hi):
    """Scan label records ``buf[bounds[k]:bounds[k+1]]``. Fills, per record: status (0 read here,
    1 for the careful decoder), the byte span of its id; its label's kind (LABEL_TEXT: the span of a
    plain string; LABEL_INTEGER or LABEL_NUMBER: ``number``); cost and ts if present. A ts to
    re-read has its byte span in ts_lo/ts_hi (empty otherwise); a label or cost that needs Python's
    ``float`` leaves the record to the careful decoder."""
    for k in range(bounds.size - 1):
        i, end = bounds[k], bounds[k + 1]
        status[k] = CAREFUL
        kind[k] = 0
        has_cost[k] = False
        has_ts[k] = False
        ts_lo[k] = ts_hi[k] = 0
        i = _open_object(buf, i, end)
        if i < 0:
            continue
        seen_id = False
        seen_v = False
        good = True
        while good:
            code, i = _member(buf, i, end)
            if code <= 0:
                good = False
                break
            if code == 1 or code == 3 or code == 4:
                i, good, seen_id, seen_v = _shared_member(buf, i, end, k, code, seen_id, seen_v, id_lo, id_hi, ts,
                                                          has_ts, ts_lo, ts_hi)
            elif code == 7 and kind[k] == 0 and buf[i] == 34:  # "label": a plain string
                hi = _string(buf, i, end)
                good = hi >= 0
                label_lo[k], label_hi[k] = i + 1, hi
                kind[k] = LABEL_TEXT
                i = hi + 1
            elif (code == 7 and kind[k] == 0) or (code == 8 and not has_cost[k]):  # a number read exactly
                value, i, st, integer = _number(buf, i, end)
                good = st == 0
                if code == 7:
                    number[k] = value
                    kind[k] = LABEL_INTEGER if integer else LABEL_NUMBER
                else:
                    cost[k] = value
                    has_cost[k] = True
            else:
                good = False
            if not good:
                break
            more, i = _after_member(buf, i, end)
            if more <= 0:
                good = more == 0
                break
        if good and seen_id and kind[k] != 0 and _ws(buf, i, end) == end:
            status[k] = OK


def scan_label_batch(values: list[bytes | None], joined: tuple[bytes, np.ndarray] | None = None):
    """Run :func:`scan_labels` over a batch. Returns (blob, status, id_lo, id_hi, kind, label_lo,
    label_hi, number, cost, has_cost, ts, has_ts) with every number exact; the spans are offsets in
    the blob. ``joined``: the values already end to end, with their bounds."""
    n = len(values)
    blob, bounds = joined or _joined(values)
    status, kind = np.empty(n, dtype=np.int8), np.empty(n, dtype=np.int8)
    id_lo, id_hi = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    label_lo, label_hi = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    number, cost, ts = np.zeros(n), np.zeros(n), np.zeros(n)
    has_cost, has_ts = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    ts_lo, ts_hi = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    scan_labels(np.frombuffer(blob, dtype=np.uint8), bounds, status, id_lo, id_hi, kind, label_lo, label_hi, number,
                cost, has_cost, ts, has_ts, ts_lo, ts_hi)
    _reread_ts(blob, ts, ts_lo, ts_hi, status)
    return blob, status, id_lo, id_hi, kind, label_lo, label_hi, number, cost, has_cost, ts, has_ts
