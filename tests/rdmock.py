"""librdkafka's built-in mock Kafka cluster, driven through ctypes, for fault-injection tests.

The confluent-kafka wheel bundles librdkafka with its ``rd_kafka_mock_*`` API; this wraps the few
calls the tests need: create topics, take brokers down and up, slow them down, inject request errors. The cluster
listens on 127.0.0.1 (random ports) and any client reaches it through ``bootstraps``.
"""

from __future__ import annotations

import ctypes
import glob
import os

import confluent_kafka

__all__ = ["ApiKey", "MockCluster"]


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
