"""A simulated annotator: answers label requests with the ground truth after a delay, at a cost."""

from __future__ import annotations

import heapq
import threading
import time
import uuid

import orjson
from confluent_kafka import Consumer, Producer

__all__ = ["Annotator"]


class Annotator(threading.Thread):
    """Reads label requests and, ``delay_s`` seconds after each, produces its true label.

    A request seen twice (same id) is answered once. ``cost`` is stated on every label.
    """

    def __init__(self, bootstrap: str, requests_topic: str, labels_topic: str, truth: dict, delay_s: float,
                 cost: float, consumer_settings: dict) -> None:
        super().__init__(name="demo-annotator", daemon=True)
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"annotator-{uuid.uuid4().hex[:8]}",
                                   **consumer_settings})
        self.ready = threading.Event()  # set once the group has assigned the requests topic
        self._consumer.subscribe([requests_topic], on_assign=lambda c, parts: (c.assign(parts), self.ready.set()))
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
        self._labels_topic, self._truth = labels_topic, truth
        self._delay_s, self._cost = delay_s, cost
        self._due: list[tuple[float, str]] = []
        self._seen: set[str] = set()
        self._stop_event = threading.Event()
        self.answered = 0

    def run(self) -> None:
        while not self._stop_event.is_set():
            wait = 0.05 if not self._due else min(0.05, max(0.0, self._due[0][0] - time.monotonic()))
            for msg in self._consumer.consume(1000, wait):  # the consume timeout is the wait
                if msg.error() is not None or msg.value() is None:
                    continue
                rid = orjson.loads(msg.value())["id"]
                if rid not in self._seen and rid in self._truth:  # not another run's request
                    self._seen.add(rid)
                    heapq.heappush(self._due, (time.monotonic() + self._delay_s, rid))
            now = time.monotonic()
            while self._due and self._due[0][0] <= now:
                _, rid = heapq.heappop(self._due)
                self._producer.produce(self._labels_topic, key=rid.encode(), value=orjson.dumps(
                    {"id": rid, "label": self._truth[rid], "cost": self._cost}))
                self.answered += 1
            self._producer.poll(0)
        self._producer.close()  # flushes first
        self._consumer.close()

    @property
    def waiting(self) -> int:
        return len(self._due)

    @property
    def requested(self) -> int:
        return len(self._seen)

    def stop(self) -> None:
        self._stop_event.set()
