"""The records' schema version, the limits on their times and costs, and the reasons a record is refused for."""

from __future__ import annotations

__all__ = ["FRAMED_REASONS", "MAX_COST", "MAX_TS", "REASONS", "SCHEMA_VERSION"]

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
