"""Role ``all``: one process scores, asks for labels, joins them and learns, over the five topics.

::

    features ──► read ──► score ──► query ──► emit ──► predictions, label-requests, pending store
    labels ──► read ──► join with pending ──► learn
    checkpoints: files in ACTIVESTREAM_CHECKPOINT_DIR

It holds the trainer lease: another process of the group in role ``all`` waits as a standby instead
of splitting the partitions with it, which would cross requests and labels. Positions: each partition
from the restored checkpoint's offset, else the group's committed one, else by
``ACTIVESTREAM_*_OFFSET_RESET``; a revocation checkpoints first. On restart, the decisions produced
after the checkpoint are read back so that the records read again keep them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from consumer.checkpointing import FileSink, Snapshot
from consumer.errors import CheckpointError, ConfigError
from consumer.kafka import offset_reset_policy
from consumer.records import Label

if TYPE_CHECKING:
    from consumer.process import Process

__all__ = ["All"]

log = logging.getLogger(__name__)


class All:
    keeps_pending = True
    pins_outputs = False
    decides = True

    def __init__(self, process: Process) -> None:
        self.p = process
        self.sink = FileSink(process.store, process.metrics)

    def start(self) -> None:
        p, s = self.p, self.p.settings
        try:
            p.store.prepare()
        except CheckpointError as exc:
            raise ConfigError(f"ACTIVESTREAM_CHECKPOINT_DIR: {exc}") from None
        p.clients.preflight()
        inputs = {"features": s.topics.features, "labels": s.topics.labels}
        p.positions.policies = {topic: offset_reset_policy(s, name) for name, topic in inputs.items()}
        for topic in inputs.values():
            p.metrics.offset_resets.labels(topic=topic)  # at zero from the start, as alerts expect
        p.serve()
        if not p.take_lease() or not p.register_outputs():
            return
        found = p.store.latest()
        if found is None:
            log.info("no checkpoint in %s: starting a new model", p.store.directory)
        else:
            p.load(found[1], str(found[0]))
            p.restored_from = found[0]
        p.open_emitter()
        p.subscribe("features", p.rebalance.assigned, p.rebalance.revoked)
        p.subscribe("labels", p.rebalance.assigned, p.rebalance.revoked)
        if p.restored_from is not None:
            p.read_back.since_checkpoint(p.output_ends.from_topic, p.offsets.next, p.stop, p.health.beat)
        p.observe.io_paths([p.io.reader, p.io.label_reader], p.io.emitter)
        p.ready(batch_reads=p.io.reader is not None or p.io.label_reader is not None)

    def step(self) -> None:
        p = self.p
        p.label_read()
        p.score_and_emit()
        p.join.expire(p.clock.now())
        p.observe.lag()
        p.observe.scale_window()

    def unknown(self, label: Label) -> None:
        """A label for an id never requested here: parked if a record read again will request it."""
        if self.p.recovery.expects(label.id):
            self.p.parked.park(label, self.p.clock.now())
        else:
            self.p.totals.add("labels.unknown")

    def snapshot(self) -> Snapshot:
        return self.p.snapshot(settle=self._give_up_parked)

    def _give_up_parked(self) -> None:
        """Labels parked for records that will not be read again (their requests cannot be made again)."""
        parked, recovery = self.p.parked, self.p.recovery
        if parked:
            parked.give_up([rid for rid in list(parked.waiting) if not recovery.expects(rid)])

    def consumers(self) -> list[Any]:
        return [c for c in (self.p.io.features, self.p.io.labels) if c is not None]

    def read_by_topic(self) -> dict[str, tuple[Any, Any]]:
        io, topics = self.p.io, self.p.settings.topics
        return {topics.features: (io.features, io.reader), topics.labels: (io.labels, io.label_reader)}

    def stopping(self) -> None:
        pass

    def close(self) -> None:
        pass
