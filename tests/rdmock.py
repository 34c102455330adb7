"""librdkafka's built-in mock Kafka cluster, driven through ctypes, for fault-injection tests.

The confluent-kafka wheel bundles librdkafka with its ``rd_kafka_mock_*`` API; this wraps the few
calls the tests need: create topics, take brokers down and up, slow them down, inject request errors. The cluster
listens on 127.0.0.1 (random ports) and any client reaches it through ``bootstraps``.

:class:`MockBroker` runs one in a process of its own (``python -m tests.rdmock TOPIC:PARTITIONS ...``),
for runs whose clients are other processes. Its memory is bounded: each partition keeps only its
newest ~5 MB (or 100,000 batches) of records, so a run of hours measures the clients, not a broker
that holds every record (the embedded Tansu broker keeps them all, in memory).
"""

from __future__ import annotations

import ctypes
import glob
import os
import signal
import subprocess
import sys

import confluent_kafka

__all__ = ["ApiKey", "MockBroker", "MockCluster"]


class ApiKey:
    Produce = 0
    Fetch = 1
    ListOffsets = 2
    Metadata = 3
    OffsetCommit = 8
    OffsetFetch = 9
    FindCoordinator = 10
    JoinGroup = 11
    Heartbeat = 12
    SyncGroup = 14


def _library() -> ctypes.CDLL:
    here = os.path.dirname(confluent_kafka.__file__)
    found = glob.glob(os.path.join(here, "..", "confluent_kafka.libs", "librdkafka*.so*"))
    lib = ctypes.CDLL(os.path.realpath(found[0]) if found else "librdkafka.so.1")
    p = ctypes.c_void_p
    sig = {
        "rd_kafka_conf_new": (p, []),
        "rd_kafka_conf_set": (ctypes.c_int, [p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
        "rd_kafka_new": (p, [ctypes.c_int, p, ctypes.c_char_p, ctypes.c_size_t]),
        "rd_kafka_destroy": (None, [p]),
        "rd_kafka_mock_cluster_new": (p, [p, ctypes.c_int]),
        "rd_kafka_mock_cluster_destroy": (None, [p]),
        "rd_kafka_mock_cluster_bootstraps": (ctypes.c_char_p, [p]),
        "rd_kafka_mock_topic_create": (ctypes.c_int, [p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
        "rd_kafka_mock_broker_set_down": (ctypes.c_int, [p, ctypes.c_int32]),
        "rd_kafka_mock_broker_set_up": (ctypes.c_int, [p, ctypes.c_int32]),
        "rd_kafka_mock_broker_set_rtt": (ctypes.c_int, [p, ctypes.c_int32, ctypes.c_int]),
        "rd_kafka_mock_push_request_errors_array": (
            None, [p, ctypes.c_int16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]),
        "rd_kafka_mock_partition_set_leader": (ctypes.c_int, [p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int32]),
        "rd_kafka_mock_group_initial_rebalance_delay_ms": (None, [p, ctypes.c_int32]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


_lib = _library()


class MockCluster:
    """An in-process mock cluster of ``brokers`` brokers (ids 1..n)."""

    def __init__(self, brokers: int = 3) -> None:
        self.brokers = brokers
        errstr = ctypes.create_string_buffer(512)
        conf = _lib.rd_kafka_conf_new()
        _lib.rd_kafka_conf_set(conf, b"log_level", b"0", errstr, 512)
        self._rk = _lib.rd_kafka_new(0, conf, errstr, 512)  # a producer handle owns the cluster
        if not self._rk:
            raise RuntimeError(errstr.value.decode())
        self._mc = _lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        _lib.rd_kafka_mock_group_initial_rebalance_delay_ms(self._mc, 0)
        self.bootstraps = _lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, topic: str, partitions: int = 1, replication: int = 1) -> None:
        if _lib.rd_kafka_mock_topic_create(self._mc, topic.encode(), partitions, replication):
            raise RuntimeError(f"cannot create {topic}")

    def broker_down(self, broker: int) -> None:
        _lib.rd_kafka_mock_broker_set_down(self._mc, broker)

    def broker_up(self, broker: int) -> None:
        _lib.rd_kafka_mock_broker_set_up(self._mc, broker)

    def set_rtt(self, ms: int) -> None:
        """Every broker answers each request ``ms`` later."""
        for broker in range(1, self.brokers + 1):
            _lib.rd_kafka_mock_broker_set_rtt(self._mc, broker, ms)

    def set_leader(self, topic: str, partition: int, broker: int) -> None:
        _lib.rd_kafka_mock_partition_set_leader(self._mc, topic.encode(), partition, broker)

    def push_request_errors(self, api_key: int, *errors: int) -> None:
        """The next len(errors) requests of ``api_key`` fail with these Kafka error codes."""
        arr = (ctypes.c_int * len(errors))(*errors)
        _lib.rd_kafka_mock_push_request_errors_array(self._mc, api_key, len(errors), arr)

    def close(self) -> None:
        if self._mc:
            _lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk:
            _lib.rd_kafka_destroy(self._rk)
            self._rk = None


class MockBroker:
    """A one-broker mock cluster in a process of its own, holding ``topics`` (name → partitions);
    ``bootstrap``, ``pid`` (its process: to stop and resume it, to read its memory), ``stop()``."""

    def __init__(self, topics: dict[str, int]) -> None:
        args = [f"{name}:{partitions}" for name, partitions in topics.items()]
        self._proc = subprocess.Popen([sys.executable, "-m", "tests.rdmock", *args], stdout=subprocess.PIPE, text=True,
                                      cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.bootstrap = self._proc.stdout.readline().strip()
        if not self.bootstrap:
            raise RuntimeError(f"the mock broker did not start (exit {self._proc.wait()})")

    @property
    def pid(self) -> int:
        return self._proc.pid

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)  # a broker stopped by a fault still ends
            self._proc.terminate()
            self._proc.wait(10)

    def __enter__(self) -> MockBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str]) -> None:
    """Serve a mock cluster with the topics ``NAME:PARTITIONS`` until terminated; print its bootstrap."""
    cluster = MockCluster(brokers=1)
    for arg in argv:
        name, partitions = arg.rsplit(":", 1)
        cluster.create_topic(name, partitions=int(partitions))
    print(cluster.bootstraps, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while True:
            signal.pause()  # the cluster's own threads serve it; this one waits to be ended
    finally:
        cluster.close()


if __name__ == "__main__":
    main(sys.argv[1:])
