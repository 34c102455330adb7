"""Which process is the active trainer: Kafka group membership as a lease, no coordinator of our own.

Every process that may train (role ``trainer``, and role ``all``) joins the group
``<group_id>-lease`` on the one-partition topic ``ACTIVESTREAM_TOPICS__LEASE`` and reads nothing
from it. The group gives partition 0 to one member: that member is active. A member that leaves
(a clean stop) hands partition 0 over at once; one that dies is dropped after the session timeout
(``session.timeout.ms``), and partition 0 goes to a standby.

A member that loses partition 0 while it runs (a revocation: it was too slow to heartbeat, or the
group was rebalanced around it) must stop learning at once, since another process may already be
restoring the model: :attr:`Lease.lost` says so, and the service stops without a checkpoint.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from consumer.clock import Clock
from consumer.errors import ConfigError
from consumer.stop import Stop

__all__ = ["Lease", "ensure_lease_topic", "take_lease"]

log = logging.getLogger(__name__)


def ensure_lease_topic(admin_config: dict[str, Any], topic: str, timeout_s: float = 10.0) -> None:
    """Create the lease topic with one partition if it does not exist (a lease topic needs no data
    and no retention). Brokers that cannot be reached raise ``KafkaException`` (the caller waits for
    them); a broker that refuses to create it (no permission to create topics) is a
    :class:`ConfigError` naming the setting: create it by hand, or point the setting at one."""
    admin = AdminClient(admin_config)
    try:
        # every topic's metadata: a request naming the topic lets a broker that auto-creates topics
        # make it with its default partition count before we create it with one
        listed = admin.list_topics(timeout=timeout_s)
        info = listed.topics.get(topic)
        if info is not None and info.error is None and info.partitions:
            return
        future = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=-1)],
                                     operation_timeout=timeout_s)[topic]
        try:
            future.result(timeout=timeout_s)
            log.info("created the lease topic %s (1 partition)", topic)
        except TimeoutError:  # no answer: like brokers out of reach, for the caller to wait on
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"creating the lease topic {topic} timed out")) \
                from None
        except KafkaException as exc:
            if exc.args and getattr(exc.args[0], "code", lambda: None)() == 36:  # TOPIC_ALREADY_EXISTS: a peer won
                return
            raise ConfigError(f"ACTIVESTREAM_TOPICS__LEASE: {topic!r} does not exist and cannot be created "
                              f"({exc}); create it with one partition") from None
    finally:
        if "logger" in admin_config:  # librdkafka's lines wait in the client for a poll
            admin.poll(0)


class Lease:
    """This process's membership of the lease group; active while it owns partition 0.

    The group assigns with ``cooperative-sticky``: a member joining or leaving moves no partition
    its owner keeps, so a standby that starts does not take the lease from the active trainer (an
    eager assignor would hand partition 0 to whichever member id sorts first). Partition 0 is
    revoked only to be given to another member, and a member dropped from the group (``on_lost``)
    has lost it too: either way :attr:`lost` is set, and the service stops without writing more.
    """

    def __init__(self, make_consumer: Callable[[], Any], topic: str) -> None:
        self.topic = topic
        self._consumer = make_consumer()
        self.held = False
        self.lost = False  # held, then given to another member while this process ran
        self.terms = 0  # how many times it was acquired
        self._closing = False

    def join(self) -> None:
        # The callbacks assign nothing themselves: the client applies the (incremental) assignment.
        self._consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                 on_lost=self._on_revoke)

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if any(tp.partition == 0 for tp in partitions) and not self.held:
            self.held = True
            self.terms += 1
            log.info("lease %s acquired: this process is the active trainer", self.topic)

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if self.held and any(tp.partition == 0 for tp in partitions):
            self.held = False
            if not self._closing:
                self.lost = True
                log.error("lease %s lost: another process may be the active trainer now", self.topic)

    def poll(self, timeout_s: float = 0.0) -> None:
        """Serve the group's events (the membership stays alive only while this is called)."""
        msg = self._consumer.poll(timeout_s)
        if msg is not None and msg.error() is not None:
            log.debug("lease consumer: %s", msg.error().str())

    def close(self) -> None:
        """Leave the group: a standby is given the lease at once instead of after the session timeout."""
        self._closing = True
        try:
            self._consumer.close()
        except (KafkaException, RuntimeError) as exc:
            log.warning("closing the lease consumer: %s", exc)
        self.held = False


_STANDBY_LOG_EVERY_S = 30.0
_STANDBY_QUIET_S = 2.0  # a join takes about this long: no warning for the usual wait


def take_lease(clients: Any, settings: Any, clock: Clock, stop: Stop, beat: Callable[[], None],
               attempted: Callable[[], None] = lambda: None) -> Lease | None:
    """Wait until this process holds its group's trainer lease (the lease topic made first, while the
    brokers are away waited for); None if ``stop`` came first. ``beat()``: the process is alive;
    ``attempted()``: a try to reach the brokers failed."""
    topic = settings.topics.lease
    backoff = 1.0
    while True:
        try:
            clients.ensure_lease_topic(topic)
            break
        except KafkaException as exc:
            attempted()
            log.warning("cannot reach the brokers to check the lease topic %s (%s); retrying in %.0f s", topic, exc,
                        backoff)
            beat()
            if stop.wait(backoff):
                return None
            backoff = min(30.0, 2 * backoff)
    lease = Lease(lambda: clients.consumer("lease"), topic)
    lease.join()
    waited_since, told_at = clock.monotonic(), -math.inf
    while not lease.held:
        if stop.requested:
            return lease  # closed by the caller; not held
        lease.poll(0.2)
        beat()
        now = clock.monotonic()
        if now - told_at >= _STANDBY_LOG_EVERY_S and now - waited_since >= _STANDBY_QUIET_S:
            told_at = now
            log.warning("standby: another process of group %s holds the trainer lease (%s); waiting to take "
                        "over (role %s runs one active process per group; to scale out, run scorers and "
                        "trainers: docs, running at scale)", settings.group_id, topic, settings.role)
    return lease
