"""What librdkafka's idempotent producer costs the service's batch producer, beside its defaults.

    python -m benchmarks.producer_idempotence [--messages 600000] [--repeats 2]

Prediction-sized messages (~200 bytes, keyed) go through :class:`consumer.rdkafka.BatchProducer`
2,000 per ``rd_kafka_produce_batch`` call, as the service hands over a batch's outputs, into one
partition of the embedded broker: as fast as the producer takes them, and paced at 200,000 a
second. For each producer setting: messages/s, the CPU of librdkafka's threads and of the broker
per message, and from librdkafka's statistics the broker thread's wake-ups (``wakeups``) and the
produce requests it sent. Writes ``benchmarks/results/producer_idempotence.md``.
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson

from benchmarks.service_throughput import cpu_s
from consumer import rdkafka
from consumer.demo.broker import Broker, create_topics
from consumer.kafka import PRODUCER_DEFAULTS
from consumer.rdkafka import BatchProducer

RESULTS = Path(__file__).parent / "results"
BATCH = 2_000
SETTINGS = {
    "the service's defaults": {},
    "enable.idempotence=true": {"enable.idempotence": "true", "max.in.flight.requests.per.connection": "5"},
}


class Produced(NamedTuple):
    topic: str
    rate: float  # messages/s, from the first hand-over to the last acknowledgement
    librdkafka_us: float  # CPU of the process's threads other than the calling one, µs per message
    broker_us: float  # CPU of the broker process, µs per message (nan without its pid)
    wakeups: int  # librdkafka's broker-thread wake-ups over the run
    requests: int  # produce requests over the run


def messages(n: int) -> tuple[bytes, np.ndarray, bytes, np.ndarray]:
    """n prediction-like records and their keys, each laid end to end: (keys, key bounds, values, bounds)."""
    keys = [b"r%d" % i for i in range(n)]
    values = [b'{"v":1,"id":"r%d","label":1,"score":0.4213,"probability":0.0712,"label_requested":false,'
              b'"model_version":5000,"ts":1700000000.25,"predicted_at":1700000000.31,"source":"features:0:%d"}'
              % (i, i) for i in range(n)]

    def bounds(items: list[bytes]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum([len(x) for x in items])])

    return b"".join(keys), bounds(keys), b"".join(values), bounds(values)


def _other_threads_cpu() -> float:
    me = threading.get_native_id()
    return sum(cpu_s(str(t / "stat")) for t in Path("/proc/self/task").iterdir() if int(t.name) != me)


def produce(bootstrap: str, conf: dict[str, Any], data: tuple, rate: float = 0.0, broker_pid: int | None = None
            ) -> Produced:
    """Send ``data`` (from :func:`messages`) to a new topic, ``BATCH`` messages per call, at ``rate``
    messages/s (0: as fast as the producer takes them), and wait until every one is acknowledged."""
    keys, key_bounds, values, bounds = data
    n = len(bounds) - 1
    topic = f"idem-{uuid.uuid4().hex[:6]}"
    create_topics(bootstrap, [topic])
    stats: list[dict] = []
    failed: list[Any] = []
    producer = BatchProducer(rdkafka.load(), {**PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap, **conf,
                                              "statistics.interval.ms": "100"},
                             lambda *failure: failed.append(failure), lambda *error: None,
                             lambda text: stats.append(orjson.loads(text)))
    try:
        one = np.array([0]), np.array([1])
        producer.produce_batch(topic, b"k", *one, b"v", *one)  # connected, the topic known, the id assigned
        producer.flush(10)
        producer.poll(0.2)
        before = stats[-1]
        broker = cpu_s(f"/proc/{broker_pid}/stat") if broker_pid else 0.0
        cpu, start = _other_threads_cpu(), time.monotonic()
        for k, lo in enumerate(range(0, n, BATCH)):
            hi = min(n, lo + BATCH)
            refused = producer.produce_batch(topic, keys, key_bounds[lo:hi], key_bounds[lo + 1:hi + 1], values,
                                             bounds[lo:hi], bounds[lo + 1:hi + 1])
            if len(refused):
                raise RuntimeError(f"librdkafka refused {len(refused)} messages")
            producer.poll(0)
            if rate > 0:  # the schedule of a paced source, not a wait for a condition
                time.sleep(max(0.0, start + (k + 1) * BATCH / rate - time.monotonic()))
        if producer.flush(60) or failed:
            raise RuntimeError(f"not delivered: {producer.flush(0)} left, {len(failed)} failed")
        seconds = time.monotonic() - start
        cpu = _other_threads_cpu() - cpu
        broker = (cpu_s(f"/proc/{broker_pid}/stat") - broker) if broker_pid else float("nan")
        reports, deadline = len(stats), time.monotonic() + 5
        while len(stats) == reports:  # one more statistics report, made after the last acknowledgement
            if time.monotonic() > deadline:
                raise RuntimeError("no statistics report after the run")
            producer.poll(0.05)
    finally:
        producer.close()

    def count(report: dict, field: str) -> int:
        brokers = report["brokers"].values()
        return sum(b["wakeups"] if field == "wakeups" else b["req"].get("Produce", 0) for b in brokers)

    def since(field: str) -> int:  # over the run: the last report's count less the one before it
        return count(stats[-1], field) - count(before, field)

    return Produced(topic, n / seconds, cpu / n * 1e6, broker / n * 1e6, since("wakeups"), since("requests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=600_000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    data = messages(args.messages)
    rows = []
    with Broker() as broker:
        for _ in range(args.repeats):
            for pace in (0.0, 200_000.0):
                for name, conf in SETTINGS.items():
                    r = produce(broker.bootstrap, conf, data, pace, broker.pid)
                    rows.append(f"| {'as fast as taken' if pace == 0 else f'{pace:,.0f}/s'} | {name} | {r.rate:,.0f} "
                                f"| {r.librdkafka_us:.2f} | {r.broker_us:.2f} | {r.wakeups:,} | {r.requests:,} |")
                    print(rows[-1], flush=True)
    text = "\n".join([
        "# The batch producer with and without idempotence",
        "",
        f"{args.messages:,} messages of ~200 bytes, keyed, {BATCH:,} per `rd_kafka_produce_batch` call, into one "
        "partition of the embedded broker (Tansu); each row one run, in the order run. The service's defaults: "
        + ", ".join(f"`{k}={v}`" for k, v in PRODUCER_DEFAULTS.items() if k != "delivery.report.only.error") + ".",
        "",
        "| handed over | producer | messages/s | librdkafka's threads, µs/message | broker, µs/message "
        "| broker-thread wake-ups | produce requests |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "producer_idempotence.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
