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

from consumer.records.feature_batch import FeatureBatch, decode_feature_batch
from consumer.records.features import Feature, decode_feature
from consumer.records.fields import DefaultTimes
from consumer.records.labels import Label, decode_label, decode_label_batch
from consumer.records.outputs import encode_predictions, pack_keys, parse_source, source_of
from consumer.records.schema import FRAMED_REASONS, MAX_COST, MAX_TS, REASONS, SCHEMA_VERSION

__all__ = [
    "FRAMED_REASONS",
    "MAX_COST",
    "MAX_TS",
    "REASONS",
    "SCHEMA_VERSION",
    "DefaultTimes",
    "Feature",
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
