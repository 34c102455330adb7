"""The pending store: label requests waiting for their label.

An entry holds what learning from the label will need (the record's features, the prediction made
and the query probability) and when the request expires. ``take`` hands an entry out once; after
that its id is remembered as applied (or expired) for one TTL, so a second label for it is
recognised as a duplicate (or as late) rather than as unknown.

Entries expire in request order: requests are added with non-decreasing ``expires_at`` (the TTL is
fixed), so expiry pops from the front of an ordered dict in O(expired).
"""

from __future__ import annotations

from collections import OrderedDict
from itertools import repeat
from typing import Literal, NamedTuple

import numpy as np

from learners.coin import utf8_spans
from learners.inputs import Rows

__all__ = ["Entry", "PendingStore", "pack_strings", "unpack_strings"]


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


class PendingStore:
    """Pending label requests by record id, plus the ids recently applied or expired."""

    def __init__(self, max_entries: int, memory_s: float) -> None:
        self.max_entries = max_entries
        self.memory_s = memory_s  # how long applied / expired ids are remembered
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._applied: OrderedDict[str, float] = OrderedDict()
        self._expired: OrderedDict[str, float] = OrderedDict()

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
            old_id, old = entries.popitem(last=False)
            self._expired[old_id] = now
            pushed.append((old_id, old))
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
        taken = [rid for rid, entry in zip(ids, found, strict=True) if entry is not None]
        for rid in applied.keys() & taken:  # applied before: it moves to the end, as if new
            del applied[rid]
        applied.update(zip(taken, repeat(now)))
        return found

    def expire(self, now: float) -> list[tuple[str, Entry]]:
        """Remove and return the entries whose ``expires_at`` has passed; forget old ids."""
        out = []
        while self._entries:
            rid, entry = next(iter(self._entries.items()))
            if entry.expires_at > now:
                break
            self._entries.popitem(last=False)
            self._expired[rid] = now
            out.append((rid, entry))
        for memory in (self._applied, self._expired):
            while memory and next(iter(memory.values())) < now - self.memory_s:
                memory.popitem(last=False)
        return out

    def compact(self) -> Rows:
        """Let the pending entries share one copy of their features, in their order, and return it:
        an entry keeps its whole batch's copy alive, so a few entries still pending from each of
        many batches would hold many times the memory they need (:meth:`state_dict` compacts)."""
        entries = self._entries
        n_features = next(iter(entries.values())).rows.n_features if entries else 0
        shared = Rows.gather([e.rows for e in entries.values()], [e.row for e in entries.values()], n_features)
        for k, (rid, entry) in enumerate(entries.items()):
            entries[rid] = entry._replace(rows=shared, row=k)
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
            out[f"{name}_ids"], out[f"{name}_offsets"] = pack_strings(list(memory))
            out[f"{name}_at"] = np.fromiter(memory.values(), dtype=np.float64, count=len(memory))
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
            setattr(self, f"_{name}", OrderedDict(zip(names, state[f"{name}_at"].tolist(), strict=True)))
