"""The lexing primitives the compiled scans share: whitespace, exact numbers, plain strings and keys,
object members, and the members every record kind has (id, ts, v).

Each returns where the scan goes on and whether what it read is one of the common shapes; anything
else leaves the record to the careful decoder.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from learners.datasets import _POW10

__all__ = ["CAREFUL", "OK"]

_MAX_FAST_MANTISSA = 2**53
_POW10_INT = np.array([10**k for k in range(16)], dtype=np.uint64)  # exact in float64 too


@njit(cache=True, nogil=True)
def _long_decimal(mant, k):
    """mant / 10**k correctly rounded, for mant < 2**64 and 1 <= k <= 15, as (value, ok); ok is
    False when this cannot vouch for the rounding (then Python's ``float`` reads the text).

    With q, r = divmod(mant, 10**k), q < 2**53 and r < 10**k < 2**53 are exact doubles, so
    f = r / 10**k is one correctly rounded division (error <= 2**-53 f) and q + f rounds like the
    exact value unless that value lies within the error of a midpoint between two doubles, which
    the fraction of f in units of the result's ulp tells (a multiple of 2**-52: computed exactly)."""
    d = _POW10_INT[k]
    q = mant // d
    r = mant - q * d
    f = float(r) / float(d)
    if q == 0:
        return f, True  # one division of exact operands
    if q >= np.uint64(_MAX_FAST_MANTISSA):
        return 0.0, False
    _, e = math.frexp(float(q))  # q in [2**(e-1), 2**e): the result's ulp is 2**(e-53)
    g = f / math.ldexp(1.0, e - 53)
    if abs(g - math.floor(g) - 0.5) <= math.ldexp(1.0, 1 - e):  # twice the error bound, in ulps
        return 0.0, False
    return float(q) + f, True

OK, CAREFUL = 0, 1


@njit(cache=True, nogil=True, inline="always")
def _ws(buf, i, end):
    while i < end and (buf[i] == 32 or buf[i] == 9 or buf[i] == 10 or buf[i] == 13):
        i += 1
    return i


@njit(cache=True, nogil=True, inline="always")  # a call per number cost a third of the scan
def _number(buf, i, end):
    """A strict JSON number at buf[i:]. Returns (value, next, status, is_integer):
    status 0 exact, 1 exact value needs Python's float, -1 not a JSON number."""
    neg = False
    if i < end and buf[i] == 45:  # '-'
        neg = True
        i += 1
    if i >= end or not (48 <= buf[i] <= 57):
        return 0.0, i, -1, False
    if buf[i] == 48 and i + 1 < end and 48 <= buf[i + 1] <= 57:
        return 0.0, i, -1, False  # a leading zero
    mant = np.uint64(0)
    digits = 0
    exp10 = 0
    exact = True
    integer = True
    while i < end and 48 <= buf[i] <= 57:
        if digits < 19:
            mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
            if mant != 0:
                digits += 1
        else:
            exp10 += 1
            exact = False
        i += 1
    if i < end and buf[i] == 46:  # '.'
        integer = False
        i += 1
        if i >= end or not (48 <= buf[i] <= 57):
            return 0.0, i, -1, False
        while i < end and 48 <= buf[i] <= 57:
            if digits < 19:
                mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
                if mant != 0:
                    digits += 1
                exp10 -= 1
            else:
                exact = False
            i += 1
    if i < end and (buf[i] == 101 or buf[i] == 69):  # 'e' 'E'
        integer = False
        i += 1
        eneg = False
        if i < end and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        if i >= end or not (48 <= buf[i] <= 57):
            return 0.0, i, -1, False
        e = 0
        while i < end and 48 <= buf[i] <= 57:
            if e < 100000:
                e = e * 10 + (buf[i] - 48)
            i += 1
        exp10 += -e if eneg else e
    if integer and digits >= 19:
        return 0.0, i, -1, False  # an integer JSON parsers may refuse (beyond 64 bits): not ours to judge
    if mant != 0 and (exp10 + digits > 308 or exp10 + digits < -320):
        return 0.0, i, -1, False  # overflow or deep underflow: not ours to judge
    if mant == 0:
        value = 0.0
        status = 0
    # a uint64 against an int constant compares as float64 in numba, where 2**53 + 1 == 2**53
    elif exact and mant <= np.uint64(_MAX_FAST_MANTISSA) and -22 <= exp10 <= 22:
        value = float(mant) * _POW10[exp10] if exp10 >= 0 else float(mant) / _POW10[-exp10]
        status = 0
    elif exact and -15 <= exp10 < 0:
        value, ok = _long_decimal(mant, -exp10)
        status = 0 if ok else 1
    else:
        value = 0.0
        status = 1
    if neg and not (integer and mant == 0):  # orjson reads -0 as the integer 0: no sign, as here
        value = -value
    return value, i, status, integer


_KEYS = [np.frombuffer(name, dtype=np.uint8)
         for name in (b"id", b"features", b"ts", b"v", b"indices", b"values", b"label", b"cost")]
K_ID, K_FEATURES, K_TS, K_V, K_INDICES, K_VALUES, K_LABEL, K_COST = _KEYS


@njit(cache=True, nogil=True, inline="always")
def _is(buf, start, n, key):
    if n != key.size:
        return False
    for j in range(n):  # noqa: SIM110 (compiled: a generator would not be)
        if buf[start + j] != key[j]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _plain(buf, i, end):
    """Where the plain ASCII string at buf[i:] (after its opening quote) ends: the index of its
    closing quote, or -1 when it holds an escape, a control or a non-ASCII byte, or is not closed."""
    while i < end and buf[i] != 34:
        c = buf[i]
        if c == 92 or c < 32 or c >= 128:
            return -1
        i += 1
    return i if i < end else -1


@njit(cache=True, nogil=True)
def _key(buf, i, end):
    """A plain ASCII object key at buf[i:] (after its opening quote). Returns (code, next):
    code 1 id, 2 features, 3 ts, 4 v, 5 indices, 6 values, 7 label, 8 cost, 0 anything else,
    -1 not plain."""
    start = i
    i = _plain(buf, i, end)
    if i < 0:
        return -1, start
    n = i - start
    code = 0
    if _is(buf, start, n, K_ID):
        code = 1
    elif _is(buf, start, n, K_FEATURES):
        code = 2
    elif _is(buf, start, n, K_TS):
        code = 3
    elif _is(buf, start, n, K_V):
        code = 4
    elif _is(buf, start, n, K_INDICES):
        code = 5
    elif _is(buf, start, n, K_VALUES):
        code = 6
    elif _is(buf, start, n, K_LABEL):
        code = 7
    elif _is(buf, start, n, K_COST):
        code = 8
    return code, i + 1


@njit(cache=True, nogil=True, inline="always")
def _open_object(buf, i, end):
    """Where the members of the object at buf[i:] start (past its '{'), or -1 if none starts there."""
    i = _ws(buf, i, end)
    return i + 1 if i < end and buf[i] == 123 else -1


@njit(cache=True, nogil=True, inline="always")
def _member(buf, i, end):
    """An object member at buf[i:] up to its value: (its key's code, see :func:`_key`, where the
    value starts); the code is -1 when no plain key, ':' and value follow."""
    i = _ws(buf, i, end)
    if i >= end or buf[i] != 34:
        return -1, i
    code, i = _key(buf, i + 1, end)
    i = _ws(buf, i, end)
    if code < 0 or i >= end or buf[i] != 58:  # ':'
        return -1, i
    i = _ws(buf, i + 1, end)
    return (code if i < end else -1), i


@njit(cache=True, nogil=True, inline="always")
def _after_member(buf, i, end):
    """After a member's value: (1, past the ',') when another member follows, (0, past the '}') at
    the end of the object, (-1, i) otherwise."""
    i = _ws(buf, i, end)
    if i < end and buf[i] == 44:
        return 1, i + 1
    if i < end and buf[i] == 125:
        return 0, i + 1
    return -1, i


@njit(cache=True, nogil=True, inline="always")
def _string(buf, i, end):
    """Where the plain string value at buf[i:] ends (the index of its closing quote), or -1 when no
    plain string starts there."""
    return _plain(buf, i + 1, end) if buf[i] == 34 else -1


@njit(cache=True, nogil=True, inline="always")
def _id_member(buf, i, end, k, seen, id_lo, id_hi):
    """The "id" value at buf[i:], a plain non-empty string, as record k's span. Returns (next, ok):
    not ok for a second id or any other value."""
    hi = _string(buf, i, end)
    if seen or hi <= i + 1:
        return i, False
    id_lo[k], id_hi[k] = i + 1, hi
    return hi + 1, True


@njit(cache=True, nogil=True, inline="always")
def _ts_member(buf, i, end, k, ts, has_ts, ts_lo, ts_hi):
    """The "ts" value at buf[i:], a number, as record k's ts. Returns (next, ok): not ok for a second
    ts or anything but a JSON number (the careful decoder says why). A ts that needs Python's float
    (e.g. repr(time.time()) beyond the exact paths) keeps its span in ts_lo/ts_hi."""
    if has_ts[k]:
        return i, False
    lo = i
    value, i, st, _ = _number(buf, i, end)
    if st < 0:
        return i, False
    ts[k] = value
    has_ts[k] = True
    if st == 1:
        ts_lo[k], ts_hi[k] = lo, i
    return i, True


@njit(cache=True, nogil=True, inline="always")
def _v_member(buf, i, seen):
    """The "v" value at buf[i:], exactly 1. Returns (next, ok)."""
    if seen or buf[i] != 49:
        return i, False
    return i + 1, True


@njit(cache=True, nogil=True, inline="always")
def _shared_member(buf, i, end, k, code, seen_id, seen_v, id_lo, id_hi, ts, has_ts, ts_lo, ts_hi):
    """A member every record kind has (code 1 id, 3 ts, 4 v) at buf[i:], for record k. Returns
    (next, ok, seen_id, seen_v)."""
    if code == 1:
        i, ok = _id_member(buf, i, end, k, seen_id, id_lo, id_hi)
        return i, ok, True, seen_v
    if code == 3:
        i, ok = _ts_member(buf, i, end, k, ts, has_ts, ts_lo, ts_hi)
        return i, ok, seen_id, seen_v
    i, ok = _v_member(buf, i, seen_v)
    return i, ok, seen_id, True


@njit(cache=True, nogil=True, inline="always")
def _array(buf, i, end, out, at, fix_at, fix_lo, fix_hi, nfix, integers, fix_base):
    """A JSON array of numbers at buf[i:] (after '['), written to out[at:]. Returns
    (next, count, nfix, ok)."""
    count = 0
    i = _ws(buf, i, end)
    if i < end and buf[i] == 93:  # ']'
        return i + 1, 0, nfix, True
    while True:
        i = _ws(buf, i, end)
        lo = i
        value, i, status, is_int = _number(buf, i, end)
        if status < 0 or (integers and not is_int):
            return i, count, nfix, False
        if status == 1:
            if integers:
                return i, count, nfix, False  # an index with more than 19 digits
            fix_at[nfix], fix_lo[nfix], fix_hi[nfix] = fix_base + at + count, lo, i
            nfix += 1
        out[at + count] = value
        count += 1
        i = _ws(buf, i, end)
        if i >= end:
            return i, count, nfix, False
        if buf[i] == 44:  # ','
            i += 1
        elif buf[i] == 93:
            return i + 1, count, nfix, True
        else:
            return i, count, nfix, False
