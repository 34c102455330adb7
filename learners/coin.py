"""The query coin: a Bernoulli draw that is a pure function of (seed, record id).

A record replayed after a crash, or seen by a second replica, gets the same draw and therefore
the same query decision; no global random state is involved anywhere in the library.

The draw is ``u = splitmix64(splitmix64(seed) XOR key) / 2**64`` in [0, 1), and a record is
queried when ``u < probability``. ``key`` is the record id itself for integers and the first 8
bytes of its BLAKE2b digest for strings, both stable across processes and Python versions.

Examples
--------
>>> coin(7, "order-42") == coin(7, "order-42")
True
>>> 0.0 <= coin(7, 3) < 1.0
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np
from numba import njit, types

__all__ = ["coin", "coins", "record_key", "record_keys"]

_MASK64 = (1 << 64) - 1


@njit(types.uint64(types.uint64), cache=True, nogil=True)
def splitmix64(z):
    """SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective, well-mixed 64-bit hash."""
    z = z + types.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> types.uint64(30))) * types.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> types.uint64(27))) * types.uint64(0x94D049BB133111EB)
    return z ^ (z >> types.uint64(31))


@njit(types.float64(types.uint64, types.uint64), cache=True, nogil=True)
def draw(seed, key):
    """The uniform draw in [0, 1) for one (seed, key): 53 high bits of the mixed key."""
    return float(splitmix64(splitmix64(seed) ^ key) >> types.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(types.void(types.uint64, types.uint64[::1], types.float64[::1]), cache=True, nogil=True)
def _draws(seed, keys, out):
    for i in range(keys.size):
        out[i] = draw(seed, keys[i])


def record_key(record_id: str | int) -> int:
    """The 64-bit key of a record id: the integer itself, or BLAKE2b-64 of a string's UTF-8 bytes."""
    if isinstance(record_id, (int, np.integer)):
        return int(record_id) & _MASK64
    digest = hashlib.blake2b(str(record_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def record_keys(record_ids: Iterable[str | int] | np.ndarray) -> np.ndarray:
    """Keys for many ids at once; integer arrays are taken as they are."""
    if isinstance(record_ids, np.ndarray) and record_ids.dtype.kind in "iu":
        return record_ids.astype(np.uint64, copy=False)
    return np.fromiter((record_key(r) for r in record_ids), dtype=np.uint64)


def coin(seed: int, record_id: str | int) -> float:
    """The uniform draw in [0, 1) for one record."""
    return float(draw(np.uint64(seed & _MASK64), np.uint64(record_key(record_id))))


def coins(seed: int, keys: np.ndarray) -> np.ndarray:
    """Draws for an array of record keys (see :func:`record_keys`)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    out = np.empty(keys.size, dtype=np.float64)
    _draws(np.uint64(seed & _MASK64), keys, out)
    return out
