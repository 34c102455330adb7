"""Replayed: the decisions already made for records that will be read again, read back from the outputs.

After a restart, the records consumed after the checkpoint are read again; a scorer given a partition
reads again the records past its committed offset. Their predictions and label requests may already
be on the output topics: they are read back (from where the outputs ended at the checkpoint, or from
the partition's committed floor) into :class:`consumer.recovery.Recovery`, so that each such record
keeps its decision and is not produced twice (:mod:`consumer.steps.query`, step 2).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from consumer.config import Settings
from consumer.errors import RegistryUnavailable
from consumer.recovery import Recovery, read_tail
from consumer.stop import Stop

__all__ = ["ReadBack"]

log = logging.getLogger(__name__)

_TIMEOUT_S = 120.0


class ReadBack:
    """``reader()``: a group-less consumer; ``unframe()``: the reader of framed outputs (None: plain JSON);
    ``partitions(topic)``: the topic's partitions (raising while the broker does not answer)."""

    def __init__(self, recovery: Recovery, settings: Settings, reader: Callable[[], Any],
                 unframe: Callable[[], Any], partitions: Callable[[str], list[int]]) -> None:
        self.recovery, self.settings, self.reader, self.unframe, self.partitions = (recovery, settings, reader,
                                                                                    unframe, partitions)
        self.attempts = 0  # to reach the brokers

    def since_checkpoint(self, floor: Callable[[str], Mapping[int, int]], offsets: Mapping[tuple[str, int], int],
                         stop: Stop, beat: Callable[[], None]) -> None:
        """What was produced after the checkpoint (``floor(topic)``: where each partition of an output
        topic ended then), for the records after ``offsets``; while the broker cannot be reached, keep
        trying until ``stop`` (the loop is not running yet: /readyz says so)."""
        topics = self.settings.topics
        backoff = 1.0
        while True:
            self.attempts += 1
            try:
                for topic, kind in ((topics.predictions, "prediction"), (topics.label_requests, "request")):
                    found = read_tail(self.reader, topic, floor(topic), self.partitions(topic), timeout_s=_TIMEOUT_S)
                    self.recovery.add_outputs(found, kind, self.unframe())
                break
            except (KafkaException, TimeoutError, RegistryUnavailable) as exc:
                log.warning("reading back recent decisions failed (%s); retrying in %.0f s", exc, backoff)
                self.recovery.clear()
                beat()
                if stop.wait(backoff):
                    return
                backoff = min(30.0, 2 * backoff)
        self.recovery.forget_before(offsets)
        log.info("recovery: %d decisions made after the checkpoint will be kept", len(self.recovery))

    def taken_over(self, fresh: list[TopicPartition], features: Any, floors: Any) -> None:
        """A scorer's: the decisions already produced for the records of the features partitions
        ``fresh`` past their committed offset (the outputs from their committed floors, which the
        consumer ``floors`` commits)."""
        s = self.settings
        ps = [tp.partition for tp in fresh]
        try:
            committed = {tp.partition: tp.offset for tp in features.committed(
                [TopicPartition(s.topics.features, p) for p in ps], timeout=10)}
            asked = [TopicPartition(t, p) for t in (s.topics.predictions, s.topics.label_requests) for p in ps]
            floor = {(tp.topic, tp.partition): tp.offset for tp in floors.committed(asked, timeout=10)}
            found = 0
            for topic, kind in ((s.topics.predictions, "prediction"), (s.topics.label_requests, "request")):
                start = {p: max(0, floor.get((topic, p), 0)) for p in ps}
                outputs = read_tail(self.reader, topic, start, ps, timeout_s=_TIMEOUT_S)
                self.recovery.add_outputs(outputs, kind, self.unframe())
                found += len(outputs)
        except (KafkaException, TimeoutError, RegistryUnavailable) as exc:
            log.warning("reading back the outputs of %s failed (%s): records after the last commit may be "
                        "predicted again", ps, exc)
            return
        self.recovery.forget_before({(s.topics.features, p): o for p, o in committed.items() if o >= 0})
        log.info("%s[%s]: %d outputs read back, %d decisions after the committed offsets kept",
                 s.topics.features, ",".join(map(str, ps)), found, len(self.recovery))
