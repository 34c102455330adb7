"""Whether a record names a key twice within one of its objects, at any depth (JSON parsers disagree
on which value wins, so such a record is refused)."""

from __future__ import annotations

import numpy as np
from numba import njit

from consumer.fastjson.blob import _joined
from consumer.fastjson.lexing import _ws

__all__ = ["DUPLICATE", "UNSURE", "duplicate_key_flags", "duplicate_keys", "escaped_keys"]

DUPLICATE, UNSURE = 1, 2


@njit(cache=True, nogil=True, inline="always")
def _same_key(buf, p, q, key_obj, key_lo, key_hi):
    if key_obj[p] != key_obj[q] or key_hi[p] - key_lo[p] != key_hi[q] - key_lo[q]:
        return False
    for j in range(key_hi[p] - key_lo[p]):  # noqa: SIM110 (compiled: a generator would not be)
        if buf[key_lo[p] + j] != buf[key_lo[q] + j]:
            return False
    return True


@njit(cache=True, nogil=True)
def _keys(buf, lo, end, key_obj, key_lo, key_hi, key_hash):
    """The object keys of the JSON text buf[lo:end], at any depth: key j is buf[key_lo[j]:key_hi[j]]
    (undecoded), a member of object number key_obj[j], with an FNV hash of its bytes and object.
    Returns (how many keys, whether a key holds an escape)."""
    stack = np.empty(end - lo + 1, dtype=np.int64)  # the open objects (their numbers) and arrays (-1)
    depth = 0
    objects = 0
    nkeys = 0
    escaped = False
    i = lo
    while i < end:
        c = buf[i]
        if c == 123:  # '{'
            stack[depth] = objects
            objects += 1
            depth += 1
            i += 1
        elif c == 91:  # '['
            stack[depth] = -1
            depth += 1
            i += 1
        elif c == 125 or c == 93:  # '}' ']'
            if depth > 0:
                depth -= 1
            i += 1
        elif c == 34:  # a string: a key if ':' follows
            start = i + 1
            j = start
            h = np.uint64(14695981039346656037)
            has_escape = False
            while j < end and buf[j] != 34:
                if buf[j] == 92:
                    has_escape = True
                    j += 1
                elif not has_escape:
                    h = (h ^ np.uint64(buf[j])) * np.uint64(1099511628211)
                j += 1
            stop = min(j, end)
            j = _ws(buf, j + 1, end)
            if j < end and buf[j] == 58 and depth > 0 and stack[depth - 1] >= 0 and nkeys < key_obj.size:
                escaped = escaped or has_escape
                key_obj[nkeys], key_lo[nkeys], key_hi[nkeys] = stack[depth - 1], start, stop
                key_hash[nkeys] = h ^ (np.uint64(stack[depth - 1]) * np.uint64(0x9E3779B97F4A7C15))
                nkeys += 1
            i = stop + 1
        else:
            i += 1
    return nkeys, escaped


@njit(cache=True, nogil=True)
def duplicate_keys(buf, bounds, out):
    """Whether each record ``buf[bounds[k]:bounds[k+1]]`` repeats a key within one of its objects, at
    any depth: ``out[k]`` 0 no, DUPLICATE yes, UNSURE when a key holds an escape (two spellings of
    one name: :func:`escaped_keys` gives them to Python to decode). Malformed JSON gets 0: the JSON
    parser refuses it anyway."""
    for k in range(bounds.size - 1):
        lo, end = bounds[k], bounds[k + 1]
        size = (end - lo) // 3 + 1  # a key takes 3 bytes at least ("":)
        key_obj, key_lo, key_hi = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64)
        key_hash = np.empty(size, dtype=np.uint64)
        nkeys, escaped = _keys(buf, lo, end, key_obj, key_lo, key_hi, key_hash)
        out[k] = 0
        order = np.argsort(key_hash[:nkeys])
        for a in range(nkeys):
            b = a + 1
            while b < nkeys and key_hash[order[b]] == key_hash[order[a]] and out[k] == 0:
                if _same_key(buf, order[a], order[b], key_obj, key_lo, key_hi):
                    out[k] = DUPLICATE
                b += 1
        if out[k] == 0 and escaped:
            out[k] = UNSURE


@njit(cache=True, nogil=True)
def _key_spans(buf):
    size = buf.size // 3 + 1
    key_obj, key_lo, key_hi = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64)
    nkeys, _ = _keys(buf, 0, buf.size, key_obj, key_lo, key_hi, np.empty(size, dtype=np.uint64))
    return key_obj[:nkeys], key_lo[:nkeys], key_hi[:nkeys]


def escaped_keys(value: bytes) -> list[tuple[int, bytes]]:
    """(object number, key as written, escapes and all) of every object key in a JSON text."""
    obj, lo, hi = _key_spans(np.frombuffer(value, dtype=np.uint8))
    return [(o, value[a:b]) for o, a, b in zip(obj.tolist(), lo.tolist(), hi.tolist(), strict=True)]


def duplicate_key_flags(values: list[bytes | None]) -> np.ndarray:
    """:func:`duplicate_keys` of each value (int8: 0, DUPLICATE or UNSURE)."""
    blob, bounds = _joined(values)
    out = np.zeros(len(values), dtype=np.int8)
    duplicate_keys(np.frombuffer(blob, dtype=np.uint8), bounds, out)
    return out
