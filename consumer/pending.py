"""The pending store: label requests waiting for their label.

An entry holds what learning from the label will need (the record's features, the prediction made
and the query probability) and when the request expires. ``take`` hands an entry out once; after
that its id is remembered as applied (or expired) for one TTL, so a second label for it is
recognised as a duplicate (or as late) rather than as unknown.

Entries expire in request order: requests are added with non-decreasing ``expires_at`` (the TTL is
fixed), so expiry pops from the front of an ordered dict in O(expired).

The remembered ids cost 24 bytes each (a 128-bit fingerprint and a time, :class:`Memory`), and a
checkpoint writes only what was remembered since the previous one (:meth:`PendingStore.parts`).
A label for an id forgotten one TTL after it was applied is no longer a duplicate but unknown.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from collections.abc import Mapping
from hashlib import blake2b
from itertools import pairwise, repeat
from typing import Literal, NamedTuple

import numpy as np

from learners.coin import utf8_spans
from learners.inputs import Rows

__all__ = ["Entry", "Memory", "PendingStore", "fingerprints", "pack_strings", "unpack_strings"]

_KEY = np.dtype("S16")  # compared and sorted as bytes: one searchsorted finds a 128-bit key
# Segments per TTL: a lookup searches each, and the head (a dict, ~100 bytes an id) holds 1/32 of the ids
_SEGMENTS_PER_TTL = 32


class Entry(NamedTuple):  # a tuple: made ~10,000 times a second, three times cheaper than a frozen dataclass
    rows: Rows  # the features of the records whose labels one batch requested, shared by their entries
    row: int  # this record's row in ``rows``
    predicted: int  # the prediction, internal code (±1 or class index)
    probability: float  # the query probability (importance weight = 1/probability)
    score: float
    requested_at: float  # wall clock, epoch seconds
    expires_at: float
    cost: float  # expected cost, charged unless the label says otherwise


def pack_strings(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings → (UTF-8 bytes as uint8, int64 offsets), a pickle-free array form (one encode for all)."""
    blob, _, ends = utf8_spans(strings)
    return np.frombuffer(blob, dtype=np.uint8).copy(), np.concatenate([[0], ends]).astype(np.int64)


def unpack_strings(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    raw = blob.tobytes()
    return [raw[offsets[i] : offsets[i + 1]].decode() for i in range(offsets.size - 1)]


Outcome = Literal["pending", "applied", "expired", "unknown"]


def fingerprints(ids: list[str]) -> list[bytes]:
    """A 128-bit BLAKE2b digest of each id: two different ids share one with probability 2⁻¹²⁸, so
    at 10,000 labels/s and a one-hour TTL (3.6·10⁷ held, as many looked up) a false "duplicate"
    has odds below 10⁻²³ per TTL."""
    return [blake2b(rid.encode(), digest_size=16).digest() for rid in ids]


def _as_array(keys: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(keys), dtype=_KEY)


def _as_keys(array: np.ndarray) -> list[bytes]:
    raw = np.ascontiguousarray(array, dtype=_KEY).tobytes()  # not tolist(): it strips trailing zero bytes
    return [raw[i : i + 16] for i in range(0, len(raw), 16)]


class Segment(NamedTuple):
    number: int
    keys: np.ndarray  # sorted fingerprints, unique
    at: np.ndarray  # when each was remembered
    newest: float


class Memory:
    """Ids remembered for a while (applied or expired ones), as 128-bit fingerprints with the time
    each was remembered: 24 bytes an id, whatever its length.

    The newest ids sit in a dict (the *head*); every ``seal_every`` seconds the head is sealed into
    a *segment*, its fingerprints sorted in one array and their times in another, looked up by
    binary search. Forgetting drops whole segments from the front, and a lookup ignores what
    is older than the last cutoff, so the verdict is the same as if every id were forgotten at its
    own time. An id remembered again is held from its newest time.

    For checkpoints (:meth:`state_dict`), segments and the ids remembered between two snapshots
    (*logs*) are immutable parts, each named once: a checkpoint store writes a part once, so what a
    checkpoint costs grows with what was remembered since the last one, not with all it holds."""

    def __init__(self, seal_every: float) -> None:
        self.seal_every = seal_every
        self._head: dict[bytes, float] = {}
        self._head_since = self._head_newest = -math.inf
        self._unlogged: list[tuple[list[bytes], float]] = []  # remembered since the last snapshot
        self._logs: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # the head, as snapshotted parts
        self._segments: deque[Segment] = deque()
        self._cutoff = -math.inf
        self._next = 0  # the next part's number: a part name is never reused

    def __len__(self) -> int:
        return len(self._head) + sum(s.keys.size for s in self._segments)

    def remember(self, keys: list[bytes], at: float) -> None:
        if not keys:
            return
        if self._head and at - self._head_since >= self.seal_every:
            self._seal()
        if not self._head:
            self._head_since = at
        self._head.update(zip(keys, repeat(at)))
        self._head_newest = max(self._head_newest, at)
        self._unlogged.append((keys, at))

    def holds(self, keys: list[bytes]) -> np.ndarray:
        """Whether each fingerprint was remembered at or after the last cutoff."""
        cutoff, head = self._cutoff, self._head
        found = np.fromiter((head.get(k, math.nan) >= cutoff for k in keys), dtype=bool, count=len(keys))
        if self._segments and keys:
            wanted = _as_array(keys)
            for segment in self._segments:
                at = np.minimum(np.searchsorted(segment.keys, wanted), segment.keys.size - 1)
                found |= (segment.keys[at] == wanted) & (segment.at[at] >= cutoff)
        return found

    def forget_before(self, cutoff: float) -> None:
        self._cutoff = max(self._cutoff, cutoff)
        segments = self._segments
        while segments and segments[0].newest < self._cutoff:
            segments.popleft()
        if self._head and self._head_newest < self._cutoff:
            self._head.clear()
            self._unlogged.clear()
            self._logs.clear()

    def _seal(self) -> None:
        keys = _as_array(list(self._head))
        at = np.fromiter(self._head.values(), dtype=np.float64, count=keys.size)
        order = np.argsort(keys)
        self._segments.append(Segment(self._number(), keys[order], at[order], float(at.max())))
        self._head.clear()
        self._unlogged.clear()
        self._logs.clear()
        self._head_newest = -math.inf

    def _number(self) -> int:
        self._next += 1
        return self._next - 1

    # -- checkpoint form (consumer.state.Stateful) -------------------------------------------------
    namespace = "pending"
    format_version = 1  # earlier checkpoints held the applied and expired ids themselves: read too

    def state_dict(self) -> dict[str, np.ndarray]:
        """The memory as arrays: ``segments`` and ``logs`` list the parts' numbers, and each part
        ``<number>.keys`` / ``<number>.at`` never changes once made (see :meth:`parts`)."""
        if self._unlogged:
            keys = [k for batch, _ in self._unlogged for k in batch]
            at = np.concatenate([np.full(len(batch), t) for batch, t in self._unlogged])
            self._logs[self._number()] = (_as_array(keys), at)
            self._unlogged.clear()
        out = {"cutoff": np.float64(self._cutoff), "next": np.int64(self._next),
               "segments": np.array([s.number for s in self._segments], dtype=np.int64),
               "logs": np.array(list(self._logs), dtype=np.int64)}
        for s in self._segments:
            out[f"{s.number}.keys"], out[f"{s.number}.at"] = s.keys, s.at
        for number, (keys, at) in self._logs.items():
            out[f"{number}.keys"], out[f"{number}.at"] = keys, at
        return out

    def parts(self) -> list[str]:
        """The key prefixes of the immutable parts in :meth:`state_dict` (call it after)."""
        return [str(s.number) for s in self._segments] + [str(n) for n in self._logs]

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], seal_every: float) -> Memory:
        memory = cls(seal_every)
        memory._cutoff, memory._next = float(state["cutoff"]), int(state["next"])
        for number in state["segments"].tolist():
            at = np.asarray(state[f"{number}.at"], dtype=np.float64)
            memory._segments.append(Segment(number, state[f"{number}.keys"], at, float(at.max())))
        for number in state["logs"].tolist():
            keys, at = state[f"{number}.keys"], np.asarray(state[f"{number}.at"], dtype=np.float64)
            memory._logs[number] = (keys, at)
            memory._head.update(zip(_as_keys(keys), at.tolist(), strict=True))
        if memory._head:
            memory._head_since, memory._head_newest = min(memory._head.values()), max(memory._head.values())
        return memory

    @classmethod
    def from_ids(cls, ids: list[str], at: np.ndarray, seal_every: float) -> Memory:
        """A memory of ``ids`` remembered at ``at`` (the form of checkpoints written before fingerprints)."""
        memory = cls(seal_every)
        if not ids:
            return memory
        order = np.argsort(at, kind="stable")
        keys, times = fingerprints([ids[k] for k in order.tolist()]), at[order]
        bounds = [0, *(np.flatnonzero(np.diff(times)) + 1).tolist(), len(keys)]
        for start, end in pairwise(bounds):
            memory.remember(keys[start:end], float(times[start]))
        return memory


class PendingStore:
    """Pending label requests by record id, plus the ids recently applied or expired."""

    def __init__(self, max_entries: int, memory_s: float) -> None:
        self.max_entries = max_entries
        self.memory_s = memory_s  # how long applied / expired ids are remembered
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._applied = Memory(memory_s / _SEGMENTS_PER_TTL)
        self._expired = Memory(memory_s / _SEGMENTS_PER_TTL)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, rid: str) -> bool:
        return rid in self._entries

    def add(self, rid: str, entry: Entry) -> list[tuple[str, Entry]]:
        """Record a request; returns the oldest entries pushed out when the store is full."""
        return self.add_many([(rid, entry)], entry.requested_at)

    def add_many(self, items: list[tuple[str, Entry]], now: float) -> list[tuple[str, Entry]]:
        """Record (id, entry) requests in order; returns the oldest entries pushed out when the store
        is full (remembered as expired at ``now``)."""
        entries = self._entries
        entries.update(items)
        pushed = []
        while len(entries) > self.max_entries:
            pushed.append(entries.popitem(last=False))
        self._expired.remember(fingerprints([rid for rid, _ in pushed]), now)
        return pushed

    def remembered(self) -> dict[str, int]:
        """How many ids each memory holds (an id remembered again counts again until its older
        segment goes)."""
        return {"applied": len(self._applied), "expired": len(self._expired)}

    def ids(self):
        """The pending ids (a live view: ``rid in store.ids()`` without a Python call per id)."""
        return self._entries.keys()

    def status(self, rid: str) -> Outcome:
        return self.statuses([rid])[0]

    def statuses(self, ids: list[str]) -> list[Outcome]:
        """:meth:`status` of each id (one lookup of the memories for all)."""
        out: list[Outcome] = ["pending" if rid in self._entries else "unknown" for rid in ids]
        rest = [k for k, status in enumerate(out) if status == "unknown"]
        if rest:
            keys = fingerprints([ids[k] for k in rest])
            applied, expired = self._applied.holds(keys), self._expired.holds(keys)
            for k, was_applied, was_expired in zip(rest, applied.tolist(), expired.tolist(), strict=True):
                out[k] = "applied" if was_applied else "expired" if was_expired else "unknown"
        return out

    def get(self, rid: str) -> Entry | None:
        return self._entries.get(rid)

    def take(self, rid: str, now: float, keep: bool = False) -> Entry | None:
        """The entry of a pending id, marked applied (and kept pending if ``keep``: every label of
        the id applies); None if the id is not pending."""
        return self.take_many([rid], now, keep)[0]

    def take_many(self, ids: list[str], now: float, keep: bool = False) -> list[Entry | None]:
        """:meth:`take` for each id in turn (an id twice is handed out once, unless ``keep``)."""
        entries, applied = self._entries, self._applied
        found = list(map(entries.get, ids)) if keep else list(map(entries.pop, ids, repeat(None)))
        applied.remember(fingerprints([rid for rid, entry in zip(ids, found, strict=True) if entry is not None]), now)
        return found

    def expire(self, now: float) -> list[tuple[str, Entry]]:
        """Remove and return the entries whose ``expires_at`` has passed; forget old ids."""
        out = []
        while self._entries:
            if next(iter(self._entries.values())).expires_at > now:
                break
            out.append(self._entries.popitem(last=False))
        self._expired.remember(fingerprints([rid for rid, _ in out]), now)
        for memory in (self._applied, self._expired):
            memory.forget_before(now - self.memory_s)
        return out

    def compact(self) -> Rows:
        """Let the pending entries share one copy of their features, in their order, and return it:
        an entry keeps its whole batch's copy alive, so a few entries still pending from each of
        many batches would hold many times the memory they need (:meth:`state_dict` compacts)."""
        entries = self._entries
        ids, old = list(entries), list(entries.values())
        n_features = old[0].rows.n_features if old else 0
        shared = Rows.gather([e.rows for e in old], [e.row for e in old], n_features)
        # tuple.__new__ makes each Entry without a Python call per entry (_replace costs twice as much)
        moved = map(tuple.__new__, repeat(Entry), ((shared, k, *e[2:]) for k, e in enumerate(old)))
        entries.update(zip(ids, moved, strict=True))
        return shared

    # -- checkpoint form (consumer.state.Stateful) -------------------------------------------------
    namespace = "pending"
    format_version = 1  # earlier checkpoints held the applied and expired ids themselves: read too

    def state_dict(self) -> dict[str, np.ndarray]:
        """The store as arrays; compacts it first (every checkpoint frees the copies few entries held)."""
        rows = self.compact()
        ids = list(self._entries)
        entries = list(self._entries.values())
        out = {"indptr": rows.indptr, "indices": rows.indices, "data": rows.data}
        out["ids"], out["ids_offsets"] = pack_strings(ids)
        out["predicted"] = np.array([e.predicted for e in entries], dtype=np.int64)
        for field in ("probability", "score", "requested_at", "expires_at", "cost"):
            out[field] = np.array([getattr(e, field) for e in entries], dtype=np.float64)
        for name, memory in (("applied", self._applied), ("expired", self._expired)):
            out.update({f"{name}.{k}": v for k, v in memory.state_dict().items()})
        return out

    def parts(self) -> list[str]:
        """The key prefixes of :meth:`state_dict` that never change once written (call it after):
        a checkpoint store writes each once, in a file of its own."""
        return [f"{name}.{part}" for name, memory in (("applied", self._applied), ("expired", self._expired))
                for part in memory.parts()]

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        ids = unpack_strings(state["ids"], state["ids_offsets"])
        rows = Rows.from_arrays(state["indptr"], state["indices"], state["data"], n_features=0)  # shared by all
        self._entries = OrderedDict()
        for k, rid in enumerate(ids):
            self._entries[rid] = Entry(
                rows, k, int(state["predicted"][k]), float(state["probability"][k]), float(state["score"][k]),
                float(state["requested_at"][k]), float(state["expires_at"][k]), float(state["cost"][k]),
            )
        seal_every = self.memory_s / _SEGMENTS_PER_TTL
        for name in ("applied", "expired"):
            if f"{name}_ids" in state:  # written before fingerprints: the ids themselves
                ids = unpack_strings(state[f"{name}_ids"], state[f"{name}_offsets"])
                memory = Memory.from_ids(ids, np.asarray(state[f"{name}_at"], dtype=np.float64), seal_every)
            else:
                prefix = f"{name}."
                memory = Memory.from_state({k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)},
                                           seal_every)
            setattr(self, f"_{name}", memory)
