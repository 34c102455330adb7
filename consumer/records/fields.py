"""What feature and label records share: a JSON object of schema version 1, an id, a time (``ts``, or
the message's own when there is none)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

import numpy as np
import orjson

from consumer.errors import InvalidRecord
from consumer.records.schema import _NUMBER_TYPES, MAX_TS, SCHEMA_VERSION

__all__ = ["DefaultTimes"]


# The times of the records at the given positions, for records that carry no "ts" (their messages'
# timestamps): asked once per batch for all of them, not once per record.
DefaultTimes = Callable[[np.ndarray], np.ndarray]


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
