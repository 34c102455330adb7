"""Requests: a trainer reads the scorers' label requests into its pending store.

Each request carries its record's features, the prediction, the query probability and the expiry:
it becomes a pending entry (the batch's features shared in one copy), and a label that came before it
and waits (:mod:`consumer.steps.parked`) is joined now. A request for an id already pending or
already answered is the same request made again, and ignored; a tombstone retracts an expired one.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from confluent_kafka import KafkaException

from consumer import messages
from consumer.clients import Opened
from consumer.clock import Clock
from consumer.config import Settings
from consumer.errors import RegistryUnavailable
from consumer.kafka import OffsetTracker
from consumer.pending import Entry, PendingStore
from consumer.steps.join import Join
from consumer.steps.parked import Parked
from consumer.steps.positions import Held
from consumer.totals import Totals

__all__ = ["RequestHorizon", "RequestIntake"]

log = logging.getLogger(__name__)

_PARK_SETTLE_S = 2.0  # how long after parking a label the requests topic's end is taken as its horizon
_EVERY_S = 1.0


class RequestIntake:
    """``reader``: the reader of framed requests (None: plain JSON only); ``changed()``: after a batch."""

    def __init__(self, io: Opened, learner: Any, settings: Settings, pending: PendingStore, parked: Parked, join: Join,
                 held: Held, offsets: OffsetTracker, totals: Totals, clock: Clock,
                 out_of_range: list[tuple[str, int, int]], *, reader: Any = None,
                 changed: Callable[[], None] = lambda: None) -> None:
        self.io, self.learner, self.settings, self.pending, self.parked, self.join = (io, learner, settings, pending,
                                                                                      parked, join)
        self.held, self.offsets, self.totals, self.clock, self.out_of_range = held, offsets, totals, clock, out_of_range
        self.reader, self.changed = reader, changed

    def __call__(self) -> bool:
        """Take what the requests consumer has; whether it had any."""
        if not self.held.may_read("requests"):  # framed requests of a schema the registry is asked for
            return False
        msgs = self.io.requests.consume(self.settings.batch_size, 0)
        self.take(msgs)
        return bool(msgs)

    def take(self, msgs: Sequence[Any]) -> None:
        s = self.settings
        good = messages.without_errors(msgs, "label-requests", self.out_of_range)
        if not good:
            return
        now = self.clock.now()
        live = [m for m in good if m.value() is not None]  # a tombstone retracts an expired request
        values, refused = None, None
        if self.reader is not None:  # requests in the schema registry's wire format, or plain
            try:
                values, refused = self.reader.plain_many([m.value() for m in live])
            except RegistryUnavailable as exc:
                self.held.hold_back("requests", self.io.requests, good, exc)
                return
            self.held.answered("requests")
        decoded, positions, rejected = messages.decode_features(live, s.n_features, now, values=values, refused=refused)
        for msg, err in rejected:
            self.io.emitter.send(s.topics.dead_letters, *messages.dead_letter(msg, err))
            self.totals.add(f"dead_letters.{msg.topic()}.{err.reason}")
        items: list[tuple[str, Entry]] = []
        statuses = self.pending.statuses(decoded.ids)
        for row, (rid, k, status) in enumerate(zip(decoded.ids, positions, statuses, strict=True)):
            if status != "unknown":
                continue
            r = orjson.loads(live[k].value() if values is None else values[k])
            try:
                code = self.learner.code_of_prediction(r["prediction"])
                items.append((rid, Entry(decoded.rows, row, code, float(r["probability"]), float(r["score"]),
                                         float(r["requested_at"]), float(r["expires_at"]), float(r["cost"]))))
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("label request %s unusable (%s): skipped", rid, exc)
                self.totals.add(f"dead_letters.{live[k].topic()}.invalid_request")
        for pushed_id, _ in self.pending.add_many(items, now):
            log.warning("pending store full: request %s expired early", pushed_id)
            self.totals.add("label_requests_expired")
        waited = self.parked.take(rid for rid, _ in items)  # labels read before their requests
        if waited:
            self.join(waited, now)
        for partition, offset in messages.last_offsets(*messages.places_of(good)).items():
            self.offsets.store(s.topics.label_requests, partition, offset + 1)
        self.changed()


class RequestHorizon:
    """When a trainer gives up a parked label: once the requests consumer has read past the end the
    requests topic had after the label came (or a TTL passed), its request cannot come any more and
    it is counted unknown. ``listed_at()``: when the topics' partitions were last listed (a label's
    request may be on a partition added just before it); ``changed()``: after labels were given up."""

    def __init__(self, io: Opened, parked: Parked, offsets: OffsetTracker, settings: Settings,
                 listed_at: Callable[[], float], changed: Callable[[], None]) -> None:
        self.io, self.parked, self.offsets, self.settings = io, parked, offsets, settings
        self.listed_at, self.changed = listed_at, changed
        self._checked_at = -math.inf

    def settle(self, now: float) -> None:
        parked = self.parked
        if not parked or now - self._checked_at < _EVERY_S:
            return
        self._checked_at = now
        if parked.overflowed:
            log.warning("%d labels dropped unmatched: %d labels already wait for their requests "
                        "(ACTIVESTREAM_LABELS__MAX_PENDING)", parked.overflowed, len(parked))
            parked.overflowed = 0
        ends = self._ends()
        position = {p: o for (t, p), o in self.offsets.next.items() if t == self.settings.topics.label_requests}
        gone = []
        for rid, (_, at, horizon) in parked.waiting.items():
            if now - at > self.settings.labels.ttl_s:
                gone.append(rid)
            elif horizon is None:
                # the label's request was sent before the label: a look at the partitions after the
                # label came has its partition among those read
                if now - at >= _PARK_SETTLE_S and ends is not None and self.listed_at() > at:
                    parked.waiting[rid][2] = ends
            elif all(position.get(p, 0) >= end for p, end in horizon.items()):
                gone.append(rid)
        if parked.give_up(gone):
            self.changed()

    def _ends(self) -> dict[int, int] | None:
        """Where each partition of the requests topic ends now (None: not known)."""
        ends = {}
        for tp in self.io.requests.assignment():
            try:
                _, high = self.io.requests.get_watermark_offsets(tp, cached=True)
            except KafkaException:
                return None
            if high < 0:
                return None
            ends[tp.partition] = high
        return ends
