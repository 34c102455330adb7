"""Where the output topics end: asked at each checkpoint, and the floor that recovery reads back from."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from confluent_kafka import OFFSET_END, KafkaException, TopicPartition

from consumer.clock import Clock
from consumer.errors import CheckpointError
from consumer.state import pack_offsets, unpack_offsets

__all__ = ["OutputEnds"]

# How long a checkpoint asks the broker where the output topics end; then it takes the last known
# ends (a lower bound: recovery reads a little more). Unbounded, a broker that does not answer would
# hold a shutdown past the grace period.
TIMEOUT_S = 4.0
MIN_WAIT_S = 0.1  # the shortest question worth sending once the time is up: a topic's partitions


class OutputEnds:
    """The ends of the output topics' partitions at the last checkpoint (:class:`consumer.state.Stateful`):
    after a restart, the decisions produced since are read back from there (``floor``)."""

    namespace = "outputs"
    format_version = 1

    def __init__(self, topics: Sequence[str], clock: Clock) -> None:
        self.topics, self.clock = tuple(topics), clock
        self.floor: dict[tuple[str, int], int] = {}

    def measure(self, partitions: Callable[[str, float], list[int]], consumer: Any) -> dict[tuple[str, int], int]:
        """Where each partition of the output topics ends now (after a flush: past all our outputs),
        kept as the floor. ``partitions(topic, timeout)`` lists a topic's partitions.

        One question for all the partitions (a ListOffsets request per broker, for the latest
        offsets: the end, as no output is written in a transaction), where a watermark query per
        partition would wait its turn behind the consumer's fetches each time. Some brokers answer
        with less than the true end (the base offset of the last batch); a low value only makes
        recovery read a little more, since it matches outputs by their source."""
        deadline = self.clock.monotonic() + TIMEOUT_S
        asked = []
        for topic in self.topics:
            try:
                found = partitions(topic, max(MIN_WAIT_S, deadline - self.clock.monotonic()))
            except KafkaException as exc:
                raise CheckpointError(f"cannot list the partitions of {topic}: {exc}") from None
            asked += [TopicPartition(topic, p, OFFSET_END) for p in found]
        answered: dict[tuple[str, int], int] = {}
        left = deadline - self.clock.monotonic()
        if asked and left > 0:
            with contextlib.suppress(KafkaException):  # no answer: the last known ends below
                answers = consumer.offsets_for_times(asked, timeout=left)
                answered = {(tp.topic, tp.partition): tp.offset for tp in answers if tp.error is None}
        ends = {}
        for tp in asked:
            key = (tp.topic, tp.partition)
            high = answered.get(key, -1)
            ends[key] = max(0, high if high >= 0 else self.floor.get(key, 0))
        self.floor.update(ends)  # what the next checkpoint falls back on
        return ends

    def from_topic(self, topic: str) -> dict[int, int]:
        return {p: o for (t, p), o in self.floor.items() if t == topic}

    def state_dict(self) -> dict[str, np.ndarray]:
        return pack_offsets(self.floor)

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        self.floor = unpack_offsets(state)
