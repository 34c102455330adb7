"""Where the output topics end at a checkpoint, and the floor kept when the broker does not say."""

import pytest
from confluent_kafka import KafkaException

from consumer.clock import ManualClock
from consumer.errors import CheckpointError
from consumer.output_ends import OutputEnds


class Answers:
    def __init__(self, ends: dict | None) -> None:
        self.ends = ends

    def offsets_for_times(self, asked, timeout):
        if self.ends is None:
            raise KafkaException("timed out")
        for tp in asked:
            tp.offset = self.ends.get((tp.topic, tp.partition), -1)
        return asked


def partitions(topic: str, timeout: float) -> list[int]:
    return [0, 1]


def test_the_ends_the_broker_gives_become_the_floor_and_unanswered_ones_fall_back_on_it():
    ends = OutputEnds(("predictions", "requests"), ManualClock())
    first = ends.measure(partitions, Answers({("predictions", 0): 10, ("predictions", 1): 4, ("requests", 0): 2}))
    assert first == {("predictions", 0): 10, ("predictions", 1): 4, ("requests", 0): 2, ("requests", 1): 0}
    second = ends.measure(partitions, Answers({("predictions", 0): 12}))  # the others unanswered: the floor
    assert second == {**first, ("predictions", 0): 12}
    assert ends.measure(partitions, Answers(None)) == second  # no answer at all: the last known ends
    assert ends.from_topic("predictions") == {0: 12, 1: 4}


def test_a_topic_whose_partitions_cannot_be_listed_fails_the_checkpoint():
    def unlisted(topic: str, timeout: float) -> list[int]:
        raise KafkaException("broker away")

    with pytest.raises(CheckpointError, match="cannot list the partitions of predictions"):
        OutputEnds(("predictions",), ManualClock()).measure(unlisted, Answers({}))


def test_the_floor_round_trips_through_a_checkpoint():
    ends = OutputEnds(("predictions",), ManualClock())
    ends.measure(partitions, Answers({("predictions", 0): 3, ("predictions", 1): 8}))
    restored = OutputEnds(("predictions",), ManualClock())
    restored.load_state_dict(ends.state_dict())
    assert restored.floor == ends.floor
