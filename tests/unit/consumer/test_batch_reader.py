"""The batch reader against a real broker: every record of the assigned partitions comes out once,
in order per partition, with the value, key, offset, timestamp and headers that confluent-kafka's
own consumer sees; and a consumer it cannot vouch for gets no reader."""

from __future__ import annotations

import contextlib
import ctypes
import time
import uuid

import numpy as np
import orjson
import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, Producer, TopicPartition

from consumer import batch_reader, messages
from consumer.demo.broker import CLIENT_SETTINGS, create_topics
from tests.fakes import FakeConsumer, LocalBroker

pytestmark = pytest.mark.usefixtures("kafka_bootstrap")


def _records(bootstrap: str, topic: str, n: int) -> list[tuple[int, bytes | None, bytes | None, list | None, int]]:
    """n records over the topic's partitions: (partition, key, value, headers, timestamp ms); a few
    with a null key, a null value, an empty value, or headers."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent = []
    for i in range(n):
        key = None if i % 97 == 5 else f"id-{i}".encode()
        value = None if i % 101 == 7 else (b"" if i % 103 == 9 else f'{{"id":"id-{i}","x":{i}}}'.encode())
        headers = [("trace", f"t{i}".encode()), ("empty", None)] if i % 89 == 3 else None
        ts = 1_700_000_000_000 + i
        partition = i % 3
        p.produce(topic, key=key, value=value, headers=headers, partition=partition, timestamp=ts)
        sent.append((partition, key, value, headers, ts))
    assert p.flush(30) == 0
    return sent


# the consumers and readers a test opened, closed at its end if it failed before it closed them
_OPENED: list[Consumer | batch_reader.BatchReader] = []


@pytest.fixture(autouse=True)
def _closed_at_the_end():
    """Last opened, first closed (a reader before its consumer): a consumer destroyed with a reader's
    queue still on it waits on that queue for good, whenever the garbage collector takes it, so a test
    failing mid-way would hang a later one instead of failing."""
    yield
    for opened in reversed(_OPENED):
        with contextlib.suppress(RuntimeError):  # a consumer the test closed; a closed reader has nothing left
            opened.close()
    _OPENED.clear()


def _consumer(bootstrap: str, client_id: str = "activestream-features") -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "client.id": client_id,
                  **CLIENT_SETTINGS, "enable.auto.commit": "false"})
    _OPENED.append(c)
    return c


def _reading(bootstrap: str, topic: str, partitions: int = 1) -> tuple[Consumer, batch_reader.BatchReader]:
    """A consumer assigned every partition of ``topic`` from its start, and its reader. Records
    written to the topic before would be fetched between the assignment and the forward on a
    busy machine, onto the consumer queue (where the service takes them first): the tests write
    theirs after."""
    c = _consumer(bootstrap)
    reader = batch_reader.attach(c, "activestream-features", topic)
    assert reader is not None
    _OPENED.append(reader)
    reader.warm_up()
    parts = [TopicPartition(topic, p, 0) for p in range(partitions)]
    c.assign(parts)
    reader.forward(parts)
    return c, reader


def _reading_new_topic(bootstrap: str, values: list[bytes], stamps: list[int] | None = None,
                       ) -> tuple[str, Consumer, batch_reader.BatchReader]:
    """A new one-partition topic read by a consumer and its reader, then ``values`` written to it
    (with these timestamps, ms, if given)."""
    topic = f"reader-{uuid.uuid4().hex[:6]}"
    create_topics(bootstrap, [topic])
    c, reader = _reading(bootstrap, topic)
    p = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        p.produce(topic, value=value, **({"timestamp": stamps[i]} if stamps else {}))
    assert p.flush(30) == 0
    return topic, c, reader


def test_every_record_once_in_partition_order_with_its_key_value_timestamp_and_headers(kafka_bootstrap):
    topic = f"reader-{uuid.uuid4().hex[:6]}"
    create_topics(kafka_bootstrap, [topic], partitions=3)
    c, reader = _reading(kafka_bootstrap, topic, partitions=3)
    sent = _records(kafka_bootstrap, topic, 1500)
    got: dict[int, list] = {0: [], 1: [], 2: []}
    deadline = time.monotonic() + 30
    while sum(map(len, got.values())) < len(sent) and time.monotonic() < deadline:
        assert c.poll(0) is None  # records go to the reader, not to the consumer queue
        batch = reader.read(200, 0.1)
        if batch is None:
            continue
        assert len(batch) <= 200
        for k, msg in enumerate(batch):
            assert batch.values[k] == msg.value()
            assert batch.blob[batch.bounds[k]:batch.bounds[k + 1]] == (msg.value() or b"")
            got[msg.partition()].append((msg.offset(), msg.key(), msg.value(), msg.headers(), msg.timestamp()))
        batch.release()
    for partition in range(3):
        expected = [(key, value, headers, ts) for p, key, value, headers, ts in sent if p == partition]
        offsets = [g[0] for g in got[partition]]
        assert offsets == list(range(len(expected)))  # each once, in order
        for (_, key, value, headers, stamp), (k, v, h, ts) in zip(got[partition], expected, strict=True):
            assert (key, value, stamp) == (k, v, (TIMESTAMP_CREATE_TIME, ts))
            assert headers == h
    reader.close()
    c.close()


def test_times_of_a_batch_fall_back_where_a_message_has_none(kafka_bootstrap):
    _, c, reader = _reading_new_topic(kafka_bootstrap, [b"{}"] * 3, [1_700_000_000_000 + 1000 * i for i in range(3)])
    batch = None
    deadline = time.monotonic() + 30
    while batch is None and time.monotonic() < deadline:
        batch = reader.read(10, 0.1)
    assert batch is not None and len(batch) >= 1
    times = messages._times_of(batch, now=5.0)  # what a record without "ts" gets in the loop
    assert times(np.arange(len(batch))).tolist() == [1_700_000_000.0 + i for i in range(len(batch))]
    batch.kinds[0] = 0  # TIMESTAMP_NOT_AVAILABLE
    assert times(np.array([0])).tolist() == [5.0]
    reader.close()  # frees the batch still held, before the consumer closes
    c.close()


def test_no_reader_for_a_fake_or_for_a_handle_it_cannot_name(kafka_bootstrap):
    assert batch_reader.attach(FakeConsumer(LocalBroker(), "g"), "activestream-features", "t") is None
    c = _consumer(kafka_bootstrap, client_id="someone-else")
    assert batch_reader.attach(c, "activestream-features", "t") is None
    c.close()


def test_named_handle_a_pointer_into_unmapped_or_foreign_memory_is_refused_without_a_crash():
    lib = batch_reader._library()
    foreign = ctypes.create_string_buffer(b"activestream-features#consumer-1", 64 * 1024)  # mapped, not a handle
    for rk in (0, 0x10, 2**47 - 4096, ctypes.addressof(foreign)):
        assert not batch_reader._named_handle(lib, rk, "activestream-features")


def test_handle_of_an_object_with_another_layout_is_a_pointer_the_check_refuses(kafka_bootstrap):
    lib = batch_reader._library()
    assert batch_reader._handle_of(object()) == 0  # no room for a pointer after the object's head
    for other in (bytearray(b"x" * 64), [1, 2, 3], 10**30):  # the field after the head is a size, not a handle
        assert not batch_reader._named_handle(lib, batch_reader._handle_of(other), "activestream-features")
    c = _consumer(kafka_bootstrap)
    assert batch_reader._named_handle(lib, batch_reader._handle_of(c), "activestream-features")
    c.close()


def test_read_memory_reads_mapped_bytes_and_refuses_unmapped_ones():
    buf = ctypes.create_string_buffer(b"abcdef")
    assert batch_reader._read_memory(ctypes.addressof(buf), 6) == b"abcdef"
    assert batch_reader._read_memory(0x10, 8) is None
    assert batch_reader._read_memory(2**64 - 8, 8) is None


def test_a_read_returns_what_is_there_without_waiting_for_a_full_batch(kafka_bootstrap):
    _, c, reader = _reading_new_topic(kafka_bootstrap, [f"{i}".encode() for i in range(5)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        started = time.monotonic()
        batch = reader.read(2000, 5.0)
        if batch is not None:
            assert time.monotonic() - started < 2.5  # back with what came, not after the 5 s wait
            got += list(batch.values)
    assert got == [f"{i}".encode() for i in range(5)]
    reader.close()
    c.close()


class _HeldBack:
    """The service's reader of ``topic`` with its partitions' forwarding held back until
    :meth:`release`, and the records read through it counted (``through``)."""

    def __init__(self, monkeypatch, topic: str) -> None:
        self.deferred: list = []
        self.through: list[int] = []
        forward = self._forward = batch_reader.BatchReader.forward
        read = batch_reader.BatchReader.read

        def held(reader, parts):
            if reader.topic == topic:
                self.deferred.append((reader, parts))
            else:
                forward(reader, parts)

        def counted(reader, most, timeout_s):
            batch = read(reader, most, timeout_s)
            if reader.topic == topic:
                self.through.append(len(batch) if batch else 0)
            return batch

        monkeypatch.setattr(batch_reader.BatchReader, "forward", held)
        monkeypatch.setattr(batch_reader.BatchReader, "read", counted)

    def release(self) -> None:
        for reader, parts in self.deferred:
            self._forward(reader, parts)


def test_records_fetched_before_the_forward_are_scored_first_through_the_consumer_each_once(
        kafka_bootstrap, tmp_path, monkeypatch):
    from consumer.roles import service_for
    from tests import kafka_helpers as kafka

    topics = kafka.unique_topics(kafka_bootstrap)
    records, _ = kafka.stream(1000)
    kafka.produce_features(kafka_bootstrap, topics["features"], records[:500])
    held = _HeldBack(monkeypatch, topics["features"])
    service = service_for(kafka.settings_for(kafka_bootstrap, topics, tmp_path, batch_size=100), serve_http=False)
    service.start()
    totals = service.totals
    try:
        assert service.io.reader is not None
        kafka.run_until(service, lambda: totals.get("records_scored") >= 200 and held.deferred, what="200 unforwarded")
        assert sum(held.through) == 0
        held.release()  # the rest of the 500 already sit on the consumer's queue
        kafka.produce_features(kafka_bootstrap, topics["features"], records[500:])
        # newer records wait in the reader while older ones remain on the consumer's queue
        kafka.wait_for(lambda: service.io.reader.queued() > 0, 30, "nothing fetched for the reader")
        kafka.run_until(service, lambda: totals.get("records_scored") >= 1000, what="every record scored")
    finally:
        service.request_stop()
        service.shutdown()
    assert sum(held.through) > 0
    predictions = [orjson.loads(m.value()) for m in kafka.read_all(kafka_bootstrap, topics["predictions"], expect=1000)]
    offsets = [int(p["source"].rsplit(":", 1)[1]) for p in predictions]
    assert offsets == list(range(1000))  # each once, in the partition's order


def test_labels_fetched_before_the_forward_are_applied_first_through_the_consumer_each_once(
        kafka_bootstrap, tmp_path, monkeypatch):
    from confluent_kafka import Producer

    from consumer.roles import service_for
    from tests import kafka_helpers as kafka

    topics = kafka.unique_topics(kafka_bootstrap)
    records, truth = kafka.stream(400)
    held = _HeldBack(monkeypatch, topics["labels"])
    # δ large: nearly every record asks for its label
    service = service_for(kafka.settings_for(kafka_bootstrap, topics, tmp_path, batch_size=100,
                                         learner_params={"delta": 100.0}), serve_http=False)
    service.start()
    totals = service.totals
    p = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})

    def answer(ids):
        for rid in ids:
            p.produce(topics["labels"], key=rid.encode(), value=orjson.dumps({"id": rid, "label": truth[rid]}))
        assert p.flush(10) == 0

    try:
        assert service.io.label_reader is not None
        kafka.produce_features(kafka_bootstrap, topics["features"], records)
        kafka.run_until(service, lambda: totals.get("records_scored") >= 400 and held.deferred, what="scored")
        requested = [r["id"] for r in (orjson.loads(m.value()) for m in
                                       kafka.read_all(kafka_bootstrap, topics["label_requests"],
                                                      expect=int(totals.get("label_requests"))))]
        half = len(requested) // 2
        answer(requested[:half])
        kafka.run_until(service, lambda: totals.get("labels.applied") >= 50, what="labels through the consumer")
        assert sum(held.through) == 0
        held.release()  # the rest of the first half already sit on the consumer's queue
        answer(requested[half:])
        kafka.wait_for(lambda: service.io.label_reader.queued() > 0, 30, "no label fetched for the reader")
        kafka.run_until(service, lambda: totals.get("labels.applied") >= len(requested), what="every label applied")
        service.checkpoint()
    finally:
        service.request_stop()
        service.shutdown()
    assert sum(held.through) > 0
    assert len(requested) > 300 and totals.get("labels.applied") == len(requested) == service.learner.labels_
    assert totals.get("labels.duplicate") == totals.get("labels.unknown") == 0
    assert service.offsets.next[(topics["labels"], 0)] == len(requested)  # every label's offset, in order


def test_after_the_reader_closes_its_partitions_come_through_the_consumer_again(kafka_bootstrap):
    topic, c, reader = _reading_new_topic(kafka_bootstrap, [b"before"])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        batch = reader.read(10, 1.0)
        if batch is not None:
            got += list(batch.values)
            batch.release()
    assert got == [b"before"]
    reader.close()
    p = Producer({"bootstrap.servers": kafka_bootstrap})
    p.produce(topic, value=b"after")
    assert p.flush(30) == 0
    after: list[bytes] = []
    deadline = time.monotonic() + 30
    while not after and time.monotonic() < deadline:
        after += [m.value() for m in c.consume(10, 1.0) if m.error() is None]
    assert after == [b"after"]
    c.close()
