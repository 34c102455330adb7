"""A follower that only ever holds a complete, verified version."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from consumer.model_topic import ModelPublisher, newest_manifest
from learners import make
from learners.inputs import Rows
from tests.fakes import FakeConsumer, FakeMessage
from tests.unit.consumer.model_topic.topic import TOPIC, Producer, follower, keys, model_state, same, touch


def test_a_follower_started_at_the_end_holds_the_publishers_newest_state(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000, full_every=4)
    state, rng = model_state(), np.random.default_rng(0)
    for _ in range(7):  # 1 full, 2-5 deltas, 6 full, 7 delta
        publisher.publish(state, epoch=1)
        touch(state, rng)
    touch(state, rng)
    last = publisher.publish(state, epoch=1)
    scorer = follower(broker)
    newest = scorer.start(timeout_s=1)
    assert newest["version"] == last.version and newest["snapshot_offset"] > 0  # from the second chain
    model = scorer.poll()
    assert model.version == last.version and same(model.state, state)
    assert scorer.poll() is None


def test_a_follower_keeps_up_publication_by_publication(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=2000, full_every=3)
    scorer = follower(broker)
    assert scorer.start(timeout_s=1) is None and scorer.poll() is None  # nothing published yet
    state, rng = model_state(), np.random.default_rng(0)
    for _ in range(12):  # full snapshots at 1, 5, 9: the first chain is tombstoned under the follower
        touch(state, rng)
        published = publisher.publish(state, epoch=1)
        model = scorer.poll()
        assert model.version == published.version and same(model.state, state)
        assert scorer._chunks == {}  # nothing buffered once a version is applied
    assert [m for m in broker.messages(TOPIC) if m.value() is None]


def test_a_follower_started_mid_chain_waits_for_the_next_full_snapshot(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, full_every=10)
    state, rng = model_state(), np.random.default_rng(0)
    publisher.publish(state, epoch=1)
    touch(state, rng)
    mid = publisher.publish(state, epoch=1).offsets[0]
    touch(state, rng)
    publisher.publish(state, epoch=1)
    scorer = follower(broker)
    scorer.seek(mid)
    assert scorer.poll() is None  # two deltas with no base
    touch(state, rng)
    publisher.publish(state, epoch=1, kind="full")
    assert same(scorer.poll().state, state)


def test_chunks_without_a_manifest_leave_the_follower_on_the_previous_version(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, chunk_bytes=2000)
    state = model_state()
    publisher.publish(state, epoch=1)
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    assert scorer.poll().version == 1
    for i in range(3):  # a trainer dies between its chunks and its manifest
        broker.append(TOPIC, b"x" * 2000, f"model/2/{i}".encode())
    assert scorer.poll() is None and scorer.version == 1
    successor = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=2000)  # the next trainer
    successor.start(epoch=2, after_version=newest_manifest(lambda: FakeConsumer(broker, "t"), TOPIC, timeout_s=1)
                    ["version"])
    touch(state, np.random.default_rng(0))
    assert successor.publish(state, epoch=2).version == 2  # reuses the dead trainer's chunk keys
    model = scorer.poll()
    assert (model.version, model.epoch) == (2, 2) and same(model.state, state)


@pytest.mark.parametrize("damage", ["flip", "drop", "manifest"])
def test_a_damaged_version_is_skipped_with_a_warning_and_its_deltas_wait_for_a_full(broker, caplog, damage):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    state, rng = model_state(), np.random.default_rng(0)
    publisher.publish(state, epoch=1)
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    scorer.poll()
    touch(state, rng, k=300)
    published = publisher.publish(state, epoch=1, kind="full")
    log = broker.log[(TOPIC, 0)]
    chunk = log[published.offsets[1]]
    if damage == "flip":
        chunk._value = chunk._value[:100] + bytes([chunk._value[100] ^ 1]) + chunk._value[101:]
    elif damage == "drop":
        chunk._key = b"model/2/99"
    else:
        log[published.manifest_offset]._value = b"{not json"
    touch(state, rng)
    publisher.publish(state, epoch=1)  # a delta against the damaged version
    with caplog.at_level(logging.WARNING, logger="consumer.model_topic"):
        assert scorer.poll() is None
    assert scorer.version == 1 and [r for r in caplog.records if r.levelno == logging.WARNING]
    touch(state, rng)
    publisher.publish(state, epoch=1, kind="full")
    assert same(scorer.poll().state, state)


def test_a_chunk_written_twice_by_a_retry_is_no_harm(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, chunk_bytes=3000)
    producer.twice = {b"model/1/0", b"model/1/3"}
    state = model_state()
    published = publisher.publish(state, epoch=1)
    assert published.chunks == 4 and keys(broker)[:6] == [b"model/1/0", b"model/1/0", b"model/1/1", b"model/1/2",
                                                           b"model/1/3", b"model/1/3"]  # past last_offset
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    assert same(scorer.poll().state, state)


class _Untouchable(FakeMessage):
    def value(self):
        raise AssertionError("a checkpoint's value was read")


def test_a_follower_skips_checkpoints_by_key_without_reading_them(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    state, rng = model_state(), np.random.default_rng(0)
    publisher.publish_checkpoint(state, epoch=1)  # version 1
    publisher.publish(state, epoch=1)  # 2, full
    touch(state, rng)
    publisher.publish_checkpoint(state, epoch=1)  # 3
    touch(state, rng)
    published = publisher.publish(state, epoch=1)  # 4, a delta against 2
    assert (published.kind, json.loads(broker.messages(TOPIC)[-1].value())["base_version"]) == ("delta", 2)
    log = broker.log[(TOPIC, 0)]
    log[:] = [_Untouchable(*vars(m).values()) if m.key().startswith(b"checkpoint/") else m for m in log]
    scorer = follower(broker)
    scorer.seek(0)
    model = scorer.poll()
    assert model.version == 4 and same(model.state, state)


def test_a_manifest_from_an_older_epoch_is_ignored(broker):
    old, new = ModelPublisher(Producer(broker), TOPIC), ModelPublisher(Producer(broker), TOPIC)
    state = model_state()
    new.start(epoch=2, after_version=0)
    new.publish(state, epoch=2)
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    assert scorer.poll().epoch == 2
    old.start(epoch=1, after_version=5)  # a trainer that does not know it was replaced
    old.publish(model_state(seed=9), epoch=1)
    assert scorer.poll() is None and scorer.model.epoch == 2


def test_a_follower_holds_what_a_real_learner_publishes_and_a_clone_scores_alike(broker):
    n, rng = 2**10, np.random.default_rng(0)
    learner = make("paa-1", n_features=n, seed=0)
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=2000)
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    kinds = []
    for _ in range(4):
        rows = Rows.stack([(np.sort(rng.choice(n, 20, replace=False)), rng.normal(size=20)) for _ in range(5)], n)
        learner.learn_many(rows, rng.choice([-1, 1], 5), scored=False)
        kinds.append(publisher.publish(learner.state_dict(), epoch=1).kind)
    assert kinds == ["full", "delta", "delta", "delta"]
    clone = make("paa-1", n_features=n, seed=0)
    clone.load_state_dict(scorer.poll().state)
    np.testing.assert_array_equal(clone.score(rows).p, learner.score(rows).p)

