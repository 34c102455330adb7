"""A recorded features topic as a replay's dataset: ``activestream replay --from-kafka``.

The topic is read from its start (or from a time on) to its end, every partition, without joining
a consumer group or committing anything; an end time leaves out the messages stamped after it.
Records are ordered by their time (the record's ``ts``, else the message timestamp), then partition
and offset, so records produced in time order replay in that order whatever partitions they went
to. Each record's label comes from a labels topic, joined by id (an id's first label, as the
service's default duplicate policy applies it), or from a ``label`` field of the record itself.
Records without a label, and records the service would reject, are counted and left out: a replay
scores every record against its label.

The rows are held in memory as CSR arrays (12 bytes a non-zero): a replay may permute them, and
ordering partitions by time needs them all.
"""

from __future__ import annotations

import math
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from consumer.records import decode_feature_batch, decode_label_batch
from consumer.records.fields import _iso_seconds
from learners.datasets import Dataset
from learners.inputs import Rows

__all__ = ["TopicDataset", "parse_time", "read_topic_dataset", "used_width"]

_BATCH = 10_000  # messages per consume(): what one decode call handles


class _AnyLabel(dict):
    """The classes mapping for labels read before the model's classes are known: every label is one."""

    def __contains__(self, label: object) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class TopicDataset:
    """The labelled records of a features topic, in time order, and what was left out."""

    data: Dataset
    records: int  # feature messages read
    unlabelled: int  # usable records with no label
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> feature records the service would refuse
    labels_read: int = 0  # label messages read (0 when labels come inline)
    labels_rejected: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"records": self.records, "replayed": self.data.n, "unlabelled": self.unlabelled,
                "rejected": self.rejected, "labels_read": self.labels_read, "labels_rejected": self.labels_rejected}


def _messages(conf: Mapping[str, Any], topic: str, since_s: float | None, until_s: float | None,
              timeout_s: float) -> Iterator[list[Any]]:
    """Batches of ``topic``'s messages stamped in [``since_s``, ``until_s``) (either end open if
    None), every partition read until the reader reaches its end.

    A partition ends where a fetch finds nothing more (partition EOF, from the fetch's high
    watermark), not at an end listed before the read: some Kafka-protocol brokers list a stale one.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer({**conf, "group.id": f"activestream-replay-{uuid.uuid4().hex[:12]}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            why = meta.error.str() if meta is not None and meta.error is not None else "no partitions"
            raise ValueError(f"topic {topic!r} cannot be read: {why}")
        starts = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(meta.partitions)]
        if since_s is not None:
            wanted = [TopicPartition(topic, tp.partition, int(since_s * 1000)) for tp in starts]
            # a partition with nothing at or after the time comes back at its end (offset -1): nothing to read
            starts = [tp for tp in consumer.offsets_for_times(wanted, timeout=timeout_s) if tp.offset >= 0]
        if not starts:
            return
        consumer.assign(starts)
        open_ = {tp.partition for tp in starts}
        # the broker's time index only skips ahead (some brokers answer offset 0 for any time): the
        # times are checked on every message
        since_ms = -math.inf if since_s is None else since_s * 1000
        until_ms = math.inf if until_s is None else until_s * 1000
        progress = time.monotonic()
        while open_:
            batch = consumer.consume(_BATCH, 0.5)
            kept = []
            for msg in batch:
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(err)
                    open_.discard(msg.partition())
                elif since_ms <= msg.timestamp()[1] < until_ms:
                    kept.append(msg)
            if batch:
                progress = time.monotonic()
            if kept:
                yield kept
            elif time.monotonic() - progress > timeout_s:
                raise TimeoutError(f"{topic}: nothing read for {timeout_s:g} s, partitions {sorted(open_)} "
                                   "not read to their end")
    finally:
        consumer.close()


def _message_times(batch: list[Any]) -> np.ndarray:
    return np.fromiter((m.timestamp()[1] for m in batch), dtype=np.float64, count=len(batch)) / 1000.0


def _read_labels(conf: Mapping[str, Any], topic: str, classes: Mapping[Any, int], timeout_s: float,
                 ) -> tuple[dict[str, Any], int, Counter]:
    """id -> the id's first label, over the whole labels topic; messages read; rejections by reason."""
    first: dict[str, Any] = {}
    read, rejected = 0, Counter()
    for batch in _messages(conf, topic, None, None, timeout_s):
        read += len(batch)
        stamps = _message_times(batch)
        labels, _, refused = decode_label_batch([m.value() for m in batch], classes,
                                             lambda ks, stamps=stamps: stamps[ks])
        rejected.update(err.reason for _, err in refused)
        for label in labels:
            first.setdefault(label.id, label.label)
    return first, read, rejected


def _inline_labels(values: list[bytes | None], positions: list[int]) -> list[Any]:
    """The ``label`` field of the records at ``positions`` (None where there is none or it is not a
    plain value)."""
    out = []
    for k in positions:
        label = orjson.loads(values[k]).get("label")
        out.append(None if isinstance(label, (dict, list, bool)) else label)
    return out


def read_topic_dataset(conf: Mapping[str, Any], topic: str, *, n_features: int, labels_topic: str | None = None,
                       classes: list | None = None, since_s: float | None = None, until_s: float | None = None,
                       timeout_s: float = 30.0, width: Callable[[Rows], int] | None = None,
                       progress: Callable[[int], None] | None = None) -> TopicDataset:
    """The records of ``topic`` (client properties ``conf``) with their labels, as a dataset in time
    order (see the module docstring). Features are read into ``n_features`` coordinates (named
    features are hashed into them); ``width(rows)``, if given, is the dataset's dimension instead.
    ``classes``, if known, refuse any other label as the service would. ``progress(records)`` after
    each batch, with the records read so far."""
    known: Mapping[Any, int] = {c: k for k, c in enumerate(classes)} if classes is not None else _AnyLabel()
    joined: dict[str, Any] | None = None
    labels_read, labels_rejected = 0, Counter()
    if labels_topic is not None:
        joined, labels_read, labels_rejected = _read_labels(conf, labels_topic, known, timeout_s)
    blocks: list[Rows] = []
    labels: list[Any] = []
    stamps, partitions, offsets = [], [], []
    records = unlabelled = 0
    rejected: Counter = Counter()
    for batch in _messages(conf, topic, since_s, until_s, timeout_s):
        records += len(batch)
        if progress is not None:
            progress(records)
        values = [m.value() for m in batch]
        times = _message_times(batch)
        decoded = decode_feature_batch(values, n_features, lambda ks, times=times: times[ks])
        rejected.update(err.reason for _, err in decoded.rejected)
        found = ([joined.get(rid) for rid in decoded.ids] if joined is not None
                 else _inline_labels(values, decoded.positions))
        usable = np.fromiter((x is not None and (classes is None or x in known) for x in found), dtype=bool,
                             count=len(found))
        if classes is not None and labels_topic is None:
            rejected["unknown_class"] += int(sum(x is not None and x not in known for x in found))
            unlabelled += int(sum(x is None for x in found))
        else:
            unlabelled += int(np.count_nonzero(~usable))
        keep = np.flatnonzero(usable)
        if keep.size == 0:
            continue
        at = np.asarray(decoded.positions, dtype=np.int64)[keep]
        blocks.append(decoded.rows.take(keep))
        labels.extend(found[j] for j in keep.tolist())
        stamps.append(np.asarray(decoded.ts, dtype=np.float64)[keep])
        partitions.append(np.fromiter((batch[k].partition() for k in at.tolist()), dtype=np.int64, count=at.size))
        offsets.append(np.fromiter((batch[k].offset() for k in at.tolist()), dtype=np.int64, count=at.size))
    name = f"kafka:{topic}"
    if not blocks:
        why = ("carries a label (a \"label\" field; or join them from a labels topic)" if labels_topic is None
               else f"has a label in {labels_topic!r}")
        raise ValueError(f"no usable record of {topic!r} {why} ({records} read, {unlabelled} unlabelled, "
                         f"rejected: {dict(rejected) or 'none'})")
    rows = Rows.vstack(blocks)
    order = np.lexsort((np.concatenate(offsets), np.concatenate(partitions), np.concatenate(stamps)))
    rows = rows.take(order)
    if width is not None:
        rows = Rows(rows.indptr, rows.indices, rows.data, width(rows))
    data = Dataset(rows, np.asarray(labels)[order], name)
    return TopicDataset(data, records, unlabelled, dict(rejected), labels_read, dict(labels_rejected))


def parse_time(text: str, what: str = "time") -> float:
    """Epoch seconds from epoch seconds or ISO 8601 text (UTC unless it names an offset), as a
    record's ``ts`` is read."""
    try:
        return float(text)
    except ValueError:
        seconds = _iso_seconds(text)
    if seconds != seconds:
        raise ValueError(f"{what} takes epoch seconds or ISO 8601, got {text!r}")
    return seconds


def used_width(rows: Rows) -> int:
    """One past the largest coordinate any row uses: the width a LIBSVM file of these rows has."""
    return int(rows.indices.max()) + 1 if rows.nnz else 1

