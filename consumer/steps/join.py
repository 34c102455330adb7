"""Join: each label with its pending request; the others counted, or handed on; requests that expire.

A label whose request is pending is learnt (outcome ``applied``). One whose id was answered or expired
within the last TTL is counted ``duplicate`` or ``expired`` and never applied again
(:class:`consumer.pending.PendingStore` remembers them). One whose id this process has not seen
goes to ``unknown``: the role decides whether it waits (a request not read or not made again yet,
see :mod:`consumer.steps.replayed`) or is counted ``unknown``.
"""

from __future__ import annotations

from collections.abc import Callable

from consumer.config import LabelSettings
from consumer.pending import PendingStore
from consumer.records import Label
from consumer.steps.learn import Learn
from consumer.totals import Totals

__all__ = ["Join"]


class Join:
    """``retract(id)``: withdraw an expired request; ``changed()``: after the pending store changed."""

    def __init__(self, pending: PendingStore, learn: Learn, totals: Totals, settings: LabelSettings, *,
                 unknown: Callable[[Label], None], retract: Callable[[str], None],
                 changed: Callable[[], None]) -> None:
        self.pending, self.learn, self.totals, self.settings = pending, learn, totals, settings
        self.unknown, self.retract, self.changed = unknown, retract, changed

    def __call__(self, labels: list[Label], now: float) -> None:
        """Join ``labels`` with their pending requests and learn from them, in arrival order."""
        entries = self.pending.take_many([lab.id for lab in labels], now, self.settings.duplicates == "all")
        joined = [(entry, lab) for entry, lab in zip(entries, labels, strict=True) if entry is not None]
        if len(joined) < len(labels):
            self._unmatched([lab for entry, lab in zip(entries, labels, strict=True) if entry is None])
        if joined:
            self.learn(joined, now, outcome="applied")

    def _unmatched(self, labels: list[Label]) -> None:
        for lab, status in zip(labels, self.pending.statuses([lab.id for lab in labels]), strict=True):
            if status == "applied":
                self.totals.add("labels.duplicate")
            elif status == "expired":
                self.totals.add("labels.expired")
            else:
                self.unknown(lab)

    def expire(self, now: float) -> None:
        """The requests whose TTL ran out: counted, learnt with the default label where one is set,
        retracted where asked."""
        expired = self.pending.expire(now)
        if not expired:
            return
        s = self.settings
        self.totals.add("label_requests_expired", len(expired))
        if s.on_expiry == "default":
            self.learn([(entry, Label(rid, s.expiry_label, 0.0, now)) for rid, entry in expired], now,
                       outcome="defaulted")
        if s.retract_expired:
            for rid, _ in expired:
                self.retract(rid)
        self.changed()
