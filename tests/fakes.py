"""In-memory stand-ins for the confluent-kafka clients, for unit tests of the service loop.

They implement just the methods the service calls, with Kafka's semantics where they matter:
per-partition offsets, assignment callbacks on subscribe, committed offsets per group, pause,
seek, delivery callbacks run from ``poll``/``flush``, ``_PARTITION_EOF`` for readers.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    KafkaError,
    KafkaException,
    TopicPartition,
)


@dataclass
class FakeMessage:
    _topic: str
    _partition: int
    _offset: int
    _key: bytes | None
    _value: bytes | None
    _headers: list | None = None
    _timestamp_ms: int = 0
    _error: Any = None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list | None:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        return TIMESTAMP_CREATE_TIME, self._timestamp_ms

    def error(self) -> Any:
        return self._error


class _Eof:
    def code(self) -> int:
        return KafkaError._PARTITION_EOF

    def str(self) -> str:
        return "end of partition"


@dataclass
class LocalBroker:
    """Topics as lists of messages per partition, and committed offsets per group."""

    partitions: dict[str, int] = field(default_factory=dict)
    log: dict[tuple[str, int], list[FakeMessage]] = field(default_factory=lambda: defaultdict(list))
    committed: dict[tuple[str, str, int], int] = field(default_factory=dict)
    clock_ms: int = 1_700_000_000_000

    def create(self, topic: str, partitions: int = 1) -> None:
        self.partitions[topic] = partitions

    def append(self, topic: str, value: bytes | None, key: bytes | None = None, headers: list | None = None,
               partition: int | None = None) -> FakeMessage:
        n = self.partitions.setdefault(topic, 1)
        if partition is None:
            partition = zlib.crc32(key) % n if key is not None else 0
        entries = self.log[(topic, partition)]
        msg = FakeMessage(topic, partition, len(entries), key, value, headers, self.clock_ms)
        entries.append(msg)
        return msg

    def values(self, topic: str) -> list[bytes | None]:
        return [m.value() for p in range(self.partitions.get(topic, 0)) for m in self.log[(topic, p)]]

    def messages(self, topic: str) -> list[FakeMessage]:
        return [m for p in range(self.partitions.get(topic, 0)) for m in self.log[(topic, p)]]


class FakeConsumer:
    def __init__(self, broker: LocalBroker, group: str, partition_eof: bool = False) -> None:
        self.broker, self.group = broker, group
        self.partition_eof = partition_eof
        self._assigned: list[TopicPartition] = []
        self._position: dict[tuple[str, int], int] = {}
        self._paused: set[tuple[str, int]] = set()
        self._eof_sent: set[tuple[str, int]] = set()
        self._on_revoke = None
        self.closed = False
        self.commits: list[list[TopicPartition]] = []

    def subscribe(self, topics: list[str], on_assign=None, on_revoke=None, on_lost=None) -> None:
        self._on_revoke = on_revoke
        tps = [TopicPartition(t, p) for t in topics for p in range(self.broker.partitions.get(t, 1))]
        if on_assign:
            on_assign(self, tps)
        else:
            self.assign(tps)

    def assign(self, partitions: list[TopicPartition]) -> None:
        self._assigned = list(partitions)
        for tp in partitions:
            key = (tp.topic, tp.partition)
            if tp.offset >= 0:
                self._position[key] = tp.offset
            elif tp.offset == OFFSET_END:
                self._position[key] = len(self.broker.log[key])
            elif tp.offset == OFFSET_BEGINNING:
                self._position[key] = 0
            else:
                self._position[key] = self.broker.committed.get((self.group, *key), 0)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        kept = self._assigned
        self.assign(partitions)
        self._assigned = kept + self._assigned

    def unassign(self) -> None:
        self._assigned = []

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition) for tp in self._assigned]

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        out: list[Any] = []
        for tp in self._assigned:
            key = (tp.topic, tp.partition)
            if key in self._paused:
                continue
            entries = self.broker.log[key]
            while len(out) < num_messages and self._position[key] < len(entries):
                out.append(entries[self._position[key]])
                self._position[key] += 1
            if self.partition_eof and self._position[key] >= len(entries) and key not in self._eof_sent:
                self._eof_sent.add(key)
                out.append(FakeMessage(tp.topic, tp.partition, self._position[key], None, None, _error=_Eof()))
        return out

    def poll(self, timeout: float = -1) -> Any:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def pause(self, partitions: list[TopicPartition]) -> None:
        self._paused |= {(tp.topic, tp.partition) for tp in partitions}

    def resume(self, partitions: list[TopicPartition]) -> None:
        self._paused -= {(tp.topic, tp.partition) for tp in partitions}

    def seek(self, tp: TopicPartition) -> None:
        self._position[(tp.topic, tp.partition)] = tp.offset

    def committed(self, partitions: list[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.broker.committed.get((self.group, tp.topic, tp.partition),
                                                                                  -1001)) for tp in partitions]

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self._position[(tp.topic, tp.partition)]) for tp in partitions]

    def commit(self, offsets: list[TopicPartition], asynchronous: bool = True) -> None:
        self.commits.append(offsets)
        for tp in offsets:
            self.broker.committed[(self.group, tp.topic, tp.partition)] = tp.offset

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float = -1, cached: bool = False) -> tuple:
        return 0, len(self.broker.log[(tp.topic, tp.partition)])

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        """Only the "latest" question (OFFSET_END, -1): where each partition ends."""
        assert all(tp.offset == -1 for tp in partitions), "only the end is asked for"
        return [TopicPartition(tp.topic, tp.partition, len(self.broker.log[(tp.topic, tp.partition)]))
                for tp in partitions]

    def close(self) -> None:
        if self._on_revoke and self._assigned:
            self._on_revoke(self, self.assignment())
        self.closed = True


@dataclass
class _TopicMeta:
    partitions: dict
    error: Any = None


@dataclass
class _ClusterMeta:
    topics: dict


class FakeProducer:
    """Appends to the LocalBroker when its delivery callbacks are served; ``fail`` injects errors."""

    def __init__(self, broker: LocalBroker, on_delivery=None) -> None:
        self.broker = broker
        self.on_delivery = on_delivery  # the producer-wide callback (``on_delivery`` in the config)
        self._queue: list[tuple] = []
        self.fail: list[KafkaError] = []  # the next deliveries fail with these errors, in order
        self.hold = False  # while True nothing is acknowledged (a slow or absent broker)
        self.closed = False
        self.fenced = False
        self.transactions: list[str] = []

    def __len__(self) -> int:
        return len(self._queue)

    # transactions: what was called, in order; ``fenced`` makes each raise librdkafka's fatal error
    def init_transactions(self, timeout: float = -1) -> None:
        self._transaction("init")

    def begin_transaction(self) -> None:
        self._transaction("begin")

    def commit_transaction(self, timeout: float = -1) -> None:
        self.poll()
        self._transaction("commit")

    def abort_transaction(self, timeout: float = -1) -> None:
        self._queue.clear()
        self._transaction("abort")

    def _transaction(self, step: str) -> None:
        if self.fenced:
            raise KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True))
        self.transactions.append(step)

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, headers=None,
                on_delivery=None, partition: int | None = None) -> None:
        if isinstance(headers, dict):  # what a consumer reads back is a list of (name, value)
            headers = list(headers.items())
        self._queue.append((topic, value, key, headers, on_delivery or self.on_delivery, partition))

    def poll(self, timeout: float = 0) -> int:
        if self.closed:  # the real clients crash or raise: the service must not get here
            raise RuntimeError("producer used after close")
        if self.hold:
            return 0
        queue, self._queue = self._queue, []
        for topic, value, key, headers, callback, partition in queue:
            if self.fail:
                err = self.fail.pop(0)
                if callback:
                    callback(err, FakeMessage(topic, -1, -1, key, value, headers))
                continue
            msg = self.broker.append(topic, value, key, headers, partition)
            if callback:
                callback(None, msg)
        return len(queue)

    def flush(self, timeout: float = -1) -> int:
        self.poll()
        return len(self._queue)

    def close(self) -> bool:
        self.flush()
        self.closed = True
        return True

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> _ClusterMeta:
        names = [topic] if topic else list(self.broker.partitions)
        return _ClusterMeta({t: _TopicMeta({p: None for p in range(self.broker.partitions.get(t, 1))})
                             for t in names})


class FakeBatchProducer(FakeProducer):
    """:class:`consumer.rdkafka.BatchProducer`'s interface over the same queue: failures reach
    ``on_failed`` as (topic, code, text, key, value)."""

    def __init__(self, broker: LocalBroker, on_failed, on_error) -> None:
        super().__init__(broker, self._report)
        self.on_failed, self.on_error = on_failed, on_error
        self.refuse: set[int] = set()  # positions in the next batch that librdkafka would not take

    def _report(self, err, msg) -> None:
        if err is not None:
            self.on_failed(msg.topic(), err.code(), err.str(), msg.key(), msg.value())

    def produce_batch(self, topic: str, keys, key_starts, key_ends, values, starts, ends, partition=None):
        """Copies each message, as librdkafka does (``keys``, ``values``: bytes or uint8 arrays)."""
        refuse, self.refuse = self.refuse, set()
        for k, (ka, kb, va, vb) in enumerate(zip(key_starts.tolist(), key_ends.tolist(), starts.tolist(),
                                                  ends.tolist(), strict=True)):
            if k not in refuse:
                self.produce(topic, bytes(values[va:vb]), bytes(keys[ka:kb]), partition=partition)
        return np.array(sorted(refuse), dtype=np.int64)


class FakeClients:
    """What :class:`consumer.process.Process` asks its ``clients`` for."""

    def __init__(self, broker: LocalBroker, group: str = "activestream") -> None:
        self.broker, self.group = broker, group
        self.producers: list[FakeProducer] = []

    def consumer(self, role: str) -> FakeConsumer:
        return FakeConsumer(self.broker, self.group if role == "features" else f"{self.group}-{role}")

    def producer(self, on_delivery=None) -> FakeProducer:
        self.producers.append(FakeProducer(self.broker, on_delivery))
        return self.producers[-1]

    def model_producer(self) -> FakeProducer:
        return self.producer()

    def batch_producer(self, on_failed, on_error) -> FakeBatchProducer:
        self.producers.append(FakeBatchProducer(self.broker, on_failed, on_error))
        return self.producers[-1]

    def preflight(self) -> None:
        """Nothing to check: the fake broker has no security."""

    def ensure_lease_topic(self, topic: str) -> None:
        self.broker.partitions.setdefault(topic, 1)

    def reader(self) -> FakeConsumer:
        return FakeConsumer(self.broker, f"{self.group}-recovery", partition_eof=True)
