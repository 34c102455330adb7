"""The query coin: a Bernoulli draw that is a pure function of (seed, record id).

A record replayed after a crash, or seen by a second replica, gets the same draw and therefore
the same query decision; no global random state is involved anywhere in the library.

The draw is ``u = splitmix64(splitmix64(seed) XOR key) / 2**64`` in [0, 1), and a record is
queried when ``u < probability``. ``key`` is the record id itself for integers and the 64-bit
FNV-1a hash of its UTF-8 bytes for strings (computed for a whole batch in one compiled loop), both
stable across processes and Python versions; the SplitMix64 finaliser makes the draws uniform.

Examples
--------
>>> coin(7, "order-42") == coin(7, "order-42")
True
>>> 0.0 <= coin(7, 3) < 1.0
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from learners.jit import jit

__all__ = ["coin", "coins", "record_key", "record_keys", "span_keys", "utf8_spans"]

_MASK64 = (1 << 64) - 1


@jit
def splitmix64(z):
    """SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective, well-mixed 64-bit hash."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@jit
def draw(seed, key):
    """The uniform draw in [0, 1) for one (seed, key): 53 high bits of the mixed key."""
    return float(splitmix64(splitmix64(seed) ^ key) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@jit
def _draws(seed, keys, out):
    for i in range(keys.size):
        out[i] = draw(seed, keys[i])


@jit
def _fnv1a(blob, lo, hi, out):
    """FNV-1a 64 of each string ``blob[lo[i]:hi[i]]``."""
    for i in range(out.size):
        h = np.uint64(0xCBF29CE484222325)
        for j in range(lo[i], hi[i]):
            h = (h ^ np.uint64(blob[j])) * np.uint64(0x100000001B3)
        out[i] = h


def span_keys(blob: bytes, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The keys of string ids given as their UTF-8 bytes ``blob[lo[i]:hi[i]]``: what
    :func:`record_keys` gives the decoded strings, without decoding them."""
    out = np.empty(len(lo), dtype=np.uint64)
    _fnv1a(np.frombuffer(blob, dtype=np.uint8), np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64), out)
    return out


def utf8_spans(strings: Sequence[str]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The strings in UTF-8 laid end to end (one encode for all), with where each starts and ends."""
    joined = "".join(strings)
    blob = joined.encode()
    if len(blob) == len(joined):  # all ASCII: a string's bytes are its characters
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    else:
        lengths = np.fromiter((len(s.encode()) for s in strings), dtype=np.int64, count=len(strings))
    ends = np.cumsum(lengths)
    return blob, ends - lengths, ends


def record_key(record_id: str | int) -> int:
    """The 64-bit key of a record id: the integer itself, or FNV-1a 64 of a string's UTF-8 bytes."""
    if isinstance(record_id, (int, np.integer)):
        return int(record_id) & _MASK64
    return int(span_keys(*utf8_spans([str(record_id)]))[0])


def record_keys(record_ids: Iterable[str | int] | np.ndarray) -> np.ndarray:
    """Keys for many ids at once; integer arrays are taken as they are."""
    if isinstance(record_ids, np.ndarray) and record_ids.dtype.kind in "iu":
        return record_ids.astype(np.uint64, copy=False)
    ids = list(record_ids)
    if set(map(type, ids)) <= {str}:
        return span_keys(*utf8_spans(ids))
    return np.fromiter((record_key(r) for r in ids), dtype=np.uint64, count=len(ids))


def coin(seed: int, record_id: str | int) -> float:
    """The uniform draw in [0, 1) for one record."""
    return float(draw(np.uint64(seed & _MASK64), np.uint64(record_key(record_id))))


def coins(seed: int, keys: np.ndarray) -> np.ndarray:
    """Draws for an array of record keys (see :func:`record_keys`)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    out = np.empty(keys.size, dtype=np.float64)
    _draws(np.uint64(seed & _MASK64), keys, out)
    return out
