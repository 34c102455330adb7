"""A model topic on an in-memory broker for the tests: a producer with the real client's arguments,
states to publish, and what the topic holds."""

from __future__ import annotations

import numpy as np
from confluent_kafka import KafkaError

from consumer.model_topic import ModelFollower
from tests.fakes import FakeConsumer, FakeProducer, LocalBroker

TOPIC = "model"



class Producer(FakeProducer):
    """FakeProducer with the real client's ``partition`` argument; values copied, as librdkafka does."""

    def __init__(self, broker: LocalBroker) -> None:
        super().__init__(broker)
        self.lose_ack: set[bytes] = set()  # records that land but are reported as failed
        self.twice: set[bytes] = set()  # records a retry writes twice; the first is reported

    def produce(self, topic, value=None, key=None, partition=-1, on_delivery=None, headers=None) -> None:
        assert partition == 0
        if key in self.lose_ack:
            report = on_delivery
            on_delivery = lambda err, msg: report(KafkaError(KafkaError._MSG_TIMED_OUT), msg)  # noqa: E731
        super().produce(topic, None if value is None else bytes(value), key, headers, on_delivery)
        if key in self.twice:
            super().produce(topic, None if value is None else bytes(value), key, headers)


def same(a: dict, b: dict) -> bool:
    """Bitwise equal states: same names, dtypes, shapes and bytes."""
    return a.keys() == b.keys() and all(
        np.asarray(a[k]).dtype == np.asarray(b[k]).dtype and np.asarray(a[k]).shape == np.asarray(b[k]).shape
        and np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes() for k in a)


def model_state(n: int = 1000, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"format_version": np.array(1), "meta": np.array('{"learner": "test"}'),
            "counters": np.array([0, 0, 0], dtype=np.int64), "rule.w": rng.normal(size=n)}


def touch(state: dict, rng: np.random.Generator, k: int = 5) -> None:
    """A few labels' worth of change, in place, as a learner makes it."""
    state["rule.w"][rng.integers(0, state["rule.w"].size, k)] += rng.normal(size=k)
    state["counters"] += 1


def follower(broker: LocalBroker) -> ModelFollower:
    return ModelFollower(FakeConsumer(broker, "scorer"), TOPIC)


def keys(broker: LocalBroker) -> list[bytes]:
    return [m.key() for m in broker.messages(TOPIC)]


def with_parts(seed: int, parts: dict[str, float]) -> dict:
    state = model_state(seed=seed)
    for name, value in parts.items():
        state[f"{name}.keys"], state[f"{name}.at"] = np.full(500, value), np.arange(500.0)
    return state


def part_records(broker) -> dict[bytes, bytes | None]:
    """The newest value of each ``part/`` key (what compaction keeps)."""
    return {m.key(): m.value() for m in broker.log[(TOPIC, 0)] if m.key().startswith(b"part/")}

