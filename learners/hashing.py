"""Stable feature hashing of named features into a fixed dimension.

``{"country": "FR", "amount": 12.5}`` becomes two coordinates: ``hash("country=FR")`` with value
1.0 and ``hash("amount")`` with value 12.5. The hash is BLAKE2b-64 of the UTF-8 name reduced
modulo the dimension: identical in every process, on every machine and Python version (unlike
``hash()``, which is salted per process). Names repeat heavily in a stream, so the name → index
map is memoised.

Examples
--------
>>> idx, val = hash_features({"country": "FR", "amount": 12.5}, 2**20)
>>> idx.tolist() == hash_features({"amount": 12.5, "country": "FR"}, 2**20)[0].tolist()[::-1]
True
>>> val.tolist()
[1.0, 12.5]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache

import numpy as np

__all__ = ["DEFAULT_DIMENSION", "feature_index", "hash_features"]

DEFAULT_DIMENSION = 2**20


@lru_cache(maxsize=1 << 18)
def feature_index(name: str, n_features: int) -> int:
    """The coordinate of a named feature in a space of ``n_features`` dimensions."""
    import hashlib  # here: a process that hashes no feature names (a replay) loads no OpenSSL

    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n_features


def hash_features(features: Mapping[str, object], n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Named features → (indices, values); string values become ``name=value`` with value 1.0.

    Raises ``ValueError`` for a value that is neither a finite number, a bool nor a string.
    """
    idx = np.empty(len(features), dtype=np.int32)
    val = np.empty(len(features), dtype=np.float64)
    for j, (name, value) in enumerate(features.items()):
        if isinstance(value, str):
            name, value = f"{name}={value}", 1.0
        elif isinstance(value, bool):
            value = 1.0 if value else 0.0
        elif not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"feature {name!r}: value {value!r} is not a finite number or a string")
        idx[j] = feature_index(str(name), n_features)
        val[j] = value
    return idx, val
