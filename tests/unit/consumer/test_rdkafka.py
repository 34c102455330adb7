"""The batch producer against librdkafka's mock cluster: what it sends arrives whole, in order, in
the partition of its key, and what fails comes back with its bytes."""

from __future__ import annotations

import time

import orjson
import pytest
from confluent_kafka import KafkaError, Producer

from consumer import rdkafka
from consumer.config import load_settings
from consumer.fastwrite import pack
from consumer.kafka import producer_config
from tests.kafka_helpers import read_all
from tests.rdmock import ApiKey, MockCluster


@pytest.fixture
def cluster():
    mc = MockCluster(brokers=1)
    yield mc
    mc.close()


def producer(cluster: MockCluster, failed: list, **conf) -> rdkafka.BatchProducer:
    lib = rdkafka.load()
    assert lib is not None  # the confluent-kafka wheel ships librdkafka
    return rdkafka.BatchProducer(lib, {"bootstrap.servers": cluster.bootstraps, "linger.ms": "1", **conf},
                                 lambda *a: failed.append(a), lambda *a: None)


def send(p: rdkafka.BatchProducer, topic: str, keys: list[bytes], values: list[bytes]):
    k, v = pack(keys), pack(values)
    return p.produce_batch(topic, k.data, k.starts, k.ends, v.data, v.starts, v.ends)


def test_a_batch_arrives_whole_in_order_and_in_the_partition_of_each_key(cluster):
    cluster.create_topic("out", partitions=4)
    cluster.create_topic("reference", partitions=4)
    keys = [f"id-{i}".encode() for i in range(500)] + ["ünï".encode(), b""]
    values = [b'{"n":%d}' % i for i in range(len(keys) - 1)] + [b""]
    failed: list = []
    p = producer(cluster, failed)
    assert send(p, "out", keys, values).size == 0
    assert p.flush(10) == 0 and len(p) == 0
    p.poll(0)
    assert failed == []
    p.close()

    ref = Producer({"bootstrap.servers": cluster.bootstraps, "linger.ms": 1})
    for key in keys:
        ref.produce("reference", b"", key)
    ref.flush(10)
    partition_of = {m.key(): m.partition() for m in read_all(cluster.bootstraps, "reference", expect=len(keys))}

    got = read_all(cluster.bootstraps, "out", expect=len(keys))
    assert sorted((m.key(), m.value()) for m in got) == sorted(zip(keys, values, strict=True))
    got = [m for m in got if m.key()]  # an empty key is placed at random (librdkafka's consistent_random)
    assert all(m.partition() == partition_of[m.key()] for m in got)  # the same partitioner as confluent-kafka's
    for part in range(4):
        mine = [m.value() for m in sorted(got, key=lambda m: m.offset()) if m.partition() == part]
        assert mine == [v for k, v in zip(keys, values, strict=True) if k and partition_of[k] == part]


def java_partition(key: bytes, partitions: int) -> int:
    """The partition the Java client's default partitioner picks for a key: Kafka's murmur2
    (``org.apache.kafka.common.utils.Utils.murmur2``), made positive, modulo the partitions."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(key)) & mask
    whole = len(key) // 4 * 4
    for i in range(0, whole, 4):
        k = int.from_bytes(key[i:i + 4], "little") * m & mask
        k = (k ^ k >> 24) * m & mask
        h = (h * m & mask) ^ k
    if len(key) % 4:
        h = (h ^ int.from_bytes(key[whole:], "little")) * m & mask
    h = (h ^ h >> 13) * m & mask
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions


def test_the_reference_partitioner_gives_kafkas_own_hashes():
    # Kafka's UtilsTest.testMurmur2, as signed 32-bit values, made positive
    for key, signed in ((b"21", -973932308), (b"foobar", -790332482), (b"a-little-bit-long-string", -985981536),
                        (b"a-little-bit-longer-string", -1486304829), (b"abc", 479470107),
                        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971)):
        assert java_partition(key, 2**31 - 1) == (signed & 0x7FFFFFFF) % (2**31 - 1)


def test_the_service_producer_puts_each_id_where_the_java_client_would(cluster):
    cluster.create_topic("out", partitions=7)
    settings = load_settings(bootstrap_servers=cluster.bootstraps)
    keys = [f"r{i}".encode() for i in range(300)] + ["ünï".encode(), b"x" * 41]
    p = rdkafka.BatchProducer(rdkafka.load(), producer_config(settings), print, print)
    assert send(p, "out", keys, [b"v"] * len(keys)).size == 0
    assert p.flush(10) == 0
    p.close()
    got = read_all(cluster.bootstraps, "out", expect=len(keys))
    assert {m.key(): m.partition() for m in got} == {key: java_partition(key, 7) for key in keys}


def test_a_failed_delivery_comes_back_with_its_topic_error_key_and_value(cluster):
    cluster.create_topic("out", partitions=1)
    failed: list = []
    p = producer(cluster, failed, **{"retries": "0"})
    # one error for each message: on a busy machine the two can go in two requests (linger.ms 1)
    cluster.push_request_errors(ApiKey.Produce, *[KafkaError.TOPIC_AUTHORIZATION_FAILED] * 2)
    send(p, "out", [b"k1", b"k2"], [b"v1", b"v2"])
    deadline = time.monotonic() + 10
    while len(failed) < 2 and time.monotonic() < deadline:
        p.poll(0.1)
    p.close()
    assert sorted((t, code, key, value, partition) for t, code, _, key, value, partition in failed) == [
        ("out", KafkaError.TOPIC_AUTHORIZATION_FAILED, b"k1", b"v1", 0),
        ("out", KafkaError.TOPIC_AUTHORIZATION_FAILED, b"k2", b"v2", 0)]
    assert all("authoriz" in text.lower() for _, _, text, _, _, _ in failed)


def test_a_full_queue_hands_back_what_it_did_not_take(cluster):
    cluster.create_topic("out", partitions=1)
    failed: list = []
    p = producer(cluster, failed, **{"queue.buffering.max.messages": "3"})
    refused = send(p, "out", [b"a", b"b", b"c", b"d", b"e"], [b"1", b"2", b"3", b"4", b"5"])
    assert refused.tolist() == [3, 4]
    assert p.flush(10) == 0
    p.close()
    assert sorted(m.value() for m in read_all(cluster.bootstraps, "out", expect=3)) == [b"1", b"2", b"3"]


def test_a_property_librdkafka_refuses_is_named():
    lib = rdkafka.load()
    with pytest.raises(ValueError, match=r"no\.such\.property"):
        rdkafka.BatchProducer(lib, {"bootstrap.servers": "127.0.0.1:1", "no.such.property": "1"}, print, print)
    with pytest.raises(ValueError, match=r"linger\.ms"):
        rdkafka.BatchProducer(lib, {"bootstrap.servers": "127.0.0.1:1", "linger.ms": "soon"}, print, print)


def test_a_closed_producer_is_inert_and_refuses_to_produce(cluster):
    # librdkafka has no client behind a closed producer: a call that reached it would crash the process
    p = producer(cluster, [])
    p.close()
    p.close()
    p.poll(0.0)
    assert p.flush(0.1) == 0 and len(p) == 0
    with pytest.raises(ValueError, match="closed"):
        send(p, "out", [b"k"], [b"v"])


def test_statistics_reach_on_stats_while_polling(cluster):
    cluster.create_topic("out", partitions=1)
    stats: list[bytes] = []
    lib = rdkafka.load()
    p = rdkafka.BatchProducer(lib, {"bootstrap.servers": cluster.bootstraps, "linger.ms": "1",
                                    "statistics.interval.ms": "100"}, print, print, stats.append)
    send(p, "out", [b"k"], [b"v"])
    assert p.flush(10) == 0
    deadline = time.monotonic() + 10
    while not any(b"Produce" in s and orjson.loads(s)["txmsgs"] == 1 for s in stats) and time.monotonic() < deadline:
        p.poll(0.05)
    p.close()
    sent = [orjson.loads(s) for s in stats if orjson.loads(s)["txmsgs"] == 1]
    assert sent, "no statistics after the message was acknowledged"
    assert sum(b["req"].get("Produce", 0) for b in sent[-1]["brokers"].values()) >= 1

