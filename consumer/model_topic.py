"""A learner's state on a Kafka topic, in numbered versions, and followers that load it atomically.

One trainer publishes ``learner.state_dict()`` to the *model topic* (one partition, partition 0,
``cleanup.policy=compact`` in production); many scorers follow it. A publication is some chunk
records, then, once every chunk is acknowledged, one manifest record:

- chunks: key ``model/<version>/<i>``, value a slice of at most ``chunk_bytes`` of the payload (an
  ``.npz`` archive of the full state, or of a :func:`delta` against the previous version);
- manifest: key ``model/manifest/<version>``, a JSON object naming the chunks' offsets, their
  count, size and SHA-256, the version the delta applies to (``base_version``) and the offset of
  the full snapshot its chain starts from (``snapshot_offset``).

The manifest key carries the version because compaction keeps one record per key: under a single
``model/manifest`` key every manifest but the newest would be compacted away, and a follower
reading a chain from its snapshot could no longer verify the deltas in between.

Checkpoints (:meth:`ModelPublisher.publish_checkpoint`) use the prefix ``checkpoint/`` instead of
``model/`` and take version numbers from the same sequence (a delta names its base, so the model's
versions need not be consecutive); followers skip them by key, never reading their values.

Once a full snapshot's chunks are acknowledged, the publisher tombstones the records of the chains
before the previous one (those it published itself), so compaction keeps about two chains.

A checkpoint's *parts* (groups of arrays that never change once made, as in
:mod:`consumer.checkpoint`) are published once each, as chunks keyed ``part/<number>/<i>`` in the
transaction of the first checkpoint that holds them; every checkpoint's manifest lists the parts it
holds (``parts``: name → number, offsets, chunk count, size and SHA-256), and a reader assembles them
into the state. A part neither the newest checkpoint nor the one before holds is tombstoned.

A follower only ever holds a complete, verified model: a full snapshot replaces what it holds, a
delta applies only to the exact version it was computed against, anything else waits for the next
full snapshot. Whether a state fits the caller's learner (learner, dimension, format version) is not
this module's business: ``learner.load_state_dict`` raises on a mismatch.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from consumer.errors import Fenced, PublishFailed

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "Model",
    "ModelFollower",
    "ModelPublisher",
    "Published",
    "apply_delta",
    "decode_state",
    "delta",
    "encode_state",
    "newest_manifest",
    "read_checkpoint",
]

log = logging.getLogger(__name__)

# Kafka's default message limit is 1 MB (message.max.bytes); 900 kB leaves room for key and headers.
DEFAULT_CHUNK_BYTES = 900_000
MODEL, CHECKPOINT, PART = "model", "checkpoint", "part"
_KINDS = ("full", "delta", "checkpoint")
_NUMERIC = "biufc"  # bool, signed, unsigned, float, complex: arrays a delta may patch element-wise
# Backward search for the newest manifest: the first window, then each one this many times wider.
_FIRST_WINDOW, _WINDOW_GROWTH = 64, 4
_READ_BATCH = 256

State = dict[str, np.ndarray]


# ---------------------------------------------------------------------------------------- encoding


def _archive(state: Mapping[str, np.ndarray]) -> memoryview:
    """The ``.npz`` archive of ``state``, as a view of its buffer (no copy of the payload)."""
    arrays = {k: np.asarray(v) for k, v in state.items()}
    for name, a in arrays.items():
        if a.dtype.hasobject:  # np.load(allow_pickle=False) would refuse it on the other side
            raise ValueError(f"state array {name!r} has dtype {a.dtype}: only plain arrays can be published")
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getbuffer()


def encode_state(state: Mapping[str, np.ndarray]) -> bytes:
    """``state`` as an ``.npz`` archive."""
    return bytes(_archive(state))


def decode_state(payload: bytes | memoryview) -> State:
    """The arrays of an :func:`encode_state` archive; ``ValueError`` if it is not a readable one."""
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"unreadable state archive: {exc}") from None


# ------------------------------------------------------------------------------------------ deltas

_WHOLE, _INDEX, _VALUE, _REMOVED = "whole.", "index.", "value.", "removed"


def _bits(a: np.ndarray) -> np.ndarray:
    """The elements of ``a`` as unsigned integers of the same width (rows of bytes if no such
    integer), so that equality is bitwise: NaN equals itself, -0.0 differs from 0.0."""
    flat = np.ascontiguousarray(a).reshape(-1)
    size = a.dtype.itemsize
    if size in (1, 2, 4, 8):
        return flat.view(f"u{size}")
    return flat.view(np.uint8).reshape(flat.size, size)


def _changed(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Flat indices where ``new`` differs bitwise from ``old`` (same shape and dtype)."""
    a, b = _bits(old), _bits(new)
    diff = a != b
    return np.flatnonzero(diff if diff.ndim == 1 else diff.any(axis=1))


def delta(base: Mapping[str, np.ndarray], new: Mapping[str, np.ndarray]) -> State:
    """What turns ``base`` into ``new``, as plain arrays (publishable like a state).

    For a numeric array of the same shape and dtype in both: the flat indices that changed
    (``index.<name>``) and their new values (``value.<name>``), compared bitwise; nothing if none
    changed. Arrays that are new, reshaped, retyped, non-numeric and changed, or changed in more
    than half their elements (or where the indices would outweigh the array) are stored whole
    (``whole.<name>``). Names in ``base`` but not ``new`` are listed in ``removed``.
    """
    out: State = {}
    for name, value in new.items():
        b = np.asarray(value)
        a = np.asarray(base[name]) if name in base else None
        if a is None or a.shape != b.shape or a.dtype != b.dtype:
            out[_WHOLE + name] = b
        elif b.dtype.kind not in _NUMERIC:
            if a.tobytes() != b.tobytes():
                out[_WHOLE + name] = b
        else:
            idx = _changed(a, b)
            if idx.size == 0:
                continue
            idx = idx.astype(np.uint32 if b.size <= 2**32 else np.int64)
            if 2 * idx.size > b.size or idx.size * (idx.itemsize + b.itemsize) >= b.nbytes:
                out[_WHOLE + name] = b
            else:
                out[_INDEX + name] = idx
                out[_VALUE + name] = np.ascontiguousarray(b).reshape(-1)[idx]
    out[_REMOVED] = np.array(sorted(set(base) - set(new)), dtype=np.str_)
    return out


def apply_delta(base: Mapping[str, np.ndarray], change: Mapping[str, np.ndarray]) -> State:
    """``new`` from ``base`` and ``delta(base, new)``, bit for bit. ``base`` is not modified;
    unchanged arrays are shared with it. ``ValueError`` if the delta does not fit ``base``."""
    removed = {str(n) for n in np.asarray(change.get(_REMOVED, np.array([], dtype=np.str_))).reshape(-1)}
    out: State = {name: np.asarray(a) for name, a in base.items() if name not in removed}
    for key, value in change.items():
        if key.startswith(_WHOLE):
            out[key[len(_WHOLE):]] = np.asarray(value)
        elif key.startswith(_INDEX):
            name = key[len(_INDEX):]
            if name not in out or _VALUE + name not in change:
                raise ValueError(f"delta patches {name!r}, which the base does not hold")
            patched = np.array(out[name], copy=True, order="C")
            idx, val = np.asarray(value), np.asarray(change[_VALUE + name])
            if idx.shape != val.shape or val.dtype != patched.dtype or idx.dtype.kind not in "ui" \
                    or (idx.size and idx.min() < 0):  # a negative index would wrap around silently
                raise ValueError(f"delta for {name!r} does not fit the base's array")
            try:
                patched.reshape(-1)[idx] = val
            except IndexError as exc:
                raise ValueError(f"delta for {name!r}: {exc}") from None
            out[name] = patched
        elif not key.startswith(_VALUE) and key != _REMOVED:
            raise ValueError(f"unknown delta entry {key!r}")
    return out


# ---------------------------------------------------------------------------------------- manifest


def _manifest_key(prefix: str, version: int) -> bytes:
    return f"{prefix}/manifest/{version}".encode()


def _chunk_key(prefix: str, version: int, index: int) -> bytes:
    return f"{prefix}/{version}/{index}".encode()


def _parse_key(key: bytes | None) -> tuple[str, str, int, int] | None:
    """(prefix, "manifest" | "chunk", version, chunk index or -1), or None for a foreign key."""
    if key is None:
        return None
    parts = key.split(b"/")
    if len(parts) != 3 or parts[0] not in (b"model", b"checkpoint", b"part"):
        return None
    try:
        if parts[1] == b"manifest":
            return parts[0].decode(), "manifest", int(parts[2]), -1
        return parts[0].decode(), "chunk", int(parts[1]), int(parts[2])
    except ValueError:
        return None


_MANIFEST_INTS = ("epoch", "version", "snapshot_offset", "first_offset", "last_offset", "chunks", "bytes")


def _parse_manifest(value: bytes) -> dict[str, Any]:
    """A manifest from its JSON; ``ValueError`` if a field is missing or of the wrong type."""
    try:
        manifest = json.loads(value)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"manifest is not JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise ValueError("manifest is not a JSON object")
    for name in _MANIFEST_INTS:
        if type(manifest.get(name)) is not int:
            raise ValueError(f"manifest field {name!r} is missing or not an integer")
    if manifest.get("kind") not in _KINDS or not isinstance(manifest.get("sha256"), str):
        raise ValueError("manifest field 'kind' or 'sha256' is invalid")
    if manifest["kind"] == "delta" and type(manifest.get("base_version")) is not int:
        raise ValueError("delta manifest without an integer 'base_version'")
    return manifest


def _meta(state: Mapping[str, np.ndarray]) -> Any:
    """The learner's meta JSON, parsed; None if the state has none readable."""
    try:
        return json.loads(str(np.asarray(state["meta"])[()]))
    except (KeyError, ValueError, TypeError, IndexError):
        return None


def _assemble(manifest: Mapping[str, Any], chunks: Mapping[int, tuple[int, bytes]]) -> bytes:
    """The payload a manifest names, checked: every chunk present and size and SHA-256 as stated.
    ``ValueError`` otherwise. A chunk before ``first_offset`` is a dead trainer's under the same
    key; one after ``last_offset`` may be a retried send's duplicate, and is as good."""
    first = manifest["first_offset"]
    parts = []
    for i in range(manifest["chunks"]):
        got = chunks.get(i)
        if got is None or got[0] < first:
            raise ValueError(f"chunk {i} of {manifest['chunks']} is missing")
        parts.append(got[1])
    payload = b"".join(parts)
    if len(payload) != manifest["bytes"]:
        raise ValueError(f"payload has {len(payload)} bytes, the manifest says {manifest['bytes']}")
    if hashlib.sha256(payload).hexdigest() != manifest["sha256"]:
        raise ValueError("payload checksum mismatch")
    return payload


# --------------------------------------------------------------------------------------- publisher


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
        topic already; see :func:`read_checkpoint`."""
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


# ---------------------------------------------------------------------------------------- reading


def _read_range(consumer: Any, topic: str, start: int, end: int, deadline: float) -> Iterator[Any]:
    """The records at offsets [start, end) of partition 0 (compaction and transaction markers leave
    gaps; at the log's end only ``enable.partition.eof`` tells), one by one: a wide range of chunks
    is never held at once. ``TimeoutError`` if not read by ``deadline``."""
    consumer.assign([TopicPartition(topic, 0, start)])
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"reading offsets {start}..{end} of {topic} took too long")
        for msg in consumer.consume(_READ_BATCH, min(remaining, 0.5)):
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:  # the end of the log: nothing more
                    return
                log.warning("reading %s: %s", topic, msg.error().str())
                continue
            if msg.offset() >= end - 1:  # the last offset of the range, or past a gap at its end
                if msg.offset() < end:
                    yield msg
                return
            if msg.offset() >= start:
                yield msg


def _manifests_backward(consumer: Any, topic: str, prefix: str, deadline: float) -> Iterator[tuple[int, dict]]:
    """(offset, manifest) of ``prefix``'s valid manifests, newest first, reading windows backward
    from the end, each wider than the last."""
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0),
                                               timeout=max(0.1, deadline - time.monotonic()))
    end, width = high, _FIRST_WINDOW
    while end > low:
        start = max(low, end - width)
        found = []
        for msg in _read_range(consumer, topic, start, end, deadline):
            parsed = _parse_key(msg.key())
            if parsed is None or parsed[0] != prefix or parsed[1] != "manifest" or msg.value() is None:
                continue
            try:
                found.append((msg.offset(), _parse_manifest(msg.value())))
            except ValueError as exc:
                log.warning("skipping manifest at offset %d of %s: %s", msg.offset(), topic, exc)
        yield from sorted(found, key=lambda f: f[0], reverse=True)
        end, width = start, width * _WINDOW_GROWTH


def _with_consumer(consumer_factory: Callable[[], Any], use: Callable[[Any], Any]) -> Any:
    consumer = consumer_factory()
    try:
        return use(consumer)
    finally:
        consumer.close()


def newest_manifest(consumer_factory: Callable[[], Any], topic: str, kind: str = MODEL,
                    timeout_s: float = 30.0) -> dict[str, Any] | None:
    """The newest manifest of ``kind`` ("model" or "checkpoint") on ``topic``, or None if there is
    none. A new trainer continues numbering from its ``version``. ``TimeoutError`` if the topic
    cannot be read in ``timeout_s``."""
    if kind not in (MODEL, CHECKPOINT):
        raise ValueError(f"kind must be 'model' or 'checkpoint', not {kind!r}")
    deadline = time.monotonic() + timeout_s
    return _with_consumer(consumer_factory,
                          lambda c: next((m for _, m in _manifests_backward(c, topic, kind, deadline)), None))


def read_checkpoint(consumer_factory: Callable[[], Any], topic: str,
                    timeout_s: float = 60.0) -> tuple[dict[str, Any], State] | None:
    """(manifest, state) of the newest checkpoint on ``topic`` whose chunks are complete and match
    its checksum (older ones are tried if the newest is not); None if the topic holds none."""
    deadline = time.monotonic() + timeout_s

    def read(consumer: Any) -> tuple[dict[str, Any], State] | None:
        # Lazily: each window of the search is read whole before a manifest is yielded, and each
        # read assigns the consumer afresh, so reading chunks in between does not disturb it.
        for offset, manifest in _manifests_backward(consumer, topic, CHECKPOINT, deadline):
            chunks: dict[int, tuple[int, bytes]] = {}
            for msg in _read_range(consumer, topic, manifest["first_offset"], manifest["last_offset"] + 1,
                                   deadline):
                parsed = _parse_key(msg.key())
                if parsed is not None and parsed[:3] == (CHECKPOINT, "chunk", manifest["version"]) \
                        and msg.value() is not None:
                    chunks[parsed[3]] = (msg.offset(), msg.value())
            try:
                state = decode_state(_assemble(manifest, chunks))
                for name, where in _parts_of(manifest).items():
                    state.update({f"{name}.{key}": value for key, value in
                                  decode_state(_read_part(consumer, topic, where, deadline)).items()})
                return manifest, state
            except ValueError as exc:
                log.warning("skipping checkpoint %d at offset %d of %s: %s", manifest["version"], offset, topic, exc)
        return None

    return _with_consumer(consumer_factory, read)


def _parts_of(manifest: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A checkpoint manifest's parts; ``ValueError`` if the listing is malformed."""
    parts = manifest.get("parts", {})
    if not isinstance(parts, dict):
        raise ValueError("manifest field 'parts' is not an object")
    for name, where in parts.items():
        if not isinstance(where, dict) or any(type(where.get(k)) is not int for k in
                                              ("version", "first_offset", "last_offset", "chunks", "bytes")) \
                or not isinstance(where.get("sha256"), str):
            raise ValueError(f"part {name!r} is not listed with its version, offsets, chunks, bytes and sha256")
    return parts


def _read_part(consumer: Any, topic: str, where: Mapping[str, Any], deadline: float) -> bytes:
    """One part's payload, checked against its listing (``ValueError`` if incomplete or changed)."""
    chunks: dict[int, tuple[int, bytes]] = {}
    for msg in _read_range(consumer, topic, where["first_offset"], where["last_offset"] + 1, deadline):
        parsed = _parse_key(msg.key())
        if parsed is not None and parsed[:3] == (PART, "chunk", where["version"]) and msg.value() is not None:
            chunks[parsed[3]] = (msg.offset(), msg.value())
    return _assemble(where, chunks)


# ---------------------------------------------------------------------------------------- follower


@dataclass(frozen=True, slots=True)
class Model:
    """A complete, verified model version. Its arrays may be shared with the previous version's:
    read them, do not modify them (``load_state_dict`` copies)."""

    version: int
    epoch: int
    state: State
    manifest: dict[str, Any]
    received_at: float


class ModelFollower:
    """Follows the model topic and holds its newest complete model.

    ``consumer`` is a confluent_kafka Consumer with no subscription and ``enable.partition.eof``
    (a transactional trainer's log ends with a commit marker, which no consumer is handed): the
    follower assigns partition 0 itself. :meth:`start` finds where to begin, then :meth:`poll`
    (non-blocking) returns each newer model once it is complete. Bad data (corrupt payload, missing
    chunk, bad manifest) is logged and that version skipped; :meth:`poll` never raises for it. A
    state that does not fit the caller's learner is the caller's to find out
    (``learner.load_state_dict`` raises).
    """

    def __init__(self, consumer: Any, topic: str) -> None:
        self.consumer = consumer
        self.topic = topic
        self.model: Model | None = None
        self._chunks: dict[int, dict[int, tuple[int, bytes]]] = {}  # version → index → (offset, value)

    @property
    def version(self) -> int | None:
        return None if self.model is None else self.model.version

    def start(self, timeout_s: float = 30.0) -> dict[str, Any] | None:
        """Find the newest model manifest and read forward from the full snapshot its chain starts
        at (from the start of the log if there is none yet). Returns that manifest, or None."""
        deadline = time.monotonic() + timeout_s
        newest = next((m for _, m in _manifests_backward(self.consumer, self.topic, MODEL, deadline)), None)
        if newest is None:
            low, _ = self.consumer.get_watermark_offsets(TopicPartition(self.topic, 0),
                                                         timeout=max(0.1, deadline - time.monotonic()))
            self.seek(low)
        else:
            self.seek(newest["snapshot_offset"])
        return newest

    def seek(self, offset: int) -> None:
        """Read forward from ``offset``; buffered chunks are dropped, the model held is kept."""
        self._chunks.clear()
        self.consumer.assign([TopicPartition(self.topic, 0, offset)])

    def poll(self, max_records: int = 500) -> Model | None:
        """Read what is there (without waiting); the newest model completed by these records, or None."""
        newest = None
        for msg in self.consumer.consume(max_records, 0):
            if msg.error() is not None:
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    log.warning("reading %s: %s", self.topic, msg.error().str())
                continue
            key = msg.key()
            if key is None or not key.startswith(b"model/"):  # checkpoints are skipped unread
                continue
            parsed = _parse_key(key)
            if parsed is None:
                continue
            _, what, version, index = parsed
            if what == "chunk":
                self._chunk(version, index, msg)
            elif msg.value() is not None:
                newest = self._manifest(msg) or newest
        return newest

    def _chunk(self, version: int, index: int, msg: Any) -> None:
        if self.model is not None and version <= self.model.version:
            return
        value = msg.value()
        if value is None:
            self._chunks.get(version, {}).pop(index, None)
        else:
            self._chunks.setdefault(version, {})[index] = (msg.offset(), value)

    def _manifest(self, msg: Any) -> Model | None:
        """Apply a manifest's version if it is complete and fits; the new model, or None."""
        try:
            manifest = _parse_manifest(msg.value())
        except ValueError as exc:
            log.warning("skipping manifest at offset %d of %s: %s", msg.offset(), self.topic, exc)
            return None
        version, epoch, held = manifest["version"], manifest["epoch"], self.model
        if held is not None and epoch < held.epoch:
            log.warning("ignoring model version %d of epoch %d: epoch %d has begun (a replaced trainer?)",
                        version, epoch, held.epoch)
            return None
        if held is not None and version <= held.version:
            if epoch > held.epoch:
                log.warning("ignoring model version %d of epoch %d: not newer than the held version %d",
                            version, epoch, held.version)
            return None
        if manifest["kind"] == "delta" and (held is None or manifest["base_version"] != held.version):
            log.info("model version %d is a delta against %s, not the held %s: waiting for a full snapshot",
                     version, manifest["base_version"], None if held is None else held.version)
            self._chunks.pop(version, None)
            return None
        try:
            payload = _assemble(manifest, self._chunks.get(version, {}))
            state = decode_state(payload)
            if manifest["kind"] == "delta":
                state = apply_delta(held.state, state)
        except ValueError as exc:
            log.warning("skipping model version %d at offset %d of %s: %s", version, msg.offset(), self.topic, exc)
            self._chunks.pop(version, None)
            return None
        self.model = Model(version, manifest["epoch"], state, manifest, time.time())
        for old in [v for v in self._chunks if v <= version]:  # nothing older can apply any more
            del self._chunks[old]
        return self.model
