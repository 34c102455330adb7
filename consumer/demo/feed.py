"""What the demo streams: a bundled synthetic drifting stream, or LIBSVM files.

The bundled stream has ten numeric features and one categorical one, sent as named features
(``{"f0": 0.12, ..., "segment": "B"}``, hashed by the service). Its true boundary rotates slowly and
jumps once at two thirds of the stream, so a learner that stops learning falls behind; about 30 %
of the records are positive.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import orjson
from confluent_kafka import Producer

from learners.datasets import Dataset

__all__ = ["DemoStream", "Feeder", "drifting_stream", "from_dataset"]


@dataclass(frozen=True, slots=True)
class DemoStream:
    """Records as the features topic receives them, with their ground truth."""

    values: list[bytes]  # JSON feature records, id "r<i>"
    truth: dict[str, object]  # id → label
    classes: list  # binary: [negative, positive]
    n_features: int
    name: str
    change_at: int | None = None  # the record at which the concept jumps (the bundled stream's)


def drifting_stream(n: int, seed: int = 0, id_prefix: str = "r") -> DemoStream:
    rng = np.random.default_rng(seed)
    d = 10
    w0, w1 = rng.standard_normal(d), rng.standard_normal(d)
    segments = np.array(["A", "B", "C"])
    segment_effect = {"A": 0.8, "B": -0.4, "C": 0.0}
    X = rng.standard_normal((n, d)).round(4)
    seg = segments[rng.integers(0, 3, n)]
    values, truth = [], {}
    for i in range(n):
        t = i / max(n - 1, 1)
        w = np.cos(t) * w0 + np.sin(t) * w1  # slow rotation of the boundary
        if i >= 2 * n // 3:
            w = -w[::-1]  # an abrupt change
        margin = X[i] @ w + segment_effect[seg[i]] - 1.0 + 0.3 * rng.standard_normal()
        rid = f"{id_prefix}{i}"
        truth[rid] = 1 if margin > 0 else -1
        record = {f"f{k}": float(X[i, k]) for k in range(d)} | {"segment": str(seg[i])}
        values.append(orjson.dumps({"id": rid, "features": record}))
    return DemoStream(values, truth, [-1, 1], 2**20, f"synthetic drifting stream ({n} records)", 2 * n // 3)


def from_dataset(data: Dataset, classes: list, limit: int | None = None, id_prefix: str = "r") -> DemoStream:
    """A LIBSVM dataset as sparse feature records (``{"indices": [...], "values": [...]}``)."""
    n = data.n if limit is None else min(limit, data.n)
    values, truth = [], {}
    for i in range(n):
        idx, val = data.rows.row(i)
        rid = f"{id_prefix}{i}"
        values.append(orjson.dumps({"id": rid, "features": {"indices": idx.tolist(), "values": val.tolist()}}))
        truth[rid] = data.labels[i].item()
    return DemoStream(values, truth, classes, data.rows.n_features, data.name)


class Feeder(threading.Thread):
    """Produces the stream's records to the features topic, at ``rate`` records/s (0: at once)."""

    def __init__(self, bootstrap: str, topic: str, stream: DemoStream, rate: float) -> None:
        super().__init__(name="demo-feeder", daemon=True)
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self._topic, self._stream, self._rate = topic, stream, rate
        self._stop_event = threading.Event()
        self.sent = 0

    def _chunks(self) -> Iterator[list[bytes]]:
        step = 500 if self._rate <= 0 else max(1, int(self._rate / 20))
        for start in range(0, len(self._stream.values), step):
            yield self._stream.values[start : start + step]

    def run(self) -> None:
        per_chunk_s = 0.0 if self._rate <= 0 else 1.0 / 20
        for chunk in self._chunks():
            for value in chunk:
                rid = orjson.loads(value)["id"]
                self._producer.produce(self._topic, key=rid.encode(), value=value)
                self.sent += 1
            self._producer.poll(0)
            if self._stop_event.wait(per_chunk_s):  # the source's pace
                break
        self._producer.flush(30)
        self._producer.close()

    def stop(self) -> None:
        self._stop_event.set()
