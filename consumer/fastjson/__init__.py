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
with correctly rounded float64 arithmetic (Clinger's fast path, or
:func:`~consumer.fastjson.lexing._long_decimal` for the 17-digit timestamps that ``repr(time.time())``
writes); any other is re-read by Python's ``float`` from its text.
"""

from __future__ import annotations

from consumer.fastjson.blob import gather_lines, spans_differ
from consumer.fastjson.duplicates import DUPLICATE, UNSURE, duplicate_key_flags, duplicate_keys, escaped_keys
from consumer.fastjson.features import ScanJob, run_scan, scan_batch, scan_features, scan_job, scan_result
from consumer.fastjson.labels import LABEL_INTEGER, LABEL_TEXT, scan_label_batch, scan_labels
from consumer.fastjson.rows import compact_rows, sum_duplicates

__all__ = [
    "DUPLICATE",
    "LABEL_INTEGER",
    "LABEL_TEXT",
    "UNSURE",
    "ScanJob",
    "compact_rows",
    "duplicate_key_flags",
    "duplicate_keys",
    "escaped_keys",
    "gather_lines",
    "run_scan",
    "scan_batch",
    "scan_features",
    "scan_job",
    "scan_label_batch",
    "scan_labels",
    "scan_result",
    "spans_differ",
    "sum_duplicates",
]
