"""Read: feature records a batch at a time, the next batch read ahead; labels as they come.

While one batch of features is scored, the next is taken from the consumer and its compiled scan
runs in a thread of its own (the scan releases the GIL), off the loop's critical path. A batch
reader (:mod:`consumer.batch_reader`) hands each batch over as columns; the consumer is polled
first, without waiting, for the group's events and for records fetched before their partitions
were forwarded to the reader (older than any the reader holds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple

from consumer import messages
from consumer.batch_reader import Fetched
from consumer.clients import Opened
from consumer.clock import Clock
from consumer.config import Settings
from consumer.errors import InvalidRecord, RegistryUnavailable
from consumer.fastjson import ScanJob, run_scan, scan_job
from consumer.kafka import OffsetTracker
from consumer.steps.join import Join
from consumer.steps.positions import Held
from consumer.totals import Totals

__all__ = ["FeatureRead", "LabelRead", "Read"]


class Read(NamedTuple):
    """A batch of feature messages as read: those without an error, their values, and their scan
    (laid out, and running in the scan thread) if it was read ahead."""

    messages: Sequence[Any]
    values: Sequence[bytes | None]
    job: ScanJob | None
    scan: Future | None
    refused: dict[int, InvalidRecord] | None = None  # framed values refused before decoding

    def release(self) -> None:
        """Give a batch reader's messages back to librdkafka (its columns stay readable)."""
        if isinstance(self.messages, Fetched):
            self.messages.release()


class FeatureRead:
    """The next batch of feature records to score, and the one after it read ahead.

    ``unframe``: the reader of framed features (None: plain JSON); ``out_of_range``: where a
    position the log did not hold goes (:class:`consumer.steps.positions.Positions`)."""

    def __init__(self, io: Opened, settings: Settings, held: Held, out_of_range: list[tuple[str, int, int]],
                 unframe: Any = None) -> None:
        self.io, self.settings, self.held, self.out_of_range, self.unframe = io, settings, held, out_of_range, unframe
        self.ahead: Read | None = None
        self.revocations = 0  # of the features' partitions: a batch read before one is no longer ours
        self.scanner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="activestream-scan")

    def __call__(self) -> Read | None:
        """The next batch (None if there is none, or if a revocation took it while the one after it
        was read ahead: its offsets are past the checkpoint the revocation committed)."""
        if self.ahead is None and not self.held.may_read("features"):
            return None
        read, self.ahead = self.ahead or self._read(self.take(self.settings.poll_timeout_s), scan=False), None
        if read is None:
            return None
        revocations = self.revocations
        self.ahead = self._read(self.take(0), scan=True) if self.held.may_read("features") else None
        if self.revocations != revocations:
            read.release()
            return None
        return read

    def revoked(self) -> None:
        """The features' partitions were revoked: what was read ahead goes with them."""
        self.revocations += 1
        self.drop_ahead()

    def drop_ahead(self) -> None:
        if self.ahead is not None:
            self.ahead.release()
            self.ahead = None

    def close(self) -> None:
        self.scanner.shutdown(wait=True, cancel_futures=True)

    def take(self, wait_s: float) -> Sequence[Any]:
        """Up to one batch: wait up to ``wait_s`` for the first record, then take what is already there."""
        batch_size, features, reader = self.settings.batch_size, self.io.features, self.io.reader
        first = features.poll(0 if reader is not None else wait_s)
        if first is not None:
            return [first, *features.consume(batch_size - 1, 0)]
        if reader is None:
            return []
        return reader.read(batch_size, wait_s) or []

    def _read(self, msgs: Sequence[Any], scan: bool) -> Read | None:
        """``msgs`` as the score step takes them (None if there are none). With ``scan``, the batch is
        read ahead: its compiled scan starts now in the scan thread."""
        if not msgs:
            return None
        good = messages.without_errors(msgs, "features", self.out_of_range)
        values, joined = messages.values_of(good)
        refused = None
        if self.unframe is not None and len(good):
            try:
                (values, refused), joined = self.unframe.unframe(values), None
            except RegistryUnavailable as exc:
                self.held.hold_back("features", self.io.features, good, exc)
                if isinstance(good, Fetched):
                    good.release()
                return None
            self.held.answered("features")
        if not scan and joined is None:
            return Read(good, values, None, None, refused)
        # Laid out here, so that the scan thread holds the GIL only to call the compiled loop: each
        # moment it holds it is one the loop waits for it.
        job = scan_job(values, self.settings.n_features, joined)
        return Read(good, values, job, self.scanner.submit(run_scan, job) if scan else None, refused)


class LabelRead:
    """Labels as they come, decoded and handed to the join step; those that cannot be decoded go to
    the dead-letter topic. ``unframe``: the reader of framed labels (None: plain JSON); ``changed()``:
    after a batch was taken."""

    def __init__(self, io: Opened, learner: Any, settings: Settings, held: Held, join: Join, offsets: OffsetTracker,
                 totals: Totals, clock: Clock, out_of_range: list[tuple[str, int, int]], *, unframe: Any = None,
                 changed: Callable[[], None] = lambda: None) -> None:
        self.io, self.learner, self.settings, self.held, self.join = io, learner, settings, held, join
        self.offsets, self.totals, self.clock, self.out_of_range = offsets, totals, clock, out_of_range
        self.unframe, self.changed = unframe, changed

    def __call__(self) -> None:
        batch_size = self.settings.batch_size
        if not self.held.may_read("labels"):
            return
        # the consumer first: the group's events, and labels fetched before their partitions were
        # forwarded to the reader (older than any the reader holds)
        self.take(self.io.labels.consume(batch_size, 0))
        if self.io.label_reader is not None and self.held.may_read("labels"):
            labels = self.io.label_reader.read(batch_size, 0)
            if labels is not None:
                try:
                    self.take(labels)
                finally:
                    labels.release()

    def take(self, msgs: Sequence[Any]) -> None:
        good = messages.without_errors(msgs, "labels", self.out_of_range)
        if not good:
            return
        now, learner = self.clock.now(), self.learner
        try:
            if learner.learns_classes and len(learner.classes) < 2:  # the labels define the classes
                decoded = messages.decode_labels(good, messages.ANY_CLASS, now, adopt=learner.adopt,
                                                 framed=self.unframe)
            else:
                decoded = messages.decode_labels(good, learner.codes, now, framed=self.unframe)
        except RegistryUnavailable as exc:
            self.held.hold_back("labels", self.io.labels, good, exc)
            return
        if self.unframe is not None:
            self.held.answered("labels")
        topics = self.settings.topics
        for msg, err in decoded.rejected:
            self.io.emitter.send(topics.dead_letters, *messages.dead_letter(msg, err))
            self.totals.add(f"dead_letters.{msg.topic()}.{err.reason}")
        self.join(decoded.records, now)
        # one topic (the subscription is a literal name): the last offset of each partition
        for partition, offset in messages.last_offsets(*messages.places_of(good)).items():
            self.offsets.store(topics.labels, partition, offset + 1)
        self.changed()
