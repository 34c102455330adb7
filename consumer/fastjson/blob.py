"""A batch's values laid end to end in one buffer (the blob), and the spans the scans find in it."""

from __future__ import annotations

import numpy as np
from numba import njit

from consumer.fastjson.lexing import OK

__all__ = ["gather_lines", "spans_differ"]


@njit(cache=True, nogil=True)
def spans_differ(a, a_lo, a_hi, b, b_lo, b_hi, out):
    """out[k]: whether ``a[a_lo[k]:a_hi[k]]`` and ``b[b_lo[k]:b_hi[k]]`` hold different bytes."""
    for k in range(out.size):
        n = a_hi[k] - a_lo[k]
        differ = n != b_hi[k] - b_lo[k]
        j = 0
        while not differ and j < n:
            differ = a[a_lo[k] + j] != b[b_lo[k] + j]
            j += 1
        out[k] = differ


@njit(cache=True, nogil=True)
def _gather(buf, lo, hi, out):
    at = 0
    for k in range(lo.size):
        if k:
            out[at] = 10
            at += 1
        for j in range(lo[k], hi[k]):
            out[at] = buf[j]
            at += 1
    return at


def gather_lines(blob: bytes, lo: np.ndarray, hi: np.ndarray) -> bytes:
    """The spans ``blob[lo[k]:hi[k]]`` joined by newlines (in one compiled pass: the ids of a
    batch, which the scanner has checked hold no control character, split back by ``split``)."""
    out = np.empty(int((hi - lo).sum()) + max(lo.size - 1, 0), dtype=np.uint8)
    _gather(np.frombuffer(blob, dtype=np.uint8), lo, hi, out)
    return out.tobytes()


def _joined(values: list[bytes | None]) -> tuple[bytes, np.ndarray]:
    """The values laid end to end, and where each begins (value k is blob[bounds[k]:bounds[k+1]])."""
    n = len(values)
    try:
        blob, lengths = b"".join(values), np.fromiter(map(len, values), dtype=np.int64, count=n)
    except TypeError:  # a null value (a tombstone) among them
        blob, lengths = b"".join(v or b"" for v in values), [len(v) if v else 0 for v in values]
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    return blob, bounds


def _reread_ts(blob: bytes, ts: np.ndarray, ts_lo: np.ndarray, ts_hi: np.ndarray, status: np.ndarray) -> None:
    """Read with Python's ``float`` the timestamps the scanner could not vouch for."""
    refix = np.flatnonzero((ts_hi > ts_lo) & (status == OK))
    for k, lo, hi in zip(refix.tolist(), ts_lo[refix].tolist(), ts_hi[refix].tolist(), strict=True):
        ts[k] = float(blob[lo:hi])
