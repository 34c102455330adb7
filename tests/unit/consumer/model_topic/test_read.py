"""Reading the model topic back: the newest manifest, the newest complete checkpoint."""

from __future__ import annotations

import pytest

from consumer.model_topic import ModelPublisher, newest_manifest, read_model_checkpoint
from tests.fakes import FakeConsumer, LocalBroker
from tests.unit.consumer.model_topic.topic import TOPIC, Producer, model_state, same, with_parts


@pytest.mark.parametrize("partition_eof", [False, True])
def test_the_newest_manifest_is_found_behind_many_later_records(broker, partition_eof):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=100)
    publisher.publish(model_state(100), epoch=1)
    for i in range(500):  # e.g. a dead trainer's chunks: the search widens its window
        broker.append(TOPIC, b"x", f"model/2/{i}".encode())
    reader = lambda: FakeConsumer(broker, "t", partition_eof=partition_eof)  # noqa: E731
    assert newest_manifest(reader, TOPIC, timeout_s=2)["version"] == 1
    assert newest_manifest(reader, TOPIC, kind="checkpoint", timeout_s=2) is None
    empty = LocalBroker()
    empty.create(TOPIC)
    assert newest_manifest(lambda: FakeConsumer(empty, "t", partition_eof=partition_eof), TOPIC, timeout_s=2) is None


def test_read_model_checkpoint_returns_the_newest_complete_one(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    reader = lambda: FakeConsumer(broker, "restore")  # noqa: E731
    assert read_model_checkpoint(reader, TOPIC, timeout_s=1) is None
    first = model_state(seed=1)
    publisher.publish_checkpoint(first, epoch=1, extra={"offsets": {"features": [5]}})
    publisher.publish(model_state(seed=2), epoch=1)
    second = publisher.publish_checkpoint(model_state(seed=3), epoch=1)
    manifest, state = read_model_checkpoint(reader, TOPIC, timeout_s=1)
    assert manifest["version"] == second.version and same(state, model_state(seed=3))
    damaged = broker.log[(TOPIC, 0)][second.offsets[0]]
    damaged._value = b"y" + damaged._value[1:]  # the newest is corrupt: the one before is used
    manifest, state = read_model_checkpoint(reader, TOPIC, timeout_s=1)
    assert manifest["extra"] == {"offsets": {"features": [5]}} and same(state, first)


def test_a_damaged_part_makes_the_checkpoint_unreadable_and_the_one_before_is_used(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    publisher.publish_checkpoint(with_parts(1, {"m.0": 1.0}), epoch=1, parts=["m.0"])
    publisher.publish_checkpoint(with_parts(2, {"m.0": 1.0, "m.1": 2.0}), epoch=1, parts=["m.0", "m.1"])
    newest_part = max((m for m in broker.log[(TOPIC, 0)] if m.key().startswith(b"part/")), key=lambda m: m.offset())
    newest_part._value = b"y" + newest_part._value[1:]
    _, state = read_model_checkpoint(lambda: FakeConsumer(broker, "restore"), TOPIC, timeout_s=1)
    assert same(state, with_parts(1, {"m.0": 1.0}))

