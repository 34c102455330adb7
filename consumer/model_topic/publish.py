"""The trainer's side: a learner's state published as full snapshots and deltas, checkpoints with their
parts, and tombstones for what compaction may drop."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from confluent_kafka import KafkaError, KafkaException

from consumer.errors import Fenced, PublishFailed
from consumer.model_topic.codec import State, _archive, delta
from consumer.model_topic.manifest import CHECKPOINT, MODEL, PART, _chunk_key, _manifest_key, _meta

__all__ = ["DEFAULT_CHUNK_BYTES", "ModelPublisher", "Published"]

log = logging.getLogger(__name__)

# Kafka's default message limit is 1 MB (message.max.bytes); 900 kB leaves room for key and headers.
DEFAULT_CHUNK_BYTES = 900_000


@dataclass(frozen=True, slots=True)
class Published:
    """One publication, once its manifest is acknowledged."""

    version: int
    epoch: int
    kind: str
    bytes: int
    chunks: int
    published_at: float
    offsets: tuple[int, ...]  # of the chunk records, in chunk order
    manifest_offset: int


@dataclass(slots=True)
class _Chain:
    """Versions (with their chunk counts) published since a full snapshot."""

    snapshot_offset: int
    versions: list[tuple[int, int]] = field(default_factory=list)


class ModelPublisher:
    """Publishes a learner's state as full snapshots and deltas, numbered across epochs.

    Parameters
    ----------
    producer : confluent_kafka.Producer or a callable returning one
        Used for this topic only (``flush`` waits for everything it holds).
    topic : str
        The model topic; everything goes to partition 0.
    chunk_bytes : int, default 900_000
        Largest chunk value; keep it under the broker's message limit.
    full_every : int, default 50
        At most this many deltas follow a full snapshot.
    timeout_s : float, default 30.0
        How long a publication may wait for acknowledgements.
    transactional : bool, default False
        Each publication is one transaction of a producer configured with a ``transactional.id``
        (shared by every trainer of a deployment): :meth:`start` fences the producer of any
        earlier trainer, whose next publication then raises :class:`~consumer.errors.Fenced`
        and writes nothing.
    """

    def __init__(self, producer: Any, topic: str, chunk_bytes: int = DEFAULT_CHUNK_BYTES, full_every: int = 50,
                 timeout_s: float = 30.0, transactional: bool = False) -> None:
        if chunk_bytes < 1 or full_every < 0:
            raise ValueError(f"chunk_bytes must be >= 1 and full_every >= 0, not {chunk_bytes}, {full_every}")
        self.producer = producer() if callable(producer) else producer
        self.topic = topic
        self.chunk_bytes = chunk_bytes
        self.full_every = full_every
        self.timeout_s = timeout_s
        self.transactional = transactional
        self.epoch: int | None = None
        self.version = 0  # the last version number used
        self._last: State | None = None  # the last published state, which the next delta is against
        self._last_version = -1
        self._deltas_since_full = 0
        # What this publisher wrote, for its tombstones: complete chains, and failed publications.
        self._chains: dict[str, list[_Chain]] = {MODEL: [], CHECKPOINT: []}
        self._orphans: dict[str, list[tuple[int, int]]] = {MODEL: [], CHECKPOINT: [], PART: []}
        self._parts: dict[str, dict[str, Any]] = {}  # the parts on the topic: name → where and what
        self._held: list[set[str]] = []  # the parts of the last two checkpoints, which stay

    def start(self, epoch: int, after_version: int) -> None:
        """Begin ``epoch``, numbering from ``after_version + 1``; the first publication is a full
        snapshot. Checkpoints share the numbering, so ``after_version`` is the larger version of
        the newest model and the newest checkpoint manifests (:func:`newest_manifest`)."""
        if self.transactional:
            try:
                self.producer.init_transactions(self.timeout_s)
            except KafkaException as exc:
                raise PublishFailed(f"cannot begin transactions on {self.topic}: {exc}") from None
        self.epoch, self.version = epoch, after_version
        self._last = None

    def publish(self, state: Mapping[str, np.ndarray], *, epoch: int, extra: Mapping[str, Any] | None = None,
                kind: str | None = None, timeout_s: float | None = None) -> Published:
        """Publish ``state`` as the next version: a full snapshot when the epoch is new, after a
        failure, every ``full_every`` deltas, when ``kind="full"`` or when the delta would weigh
        more than half the full state; a delta against the last published state otherwise.
        Raises :class:`PublishFailed` if a record is not acknowledged in ``timeout_s``."""
        if kind not in (None, "full", "delta"):
            raise ValueError(f"kind must be 'full', 'delta' or None, not {kind!r}")
        self._begin_epoch(epoch)
        payload: memoryview | None = None
        if self._last is not None and kind != "full" and self._deltas_since_full < self.full_every:
            payload = _archive(delta(self._last, state))
            full_size = sum(np.asarray(v).nbytes for v in state.values())  # no need to encode it to compare
            if kind is None and 2 * len(payload) > full_size:
                payload = None
        elif kind == "delta":
            raise ValueError("no delta possible: nothing published in this epoch yet, or a full snapshot is due")
        chosen = "full" if payload is None else "delta"
        snapshot = {k: np.array(v, copy=True) for k, v in state.items()}  # the caller's learner moves on
        if payload is None:
            payload = _archive(snapshot)
        published = self._publish(MODEL, chosen, payload, snapshot, epoch, extra, timeout_s)
        self._last, self._last_version = snapshot, published.version
        self._deltas_since_full = 0 if chosen == "full" else self._deltas_since_full + 1
        return published

    def publish_checkpoint(self, state: Mapping[str, np.ndarray], *, epoch: int, parts: Iterable[str] = (),
                           extra: Mapping[str, Any] | None = None, timeout_s: float | None = None) -> Published:
        """Publish ``state`` under the ``checkpoint/`` prefix (it takes a version number); the arrays
        ``<part>.<key>`` of each of ``parts`` go in that part, published only if it is not on the
        topic already; see :func:`~consumer.model_topic.read.read_model_checkpoint`."""
        self._begin_epoch(epoch)
        own, new = dict(state), {}
        for name in sorted(set(parts)):
            prefix = f"{name}."
            arrays = {key[len(prefix):]: own.pop(key) for key in [k for k in own if k.startswith(prefix)]}
            if name not in self._parts:
                new[name] = _archive(arrays)
        return self._publish(CHECKPOINT, "checkpoint", _archive(own), own, epoch, extra, timeout_s,
                             parts=(sorted(set(parts)), new))

    def adopt_parts(self, parts: Mapping[str, Mapping[str, Any]]) -> None:
        """The parts of the checkpoint a new trainer restored (its manifest's ``parts``): already on
        the topic, so the next checkpoints refer to them rather than publish them again."""
        self._parts.update({name: dict(where) for name, where in parts.items()})
        self._held = [set(parts)]

    def _begin_epoch(self, epoch: int) -> None:
        if self.epoch is not None and epoch < self.epoch:
            raise ValueError(f"epoch {epoch} is older than the current epoch {self.epoch}")
        if epoch != self.epoch:
            self.epoch, self._last = epoch, None

    def _publish(self, prefix: str, kind: str, payload: memoryview, state: Mapping[str, np.ndarray], epoch: int,
                 extra: Mapping[str, Any] | None, timeout_s: float | None,
                 parts: tuple[list[str], dict[str, memoryview]] = ([], {})) -> Published:
        """Step 1. Produce the chunks and wait until each is acknowledged.
        Step 2. If a full snapshot: tombstone the chains before the newest complete one, and the
                records of failed publications.
        Step 3. Produce the manifest and wait for it; the version joins its chain.
        If a step fails, raise PublishFailed; the next model publication is then a full snapshot
        (followers may have missed this one). The version number is used up either way."""
        extra = json.loads(json.dumps(dict(extra or {})))  # not JSON: TypeError before anything is sent
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        size, digest = len(payload), hashlib.sha256(payload).hexdigest()
        self.version += 1
        version, step = self.version, self.chunk_bytes
        n = max(1, -(-size // step))
        chains, orphans = self._chains[prefix], self._orphans[prefix]
        listing: dict[str, dict[str, Any]] = {}
        try:
            self._transaction("begin_transaction")
            # Step 1.
            # bytes(): the client refuses memoryviews, so each chunk is copied once, and only once.
            offsets = self._send([(_chunk_key(prefix, version, i), bytes(payload[i * step:(i + 1) * step]))
                                  for i in range(n)], deadline, f"{prefix} {version}")
            listing = self._send_parts(parts[1], deadline)
            if kind == "delta":
                snapshot_offset = chains[-1].snapshot_offset
            else:
                snapshot_offset = min(offsets)
                # Step 2. Before the manifest, so that a manifest stays the last record of the log and
                # the backward search never ends on a gap left by compacted tombstones.
                self._tombstone(prefix, [*chains[:-1], _Chain(-1, orphans)], deadline)
                del chains[:-1]
                self._orphans[prefix] = orphans = []
            # Step 3.
            published_at = time.time()
            manifest = {
                "epoch": epoch, "version": version, "kind": kind,
                "base_version": self._last_version if kind == "delta" else None,
                "snapshot_offset": snapshot_offset, "first_offset": min(offsets), "last_offset": max(offsets),
                "chunks": n, "bytes": size, "sha256": digest,
                "published_at": published_at, "meta": _meta(state), "extra": extra,
            }
            if parts[0]:
                manifest["parts"] = {name: listing.get(name) or self._parts[name] for name in parts[0]}
                self._tombstone_parts(set(parts[0]), deadline)
            (manifest_offset,) = self._send([(_manifest_key(prefix, version), json.dumps(manifest).encode())],
                                            deadline, f"{prefix} manifest {version}")
            self._transaction("commit_transaction", max(0.0, deadline - time.monotonic()))
        except PublishFailed as exc:
            if self.transactional and not isinstance(exc, Fenced):
                self._abort()
            orphans.append((version, n))  # its records, if any landed, go with the next rotation
            if parts[1]:
                self._orphans[PART] += [(where["version"], where["chunks"]) for where in listing.values()]
            if prefix == MODEL:
                self._last = None
            raise
        finally:
            payload.release()
            for part in parts[1].values():
                part.release()
        if parts[0]:
            self._parts.update(listing)
            self._held = [*self._held[-1:], set(parts[0])]
        if kind == "delta":
            chains[-1].versions.append((version, n))
        else:
            chains.append(_Chain(snapshot_offset, [(version, n)]))
        log.debug("published %s version %d (%s, %d bytes in %d chunks)", prefix, version, kind, size, n)
        return Published(version, epoch, kind, size, n, published_at, tuple(offsets), manifest_offset)

    def _send_parts(self, parts: Mapping[str, memoryview], deadline: float) -> dict[str, dict[str, Any]]:
        """Produce each part's chunks, each part with a version number of its own; where each is."""
        listing = {}
        step = self.chunk_bytes
        for name, payload in parts.items():
            self.version += 1
            n = max(1, -(-len(payload) // step))
            # an entry before the send: a failed one's records, if any landed, are tombstoned later
            listing[name] = where = {"version": self.version, "chunks": n, "bytes": len(payload),
                                     "sha256": hashlib.sha256(payload).hexdigest()}
            offsets = self._send([(_chunk_key(PART, self.version, i), bytes(payload[i * step:(i + 1) * step]))
                                  for i in range(n)], deadline, f"part {name}")
            where["first_offset"], where["last_offset"] = min(offsets), max(offsets)
        return listing

    def _tombstone_parts(self, now_held: set[str], deadline: float) -> None:
        """Tombstones for the parts neither this checkpoint nor the one before holds, and for the
        records of failed publications' parts."""
        keep = now_held.union(*self._held[-1:])
        gone = [name for name in self._parts if name not in keep]
        chains = [(self._parts[name]["version"], self._parts[name]["chunks"]) for name in gone] + self._orphans[PART]
        records = [(_chunk_key(PART, version, i), None) for version, n in chains for i in range(n)]
        if records:
            try:
                self._send(records, deadline, f"tombstones for {len(records)} part records")
            except PublishFailed as exc:
                log.warning("%s", exc)
                return
        for name in gone:
            del self._parts[name]
        self._orphans[PART] = []

    def _transaction(self, step: str, *timeout: float) -> None:
        """A step of the publication's transaction (none unless ``transactional``); a fenced
        producer raises :class:`Fenced`."""
        if not self.transactional:
            return
        try:
            getattr(self.producer, step)(*timeout)
        except KafkaException as exc:
            raise _failure(exc.args[0], f"{self.topic}: {step}") from None

    def _abort(self) -> None:
        try:
            self.producer.abort_transaction(self.timeout_s)
        except KafkaException as exc:
            log.warning("%s: aborting the publication's transaction: %s", self.topic, exc)

    def _send(self, records: list[tuple[bytes, bytes | None]], deadline: float, what: str) -> list[int]:
        """Produce ``records`` to partition 0 and wait for their acknowledgements; their offsets."""
        reports: list[tuple[Any, Any] | None] = [None] * len(records)

        def on_delivery(i: int) -> Callable[[Any, Any], None]:
            def report(err: Any, msg: Any) -> None:
                reports[i] = (err, msg)
            return report

        for i, (key, value) in enumerate(records):
            while True:
                try:
                    self.producer.produce(self.topic, value, key=key, partition=0, on_delivery=on_delivery(i))
                    break
                except BufferError:  # librdkafka's queue is full: let acknowledgements drain it
                    if time.monotonic() >= deadline:
                        raise PublishFailed(f"{what}: the producer queue stayed full") from None
                    self.producer.poll(0.1)
                except KafkaException as exc:
                    raise _failure(exc.args[0], f"{what}: cannot produce to {self.topic}") from None
                except (ValueError, TypeError) as exc:
                    raise PublishFailed(f"{what}: cannot produce to {self.topic}: {exc}") from None
        try:
            self.producer.flush(max(0.0, deadline - time.monotonic()))
        except KafkaException as exc:  # a fatal error: a fenced producer
            raise _failure(exc.args[0], f"{what}: {self.topic}") from None
        offsets = []
        for i, got in enumerate(reports):
            if got is None:
                raise PublishFailed(f"{what}: record {i} of {len(records)} not acknowledged in time")
            err, msg = got
            if err is not None:
                raise _failure(err, f"{what}: record {i} of {len(records)} not delivered")
            offsets.append(msg.offset())
        return offsets

    def _tombstone(self, prefix: str, chains: list[_Chain], deadline: float) -> None:
        """Tombstones for every record of ``chains``; a failure is only logged (compaction just
        keeps more)."""
        records: list[tuple[bytes, bytes | None]] = []
        for chain in chains:
            for version, n in chain.versions:
                records += [(_chunk_key(prefix, version, i), None) for i in range(n)]
                records.append((_manifest_key(prefix, version), None))
        if records:
            try:
                self._send(records, deadline, f"tombstones for {len(records)} {prefix} records")
            except PublishFailed as exc:
                log.warning("%s", exc)


def _failure(err: Any, what: str) -> PublishFailed:
    """The exception for a Kafka error: :class:`Fenced` when the error is fatal (librdkafka's
    verdict on a producer whose transactional id a newer one took), else :class:`PublishFailed`."""
    if isinstance(err, KafkaError):
        return (Fenced if err.fatal() else PublishFailed)(f"{what}: {err.str()}")
    return PublishFailed(f"{what}: {err}")
