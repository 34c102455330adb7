"""The careful decoder of one feature record: every rule, and a named reason for each rejection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from consumer.errors import InvalidRecord
from consumer.records.fields import _id, _loads, _timestamp
from consumer.records.schema import _NUMBER_TYPES
from learners.hashing import hash_features

__all__ = ["Feature", "decode_feature"]


def _finite(values: np.ndarray) -> np.ndarray:
    if values.size and not np.isfinite(values).all():
        raise InvalidRecord("bad_value", f"value {float(values[~np.isfinite(values)][0])} is not finite")
    return values


def _floats(values: list, what: str) -> np.ndarray:
    """A flat list of JSON numbers as float64; a nested list or object is a bad shape, a string, a
    boolean or null a bad value."""
    kinds = set(map(type, values))
    if not kinds <= _NUMBER_TYPES:
        if kinds & {list, dict}:
            raise InvalidRecord("bad_features", f"{what} must be a flat list of numbers")
        raise InvalidRecord("bad_value", f"{what} must be numbers")
    try:
        return _finite(np.asarray(values, dtype=np.float64))
    except OverflowError:  # an integer beyond float64's range
        raise InvalidRecord("bad_value", f"{what} must be finite numbers") from None


def _indices(indices: list, n_features: int) -> np.ndarray:
    """Sparse indices as int64, checked in Python first: an integer beyond 64 bits must be named as
    out of range, not overflow NumPy."""
    if not set(map(type, indices)) <= {int}:
        raise InvalidRecord("bad_index", "indices must be integers")
    if indices and (min(indices) < 0 or max(indices) >= n_features):
        bad = next(i for i in indices if i < 0 or i >= n_features)
        raise InvalidRecord("bad_index", f"index {str(bad)[:60]} is outside 0..{n_features - 1}")
    return np.asarray(indices, dtype=np.int64)


def _features(raw: Any, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) of a record's features, validated against the model's dimension."""
    if not raw and isinstance(raw, (list, dict)):
        raise InvalidRecord("empty_features", "the record lists no feature")
    if isinstance(raw, list):
        dense = _floats(raw, "dense features")
        if dense.size != n_features:
            raise InvalidRecord("dimension_mismatch", f"{dense.size} dense values, the model has {n_features} features")
        idx = np.flatnonzero(dense)
        return idx.astype(np.int32), dense[idx]
    if not isinstance(raw, dict):
        raise InvalidRecord("bad_features", f"features must be a list or an object, got {type(raw).__name__}")
    if "indices" in raw and "values" in raw and len(raw) == 2:
        indices, values = raw["indices"], raw["values"]
        if not isinstance(indices, list) or not isinstance(values, list) or len(indices) != len(values):
            raise InvalidRecord("bad_features", "indices and values must be lists of the same length")
        if not indices:
            raise InvalidRecord("empty_features", "the record lists no feature")
        idx = _indices(indices, n_features)
        return _canonical_row(idx, _floats(values, "values"))
    try:
        idx, val = hash_features(raw, n_features)
    except ValueError as exc:
        raise InvalidRecord("bad_value", str(exc)) from None
    return _canonical_row(idx, val)


def _canonical_row(idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A row as the batch paths make it: indices sorted, repeated ones summed, zeros dropped."""
    from consumer.fastjson import sum_duplicates

    idx, val = idx.astype(np.int32), val.astype(np.float64)  # copies: the kernel works in place
    _, nnz, overflow = sum_duplicates(np.array([0, idx.size], dtype=np.int64), idx, val)
    if overflow[0]:
        raise InvalidRecord("bad_value", "the values of a repeated index sum beyond the range of a float64")
    return idx[:nnz], val[:nnz]


@dataclass(frozen=True, slots=True)
class Feature:
    """A decoded feature record."""

    id: str
    idx: np.ndarray
    val: np.ndarray
    ts: float
    features: Any  # the record's "features" as received, echoed in label requests


def decode_feature(value: bytes | None, n_features: int, default_ts: float) -> Feature:
    obj = _loads(value)
    rid = _id(obj)
    if "features" not in obj:
        raise InvalidRecord("missing_features", "the record has no features")
    idx, val = _features(obj["features"], n_features)
    return Feature(rid, idx, val, _timestamp(obj, default_ts), obj["features"])
