"""Helpers for tests against a real Kafka-protocol broker (Tansu, or $KAFKA_BOOTSTRAP)."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
from confluent_kafka import Consumer, Producer

from consumer.config import Settings, load_settings
from consumer.demo.broker import CLIENT_SETTINGS, create_topics


def unique_topics(bootstrap: str, partitions: int = 1) -> dict[str, str]:
    """Five fresh topics for one test."""
    tag = uuid.uuid4().hex[:8]
    names = {k: f"{k.replace('_', '-')}-{tag}" for k in
             ("features", "predictions", "label_requests", "labels", "dead_letters")}
    create_topics(bootstrap, list(names.values()), partitions)
    return names


def settings_for(bootstrap: str, topics: dict[str, str], checkpoint_dir: Path, **overrides) -> Settings:
    return load_settings(**{
        "bootstrap_servers": bootstrap, "topics": topics, "checkpoint_dir": checkpoint_dir,
        "group_id": f"g-{uuid.uuid4().hex[:8]}", "kafka_consumer": CLIENT_SETTINGS, "metrics_port": 0,
        "n_features": 8, "learner": "paa-1", "learner_params": {"delta": 0.3}, "classes": [-1, 1], **overrides,
    })


def stream(n: int, seed: int = 0, prefix: str = "r") -> tuple[list[tuple[str, list[float]]], dict[str, int]]:
    """n dense 8-feature records with a noiseless linear label."""
    rng = np.random.default_rng(seed)
    w = np.random.default_rng(99).standard_normal(8)
    X = rng.standard_normal((n, 8))
    y = np.where(X @ w > 0, 1, -1)
    records = [(f"{prefix}{i}", X[i].round(6).tolist()) for i in range(n)]
    return records, {rid: int(label) for (rid, _), label in zip(records, y, strict=True)}


def produce_features(bootstrap: str, topic: str, records) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for rid, x in records:
        p.produce(topic, key=rid.encode(), value=orjson.dumps({"id": rid, "features": x}))
    assert p.flush(30) == 0


def read_all(bootstrap: str, topic: str, expect: int | None = None, timeout_s: float = 30.0) -> list:
    """Every message of a topic, read to its end (or until ``expect`` messages have arrived)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:8]}",
                  "enable.partition.eof": "true", **CLIENT_SETTINGS})
    c.subscribe([topic])
    out, eof, deadline = [], set(), time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            for m in c.consume(5000, 0.2):
                if m.error() is None:
                    out.append(m)
                else:
                    eof.add(m.partition())
            if (expect is None and eof and len(eof) >= len(c.assignment())) or (expect and len(out) >= expect):
                return out
        raise TimeoutError(f"{topic}: {len(out)} messages after {timeout_s} s (expected {expect})")
    finally:
        c.close()


def run_until(services, condition: Callable[[], bool], timeout_s: float = 60.0, what: str = "") -> int:
    """Turn the service loop, or each of a list of services' loops in one thread as separate
    processes would, until ``condition()`` holds; returns the turns it took."""
    group = services if isinstance(services, list) else [services]
    deadline = time.monotonic() + timeout_s
    turns = 0
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met after {timeout_s} s: {what}")
        for service in group:
            service.run_once()
        turns += 1
    return turns


def wait_for(condition, timeout_s: float, message: str, state=lambda: "") -> None:
    """Wait until ``condition()`` holds, for what runs on its own clock (a broker, librdkafka's
    threads, another process): there is nothing to wait on but the condition itself."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{message} {state()}")
        time.sleep(0.2)


class Annotator:
    """Answers label requests with the ground truth."""

    def __init__(self, bootstrap: str, topics: dict[str, str], truth: dict[str, int]) -> None:
        self.truth, self.topics = truth, topics
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ann-{uuid.uuid4().hex[:8]}",
                                  **CLIENT_SETTINGS})
        self.consumer.subscribe([topics["label_requests"]])
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
        self.answered: list[str] = []

    def answer(self, timeout: float = 0.0) -> int:
        got = 0
        for m in self.consumer.consume(1000, timeout):
            if m.error() is not None or m.value() is None:
                continue
            rid = orjson.loads(m.value())["id"]
            self.producer.produce(self.topics["labels"], key=rid.encode(),
                                  value=orjson.dumps({"id": rid, "label": self.truth[rid]}))
            self.answered.append(rid)
            got += 1
        self.producer.flush(10)
        return got

    def start(self) -> Annotator:
        """Answer in a background thread until :meth:`close`."""
        self._stop = threading.Event()

        def loop() -> None:
            while not self._stop.is_set():
                self.answer(timeout=0.05)

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if hasattr(self, "_thread"):
            self._stop.set()
            self._thread.join()
        self.consumer.close()


# librdkafka's group debug lines (client property debug=cgrp) that name who left a group and who leads it
_LEFT = re.compile(r"leave group=true, has joined=true, (\S+?), join-state")
_LEADER = re.compile(r"\|([\w.-]+#consumer-\d+)\|.*JoinGroup response: GenerationId \d+, Protocol \S*, "
                     r"LeaderId (\S+?)(?: \(me\))?, my MemberId (\S+?),")


def ghost_leader(debug_log: str) -> str | None:
    """The member id that the broker, in its last answer to some consumer, still named the leader of
    that consumer's group although the member had left it, from librdkafka's ``debug=cgrp`` lines;
    None if there is none.

    The embedded broker (Tansu) can keep a member that sent LeaveGroup while its JoinGroup was being
    held as the leader of the next generation. That leader never sends SyncGroup, so the other
    members are answered "rebalance in progress" and the group is never assigned, however long they
    wait (no session or rebalance timeout evicts it); a real Kafka coordinator drops such a member.
    This tells that broker defect apart from a consumer that does not join."""
    left: set[str] = set()
    last: dict[str, str | None] = {}  # consumer instance -> the departed member its last answer named leader
    for line in debug_log.splitlines():
        if (gone := _LEFT.search(line)) is not None:
            left.add(gone.group(1))
        elif (join := _LEADER.search(line)) is not None:
            instance, leader, mine = join.groups()
            last[instance] = leader if leader != mine and leader in left else None
    return next((leader for leader in last.values() if leader is not None), None)
