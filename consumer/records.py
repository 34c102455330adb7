"""Record schemas (version 1) and their orjson codecs.

Inputs
------
feature record (topic ``features``, key = id)::

    {"id": "order-17", "features": [0.1, 0.0, 2.5] | {"indices": [3, 17], "values": [1.0, 0.5]}
                                  | {"country": "FR", "amount": 12.5},
     "ts": 1700000000.25 | "2023-11-14T22:13:20.25Z"    (optional; default: the Kafka timestamp)
     "v": 1}                                              (optional)

label (topic ``labels``, key = id)::

    {"id": "order-17", "label": 1, "cost": 0.8 (optional), "v": 1 (optional)}

Outputs (``v`` = :data:`SCHEMA_VERSION`)
----------------------------------------
prediction (topic ``predictions``, key = id)::

    {"v": 1, "id", "label", "score", "probability", "label_requested", "model_version",
     "ts", "predicted_at", "source"}

label request (topic ``label-requests``, key = id)::

    {"v": 1, "id", "features", "prediction", "score", "probability", "uncertainty", "cost",
     "requested_at", "expires_at", "model_version", "source"}

``source`` is the feature record an output answers, ``topic:partition:offset``.

A record that cannot be used raises :class:`~consumer.errors.InvalidRecord` with one of
:data:`REASONS`; the service sends its original bytes to the dead-letter topic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import chain, repeat
from typing import Any, NamedTuple

import numpy as np
import orjson

from consumer.errors import InvalidRecord
from consumer.fastwrite import Packed, pack
from consumer.fastwrite import write_predictions as encode_predictions  # one compiled pass per batch
from learners.coin import record_keys, span_keys, utf8_spans
from learners.hashing import hash_features
from learners.inputs import Rows

# The times of the records at the given positions, for records that carry no "ts" (their messages'
# timestamps): asked once per batch for all of them, not once per record.
DefaultTimes = Callable[[np.ndarray], np.ndarray]

__all__ = [
    "FRAMED_REASONS",
    "REASONS",
    "SCHEMA_VERSION",
    "FeatureBatch",
    "Label",
    "decode_feature",
    "decode_feature_batch",
    "decode_label",
    "decode_label_batch",
    "encode_predictions",
    "pack_keys",
    "parse_source",
    "source_of",
]

SCHEMA_VERSION = 1
# A record's own "ts" must lie in [0, MAX_TS): 1970-01-01 to 2200-01-01 UTC, in epoch seconds. A time
# outside it is a producer's mistake (milliseconds for seconds, a sentinel), not a moment to learn at.
MAX_TS = 7_258_118_400.0
MAX_COST = 1e6  # per label: far above any price of a human answer, far below what breaks a sum
_NUMBER_TYPES = {int, float}  # what orjson makes of JSON numbers (bool is apart: a JSON true is no number)

REASONS = (
    "empty_value",  # a null or empty message value
    "malformed_json",  # not JSON
    "not_an_object",  # JSON, but not an object
    "duplicate_key",  # an object that names one key twice (JSON parsers disagree on which wins)
    "unsupported_version",  # "v" other than 1
    "missing_id",  # no "id", or an empty one
    "bad_id",  # an id that is not a string or an integer
    "missing_features",  # no "features"
    "empty_features",  # "features" that list no feature at all: {}, [] or empty indices and values
    "bad_features",  # "features" of the wrong shape or type
    "bad_value",  # a feature value that is not a finite number
    "bad_index",  # an index that is not an integer in 0..n_features-1
    "dimension_mismatch",  # a dense list whose length is not n_features
    "bad_timestamp",  # a "ts" that is neither epoch seconds nor ISO 8601, or outside 1970..2200
    "missing_label",  # a label record without "label"
    "unknown_class",  # a label outside the model's classes (a JSON boolean is never a class)
    "bad_cost",  # a cost that is not a number in 0..MAX_COST
)
# What only records in the schema registry's wire format (ACTIVESTREAM_FORMAT json-schema or avro) are
# refused for, before the payload meets the rules above (consumer.registry_formats)
FRAMED_REASONS = (
    "not_framed",  # no magic byte 0 and 4-byte schema id in front of a payload
    "unknown_schema",  # a schema id the registry does not hold
    "schema_mismatch",  # a payload its own schema does not read (or, JSON Schema, does not validate)
)


def _loads(value: bytes | None) -> dict:
    if not value:
        raise InvalidRecord("empty_value", "the message has no value")
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise InvalidRecord("malformed_json", str(exc)) from None
    if not isinstance(obj, dict):
        raise InvalidRecord("not_an_object", f"expected a JSON object, got {type(obj).__name__}")
    if _repeats_a_key(value):
        raise InvalidRecord("duplicate_key", "an object in the record names a key twice")
    version = obj.get("v", SCHEMA_VERSION)
    if version != SCHEMA_VERSION or type(version) is bool:  # true == 1 in Python, not in the schema
        raise InvalidRecord("unsupported_version", f"schema version {version!r}, this service reads {SCHEMA_VERSION}")
    return obj


def _repeats_a_key(value: bytes) -> bool:
    from consumer.fastjson import UNSURE, duplicate_key_flags

    flag = duplicate_key_flags([value])[0]
    return bool(flag) if flag != UNSURE else _python_repeats_a_key(value)


def _python_repeats_a_key(value: bytes) -> bool:
    """Compare keys as decoded (an escape can spell one name two ways), one key at a time: a JSON
    parser's object hook would recurse as deep as the record nests, which orjson allows deeper than
    Python's stack."""
    from consumer.fastjson import escaped_keys

    seen = set()
    for obj, raw in escaped_keys(value):
        name = (obj, orjson.loads(b'"' + raw + b'"'))
        if name in seen:
            return True
        seen.add(name)
    return False


def _id(obj: Mapping) -> str:
    if "id" not in obj or obj["id"] in ("", None):
        raise InvalidRecord("missing_id", "the record has no id")
    rid = obj["id"]
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        raise InvalidRecord("bad_id", f"id must be a string or an integer, got {rid!r:.60}")
    return str(rid)


def _timestamp(obj: Mapping, default: float) -> float:
    ts = obj.get("ts")
    if ts is None:
        return default
    if type(ts) in _NUMBER_TYPES:
        seconds = float(ts)
    elif isinstance(ts, str):
        seconds = _iso_seconds(ts)
    else:
        seconds = math.nan
    if not 0.0 <= seconds < MAX_TS:  # NaN too
        raise InvalidRecord("bad_timestamp", f"ts must be epoch seconds or ISO 8601 in 1970..2200, got {ts!r:.60}")
    return seconds


def _iso_seconds(text: str) -> float:
    """Epoch seconds of an ISO 8601 time; one without an offset is UTC (never the machine's zone)."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    except (ValueError, OverflowError):
        return math.nan


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


def _with_defaults(ts: np.ndarray, has_ts: np.ndarray, positions: np.ndarray, default_ts: DefaultTimes,
                   ) -> list[float]:
    """The records' times: their own ``ts`` where they have one, else ``default_ts`` of their
    ``positions`` (one call for all of them)."""
    stamps = np.where(has_ts, ts, 0.0)
    if not has_ts.all():
        stamps[~has_ts] = default_ts(positions[~has_ts])
    return stamps.tolist()


def _default(default_ts: DefaultTimes, k: int) -> float:
    """The time of record k alone, which has no "ts"."""
    return float(default_ts(np.array([k]))[0])


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


class Label(NamedTuple):
    """A decoded label (a tuple: cheaper to make than a frozen dataclass)."""

    id: str
    label: Any
    cost: float | None
    ts: float


def decode_label(value: bytes | None, classes: Mapping[Any, int], default_ts: float) -> Label:
    """A label record; ``classes`` maps the model's labels to codes (a label outside is refused)."""
    obj = _loads(value)
    rid = _id(obj)
    if "label" not in obj:
        raise InvalidRecord("missing_label", "the record has no label")
    label = obj["label"]
    if isinstance(label, (dict, list, bool)) or label not in classes:
        raise InvalidRecord("unknown_class", f"label {label!r:.60} is not one of {list(classes)}")
    cost = obj.get("cost")
    if cost is not None and (type(cost) not in _NUMBER_TYPES or not 0 <= cost <= MAX_COST):
        raise InvalidRecord("bad_cost", f"cost must be a number in 0..{MAX_COST:g}, got {cost!r:.60}")
    return Label(rid, label, None if cost is None else float(cost), _timestamp(obj, default_ts))


def decode_label_batch(values: Sequence[bytes | None], classes: Mapping[Any, int], default_ts: DefaultTimes,
                       joined: tuple[bytes, np.ndarray] | None = None,
                       ) -> tuple[list[Label], list[int], list[tuple[int, InvalidRecord]]]:
    """Decode many label records at once, in input order: (labels, the position of each in
    ``values``, [(position, why)] of the unusable ones). ``default_ts(ks)`` are the times of
    records ``ks``, which have no "ts"; ``joined``: the values already end to end, with their bounds.

    The common shapes are read by the compiled scanner of :mod:`consumer.fastjson`; a record it
    leaves aside, or whose label is not one of ``classes`` or whose cost or time is out of range, is read again
    by :func:`decode_label`, which names the rejection.
    """
    from consumer.fastjson import LABEL_INTEGER, LABEL_TEXT, gather_lines, scan_label_batch

    values = values if isinstance(values, Sequence) else list(values)
    blob, status, id_lo, id_hi, kind, label_lo, label_hi, number, cost, has_cost, ts, has_ts = scan_label_batch(
        values, joined)
    out_of_range = (has_cost & ~((cost >= 0.0) & (cost <= MAX_COST))) | (has_ts & ~((ts >= 0.0) & (ts < MAX_TS)))
    fast = np.flatnonzero((status == 0) & ~out_of_range)
    ids = gather_lines(blob, id_lo[fast], id_hi[fast]).decode().split("\n") if fast.size else []
    kinds = kind[fast]
    integer = kinds == LABEL_INTEGER  # exact: the scanner reads integers of at most 15 digits
    if integer.all():
        labels: list[Any] = number[fast].astype(np.int64).tolist()
    else:
        labels = number[fast].tolist()
        for j in np.flatnonzero(integer).tolist():
            labels[j] = int(labels[j])
    text = np.flatnonzero(kinds == LABEL_TEXT)
    if text.size:
        names = gather_lines(blob, label_lo[fast[text]], label_hi[fast[text]]).decode().split("\n")
        for j, name in zip(text.tolist(), names, strict=True):
            labels[j] = name
    stated = has_cost[fast]
    costs = (cost[fast].tolist() if stated.all() else [None] * fast.size if not stated.any() else
             [c if h else None for c, h in zip(cost[fast].tolist(), stated.tolist(), strict=True)])
    stamps = _with_defaults(ts[fast], has_ts[fast], fast, default_ts)
    if fast.size == len(values) and classes.keys() >= set(labels):  # the usual batch
        # tuple.__new__ makes each Label without a Python call per label (Label(...) costs twice as much)
        made = map(tuple.__new__, repeat(Label), zip(ids, labels, costs, stamps, strict=True))
        return list(made), list(range(len(values))), []
    read = dict(zip(fast.tolist(), zip(ids, labels, costs, stamps, strict=True), strict=True))
    out: list[Label] = []
    positions, rejected = [], []
    for k, value in enumerate(values):
        fields = read.get(k)
        try:
            out.append(Label(*fields) if fields is not None and fields[1] in classes
                       else decode_label(value, classes, _default(default_ts, k)))
            positions.append(k)
        except InvalidRecord as err:
            rejected.append((k, err))
    return out, positions, rejected


def pack_keys(ids: Sequence[str]) -> Packed:
    """The Kafka key of each output, its id in UTF-8, laid end to end (one encode for the batch)."""
    return Packed(*utf8_spans(ids))


def source_of(topic: str, partition: int, offset: int) -> str:
    """The ``source`` field of an output: the feature record it answers."""
    return f"{topic}:{partition}:{offset}"


def parse_source(value: str) -> tuple[str, int, int]:
    topic, partition, offset = value.rsplit(":", 2)
    return topic, int(partition), int(offset)
