"""Parked: labels that came before their request, waiting for it.

A label may reach a process before the request it answers: after a restart, for a record that is
read again and asks again (role ``all``, :class:`consumer.recovery.Recovery` expects it), or because a
trainer reads the requests and the labels from two topics independently. Such a label waits here,
once per id (a second label for it is a duplicate), and is joined when its request is made or read.
Each role says when a waiting label is given up and counted ``unknown``. At most ``max_waiting``
wait: beyond, the oldest is dropped and counted ``overflow``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import numpy as np
import orjson

from consumer.records import Label
from consumer.totals import Totals

__all__ = ["Parked"]

log = logging.getLogger(__name__)


class Parked:
    """The labels waiting for their requests (a part of checkpoints: :class:`consumer.state.Stateful`)."""

    namespace = "parked"
    format_version = 1

    def __init__(self, max_waiting: int, totals: Totals) -> None:
        self.max_waiting, self.totals = max_waiting, totals
        # id → [label, parked at (wall clock), horizon: what a role waits for before giving it up, or None]
        self.waiting: dict[str, list] = {}
        self.overflowed = 0  # dropped since the role last said so

    def __len__(self) -> int:
        return len(self.waiting)

    def __contains__(self, rid: str) -> bool:
        return rid in self.waiting

    def park(self, label: Label, now: float) -> None:
        if label.id in self.waiting:  # a second label for a request not made yet: the first one waits
            self.totals.add("labels.duplicate")
            return
        self.waiting[label.id] = [label, now, None]
        if len(self.waiting) > self.max_waiting:  # a flood of labels no request matches
            del self.waiting[next(iter(self.waiting))]  # the oldest: the likeliest to match nothing
            self.totals.add("labels.overflow")
            self.overflowed += 1

    def take(self, rids: Iterable[str]) -> list[Label]:
        """The labels waiting for the requests of ``rids`` (just made or read), no longer waiting."""
        if not self.waiting:
            return []
        found = (self.waiting.pop(rid, None) for rid in rids)
        return [w[0] for w in found if w is not None]

    def give_up(self, rids: Iterable[str]) -> int:
        """Count the labels of ``rids`` unknown: their requests cannot come any more."""
        gone = [rid for rid in rids if self.waiting.pop(rid, None) is not None]
        self.totals.add("labels.unknown", len(gone))
        if gone:
            log.warning("%d labels matched no label request (counted unknown)", len(gone))
        return len(gone)

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"labels": np.frombuffer(orjson.dumps([[rid, list(lab), at] for rid, (lab, at, _) in
                                                      self.waiting.items()]), dtype=np.uint8)}

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        self.waiting = {rid: [Label(*lab), at, None] for rid, lab, at in orjson.loads(state["labels"].tobytes())}
