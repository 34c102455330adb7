"""Annotations into label records: produced, flushed, then marked as forwarded in Label Studio.

The order is what keeps every annotation: a label is produced and acknowledged by Kafka before it
counts as forwarded, and a webhook is answered only after that. The forwarded mark is then saved in
the task's meta by the loop, so that a restarted connector knows it. Label Studio may write a task
back with its older meta while it saves an annotation, so each poll compares the marks it reads
with those this process holds and saves any that went missing again. This process never sends a
label twice; only a crash before its mark is saved (and read back) sends it once more on the next
start (at least once; the service's duplicate policy decides what a repeat means). An edit that
changes the chosen class is a new label; one that does not is nothing new.

A poll's listing can be older than a webhook's read of the same annotation (the poll read its page
before the edit and reaches the annotation after the webhook forwarded the edit). Each annotation's
``updated_at`` is held for the newest version seen, and an older version is not compared with the
mark at all: taken as an edit, it would send the old class again, and the next poll the new one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from consumer.annotate.client import LabelStudioError
from consumer.annotate.mapping import ID_FIELD, annotation_label, label_record
from consumer.annotate.metrics import AnnotateMetrics
from consumer.annotate.tasks import FORWARDED, IGNORED, TaskBook

__all__ = ["Forwarder", "LabelNotDelivered"]

log = logging.getLogger(__name__)


class LabelNotDelivered(Exception):
    """Kafka did not acknowledge a label record; the annotation stays unforwarded."""


class MetaStore(Protocol):
    def set_task_meta(self, task_id: int, meta: dict[str, Any]) -> None: ...


class Forwarder:
    """Turns (task, annotation) pairs into label records, each annotation's class once."""

    def __init__(self, store: MetaStore, book: TaskBook, producer: Any, labels_topic: str, classes: list[Any],
                 cost: str, cost_per_label: float, cost_per_second: float, metrics: AnnotateMetrics,
                 flush_timeout_s: float = 10.0, now: Callable[[], float] = time.time) -> None:
        self._store, self._book, self._producer, self._topic = store, book, producer, labels_topic
        self._classes, self._cost = classes, (cost, cost_per_label, cost_per_second)
        self._metrics, self._flush_timeout_s, self._now = metrics, flush_timeout_s, now
        # webhook threads and the poller may carry the same annotation at once
        self._lock = threading.Lock()
        self._unsaved: dict[int, dict[str, Any]] = {}  # task id → meta whose mark is not saved yet
        self._recent: set[int] = set()  # tasks marked since the last poll
        self._versions: dict[str, datetime] = {}  # annotation id → the newest updated_at seen

    def forward(self, task: dict[str, Any], annotation: dict[str, Any]) -> bool:
        """Produce the label of ``annotation`` unless already done; True if a label was produced."""
        rid = (task.get("data") or {}).get(ID_FIELD)
        if not isinstance(rid, str):
            return False  # a task this connector did not make
        with self._lock:
            if self._book.entry(rid) is None or self._book.record_of(task["id"]) != rid:
                self._book.note(task)
            entry = self._book.entry(rid)
            if entry is None or entry.task_id != task["id"]:
                return False
            aid = str(annotation["id"])
            if self._stale(aid, annotation):
                return False
            label = annotation_label(annotation, self._classes)
            mark = IGNORED if label is None else str(label)
            if entry.forwarded.get(aid) == mark:
                return False
            if label is None:
                reason = "skipped" if annotation.get("was_cancelled") else "no_class"
                self._metrics.annotations_ignored.labels(reason).inc()
            else:
                self._produce(label_record(rid, label, annotation, *self._cost))
                requested_at = (task.get("data") or {}).get("requested_at")
                if not entry.forwarded and isinstance(requested_at, int | float):
                    self._metrics.annotation_latency.observe(max(0.0, self._now() - requested_at))
            meta = {**entry.meta, FORWARDED: {**entry.forwarded, aid: mark}}
            self._book.forwarded(rid, aid, mark, meta, answered=label is not None)
            self._unsaved[task["id"]] = meta
            self._recent.add(task["id"])
        return label is not None

    def _stale(self, aid: str, annotation: dict[str, Any]) -> bool:
        """Whether a newer version of the annotation was seen; holds this one's time otherwise."""
        try:
            version = datetime.fromisoformat(annotation["updated_at"])
        except (KeyError, TypeError, ValueError):
            return False  # no usable time: the mark alone decides, as before versions were held
        if version.tzinfo is None:  # Label Studio writes UTC; a time without its zone is read so
            version = version.replace(tzinfo=UTC)
        newest = self._versions.get(aid)
        if newest is not None and version < newest:
            self._metrics.annotations_stale.inc()
            return True
        self._versions[aid] = version
        return False

    def take_recent(self) -> set[int]:
        """The tasks marked since the last call (read back at a clean stop to check their marks)."""
        with self._lock:
            recent, self._recent = self._recent, set()
            return recent

    def check_marks(self, task: dict[str, Any]) -> None:
        """Queue the marks of ``task`` again if Label Studio's copy lacks some this process holds."""
        rid = (task.get("data") or {}).get(ID_FIELD)
        entry = self._book.entry(rid) if isinstance(rid, str) else None
        if entry is None or entry.task_id != task["id"] or not entry.forwarded:
            return
        saved = (task.get("meta") or {}).get(FORWARDED) or {}
        if any(saved.get(aid) != mark for aid, mark in entry.forwarded.items()):
            with self._lock:
                self._unsaved.setdefault(task["id"], {**(task.get("meta") or {}), FORWARDED: dict(entry.forwarded)})

    def save_marks(self) -> int:
        """Save the forwarded marks Label Studio has not taken yet; returns how many are left."""
        with self._lock:
            for task_id, meta in list(self._unsaved.items()):
                try:
                    self._store.set_task_meta(task_id, meta)
                except LabelStudioError as exc:
                    if exc.status != 404:  # a deleted task needs no mark; anything else is tried again
                        log.warning("forwarded mark of task %s not saved yet: %s", task_id, exc)
                        self._metrics.label_studio_errors.inc()
                        break
                # a newer mark of the same task may have arrived meanwhile: only the saved one goes
                if self._unsaved.get(task_id) is meta:
                    del self._unsaved[task_id]
            return len(self._unsaved)

    def _produce(self, record: dict[str, Any]) -> None:
        errors: list[Any] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        self._producer.produce(self._topic, key=record["id"].encode(), value=orjson.dumps(record),
                               on_delivery=delivered)
        if self._producer.flush(self._flush_timeout_s) != 0 or errors:
            raise LabelNotDelivered(f"label of {record['id']}: {errors[0] if errors else 'flush timed out'}")
        self._metrics.labels_produced.inc()
