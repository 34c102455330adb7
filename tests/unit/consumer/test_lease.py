"""The trainer lease: partition 0 of the lease group's topic, and what its revocation means."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from consumer.errors import ConfigError
from consumer.lease import Lease, ensure_lease_topic


class GroupConsumer:
    """A consumer whose group events the test plays: assignments and revocations."""

    def __init__(self) -> None:
        self.callbacks: dict = {}
        self.polls = 0
        self.closed = False

    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None) -> None:
        self.topics = topics
        self.callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}

    def play(self, event: str, *partitions: int) -> None:
        self.callbacks[event](self, [TopicPartition("lease", p) for p in partitions])

    def poll(self, timeout: float = 0) -> None:
        self.polls += 1

    def close(self) -> None:
        self.closed = True
        if self.callbacks:
            self.play("revoke", 0)


def joined() -> tuple[Lease, GroupConsumer]:
    consumer = GroupConsumer()
    lease = Lease(lambda: consumer, "lease")
    lease.join()
    return lease, consumer


def test_partition_0_is_the_lease_and_other_partitions_are_not():
    lease, consumer = joined()
    assert consumer.topics == ["lease"] and not lease.held
    consumer.play("assign", 1)
    assert not lease.held
    consumer.play("assign", 0)
    assert lease.held and lease.terms == 1 and not lease.lost


def test_a_revocation_of_partition_0_is_a_loss_and_of_another_partition_is_not():
    lease, consumer = joined()
    consumer.play("assign", 0, 1)
    consumer.play("revoke", 1)
    assert lease.held and not lease.lost
    consumer.play("revoke", 0)
    assert not lease.held and lease.lost


def test_being_dropped_from_the_group_is_a_loss():
    lease, consumer = joined()
    consumer.play("assign", 0)
    consumer.play("lost", 0)
    assert lease.lost


def test_leaving_on_close_is_not_a_loss():
    lease, consumer = joined()
    consumer.play("assign", 0)
    lease.close()
    assert consumer.closed and not lease.held and not lease.lost


def test_a_standby_never_held_the_lease_so_a_revocation_loses_nothing():
    lease, consumer = joined()
    consumer.play("assign")
    consumer.play("revoke")
    assert not lease.held and not lease.lost


def test_brokers_that_cannot_be_reached_are_a_kafka_error_to_wait_on_not_a_configuration_error():
    with pytest.raises(KafkaException):
        ensure_lease_topic({"bootstrap.servers": "127.0.0.1:1", "socket.connection.setup.timeout.ms": 1000},
                           "lease", timeout_s=1.0)


def test_a_lease_topic_that_cannot_be_created_fails_naming_the_setting(monkeypatch):
    class Refusing:
        def __init__(self, conf) -> None:
            pass

        def list_topics(self, topic=None, timeout=None):
            return SimpleNamespace(topics={})

        def create_topics(self, topics, operation_timeout):
            future = Future()
            future.set_exception(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
            return {topics[0].topic: future}

    monkeypatch.setattr("consumer.lease.AdminClient", Refusing)
    with pytest.raises(ConfigError, match="ACTIVESTREAM_TOPICS__LEASE: 'lease' does not exist and cannot be created"):
        ensure_lease_topic({}, "lease")


def test_a_broker_that_does_not_answer_the_creation_is_a_kafka_error_to_wait_on(monkeypatch):
    class Silent:
        def __init__(self, conf) -> None:
            pass

        def list_topics(self, topic=None, timeout=None):
            return SimpleNamespace(topics={})

        def create_topics(self, topics, operation_timeout):
            return {topics[0].topic: Future()}  # never completes

    monkeypatch.setattr("consumer.lease.AdminClient", Silent)
    with pytest.raises(KafkaException, match="creating the lease topic lease timed out"):
        ensure_lease_topic({}, "lease", timeout_s=0.1)
