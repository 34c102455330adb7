"""The compiled scan of feature records: sparse ``{"indices", "values"}`` and dense lists, a batch at
a time, laid out as a :class:`ScanJob` so that the scan itself can run without the GIL."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from consumer.fastjson.blob import _joined, _reread_ts
from consumer.fastjson.lexing import (
    CAREFUL,
    OK,
    _after_member,
    _array,
    _member,
    _open_object,
    _shared_member,
    _ws,
)

__all__ = ["ScanJob", "run_scan", "scan_batch", "scan_features", "scan_job", "scan_result"]


@njit(cache=True, nogil=True)
def scan_features(buf, bounds, n_features, status, id_lo, id_hi, ts, has_ts, ts_lo, ts_hi, row_len,
                  idx_buf, val_buf, fix_at, fix_lo, fix_hi, feat_lo, feat_hi):
    """Scan records ``buf[bounds[k]:bounds[k+1]]``. Fills, per record: status (0 read here,
    1 for the careful decoder), the byte spans of its id and of its "features" value, ts, where
    its features sit in idx_buf/val_buf.
    Returns the number of feature values to re-read with Python's float (fix_*); a ts to re-read
    has its byte span in ts_lo/ts_hi (empty otherwise)."""
    nfix = 0
    at = 0
    tmp_idx = np.empty(idx_buf.size, dtype=np.float64)  # indices parsed as numbers first
    for k in range(bounds.size - 1):
        i, end = bounds[k], bounds[k + 1]
        status[k] = CAREFUL
        row_len[k] = 0
        has_ts[k] = False
        ts_lo[k] = ts_hi[k] = 0
        i = _open_object(buf, i, end)
        if i < 0:
            continue
        seen_id = False
        seen_features = False
        seen_v = False
        good = True
        fix_mark = nfix
        while good:
            code, i = _member(buf, i, end)
            if code <= 0:
                good = False
                break
            if code == 1 or code == 3 or code == 4:
                i, good, seen_id, seen_v = _shared_member(buf, i, end, k, code, seen_id, seen_v, id_lo, id_hi, ts,
                                                          has_ts, ts_lo, ts_hi)
            elif code == 2:  # "features"
                if seen_features:
                    good = False
                    break
                seen_features = True
                feat_lo[k] = i
                if buf[i] == 91:  # '[': dense
                    i, count, nfix, ok = _array(buf, i + 1, end, val_buf, at, fix_at, fix_lo, fix_hi, nfix,
                                                False, 0)
                    if not ok or count != n_features:
                        good = False
                        break
                    for j in range(count):
                        idx_buf[at + j] = j
                    row_len[k] = count
                elif buf[i] == 123:  # '{': indices and values
                    i += 1
                    n_idx = -1
                    n_val = -1
                    while True:
                        sub, i = _member(buf, i, end)
                        if sub < 0 or buf[i] != 91:  # '['
                            good = False
                            break
                        if sub == 5 and n_idx < 0:
                            i, n_idx, nfix, ok = _array(buf, i + 1, end, tmp_idx, at, fix_at, fix_lo, fix_hi,
                                                        nfix, True, 0)
                        elif sub == 6 and n_val < 0:
                            i, n_val, nfix, ok = _array(buf, i + 1, end, val_buf, at, fix_at, fix_lo, fix_hi,
                                                        nfix, False, 0)
                        else:
                            good = False
                            break
                        if not ok:
                            good = False
                            break
                        more, i = _after_member(buf, i, end)
                        if more <= 0:
                            good = more == 0
                            break
                    if not good or n_idx <= 0 or n_val != n_idx:  # an empty row: the careful path says why
                        good = False
                        break
                    for j in range(n_idx):
                        index = tmp_idx[at + j]
                        if index < 0 or index >= n_features:
                            good = False
                            break
                        idx_buf[at + j] = np.int32(index)
                    if not good:
                        break
                    row_len[k] = n_idx
                else:
                    good = False
                    break
                feat_hi[k] = i
            else:
                good = False  # a member feature records do not have
            if not good:
                break
            more, i = _after_member(buf, i, end)
            if more <= 0:
                good = more == 0
                break
        if good and seen_id and seen_features and _ws(buf, i, end) == end:
            status[k] = OK
            at += row_len[k]
        else:
            nfix = fix_mark  # forget what this record asked to re-read
            row_len[k] = 0
    return nfix, at


class ScanJob(NamedTuple):
    """A batch laid out for :func:`scan_features`: the joined values and the arrays it fills, from
    ``buf`` on in the order of its arguments. Made by :func:`scan_job`, scanned by :func:`run_scan`
    (which holds the GIL only to call the compiled loop), read back by :func:`scan_result`."""

    blob: bytes
    buf: np.ndarray
    bounds: np.ndarray
    n_features: int
    status: np.ndarray
    id_lo: np.ndarray
    id_hi: np.ndarray
    ts: np.ndarray
    has_ts: np.ndarray
    ts_lo: np.ndarray
    ts_hi: np.ndarray
    row_len: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    fix_at: np.ndarray
    fix_lo: np.ndarray
    fix_hi: np.ndarray
    feat_lo: np.ndarray
    feat_hi: np.ndarray


def scan_job(values: list[bytes | None], n_features: int, joined: tuple[bytes, np.ndarray] | None = None) -> ScanJob:
    """Lay ``values`` out for :func:`run_scan`; ``joined``: them already end to end, with their bounds."""
    n = len(values)
    blob, bounds = joined or _joined(values)
    # each number takes a character and a separator at least: a bound without counting anything
    capacity = len(blob) // 2 + n + 1

    def per_record() -> np.ndarray:
        return np.zeros(n, dtype=np.int64)

    def per_number() -> np.ndarray:
        return np.empty(capacity, dtype=np.int64)

    return ScanJob(
        blob=blob, buf=np.frombuffer(blob, dtype=np.uint8), bounds=bounds, n_features=n_features,
        status=np.empty(n, dtype=np.int8), id_lo=per_record(), id_hi=per_record(),
        ts=np.zeros(n), has_ts=np.zeros(n, dtype=np.bool_), ts_lo=per_record(), ts_hi=per_record(),
        row_len=per_record(), indices=np.empty(capacity, dtype=np.int32), data=np.empty(capacity),
        fix_at=per_number(), fix_lo=per_number(), fix_hi=per_number(), feat_lo=per_record(), feat_hi=per_record(),
    )


def run_scan(job: ScanJob) -> tuple[int, int]:
    """The compiled scan of a job: (numbers left to Python's ``float``, numbers read)."""
    return scan_features(*job[1:])


def scan_result(job: ScanJob, nfix: int, used: int):
    """What :func:`scan_batch` returns, from a job that :func:`run_scan` has scanned."""
    blob, data = job.blob, job.data
    for at, lo, hi in zip(job.fix_at[:nfix].tolist(), job.fix_lo[:nfix].tolist(), job.fix_hi[:nfix].tolist(),
                          strict=True):
        data[at] = float(blob[lo:hi])
    _reread_ts(blob, job.ts, job.ts_lo, job.ts_hi, job.status)
    return (blob, job.status, job.id_lo, job.id_hi, job.ts, job.has_ts, job.row_len, job.indices[:used], data[:used],
            job.feat_lo, job.feat_hi)


def scan_batch(values: list[bytes | None], n_features: int):
    """Run :func:`scan_features` over a batch. Returns (blob, status, id_lo, id_hi, ts, has_ts,
    row_len, indices, data, feat_lo, feat_hi) with every number exact; the spans are offsets in
    the blob."""
    job = scan_job(values, n_features)
    return scan_result(job, *run_scan(job))
