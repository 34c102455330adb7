"""One checkpoint per interval: flush → snapshot → persist → commit → record, in every role.

Step 1. Flush the producer: the outputs of every consumed record are acknowledged.
Step 2. Snapshot: the next offset of every consumed partition, and what the sink persists (copies,
        which the loop may change at once).
Step 3. Persist it through the role's :class:`Sink`: a checkpoint file (role ``all``), the model
        topic (``trainer``), or nothing of its own (``scorer``, whose progress is its offsets).
Step 4. Commit exactly the snapshot's offsets to Kafka, synchronously; then the sink's own commits
        that must follow them (a scorer's output floors).
Step 5. Record the duration and the time of the checkpoint.

If step 1, 2 or 3 fails, nothing is committed: :class:`CheckpointError`. A due checkpoint runs in
the loop (:meth:`Checkpoints.tick`); a sink that writes files lets step 3 run in a thread of its own
while the loop goes on, and steps 4 and 5 follow in the loop once the file is durable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from confluent_kafka import KafkaException, TopicPartition

from consumer.checkpoint import CheckpointPolicy, CheckpointStore
from consumer.clock import Clock
from consumer.errors import CheckpointError
from consumer.metrics import Metrics

__all__ = ["FLUSH_TIMEOUT_S", "Checkpoints", "FileSink", "Sink", "Snapshot", "commit_offsets"]

log = logging.getLogger(__name__)

FLUSH_TIMEOUT_S = 20.0  # within Kubernetes' 30 s grace period, with room to write and commit

Offsets = dict[tuple[str, int], int]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Step 2's result: the offsets to commit, the output topics' ends, and the arrays to persist."""

    offsets: Offsets
    outputs: Offsets = field(default_factory=dict)
    state: Mapping[str, np.ndarray] = field(default_factory=dict)
    parts: tuple[str, ...] = ()  # the state's namespaces written once each (see consumer.checkpoint)


class Sink(Protocol):
    """Where a role's checkpoints persist."""

    background: bool  # whether step 3 may run in the writer thread

    def persist(self, snapshot: Snapshot) -> Any:
        """Step 3: make the snapshot durable; what it made (a file, a publication). :class:`CheckpointError`
        if it could not."""
        ...

    def committed(self, snapshot: Snapshot) -> None:
        """After step 4: what must follow the offsets' commit."""
        ...


@dataclass(frozen=True, slots=True)
class _Writing:
    """A checkpoint being persisted in the background: its future, its snapshot and when it started."""

    future: Future
    snapshot: Snapshot
    started: float


class Checkpoints:
    """A process's checkpoint protocol (see the module docstring): when one is due, and running it.

    ``flush(timeout_s)``: step 1, True once every output is acknowledged; ``pending()``: how many
    outputs it still holds; ``snapshot()``: step 2; ``commit(offsets)``: step 4."""

    def __init__(self, sink: Sink, *, policy: CheckpointPolicy, clock: Clock, metrics: Metrics,
                 flush: Callable[[float], bool], pending: Callable[[], int], snapshot: Callable[[], Snapshot],
                 commit: Callable[[Offsets], None]) -> None:
        self.sink, self.policy, self.clock, self.metrics = sink, policy, clock, metrics
        self._flush, self._pending, self._snapshot, self._commit = flush, pending, snapshot, commit
        self.last_at = clock.monotonic()
        self.labels = 0  # learnt since the last snapshot
        self._writing: _Writing | None = None
        # a due checkpoint's file is written here while the loop goes on: serializing and fsyncing a
        # large model would stall the loop, and hashing and writes release the GIL
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="activestream-checkpoint") \
            if sink.background else None

    def run(self) -> Any:
        """A checkpoint now, all five steps (one the loop began is finished first); what the sink made,
        once durable."""
        self.finish(wait=True)
        started = self.clock.monotonic()
        try:
            snapshot = self._prepare()
            name = self.sink.persist(snapshot)
        except CheckpointError:
            self.metrics.checkpoint_failures.inc()
            raise
        self._durable(name, snapshot, started)
        return name

    def tick(self) -> None:
        """In each iteration of the loop: finish a checkpoint being written, begin one that is due."""
        self.finish(wait=False)
        if self._writing is None and self.policy.due(self.clock.monotonic() - self.last_at, self.labels):
            self._begin()

    def finish(self, wait: bool) -> None:
        """Steps 4 and 5 of the checkpoint being written, once it is durable (now, with ``wait``)."""
        writing = self._writing
        if writing is None or not (wait or writing.future.done()):
            return
        self._writing = None
        try:
            name = writing.future.result()
        except CheckpointError as exc:
            self._failed(exc)
            return
        self._durable(name, writing.snapshot, writing.started)

    def close(self) -> None:
        """A file being written is finished (its offsets stay uncommitted)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)

    def count_labels(self, n: int) -> None:
        """``n`` more labels learnt: a checkpoint is due after ``every_labels`` of them."""
        self.labels += n

    def postpone(self) -> None:
        """The next checkpoint is due an interval from now (one made outside the loop failed)."""
        self.last_at = self.clock.monotonic()

    @property
    def writing(self) -> bool:
        """Whether a checkpoint is being persisted beside the loop."""
        return self._writing is not None and not self._writing.future.done()

    def _begin(self) -> None:
        started = self.clock.monotonic()
        try:
            snapshot = self._prepare()
            if self._writer is None:
                self._durable(self.sink.persist(snapshot), snapshot, started)
            else:
                self._writing = _Writing(self._writer.submit(self.sink.persist, snapshot), snapshot, started)
        except CheckpointError as exc:  # e.g. the broker is away: keep serving, try again later
            self._failed(exc)

    def _prepare(self) -> Snapshot:
        """Steps 1 and 2."""
        if not self._flush(FLUSH_TIMEOUT_S):
            raise CheckpointError(f"producer still holds {self._pending()} messages after {FLUSH_TIMEOUT_S:.0f} s")
        snapshot = self._snapshot()
        self.last_at = self.clock.monotonic()
        self.labels = 0  # the next checkpoint counts the labels after this snapshot
        return snapshot

    def _failed(self, exc: CheckpointError) -> None:
        self.metrics.checkpoint_failures.inc()
        log.warning("checkpoint failed, retrying in %.0f s: %s", self.policy.every_s, exc)
        self.last_at = self.clock.monotonic()

    def _durable(self, name: Any, snapshot: Snapshot, started: float) -> None:
        """Steps 4 and 5."""
        self._commit(snapshot.offsets)
        self.sink.committed(snapshot)
        self.metrics.checkpoint_duration.observe(self.clock.monotonic() - started)
        self.metrics.checkpoint_last_success.set(self.clock.now())
        log.debug("checkpoint %s", name)


def commit_offsets(consumers: list[Any], offsets: Offsets) -> None:
    """Step 4: commit each consumer's assigned partitions of ``offsets``, synchronously."""
    for consumer in consumers:
        assigned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
        mine = [TopicPartition(t, p, o) for (t, p), o in offsets.items() if (t, p) in assigned]
        if not mine:
            continue
        try:
            consumer.commit(offsets=mine, asynchronous=False)
        except KafkaException as exc:  # the checkpoint, not the group, is the source of truth
            log.warning("offset commit failed (the checkpoint holds them): %s", exc)


class FileSink:
    """Checkpoints as files in a directory (role ``all``): written beside the loop."""

    background = True

    def __init__(self, store: CheckpointStore, metrics: Metrics) -> None:
        self.store, self.metrics = store, metrics

    def persist(self, snapshot: Snapshot) -> Path:
        return self.store.write(snapshot.state, snapshot.parts)

    def committed(self, snapshot: Snapshot) -> None:
        self.metrics.checkpoint_bytes.labels(kind="written").set(self.store.written_bytes)
        self.metrics.checkpoint_bytes.labels(kind="held").set(self.store.held_bytes)
