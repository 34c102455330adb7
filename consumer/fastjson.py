"""A compiled reader for the common shapes of feature and label records, for a whole batch at once.

It accepts exactly::

    {"id": "<plain string>", "features": {"indices": [<ints>], "values": [<numbers>]}, "ts": <number>, "v": 1}
    {"id": "<plain string>", "features": [<n_features numbers>], ...}
    {"id": "<plain string>", "label": "<plain string>" | <number>, "cost": <number>, "ts": <number>, "v": 1}

in any key order, with any JSON whitespace, ``ts``, ``v`` and ``cost`` optional. Every other record — an id
with escapes or non-ASCII bytes, named features, extra keys, anything malformed, a number outside
strict JSON grammar, an index out of range — is marked for the careful decoder
(:func:`consumer.records.decode_feature`, :func:`consumer.records.decode_label`), which knows every
rule and names every rejection. So this reader can only make the common case fast; it never decides
that a record is bad.

Numbers are exact: a number with at most 19 significant digits and a small exponent is computed
with correctly rounded float64 arithmetic (Clinger's fast path, or :func:`_long_decimal` for the
17-digit timestamps that ``repr(time.time())`` writes); any other is re-read by Python's ``float``
from its text.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from learners.datasets import _POW10

__all__ = [
    "DUPLICATE",
    "UNSURE",
    "compact_rows",
    "duplicate_key_flags",
    "duplicate_keys",
    "escaped_keys",
    "gather_lines",
    "scan_batch",
    "scan_features",
    "scan_label_batch",
    "scan_labels",
    "spans_differ",
    "sum_duplicates",
]

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


@njit(cache=True, nogil=True)
def compact_rows(lengths, indices, data, indptr):
    """Drop the zero values of CSR rows laid end to end (row k has ``lengths[k]`` entries), in
    place, and fill ``indptr``. Returns (nnz, canonical): canonical when every row's indices
    strictly increase (sorted, no duplicates), as SciPy's ``has_canonical_format``."""
    at = 0
    src = 0
    canonical = True
    indptr[0] = 0
    for k in range(lengths.size):
        last = -1
        for j in range(src, src + lengths[k]):
            if data[j] != 0.0:
                if indices[j] <= last:
                    canonical = False
                last = indices[j]
                indices[at] = indices[j]
                data[at] = data[j]
                at += 1
        src += lengths[k]
        indptr[k + 1] = at
    return at, canonical


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


@njit(cache=True, nogil=True)
def sum_duplicates(indptr, indices, data):
    """Sort each CSR row's indices, sum the values of a repeated index from left to right (the order
    they come in the record, on every decoding path, so that the sums agree bit for bit) and drop
    zero sums, in place. Returns (the new indptr, nnz, per row: whether a sum overflowed)."""
    n = indptr.size - 1
    out = np.empty(n + 1, dtype=np.int64)
    out[0] = 0
    overflow = np.zeros(n, dtype=np.bool_)
    at = 0
    for k in range(n):
        lo, hi = indptr[k], indptr[k + 1]
        row_idx = indices[lo:hi].copy()  # the compacted rows are written over the input
        row_val = data[lo:hi].copy()
        order = np.argsort(row_idx, kind="mergesort")  # stable: equal indices keep their order
        j = 0
        while j < order.size:
            index = row_idx[order[j]]
            total = row_val[order[j]]
            j += 1
            while j < order.size and row_idx[order[j]] == index:
                total += row_val[order[j]]
                j += 1
            if not math.isfinite(total):
                overflow[k] = True
            if total != 0.0:
                indices[at] = index
                data[at] = total
                at += 1
        out[k + 1] = at
    return out, at, overflow


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


def duplicate_key_flags(values: list[bytes | None]) -> np.ndarray:
    """:func:`duplicate_keys` of each value (int8: 0, DUPLICATE or UNSURE)."""
    blob, bounds = _joined(values)
    out = np.zeros(len(values), dtype=np.int8)
    duplicate_keys(np.frombuffer(blob, dtype=np.uint8), bounds, out)
    return out


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
