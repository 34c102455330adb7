"""Feature records a batch at a time: the compiled reader for the common shapes, orjson for the others,
the careful decoder for any record either cannot vouch for; one CSR batch out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any

import numpy as np
import orjson

from consumer.errors import InvalidRecord
from consumer.fastwrite import Packed, pack
from consumer.records.features import Feature, decode_feature
from consumer.records.fields import DefaultTimes, _default, _with_defaults
from consumer.records.outputs import pack_keys
from consumer.records.schema import _NUMBER_TYPES, MAX_TS, SCHEMA_VERSION
from learners.coin import record_keys, span_keys
from learners.hashing import hash_features
from learners.inputs import Rows

__all__ = ["FeatureBatch", "decode_feature_batch"]


@dataclass(frozen=True, slots=True)
class FeatureBatch:
    """The usable records of a batch of feature messages, as one CSR batch."""

    ids: list[str]
    rows: Rows
    ts: list[float]
    values: list[bytes | None]  # the input, every record as received
    positions: list[int]  # where each record sits in the input sequence
    rejected: list[tuple[int, InvalidRecord]]  # (position, why) of the unusable ones
    # where the compiled reader found each record's "features" value: blob[lo:hi] (empty if not)
    blob: bytes = b""
    feature_spans: tuple[np.ndarray, np.ndarray] | None = None
    # where it found each id's bytes, when it read every record of the batch
    id_spans: tuple[np.ndarray, np.ndarray] | None = None

    def keys(self) -> np.ndarray:
        """The record keys of the ids (:func:`learners.coin.record_keys`), hashed from the received
        bytes where the compiled reader has them."""
        if self.id_spans is None:
            return record_keys(self.ids)
        return span_keys(self.blob, *self.id_spans)

    def packed_ids(self) -> Packed:
        """The ids in UTF-8, as Kafka keys: the received bytes where the compiled reader has them."""
        if self.id_spans is None:
            return pack_keys(self.ids)
        return Packed(self.blob, *self.id_spans)

    def features(self, i: int) -> Any:
        """Record i's "features" as received (read again: only label requests need it)."""
        return orjson.loads(self.values[self.positions[i]])["features"]

    def features_packed(self, records: Sequence[int]) -> Packed:
        """The "features" of some records as JSON text, for outputs: the received text itself where
        the compiled reader has vouched for it, else orjson's text of :meth:`features`."""
        if self.feature_spans is None:
            return pack([orjson.dumps(self.features(i)) for i in records])
        at = np.asarray(records, dtype=np.int64)
        lo, hi = self.feature_spans[0][at], self.feature_spans[1][at]
        missing = np.flatnonzero(hi <= lo).tolist()
        if not missing:
            return Packed(self.blob, lo, hi)
        extra = pack([orjson.dumps(self.features(records[j])) for j in missing])
        lo[missing], hi[missing] = extra.starts + len(self.blob), extra.ends + len(self.blob)
        return Packed(self.blob + extra.data, lo, hi)


def _flat(raw: Any, n_features: int) -> tuple[Any, list] | None:
    """A record's features as flat (indices, values), for the common shapes; None otherwise."""
    kind = type(raw)
    if not raw:
        return None  # an empty row: the careful path says why
    if kind is dict:
        if len(raw) == 2 and "indices" in raw and "values" in raw:
            indices, values = raw["indices"], raw["values"]
            if type(indices) is list and type(values) is list and len(indices) == len(values) and indices:
                return indices, values
            return None
        try:
            idx, val = hash_features(raw, n_features)
        except ValueError:
            return None
        return idx.tolist(), val.tolist()
    if kind is list and len(raw) == n_features:
        return range(n_features), raw  # zeros are dropped for the whole batch at once
    return None


def decode_feature_batch(values: Sequence[bytes | None], n_features: int,
                         default_ts: DefaultTimes, scanned: tuple | None = None) -> FeatureBatch:
    """Decode many feature records at once; ``default_ts(ks)`` are the times of records ``ks``,
    which have no "ts".
    ``scanned``: what :func:`consumer.fastjson.scan_batch` returned for these values, if it ran
    already (in another thread, while the previous batch was processed).

    Sparse ``{"indices", "values"}`` and dense records with plain ids are read by the compiled scanner
    of :mod:`consumer.fastjson`; the others (named features, unusual ids or timestamps, anything
    wrong) by :func:`_python_batch`, and those it cannot vouch for by :func:`decode_feature`.
    """
    from consumer.fastjson import gather_lines, scan_batch

    values = values if isinstance(values, Sequence) else list(values)  # a batch reader's values are sliced lazily
    blob, status, id_lo, id_hi, ts, has_ts, row_len, indices, data, feat_lo, feat_hi = (
        scanned or scan_batch(values, n_features))
    fast = np.flatnonzero(status == 0)
    fast_rows, overflow = _canonical(indices, data, row_len[fast], n_features)
    late = _out_of_range(ts[fast], has_ts[fast]) if has_ts.any() else None
    if overflow is not None or late is not None:  # the careful path names these records' rejection
        drop = (overflow if overflow is not None else False) | (late if late is not None else False)
        status = status.copy()  # the scan's own array may be reused
        status[fast[drop]] = 1
        fast_rows, fast = fast_rows.take(~drop), fast[~drop]
    careful = np.flatnonzero(status).tolist()
    if len(careful) == len(values):
        return _python_batch(values, n_features, default_ts)
    ids = gather_lines(blob, id_lo[fast], id_hi[fast]).decode().split("\n") if fast.size else []
    stamps = _with_defaults(ts[fast], has_ts[fast], fast, default_ts)
    if not careful:
        return FeatureBatch(ids, fast_rows, stamps, values, fast.tolist(), [], blob, (feat_lo[fast], feat_hi[fast]),
                            (id_lo, id_hi))
    slow = _python_batch([values[k] for k in careful], n_features, lambda js: default_ts(np.asarray(careful)[js]))
    merged = _merge(values, fast.tolist(), ids, stamps, fast_rows, careful, slow, n_features)
    at = np.asarray(merged.positions, dtype=np.int64)  # a careful record's span is empty
    spans = (np.where(status[at] == 0, feat_lo[at], 0), np.where(status[at] == 0, feat_hi[at], 0))
    return replace(merged, blob=blob, feature_spans=spans)


def _out_of_range(ts: np.ndarray, has_ts: np.ndarray) -> np.ndarray | None:
    """Which records' own times lie outside [0, MAX_TS) (None if none does)."""
    late = has_ts & ~((ts >= 0.0) & (ts < MAX_TS))
    return late if late.any() else None



def _canonical(indices: np.ndarray, data: np.ndarray, lengths: np.ndarray, n_features: int,
               ) -> tuple[Rows, np.ndarray | None]:
    """CSR rows without zeros (dense records bring theirs) and with duplicate indices summed
    (``indices`` and ``data`` are overwritten), and which rows' sums overflowed (None if none)."""
    from consumer.fastjson import compact_rows, sum_duplicates

    indices = indices.astype(np.int32, copy=False)
    indptr = np.empty(len(lengths) + 1, dtype=np.int64)
    nnz, canonical = compact_rows(np.asarray(lengths, dtype=np.int64), indices, data, indptr)
    if canonical:
        return Rows(indptr, indices[:nnz], data[:nnz], n_features), None
    indptr, nnz, overflow = sum_duplicates(indptr, indices, data)  # unsorted or repeated indices: rare
    return Rows(indptr, indices[:nnz], data[:nnz], n_features), (overflow if overflow.any() else None)


def _merge(values: list, fast_pos: list[int], fast_ids: list[str], fast_ts: list[float], fast_rows: Rows,
           careful: list[int], slow: FeatureBatch, n_features: int) -> FeatureBatch:
    """Both readers' records back in input order."""
    slow_pos = [careful[j] for j in slow.positions]
    order = sorted([(k, 0, j) for j, k in enumerate(fast_pos)] + [(k, 1, j) for j, k in enumerate(slow_pos)])
    parts = (fast_rows, slow.rows)
    ids = [(fast_ids, slow.ids)[src][j] for _, src, j in order]
    ts = [(fast_ts, slow.ts)[src][j] for _, src, j in order]
    rows = Rows.stack([parts[src].row(j) for _, src, j in order], n_features)
    rejected = [(careful[j], err) for j, err in slow.rejected]
    return FeatureBatch(ids, rows, ts, values, [k for k, _, _ in order], rejected)


def _python_batch(values: Sequence[bytes | None], n_features: int, default_ts: DefaultTimes) -> FeatureBatch:
    """Decode records with orjson, for the shapes the compiled scanner leaves out.

    The common case takes a short path: JSON, the id, the features' shape and a numeric timestamp
    per record, then the numbers, index ranges and duplicate indices for the whole batch in numpy.
    Anything else about a record (a missing id, an ISO timestamp, a wrong shape...) sends that
    record through :func:`decode_feature`, which holds every rule and names every rejection; a
    batch whose numbers fail the numpy checks is decoded record by record the same way.
    """
    from consumer.fastjson import duplicate_key_flags

    good, rejected = [], []
    loads = orjson.loads
    repeats = duplicate_key_flags(values).tolist()
    for k, value in enumerate(values):
        try:
            obj = None if repeats[k] else loads(value)  # a repeated key: the careful path decides
        except (orjson.JSONDecodeError, TypeError):
            obj = None
        flat = None
        if type(obj) is dict and type(obj.get("v", SCHEMA_VERSION)) is int and obj.get("v", SCHEMA_VERSION) == 1:
            rid, stamp = obj.get("id"), obj.get("ts")  # no "ts": filled in below, for the whole batch
            if type(rid) is str and rid and (stamp is None or (type(stamp) in _NUMBER_TYPES and 0 <= stamp < MAX_TS)):
                flat = _flat(obj.get("features"), n_features)
        if flat is None:  # the careful path decides, and says why if it refuses
            try:
                f = decode_feature(value, n_features, _default(default_ts, k))
            except InvalidRecord as err:
                rejected.append((k, err))
                continue
            rid, stamp, flat, obj = f.id, f.ts, (f.idx.tolist(), f.val.tolist()), {"features": f.features}
        good.append((k, rid, stamp, obj["features"], flat[0], flat[1]))
    if not good:
        return FeatureBatch([], Rows.stack([], n_features), [], list(values), [], rejected)
    positions, ids, ts, _, idx_parts, val_parts = (list(column) for column in zip(*good, strict=True))
    rows = _batch_rows(idx_parts, val_parts, [len(v) for v in val_parts], n_features)
    if rows is None:
        return _decode_one_by_one(values, n_features, default_ts)
    own = np.array(ts, dtype=np.float64)  # None (no "ts") becomes NaN: JSON has no NaN of its own
    stamps = _with_defaults(own, ~np.isnan(own), np.asarray(positions), default_ts)
    return FeatureBatch(ids, rows, stamps, list(values), positions, rejected)


def _batch_rows(idx_parts: list, val_parts: list, lengths: list[int], n_features: int) -> Rows | None:
    """The CSR batch, or None when some number in it is not valid."""
    flat_idx, flat_val = list(chain.from_iterable(idx_parts)), list(chain.from_iterable(val_parts))
    # NumPy would take a boolean for an integer and a nested list for a shape: the types first
    if not (set(map(type, flat_idx)) <= {int} and set(map(type, flat_val)) <= _NUMBER_TYPES):
        return None
    try:
        indices = np.array(flat_idx)
        data = np.array(flat_val, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None
    if indices.size and (indices.dtype.kind not in "iu" or indices.min() < 0 or indices.max() >= n_features):
        return None
    if not np.isfinite(data).all():
        return None
    rows, overflow = _canonical(indices, data, lengths, n_features)
    return rows if overflow is None else None


def _decode_one_by_one(values: Sequence[bytes | None], n_features: int, default_ts: DefaultTimes) -> FeatureBatch:
    good: list[Feature] = []
    positions, rejected = [], []
    for k, value in enumerate(values):
        try:
            good.append(decode_feature(value, n_features, _default(default_ts, k)))
            positions.append(k)
        except InvalidRecord as err:
            rejected.append((k, err))
    rows = Rows.stack([(f.idx, f.val) for f in good], n_features)
    return FeatureBatch([f.id for f in good], rows, [f.ts for f in good], list(values), positions, rejected)
