"""The book of tasks: record id → Label Studio task, rebuilt from Label Studio at start-up.

Label Studio itself is the store that makes task creation idempotent: each task carries its record
id in ``data.activestream_id``, the book is loaded from the project's tasks before any request is
read, and a request whose id is in the book makes no task. Restarts, replays and rebalances need no
state file: the book is reloaded whenever partitions are assigned.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from consumer.annotate.mapping import ID_FIELD, Request, task_data
from consumer.annotate.metrics import AnnotateMetrics

__all__ = ["FORWARDED", "IGNORED", "Entry", "TaskBook", "TaskStore"]

log = logging.getLogger(__name__)

FORWARDED = "activestream_forwarded"  # task meta: annotation id → the class last produced for it
IGNORED = "-"  # the forwarded mark of an annotation that gave no label (skipped, or no class)


class TaskStore(Protocol):
    """What the book needs of Label Studio (the client, or a fake in tests)."""

    def tasks(self, project: int) -> Any: ...
    def create_task(self, project: int, data: dict[str, Any]) -> dict[str, Any]: ...
    def delete_task(self, task_id: int) -> None: ...


@dataclass
class Entry:
    task_id: int | None  # None once closed
    expires_at: float | None
    answered: bool = False  # a label was produced for it: it is no longer open, and never closed
    forwarded: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def is_open(self) -> bool:
        return self.task_id is not None and not self.answered


class TaskBook:
    """Record ids and their tasks; thread-safe (the request loop, webhooks and the poller share it)."""

    def __init__(self, store: TaskStore, project: int, metrics: AnnotateMetrics,
                 now: Callable[[], float] = time.time) -> None:
        self._store, self._project, self._metrics, self._now = store, project, metrics, now
        self._entries: dict[str, Entry] = {}
        self._by_task: dict[int, str] = {}
        self._expiry: list[tuple[float, str]] = []  # (expires_at, id) of open tasks; stale items skipped
        self.lock = threading.RLock()

    # -- loading

    def load(self) -> int:
        """Replace the book with the project's tasks; returns how many are open.

        What this process forwarded is kept for tasks that are still there: a mark not saved in
        Label Studio yet would otherwise be forgotten, and its annotation forwarded again.
        """
        with self.lock:
            held = self._entries
            self._entries, self._by_task, self._expiry = {}, {}, []
            for task in self._store.tasks(self._project):
                self.note(task, held)
            self.publish()
            return sum(e.is_open for e in self._entries.values())

    def note(self, task: dict[str, Any], held: dict[str, Entry] | None = None) -> str | None:
        """Take a task as Label Studio shows it into the book; returns its record id (None: not ours).

        ``held``: the entries of the book being replaced, whose marks for the same task are kept.
        """
        rid = (task.get("data") or {}).get(ID_FIELD)
        if not isinstance(rid, str):
            return None
        with self.lock:
            entry = self._entries.get(rid)
            if entry is not None and entry.task_id not in (None, task["id"]):
                log.warning("record %s has a second task %s (kept %s)", rid, task["id"], entry.task_id)
                return None
            if entry is None and held is not None and rid in held and held[rid].task_id == task["id"]:
                entry = held[rid]
            meta = task.get("meta") or {}
            forwarded = {**(meta.get(FORWARDED) or {}), **(entry.forwarded if entry else {})}
            expires_at = (task.get("data") or {}).get("expires_at")
            answered = any(m != IGNORED for m in forwarded.values()) or (entry is not None and entry.answered)
            self._entries[rid] = Entry(task["id"], expires_at, answered, forwarded, meta)
            self._by_task[task["id"]] = rid
            if expires_at is not None and not answered:
                heapq.heappush(self._expiry, (expires_at, rid))
            return rid

    # -- requests

    def request(self, req: Request) -> bool:
        """Make the task for ``req`` unless it exists (or existed); True if one was created."""
        with self.lock:
            if req.id in self._entries:
                self._metrics.tasks_existing.inc()
                return False
            if req.expires_at is not None and req.expires_at <= self._now():
                self._metrics.requests_expired.inc()
                return False
            task = self._store.create_task(self._project, task_data(req))
            self._entries[req.id] = Entry(task["id"], req.expires_at)
            self._by_task[task["id"]] = req.id
            if req.expires_at is not None:
                heapq.heappush(self._expiry, (req.expires_at, req.id))
            self._metrics.tasks_created.inc()
            self._metrics.tasks_open.inc()
            return True

    def close(self, rid: str, reason: str) -> bool:
        """Remove ``rid``'s open task (an answered one stays); True if one was removed."""
        with self.lock:
            entry = self._entries.get(rid)
            if entry is None:
                # remember it: a replayed request must not bring the task back
                self._entries[rid] = Entry(None, None)
                return False
            if not entry.is_open:
                return False
            self._store.delete_task(entry.task_id)
            self._by_task.pop(entry.task_id, None)
            entry.task_id = None
            self._metrics.tasks_closed.labels(reason).inc()
            self._metrics.tasks_open.dec()
            return True

    def expire(self) -> int:
        """Close every open task whose request has expired; returns how many."""
        closed = 0
        with self.lock:
            now = self._now()
            while self._expiry and self._expiry[0][0] <= now:
                _, rid = self._expiry[0]
                entry = self._entries.get(rid)
                if entry is not None and entry.is_open and entry.expires_at is not None and entry.expires_at <= now:
                    self.close(rid, "expired")  # raises with the item still queued: tried again
                    closed += 1
                heapq.heappop(self._expiry)
        return closed

    # -- annotations

    def record_of(self, task_id: int) -> str | None:
        with self.lock:
            return self._by_task.get(task_id)

    def entry(self, rid: str) -> Entry | None:
        with self.lock:
            return self._entries.get(rid)

    def forwarded(self, rid: str, annotation_id: str, mark: str, meta: dict[str, Any], answered: bool) -> None:
        """Record what was produced for an annotation; ``answered``: a label was."""
        with self.lock:
            entry = self._entries[rid]
            if answered and entry.is_open:
                self._metrics.tasks_open.dec()
            entry.forwarded[annotation_id] = mark
            entry.meta = meta
            entry.answered = entry.answered or answered

    def open_count(self) -> int:
        with self.lock:
            return sum(e.is_open for e in self._entries.values())

    def publish(self) -> None:
        """Recount the open tasks (after a load or a poll)."""
        self._metrics.tasks_open.set(sum(e.is_open for e in self._entries.values()))
