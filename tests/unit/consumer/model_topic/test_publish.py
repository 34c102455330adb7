"""The publisher without a broker: chunks then a manifest, full snapshots and deltas, transactions,
checkpoints and their parts, tombstones."""

from __future__ import annotations

import json

import numpy as np
import pytest
from confluent_kafka import KafkaError

from consumer.errors import Fenced, PublishFailed
from consumer.model_topic import ModelPublisher, decode_state, read_model_checkpoint
from tests.fakes import FakeConsumer
from tests.unit.consumer.model_topic.topic import (
    TOPIC,
    Producer,
    keys,
    model_state,
    part_records,
    same,
    touch,
    with_parts,
)


def test_a_publication_is_chunks_then_a_manifest_naming_them(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=1000)
    state = model_state(1000)
    published = publisher.publish(state, epoch=3, extra={"labels": 10})
    messages = broker.messages(TOPIC)
    n = published.chunks
    assert published.kind == "full" and published.version == 1 and n == -(-published.bytes // 1000) > 1
    assert [m.key() for m in messages[:-1]] == [f"model/1/{i}".encode() for i in range(n)]
    assert all(len(m.value()) <= 1000 for m in messages[:-1])
    assert messages[-1].key() == b"model/manifest/1"
    manifest = json.loads(messages[-1].value())
    assert manifest == {**manifest, "epoch": 3, "version": 1, "kind": "full", "base_version": None,
                        "snapshot_offset": 0, "first_offset": 0, "last_offset": n - 1, "chunks": n,
                        "bytes": published.bytes, "meta": {"learner": "test"}, "extra": {"labels": 10}}
    assert published.offsets == tuple(range(n)) and published.manifest_offset == n
    assert same(decode_state(b"".join(m.value() for m in messages[:-1])), state)


def test_a_transactional_publisher_writes_each_publication_in_one_transaction(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, chunk_bytes=1000, transactional=True)
    publisher.start(epoch=1, after_version=0)
    state = model_state(1000)
    publisher.publish(state, epoch=1)
    publisher.publish_checkpoint(state, epoch=1)
    assert producer.transactions == ["init", "begin", "commit", "begin", "commit"]
    producer.lose_ack.add(b"model/manifest/3")  # a record not delivered: the transaction is aborted
    with pytest.raises(PublishFailed) as failed:
        publisher.publish(state, epoch=1)
    assert type(failed.value) is PublishFailed and producer.transactions[-2:] == ["begin", "abort"]


def test_a_fenced_publisher_raises_fenced_and_writes_nothing(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, transactional=True)
    publisher.start(epoch=1, after_version=0)
    publisher.publish(model_state(), epoch=1)
    written = len(broker.messages(TOPIC))
    producer.fenced = True  # a newer trainer initialised the same transactional id
    with pytest.raises(Fenced):
        publisher.publish(model_state(), epoch=1)
    with pytest.raises(Fenced):
        publisher.publish_checkpoint(model_state(), epoch=1)
    assert len(broker.messages(TOPIC)) == written


def test_publisher_chooses_full_then_deltas_until_full_every(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, full_every=2)
    state, rng = model_state(), np.random.default_rng(1)
    kinds = []
    for _ in range(6):
        kinds.append(publisher.publish(state, epoch=1).kind)
        touch(state, rng)
    assert kinds == ["full", "delta", "delta", "full", "delta", "delta"]
    manifests = [json.loads(m.value()) for m in broker.messages(TOPIC) if m.key().startswith(b"model/manifest")]
    assert [m["base_version"] for m in manifests] == [None, 1, 2, None, 4, 5]
    assert manifests[2]["snapshot_offset"] == manifests[0]["first_offset"]
    assert manifests[5]["snapshot_offset"] == manifests[3]["first_offset"]


def test_publisher_sends_a_full_snapshot_when_the_delta_is_heavy_or_the_epoch_new(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC)
    state = model_state()
    assert publisher.publish(state, epoch=1).kind == "full"
    state["rule.w"][:] += 1.0
    assert publisher.publish(state, epoch=1).kind == "full"  # every element changed
    touch(state, np.random.default_rng(0))
    assert publisher.publish(state, epoch=1, kind="full").kind == "full"
    touch(state, np.random.default_rng(1))
    assert publisher.publish(state, epoch=2).kind == "full"
    touch(state, np.random.default_rng(2))
    assert publisher.publish(state, epoch=2).kind == "delta"
    with pytest.raises(ValueError, match="older"):
        publisher.publish(state, epoch=1)


def test_start_continues_the_numbering_with_a_full_snapshot(broker):
    publisher = ModelPublisher(lambda: Producer(broker), TOPIC)
    publisher.start(epoch=7, after_version=41)
    published = publisher.publish(model_state(), epoch=7)
    assert (published.version, published.epoch, published.kind) == (42, 7, "full")


def test_a_failed_delivery_raises_and_the_next_publication_is_full(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC)
    state, rng = model_state(), np.random.default_rng(0)
    publisher.publish(state, epoch=1)
    touch(state, rng)
    producer.fail = [KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)]
    with pytest.raises(PublishFailed, match="not delivered"):
        publisher.publish(state, epoch=1)
    touch(state, rng)
    published = publisher.publish(state, epoch=1)
    assert (published.version, published.kind) == (3, "full")


def test_an_unacknowledged_publication_times_out(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, timeout_s=0.05)
    producer.hold = True
    with pytest.raises(PublishFailed, match="not acknowledged"):
        publisher.publish(model_state(), epoch=1)
    assert broker.messages(TOPIC) == []


def test_a_new_full_snapshot_tombstones_the_chains_before_the_previous_one(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=4000, full_every=1)
    state, rng = model_state(), np.random.default_rng(0)
    for _ in range(4):  # versions 1 (full), 2 (delta), 3 (full), 4 (delta)
        publisher.publish(state, epoch=1)
        touch(state, rng)
    assert not [m for m in broker.messages(TOPIC) if m.value() is None]
    publisher.publish(state, epoch=1)  # version 5, full: versions 1 and 2 go
    tombstoned = {m.key() for m in broker.messages(TOPIC) if m.value() is None}
    assert tombstoned == {b"model/1/0", b"model/1/1", b"model/1/2", b"model/manifest/1", b"model/2/0",
                          b"model/manifest/2"}
    assert keys(broker)[-1] == b"model/manifest/5"  # the manifest comes after its tombstones


def test_a_failed_full_snapshot_is_tombstoned_later_and_the_chain_before_it_kept(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, chunk_bytes=4000, full_every=0)
    state = model_state()
    publisher.publish(state, epoch=1)
    publisher.publish(state, epoch=1)
    producer.lose_ack = {b"model/manifest/3"}
    with pytest.raises(PublishFailed):
        publisher.publish(state, epoch=1)  # version 1 tombstoned; 2 is the newest complete chain
    publisher.publish(state, epoch=1)  # version 4: version 3's records go, version 2's stay
    tombstoned = {m.key() for m in broker.messages(TOPIC) if m.value() is None}
    assert {k.split(b"/")[-2 if b"manifest" not in k else -1] for k in tombstoned} == {b"1", b"3"}
    assert b"model/manifest/3" in tombstoned and b"model/3/0" in tombstoned


def test_a_checkpoint_part_is_published_once_and_read_back_into_each_checkpoint(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    reader = lambda: FakeConsumer(broker, "restore")  # noqa: E731
    first = publisher.publish_checkpoint(with_parts(1, {"m.0": 1.0}), epoch=1, parts=["m.0"])
    published = len(part_records(broker))
    assert published >= 3  # 8,000 bytes of arrays in chunks of 3,000
    second = publisher.publish_checkpoint(with_parts(2, {"m.0": 1.0, "m.1": 2.0}), epoch=1, parts=["m.0", "m.1"])
    assert len(part_records(broker)) == 2 * published  # m.0 not again
    assert second.bytes < first.bytes + 100  # a checkpoint's own payload holds no part
    manifest, state = read_model_checkpoint(reader, TOPIC, timeout_s=1)
    assert manifest["version"] == second.version and same(state, with_parts(2, {"m.0": 1.0, "m.1": 2.0}))
    assert set(manifest["parts"]) == {"m.0", "m.1"}


def test_a_part_no_kept_checkpoint_holds_is_tombstoned(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    publisher.publish_checkpoint(with_parts(1, {"m.0": 1.0}), epoch=1, parts=["m.0"])
    publisher.publish_checkpoint(with_parts(2, {"m.1": 2.0}), epoch=1, parts=["m.1"])
    assert all(v is not None for v in part_records(broker).values())  # m.0: the checkpoint before holds it
    publisher.publish_checkpoint(with_parts(3, {"m.1": 2.0}), epoch=1, parts=["m.1"])
    records = part_records(broker)
    gone = {k for k, v in records.items() if v is None}
    assert 2 * len(gone) == len(records) >= 6  # m.0's chunks, and m.1's still there
    _, state = read_model_checkpoint(lambda: FakeConsumer(broker, "restore"), TOPIC, timeout_s=1)
    assert same(state, with_parts(3, {"m.1": 2.0}))


def test_a_new_trainer_refers_to_the_parts_it_restored_without_publishing_them_again(broker):
    ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000).publish_checkpoint(
        with_parts(1, {"m.0": 1.0}), epoch=1, parts=["m.0"])
    manifest, _ = read_model_checkpoint(lambda: FakeConsumer(broker, "restore"), TOPIC, timeout_s=1)
    successor = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    successor.start(2, manifest["version"])
    successor.adopt_parts(manifest["parts"])
    before = len(part_records(broker))
    successor.publish_checkpoint(with_parts(2, {"m.0": 1.0, "m.1": 5.0}), epoch=2, parts=["m.0", "m.1"])
    assert len(part_records(broker)) == 2 * before
    _, state = read_model_checkpoint(lambda: FakeConsumer(broker, "restore"), TOPIC, timeout_s=1)
    assert same(state, with_parts(2, {"m.0": 1.0, "m.1": 5.0}))


def test_extra_that_is_not_json_is_refused_before_anything_is_sent(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC)
    with pytest.raises(TypeError):
        publisher.publish(model_state(), epoch=1, extra={"when": object()})
    assert broker.messages(TOPIC) == [] and publisher.publish(model_state(), epoch=1).version == 1

