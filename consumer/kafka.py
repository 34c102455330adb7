"""Kafka clients for the service: their configuration, the emitter (producer with delivery
tracking, retries and backpressure) and the offset tracker.

The service reads two topics with two consumers so that a label never waits behind a backlog of
feature records in a shared fetch queue: each loop iteration takes whatever labels are there
first, then at most one batch of features.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from consumer import dead_letters
from consumer.config import Settings
from consumer.errors import Backpressure, ConfigError, OffsetsNotIncreasing, ProduceFailed
from consumer.fastwrite import Packed
from consumer.metrics import Metrics
from consumer.state import pack_offsets, unpack_offsets

__all__ = ["CONSUMER_DEFAULTS", "PRODUCER_DEFAULTS", "Emitter", "OffsetTracker", "close_producer", "consumer_config",
           "offset_reset_policy", "producer_config"]

log = logging.getLogger(__name__)

# Settings that make librdkafka behave well for this loop. A user's own properties
# (ACTIVESTREAM_KAFKA, ACTIVESTREAM_KAFKA_CONSUMER/PRODUCER, ACTIVESTREAM_KAFKA_LABELS_CONSUMER)
# override them.
CONSUMER_DEFAULTS = {
    "enable.auto.commit": "false",  # offsets are committed only after a checkpoint is durable
    "enable.auto.offset.store": "false",
    "auto.offset.reset": "earliest",  # a new group reads the topic from its start
    "session.timeout.ms": "10000",
    "heartbeat.interval.ms": "1000",
    "fetch.wait.max.ms": "50",  # a tailing consumer sees new records within ~50 ms
    # With a backlog, librdkafka fetches ahead until this many records wait in its queue; below its
    # default of 100,000, records are read closer to when they were fetched (docs: internals).
    "queued.min.messages": "20000",
    # ... then stops fetching for this long; at the 1 s default the loop would drain the queue, then idle.
    "fetch.queue.backoff.ms": "10",
    "topic.metadata.refresh.interval.ms": "30000",
}
PRODUCER_DEFAULTS: dict[str, Any] = {
    # One request in flight per broker connection keeps each partition's order through most of
    # librdkafka's retries (docs: running the service, "Outputs"). Idempotence is off: its producer
    # busy-polls while a request is in flight and more messages wait (docs: internals), and outputs
    # are at-least-once anyway.
    "enable.idempotence": "false",
    "max.in.flight.requests.per.connection": "1",
    # A keyed output goes to the partition the Java client (and Kafka Streams) would pick for its key;
    # librdkafka's own default (consistent_random) hashes keys with CRC32, which costs more per message.
    "partitioner": "murmur2_random",
    "delivery.report.only.error": True,  # a successful delivery costs no Python callback (a client-side bool)
    "linger.ms": "5",
    "message.timeout.ms": "120000",  # then the emitter re-sends it itself
    "queue.buffering.max.messages": "1000000",
}

# Delivery errors that re-sending cannot fix: the service stops instead of dropping the message.
_FATAL = {
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.INVALID_RECORD,
    KafkaError._INVALID_ARG,
    KafkaError._UNKNOWN_TOPIC,
}


# librdkafka's spellings of auto.offset.reset, by what the service does with them
_RESET_POLICIES = {"earliest": "earliest", "smallest": "earliest", "beginning": "earliest",
                   "latest": "latest", "largest": "latest", "end": "latest", "error": "error"}


def _user_consumer_config(settings: Settings, role: str) -> dict[str, Any]:
    group = settings.group_id if role == "features" else f"{settings.group_id}-{role}"
    conf: dict[str, Any] = {**CONSUMER_DEFAULTS, "bootstrap.servers": settings.bootstrap_servers,
                            "group.id": group, "client.id": f"activestream-{role}"}
    if settings.group_instance_id:
        conf["group.instance.id"] = f"{settings.group_instance_id}-{role}"
    conf.update(settings.kafka)
    conf.update(settings.kafka_consumer)
    if role == "labels":
        conf.update(settings.kafka_labels_consumer)
    if role == "lease":  # a joining standby must not take partition 0 from its owner (consumer.lease)
        conf["partition.assignment.strategy"] = "cooperative-sticky"
    return conf


def consumer_config(settings: Settings, role: str) -> dict[str, Any]:
    """Consumer properties for ``role`` ("features" or "labels"), each in its own group."""
    return _user_consumer_config(settings, role)


def offset_reset_policy(settings: Settings, role: str) -> str:
    """Where ``role``'s consumer goes when its position is not in the log: "earliest", "latest", or
    "error" (stop), from ``auto.offset.reset`` as the user set it (earliest by default)."""
    value = str(_user_consumer_config(settings, role).get("auto.offset.reset", "earliest")).lower()
    if value not in _RESET_POLICIES:
        where = "ACTIVESTREAM_KAFKA_LABELS_CONSUMER" if role == "labels" and \
            "auto.offset.reset" in settings.kafka_labels_consumer else "ACTIVESTREAM_KAFKA_CONSUMER"
        raise ConfigError(f"{where}__AUTO_OFFSET_RESET: {value!r} is none of {', '.join(_RESET_POLICIES)}")
    return _RESET_POLICIES[value]


def producer_config(settings: Settings) -> dict[str, Any]:
    conf: dict[str, Any] = {**PRODUCER_DEFAULTS, "bootstrap.servers": settings.bootstrap_servers,
                            "client.id": "activestream-producer"}
    conf.update(settings.kafka)
    conf.update(settings.kafka_producer)
    return conf


def close_producer(producer: Any) -> None:
    """Close a producer now, dropping what it still holds. confluent-kafka before 2.13 has no
    ``Producer.close``: there its queues are purged, and the handle goes with the object."""
    close = getattr(producer, "close", None)
    if close is not None:
        close()
    else:
        producer.purge(in_queue=True, in_flight=True, blocking=False)


class Emitter:
    """Produces messages, re-sends failed ones, and refuses to take more than ``max_in_flight``
    unacknowledged messages (:class:`Backpressure`).

    Only failed deliveries are reported (``delivery.report.only.error``), so a successful message
    costs no Python callback. A delivery that fails with a retriable error (timeout, broker down,
    leader moved) is produced again on the next :meth:`serve`; one that fails for good (message
    too large, not authorised) is recorded and raised as :class:`ProduceFailed` by :meth:`serve` and
    :meth:`flush`, so the checkpoint that would commit past it never happens. The exception is a
    dead letter (to ``dead_letter_topic``) refused as it is: it is sent again truncated
    (:func:`consumer.dead_letters.truncated`), as one bad record must not stop the service; only a
    truncated dead letter refused again fails for good.

    Batches of keyed values (predictions, label requests: :meth:`send_packed`) go through ``batch``, a
    :class:`consumer.rdkafka.BatchProducer`, when there is one: a librdkafka call per batch instead
    of one per message. Its failures are handled as the producer's.
    """

    def __init__(self, make_producer: Callable[[Callable[[KafkaError | None, Message], None]], Producer],
                 metrics: Metrics, max_in_flight: int, make_batch: Callable[..., Any] | None = None,
                 dead_letter_topic: str | None = None) -> None:
        self._metrics = metrics
        self._dead_letter_topic = dead_letter_topic
        self.max_in_flight = max_in_flight
        self._retry: list[tuple[str, bytes | None, bytes | None, Any, int | None]] = []
        self._pinned: set[str] = set()  # topics whose messages go to a chosen partition
        self._fatal: list[str] = []
        self.producer = self._producer = make_producer(self._delivered)  # one callback for all messages
        self.batch = make_batch(self._batch_failed, self._client_error) if make_batch is not None else None

    def __len__(self) -> int:
        """Messages produced and not yet acknowledged (or waiting to be re-sent)."""
        return len(self._producer) + (len(self.batch) if self.batch is not None else 0) + len(self._retry)

    def reserve(self, n: int) -> None:
        """Raise :class:`Backpressure` unless ``n`` more messages fit under the in-flight limit."""
        if len(self) + n > self.max_in_flight and len(self) > 0:
            self._metrics.backpressure.inc()
            raise Backpressure(f"{len(self)} messages in flight, limit {self.max_in_flight}")

    def send(self, topic: str, key: bytes | None, value: bytes | None,
             headers: list[tuple[str, bytes]] | None = None, partition: int | None = None) -> None:
        """Produce one message, to the partition of its key or to ``partition``; a topic sent to
        by partition keeps its failed messages' partitions when they are re-sent."""
        where = {} if partition is None else {"partition": partition}
        if partition is not None:
            self._pinned.add(topic)
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, headers=headers, **where)
                return
            except BufferError:  # librdkafka's own queue is full: wait for acknowledgements
                self._producer.poll(0.05)
            except KafkaException as exc:
                if self._can_truncate(topic, headers):
                    log.warning("dead letter refused by the producer (%s); sending it truncated", exc)
                    key, value, headers = dead_letters.truncated(key, value, headers)
                    continue
                self._fatal.append(f"{topic}: {exc}")
                raise ProduceFailed(f"cannot produce to {topic}: {exc}") from None

    def _can_truncate(self, topic: str, headers: Any) -> bool:
        return topic == self._dead_letter_topic and not dead_letters.is_truncated(headers)

    def send_many(self, messages: list[tuple[str, bytes | None, bytes | None, Any]]) -> None:
        """Produce (topic, key, value, headers) messages in order."""
        produce = self._producer.produce
        for k, (topic, key, value, headers) in enumerate(messages):
            try:
                produce(topic, value, key, headers=headers)
            except (BufferError, KafkaException):  # queue full or a client error: the careful path
                for rest in messages[k:]:
                    self.send(*rest)
                return

    def send_packed(self, topic: str, keys: Packed, values: Packed, partition: int | None = None) -> None:
        """Produce keyed values without headers to one topic, in order (predictions, label requests),
        each to the partition of its key or all to ``partition``."""
        if self.batch is None:
            for key, value in zip(keys, values, strict=True):
                self.send(topic, key, value, partition=partition)
            return
        where = {}
        if partition is not None:
            self._pinned.add(topic)
            where = {"partition": partition}
        try:
            refused = self.batch.produce_batch(topic, keys.data, keys.starts, keys.ends, values.data, values.starts,
                                               values.ends, **where)
        except ValueError as exc:
            self._fatal.append(f"{topic}: {exc}")
            raise ProduceFailed(f"cannot produce to {topic}: {exc}") from None
        if len(refused):  # librdkafka's queue was full: the careful path, which waits, through the
            # other client, so these may land after later messages (hence a warning)
            log.warning("%d of %d messages to %s refused by the batch producer; sent one by one",
                        len(refused), len(values), topic)
            for k in refused.tolist():
                self.send(topic, keys[k], values[k], partition=partition)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self._failed(msg.topic(), err.code(), err.str(), msg.key(), msg.value(), msg.headers(), err.fatal(),
                         partition=msg.partition())

    def _batch_failed(self, topic: str, code: int, text: str, key: bytes | None, value: bytes | None,
                      partition: int = -1) -> None:
        self._failed(topic, code, text, key, value, partition=partition)

    def _failed(self, topic: str, code: int, text: str, key: bytes | None, value: bytes | None,
                headers: Any = None, fatal: bool = False, partition: int | None = None) -> None:
        self._metrics.produce_errors.labels(topic=topic).inc()
        partition = partition if topic in self._pinned and partition is not None and partition >= 0 else None
        if code in _FATAL and not fatal and self._can_truncate(topic, headers):
            log.warning("dead letter refused by the broker (%s); sending it truncated", text)
            self._retry.append((topic, *dead_letters.truncated(key, value, headers), None))
        elif code in _FATAL or fatal:
            self._fatal.append(f"{topic}: {text}")
            log.error("delivery to %s failed for good: %s", topic, text)
        else:
            log.warning("delivery to %s failed (%s); re-sending", topic, text)
            self._retry.append((topic, key, value, headers, partition))

    def _client_error(self, code: int, text: str, fatal: bool) -> None:
        if fatal:
            self._fatal.append(f"producer: {text}")
            log.error("producer failed for good: %s", text)
        else:
            log.warning("kafka: %s", text)

    def serve(self, timeout: float = 0.0) -> None:
        """Run delivery callbacks, re-send what failed, raise if something failed for good."""
        self._producer.poll(timeout)
        if self.batch is not None:
            self.batch.poll(0)
        if self._retry:
            retry, self._retry = self._retry, []
            for topic, key, value, headers, partition in retry:
                self.send(topic, key, value, headers, partition)
        if self._fatal:
            raise ProduceFailed("; ".join(self._fatal))

    def flush(self, timeout_s: float) -> bool:
        """Wait until every message is acknowledged (re-sending failures); False on timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return len(self) == 0
            if self.batch is not None:
                self.batch.flush(min(remaining, 1.0))
            self._producer.flush(min(max(deadline - time.monotonic(), 0.0), 1.0))
            self.serve()
            if len(self) == 0:
                return True

    def close(self) -> None:
        """Close the producers (what they still hold is dropped: it was never committed past)."""
        if self.batch is not None:
            self.batch.close()
        close_producer(self._producer)


@dataclass(slots=True)
class OffsetTracker:
    """The next offset to read in every partition this service has consumed (or restored)."""

    next: dict[tuple[str, int], int] = field(default_factory=dict)
    # partitions whose log started again (see restart): their next store may go back, once
    restarted: set[tuple[str, int]] = field(default_factory=set)

    def store(self, topic: str, partition: int, next_offset: int) -> None:
        key = (topic, partition)
        if next_offset < self.next.get(key, -1):
            if key not in self.restarted:
                raise OffsetsNotIncreasing(f"{topic}[{partition}]: offset {next_offset} after {self.next[key]}")
            self.restarted.discard(key)
        self.next[key] = next_offset

    def restart(self, topic: str, partition: int) -> None:
        """The partition's log no longer holds its position: the records that come next may have
        lower offsets (records of the old log still in hand are stored first, as usual)."""
        self.restarted.add((topic, partition))

    def reset(self, topic: str, partition: int, next_offset: int) -> None:
        """Accept a position set by the broker or by a seek (rebalance, restore)."""
        self.next[(topic, partition)] = next_offset

    def for_topic(self, topic: str) -> dict[int, int]:
        return {p: o for (t, p), o in self.next.items() if t == topic}

    def load(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self.next = dict(offsets)

    # -- checkpoint form (consumer.state.Stateful) -------------------------------------------------
    namespace = "offsets"
    format_version = 1

    def state_dict(self) -> dict[str, np.ndarray]:
        return pack_offsets(self.next)

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        self.load(unpack_offsets(state))
