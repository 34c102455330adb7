"""Positions: partitions librdkafka will or will not seek are sent to their start."""

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from consumer.kafka import OffsetTracker
from consumer.metrics import Metrics
from consumer.steps.positions import Positions


class _Positions:
    """A consumer whose positions are what librdkafka reports while a reset is under way, and which
    refuses to seek the partitions in ``erroneous`` (librdkafka's error state)."""

    def __init__(self, positions: dict[int, int], erroneous: set[int]) -> None:
        self.positions = positions
        self.erroneous = erroneous
        self.seeks: list[tuple[int, int]] = []
        self.assigned: list[dict[int, int]] = []
        self.paused: set[int] = set()

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition("f", p) for p in sorted(self.positions)]

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.positions[tp.partition]) for tp in partitions]

    def seek(self, tp: TopicPartition) -> None:
        if tp.partition in self.erroneous:
            raise KafkaException(KafkaError(KafkaError._STATE, "Erroneous state"))
        self.seeks.append((tp.partition, tp.offset))

    def assign(self, partitions: list[TopicPartition]) -> None:
        assert {tp.partition for tp in partitions} <= self.paused  # nothing fetched before it is forwarded
        self.assigned.append({tp.partition: tp.offset for tp in partitions})

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused |= {tp.partition for tp in partitions}

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.paused -= {tp.partition for tp in partitions}


def _repositioning(consumer: _Positions) -> Positions:
    return Positions(OffsetTracker(), Metrics(), lambda: {"f": (consumer, None)}, {})


def test_a_lost_position_is_left_by_a_seek_where_librdkafka_allows_one():

    consumer = _Positions({0: 148, 1: 152}, erroneous=set())
    _repositioning(consumer).assign_from({("f", 0): OFFSET_BEGINNING, ("f", 1): OFFSET_BEGINNING}, consumer)
    assert consumer.seeks == [(0, OFFSET_BEGINNING), (1, OFFSET_BEGINNING)] and consumer.assigned == []


def test_partitions_librdkafka_will_not_seek_are_assigned_their_start_whatever_positions_it_reports():

    consumer = _Positions({0: 148, 1: 152}, erroneous={0, 1})  # both beyond their new logs
    svc = _repositioning(consumer)
    svc.assign_from({("f", 0): OFFSET_BEGINNING}, consumer)
    assert consumer.assigned[-1] == {0: OFFSET_BEGINNING, 1: 152}  # 1 is not known to be lost yet
    svc.assign_from({("f", 1): OFFSET_BEGINNING}, consumer)  # 0 still reports 148
    assert consumer.assigned[-1] == {0: OFFSET_BEGINNING, 1: OFFSET_BEGINNING}
    assert consumer.paused == set()  # resumed once forwarded
    # once partition 0 has been read from its new start, its position is librdkafka's again
    svc.offsets.store("f", 0, 7)
    consumer.positions[0] = 7
    svc.assign_from({("f", 1): OFFSET_BEGINNING}, consumer)
    assert consumer.assigned[-1] == {0: 7, 1: OFFSET_BEGINNING}
