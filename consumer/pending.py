"""The pending store: label requests waiting for their label.

An entry holds what learning from the label will need (the record's features, the prediction made
and the query probability) and when the request expires. ``take`` hands an entry out once; after
that its id is remembered as applied (or expired) for one TTL, so a second label for it is
recognised as a duplicate (or as late) rather than as unknown.

Entries expire in request order: requests are added with non-decreasing ``expires_at`` (the TTL is
fixed), so expiry pops from the front of an ordered dict in O(expired).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from itertools import pairwise, repeat
from typing import Literal, NamedTuple

import numpy as np

from learners.coin import utf8_spans
from learners.inputs import Rows

__all__ = ["Entry", "Memory", "PendingStore", "pack_strings", "unpack_strings"]


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
    """Strings → (UTF-8 bytes as uint8, int64 offsets), a pickle-free array form (one encode for
    all: a checkpoint packs every id applied within a TTL, ~100,000 at 10,000 labels/s)."""
    blob, _, ends = utf8_spans(strings)
    return np.frombuffer(blob, dtype=np.uint8).copy(), np.concatenate([[0], ends]).astype(np.int64)


def unpack_strings(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    raw = blob.tobytes()
    return [raw[offsets[i] : offsets[i + 1]].decode() for i in range(offsets.size - 1)]


Outcome = Literal["pending", "applied", "expired", "unknown"]


class Memory:
    """Ids remembered for a while (applied or expired ones): a plain dict of id → time for lookups,
    and the ids in the order they were remembered, a list per call, for forgetting the oldest.

    A plain dict because a checkpoint reads every id and time in it (~100,000 at 10,000 labels/s)
    several times faster than from an ordered dict; the forgetting order lives in the lists
    instead. An id remembered again keeps its dict slot with the new time, and its older list
    entry is skipped when that list is forgotten."""

    def __init__(self) -> None:
        self._at: dict[str, float] = {}
        self._batches: deque[tuple[float, list[str]]] = deque()

    def __len__(self) -> int:
        return len(self._at)

    def __contains__(self, rid: str) -> bool:
        return rid in self._at

    def remember(self, ids: list[str], at: float) -> None:
        if ids:
            self._at.update(zip(ids, repeat(at)))
            self._batches.append((at, ids))

    def forget_before(self, cutoff: float) -> None:
        batches, remembered = self._batches, self._at
        while batches and batches[0][0] < cutoff:
            at, ids = batches.popleft()
            for rid in ids:
                if remembered.get(rid) == at:  # not remembered again since
                    del remembered[rid]

    def state(self) -> tuple[list[str], np.ndarray]:
        """(ids, times): every id once, with the time it was last remembered."""
        return list(self._at), np.fromiter(self._at.values(), dtype=np.float64, count=len(self._at))

    @classmethod
    def from_state(cls, ids: list[str], at: np.ndarray) -> Memory:
        memory = cls()
        if not ids:
            return memory
        order = np.argsort(at, kind="stable")  # oldest first; an id remembered again sits at its first place
        times, ids = at[order], [ids[k] for k in order.tolist()]
        bounds = [0, *(np.flatnonzero(np.diff(times)) + 1).tolist(), len(ids)]
        for start, end in pairwise(bounds):
            memory.remember(ids[start:end], float(times[start]))
        return memory


class PendingStore:
    """Pending label requests by record id, plus the ids recently applied or expired."""

    def __init__(self, max_entries: int, memory_s: float) -> None:
        self.max_entries = max_entries
        self.memory_s = memory_s  # how long applied / expired ids are remembered
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._applied = Memory()
        self._expired = Memory()

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
        self._expired.remember([rid for rid, _ in pushed], now)
        return pushed

    def ids(self):
        """The pending ids (a live view: ``rid in store.ids()`` without a Python call per id)."""
        return self._entries.keys()

    def status(self, rid: str) -> Outcome:
        if rid in self._entries:
            return "pending"
        if rid in self._applied:
            return "applied"
        if rid in self._expired:
            return "expired"
        return "unknown"

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
        applied.remember([rid for rid, entry in zip(ids, found, strict=True) if entry is not None], now)
        return found

    def expire(self, now: float) -> list[tuple[str, Entry]]:
        """Remove and return the entries whose ``expires_at`` has passed; forget old ids."""
        out = []
        while self._entries:
            if next(iter(self._entries.values())).expires_at > now:
                break
            out.append(self._entries.popitem(last=False))
        self._expired.remember([rid for rid, _ in out], now)
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

    # -- checkpoint form -----------------------------------------------------------------------
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
            ids, out[f"{name}_at"] = memory.state()
            out[f"{name}_ids"], out[f"{name}_offsets"] = pack_strings(ids)
        return out

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        ids = unpack_strings(state["ids"], state["ids_offsets"])
        rows = Rows.from_arrays(state["indptr"], state["indices"], state["data"], n_features=0)  # shared by all
        self._entries = OrderedDict()
        for k, rid in enumerate(ids):
            self._entries[rid] = Entry(
                rows, k, int(state["predicted"][k]), float(state["probability"][k]), float(state["score"][k]),
                float(state["requested_at"][k]), float(state["expires_at"][k]), float(state["cost"][k]),
            )
        for name in ("applied", "expired"):
            names = unpack_strings(state[f"{name}_ids"], state[f"{name}_offsets"])
            setattr(self, f"_{name}", Memory.from_state(names, np.asarray(state[f"{name}_at"], dtype=np.float64)))
