"""Batches of Kafka messages as the loop's steps take them: values, places, decoding, dead letters.

They take messages with confluent-kafka's interface (``topic()``, ``partition()``, ``offset()``,
``key()``, ``value()``, ``timestamp()``, ``headers()``), so tests drive them with in-memory fakes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np
from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaError

from consumer.batch_reader import Fetched
from consumer.dead_letters import dead_letter
from consumer.errors import InvalidRecord
from consumer.fastwrite import pack
from consumer.records import DefaultTimes, Feature, FeatureBatch, Label, decode_feature_batch, decode_label_batch

log = logging.getLogger(__name__)

__all__ = [
    "Decoded",
    "Feature",
    "FeatureBatch",
    "Label",
    "dead_letter",
    "decode_features",
    "decode_labels",
    "key_id_mismatches",
    "last_offsets",
    "message_times",
    "places_of",
    "uncertainty",
    "values_of",
    "without_errors",
]

def message_times(msgs: Sequence[Any], default: float) -> np.ndarray:
    """The messages' Kafka timestamps in epoch seconds, ``default`` for those that have none."""
    stamps = [m.timestamp() for m in msgs]  # (kind, ms) pairs; a column at a time is the cheap way to numpy
    kind, ms = (np.fromiter(map(itemgetter(j), stamps), dtype=np.int64, count=len(stamps)) for j in (0, 1))
    return _seconds(kind, ms, default)


def _seconds(kind: np.ndarray, ms: np.ndarray, default: float) -> np.ndarray:
    """Kafka timestamps (type, ms) in epoch seconds, ``default`` where there is none."""
    return np.where((kind != TIMESTAMP_NOT_AVAILABLE) & (ms >= 0), ms / 1000.0, default)


def values_of(msgs: Sequence[Any]) -> tuple[Sequence[bytes | None], tuple[bytes, np.ndarray] | None]:
    """The messages' values, and the same end to end with their bounds when a batch reader read
    them that way already (None otherwise)."""
    if isinstance(msgs, Fetched):
        return msgs.values, (msgs.blob, msgs.bounds)
    return [m.value() for m in msgs], None


def places_of(msgs: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Each message's partition and offset, as int64 columns (a batch reader's batch has them)."""
    if isinstance(msgs, Fetched):
        return msgs.partitions.astype(np.int64), msgs.offsets
    n = len(msgs)
    return (np.fromiter((m.partition() for m in msgs), dtype=np.int64, count=n),
            np.fromiter((m.offset() for m in msgs), dtype=np.int64, count=n))


def last_offsets(partitions: np.ndarray, offsets: np.ndarray) -> dict[int, int]:
    """The last offset of each partition among a batch's messages (in the order consumed)."""
    if len(partitions) == 0:
        return {}
    # A batch is runs of one partition each; a partition's offsets grow from run to run, so the
    # end of its last run holds its last offset, and dict() keeps the last value of a repeated key.
    ends = np.flatnonzero(np.append(partitions[1:] != partitions[:-1], True))
    return dict(zip(partitions[ends].tolist(), offsets[ends].tolist(), strict=True))


def _times_of(msgs: Sequence[Any], now: float) -> DefaultTimes:
    """The times of records without a "ts": their messages' timestamps (``now`` for those without)."""
    if isinstance(msgs, Fetched):  # the timestamps are a column already
        return lambda ks: _seconds(msgs.kinds[ks], msgs.stamps[ks], now)
    return lambda ks: message_times([msgs[k] for k in ks.tolist()], now)


@dataclass(slots=True)
class Decoded:
    """One consumed batch: the usable records, and the rejected ones with their messages."""

    records: list = field(default_factory=list)  # Feature or Label
    rejected: list[tuple[Any, InvalidRecord]] = field(default_factory=list)


def decode_features(msgs: Sequence[Any], n_features: int, now: float, scanned: tuple | None = None,
                    values: list[bytes | None] | None = None, refused: Mapping[int, InvalidRecord] | None = None,
                    ) -> tuple[FeatureBatch, list[int], list]:
    """A batch of feature messages → (the decoded batch, the position in ``msgs`` of each usable
    record, [(message, InvalidRecord)] for the others). ``scanned``: the compiled scan of their
    values, if it ran already (:func:`consumer.fastjson.scan_batch`); ``values``: their values, if
    they were taken already; ``refused``: {position: why} of the values refused before decoding (a
    framed record's, :mod:`consumer.registry_formats`), whose place in ``values`` holds None."""
    batch = decode_feature_batch([m.value() for m in msgs] if values is None else values, n_features,
                                 _times_of(msgs, now), scanned)
    rejected = _with_refusals(batch.rejected, refused) if refused else batch.rejected
    return batch, batch.positions, _located(msgs, rejected)


def _with_refusals(rejected: list[tuple[int, InvalidRecord]], refused: Mapping[int, InvalidRecord],
                   ) -> list[tuple[int, InvalidRecord]]:
    """The decoders' rejections, a refused value's (its None read as empty) replaced by its refusal."""
    return [(k, refused.get(k, err)) for k, err in rejected]


def key_id_mismatches(msgs: Sequence[Any], batch: FeatureBatch) -> int:
    """How many of the batch's usable records came with a message key that is not their id in UTF-8
    (a record without a key is not counted): flagged, not rejected, as the id in the value is the
    record's identity and a key may be chosen for partitioning alone."""
    from consumer.fastjson import spans_differ

    if not batch.ids:
        return 0
    at = np.asarray(batch.positions, dtype=np.int64)
    if isinstance(msgs, Fetched):
        keys, key_lo, key_hi, keyless = msgs.keys, msgs.key_bounds[at], msgs.key_bounds[at + 1], msgs.null_key[at]
    else:
        raw = [msgs[k].key() for k in batch.positions]
        packed = pack([key or b"" for key in raw])
        keys, key_lo, key_hi = packed.data, packed.starts, packed.ends
        keyless = np.fromiter((key is None for key in raw), dtype=np.bool_, count=len(raw))
    ids = batch.packed_ids()
    differ = np.empty(len(at), dtype=np.bool_)
    spans_differ(np.frombuffer(keys, dtype=np.uint8), key_lo, key_hi, np.frombuffer(ids.data, dtype=np.uint8),
                 ids.starts, ids.ends, differ)
    return int((differ & ~keyless).sum())


def _located(msgs: Sequence[Any], rejected: list[tuple[int, InvalidRecord]]) -> list[tuple[Any, InvalidRecord]]:
    """(message, why) of each rejected position, the error told where its record came from."""
    out = []
    for k, err in rejected:
        msg = msgs[k]
        err.topic, err.partition, err.offset = msg.topic(), msg.partition(), msg.offset()
        out.append((msg, err))
    return out


class _AnyClass(Mapping):
    """The classes of a model still learning them: every label is let through the decoding, and
    :func:`adopt_classes` then takes those that fit."""

    def __contains__(self, label: object) -> bool:
        return True

    def __getitem__(self, label: object) -> int:
        raise KeyError(label)

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 0


ANY_CLASS: Mapping[Any, int] = _AnyClass()


def decode_labels(msgs: Sequence[Any], classes: Mapping[Any, int], now: float,
                  adopt: Callable[[list[Any]], list[bool]] | None = None, framed: Any = None) -> Decoded:
    """Labels of a batch, in order; invalid ones are set aside with their reason. ``adopt``: which
    labels a model learning its classes takes (:meth:`learners.base.Learner.adopt`), with
    ``classes`` :data:`ANY_CLASS`; the others are set aside as ``unknown_class``. ``framed``: the
    :class:`consumer.registry_formats.FramedReader` of the labels topic, when its records are framed
    (it may raise :class:`~consumer.errors.RegistryUnavailable`, before anything is adopted)."""
    values, joined = values_of(msgs)
    refused = None
    if framed is not None:
        (values, refused), joined = framed.unframe(values), None
    labels, positions, rejected = decode_label_batch(values, classes, _times_of(msgs, now), joined)
    if refused:
        rejected = _with_refusals(rejected, refused)
    if adopt is not None:
        taken = adopt([lab.label for lab in labels])
        refused = [(k, InvalidRecord("unknown_class", f"label {lab.label!r:.60} is not one of the classes learnt "
                                     "from the labels, a binary model's two: set ACTIVESTREAM_CLASSES for more"))
                   for lab, k, ok in zip(labels, positions, taken, strict=True) if not ok]
        labels = [lab for lab, ok in zip(labels, taken, strict=True) if ok]
        rejected = sorted(rejected + refused, key=itemgetter(0))
    return Decoded(labels, _located(msgs, rejected))


def uncertainty(score: Any, gap: Any = None) -> Any:
    """1 / (1 + distance to the decision boundary): 1 on the boundary, → 0 far from it.

    The distance is |margin| for a binary model and the top-1 minus top-2 score gap for a
    multiclass one. Numbers or NumPy arrays alike.
    """
    distance = abs(score) if gap is None else gap
    return 1.0 / (1.0 + distance)


def without_errors(messages: Sequence[Any], consumer: str,
                    out_of_range: list[tuple[str, int, int]]) -> Sequence[Any]:
    """The messages that carry a record. Of the others (consumer errors), a position the log does
    not hold goes to ``out_of_range`` as (topic, partition, offset); the rest are logged. A batch
    reader's batch holds none (it sorts them itself)."""
    if isinstance(messages, Fetched):
        return messages
    good = [msg for msg in messages if msg.error() is None]
    if len(good) < len(messages):
        for msg in messages:
            if msg.error() is None:
                continue
            if msg.error().code() == KafkaError._AUTO_OFFSET_RESET:
                offset = msg.offset()  # None where there was no position at all (no committed offset)
                out_of_range.append((msg.topic(), msg.partition(), -1 if offset is None else offset))
            else:
                log.warning("%s consumer: %s", consumer, msg.error().str())
    return good
