"""The model topic on a real broker: a 2^20-dimension learner published in chunks under 1 MB, as a
full snapshot and sparse deltas; followers rebuild the publisher's state exactly, wait for a full
snapshot when they join mid-chain, and ignore a publication whose manifest never came."""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest
from confluent_kafka import Consumer, Producer

from consumer.demo.broker import CLIENT_SETTINGS, create_topics
from consumer.model_topic import ModelFollower, ModelPublisher, newest_manifest, read_model_checkpoint
from learners import make
from learners.inputs import Rows
from tests.kafka_helpers import read_all

N_FEATURES = 2**20


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and a[k].tobytes() == b[k].tobytes() for k in a)


@pytest.fixture
def topic(kafka_bootstrap) -> str:
    name = f"model-{uuid.uuid4().hex[:8]}"
    create_topics(kafka_bootstrap, [name], 1)
    return name


_OPEN: list[Consumer] = []


@pytest.fixture(autouse=True)
def _close_consumers():
    yield
    while _OPEN:
        _OPEN.pop().close()


def consumer_factory(bootstrap: str):
    def make_consumer() -> Consumer:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"scorer-{uuid.uuid4().hex[:8]}",
                             "enable.auto.commit": False, **CLIENT_SETTINGS})
        _OPEN.append(consumer)
        return consumer
    return make_consumer


def producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})


class Trainer:
    """A paa-1 learner over 2^20 features, fed 100 labels of 20 non-zeros per step."""

    def __init__(self, seed: int = 0) -> None:
        self.learner = make("paa-1", n_features=N_FEATURES, seed=0)
        self.rng = np.random.default_rng(seed)

    def step(self) -> dict:
        rng = self.rng
        rows = Rows.stack([(np.sort(rng.choice(N_FEATURES, 20, replace=False)), rng.normal(size=20))
                           for _ in range(100)], N_FEATURES)
        self.learner.learn_many(rows, rng.choice([-1, 1], 100), scored=False)
        return self.learner.state_dict()


def wait_for_version(follower: ModelFollower, version: int, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        follower.poll()
        if follower.version == version:
            return follower.model
        time.sleep(0.02)
    raise AssertionError(f"the follower holds version {follower.version}, not {version}, after {timeout_s} s")


def test_a_large_model_travels_in_chunks_and_a_follower_from_the_end_rebuilds_it(kafka_bootstrap, topic):
    trainer = Trainer()
    publisher = ModelPublisher(lambda: producer(kafka_bootstrap), topic)
    live = ModelFollower(consumer_factory(kafka_bootstrap)(), topic)
    assert live.start(timeout_s=30) is None
    full = publisher.publish(trainer.step(), epoch=1)
    assert full.kind == "full" and full.chunks >= 9
    assert wait_for_version(live, full.version).version == 1
    for _ in range(3):
        state = trainer.step()
        published = publisher.publish(state, epoch=1)
        assert published.kind == "delta" and published.bytes < full.bytes / 50
        assert same(wait_for_version(live, published.version).state, state)
    records = read_all(kafka_bootstrap, topic, expect=full.chunks + 1 + 3 * 2)
    assert max(len(m.value()) + len(m.key()) for m in records) < 1_000_000
    late = ModelFollower(consumer_factory(kafka_bootstrap)(), topic)
    assert late.start(timeout_s=30)["version"] == published.version
    model = wait_for_version(late, published.version)
    assert same(model.state, state) and model.epoch == 1
    clone = make("paa-1", n_features=N_FEATURES, seed=0)
    clone.load_state_dict(model.state)
    rows = Rows.stack([(np.arange(5) * 1000, np.ones(5))], N_FEATURES)
    np.testing.assert_array_equal(clone.score(rows).p, trainer.learner.score(rows).p)


def test_a_follower_joining_mid_chain_waits_for_the_next_full_snapshot(kafka_bootstrap, topic):
    trainer = Trainer()
    publisher = ModelPublisher(lambda: producer(kafka_bootstrap), topic)
    publisher.publish(trainer.step(), epoch=1)
    first_delta = publisher.publish(trainer.step(), epoch=1)
    publisher.publish(trainer.step(), epoch=1)
    follower = ModelFollower(consumer_factory(kafka_bootstrap)(), topic)
    follower.seek(first_delta.offsets[0])
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:  # both deltas are read, neither applies
        assert follower.poll() is None
        time.sleep(0.05)
    state = trainer.step()
    full = publisher.publish(state, epoch=1, kind="full")
    assert same(wait_for_version(follower, full.version).state, state)


def test_a_trainer_dying_between_chunks_and_manifest_leaves_followers_on_the_previous_version(kafka_bootstrap, topic):
    trainer = Trainer()
    publisher = ModelPublisher(lambda: producer(kafka_bootstrap), topic)
    state = trainer.step()
    publisher.publish(state, epoch=1)
    follower = ModelFollower(consumer_factory(kafka_bootstrap)(), topic)
    follower.start(timeout_s=30)
    wait_for_version(follower, 1)
    dying = producer(kafka_bootstrap)  # what a trainer sent before it died: chunks of version 2 only
    for i in range(10):
        dying.produce(topic, bytes(900_000), key=f"model/2/{i}".encode(), partition=0)
    assert dying.flush(30) == 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert follower.poll() is None
        time.sleep(0.05)
    assert follower.version == 1 and same(follower.model.state, state)
    newest = newest_manifest(consumer_factory(kafka_bootstrap), topic, timeout_s=30)
    assert newest["version"] == 1
    successor = ModelPublisher(lambda: producer(kafka_bootstrap), topic)
    successor.start(epoch=2, after_version=newest["version"])
    state = trainer.step()
    published = successor.publish(state, epoch=2)
    assert (published.version, published.kind) == (2, "full")
    model = wait_for_version(follower, 2)
    assert model.epoch == 2 and same(model.state, state)


def test_a_checkpoint_round_trip_and_followers_skip_it(kafka_bootstrap, topic):
    trainer = Trainer()
    publisher = ModelPublisher(lambda: producer(kafka_bootstrap), topic)
    assert read_model_checkpoint(consumer_factory(kafka_bootstrap), topic, timeout_s=30) is None
    model_state = trainer.step()
    publisher.publish(model_state, epoch=1)
    checkpoint_state = {**trainer.step(), "pending.ids": np.array(["a", "b"])}
    checkpoint = publisher.publish_checkpoint(checkpoint_state, epoch=1, extra={"offsets": {"features": [42]}})
    assert checkpoint.kind == "checkpoint" and checkpoint.chunks >= 9
    manifest, state = read_model_checkpoint(consumer_factory(kafka_bootstrap), topic, timeout_s=30)
    assert manifest["version"] == checkpoint.version and manifest["extra"] == {"offsets": {"features": [42]}}
    assert same(state, checkpoint_state)
    follower = ModelFollower(consumer_factory(kafka_bootstrap)(), topic)
    assert follower.start(timeout_s=30)["version"] == 1  # the newest *model* manifest
    assert same(wait_for_version(follower, 1).state, model_state)
