"""End-to-end throughput and latency of one service process through a real broker, beside the limit.

    python -m benchmarks.service_throughput [--records 1000000] [--repeats 3] [--rate 20000] [--seconds 15]
                                            [--batch-size 2000] [--warmup 50000] [--learner paa-1]

1. Throughput: a backlog of N feature records (sparse, ~18 non-zeros, 2^20 dimensions) is drained
   (a) by a null service that consumes and produces one output per input with no decoding or
   scoring, (b) by the service restored from its checkpoint, as it runs in production: it first
   learnt from the stream's first W records (``--warmup``), then stopped as on SIGTERM, and the
   backlog was fed while it was down, and (c) by the service with a fresh model. The service runs
   paa-1 (``--learner``: another, or ``default``) with its knob set for 10 % queries after W records,
   an annotator in a process of its own answering every label request at once. A fresh model asks
   for most labels until its first ones come back, which (c) shows. Records/second from the first
   output to the last, by the outputs' Kafka timestamps; repeated, each service run beside the null
   pipe runs of its repetition (the broker's speed varies), (b) and (c) in alternate orders from one
   repetition to the next.
2. Latency: records are fed at a fixed rate below capacity; p50 / p99, for the null pipe and the
   service, from the record's timestamp to the output's Kafka timestamp (stamped when the output
   is handed to the producer) and to the output reaching a consumer that reads the topic as it
   fills, in a process of its own (what a downstream reader sees: the producer's linger, the
   produce request and a fetch included).
3. Where the time goes, measured during the drains of part 1: the CPU each part spends per record,
   read from /proc (the thread running the pipe or the service loop, the rest of its process, the
   broker, the annotator, the whole machine, and how much of the machine stood idle), the requests
   each Kafka client sent the broker (from librdkafka's statistics), and the wall time of the
   service loop's steps (scan, decode, score and decide, write, label requests, produce, labels;
   the rest by difference).

Writes benchmarks/results/service_throughput.md (``service_throughput_<learner>.md`` with ``--learner``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import multiprocessing
import os
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any, NamedTuple
from unittest import mock

import numpy as np
import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from consumer import batch_reader, messages, rdkafka
from consumer.clients import KafkaClients
from consumer.config import Settings, load_settings
from consumer.demo.broker import CLIENT_SETTINGS, LABEL_LOOP_FETCH, Broker, create_topics
from consumer.fastwrite import pack
from consumer.kafka import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS, Emitter
from consumer.process import Process
from consumer.roles import service_for
from consumer.steps import read as read_module
from consumer.steps import score as score_module
from consumer.steps.query import Query
from consumer.steps.read import LabelRead
from learners import make
from learners.base import Learner
from learners.datasets import Dataset
from learners.registry import ALGORITHMS, canonical_name, default_learner
from learners.replay import find_budget
from learners.synthetic import synthetic_sparse

RESULTS = Path(__file__).parent / "results"
D = 2**20
BATCH_SIZE = Settings.model_fields["batch_size"].default  # the service's own, unless --batch-size


def stream(n: int, seed: int = 0) -> Dataset:
    """The benchmark's records: n sparse rows, ~18 non-zeros in 2^20 dimensions, and their labels."""
    return synthetic_sparse(n=n, d=D, nnz=18, seed=seed)


def make_records(data: Dataset) -> tuple[list[bytes], dict[str, int]]:
    """The rows as JSON feature records (id "r<row>"), and the true label of each id."""
    values, truth = [], {}
    for i in range(data.n):
        idx, val = data.rows.row(i)
        rid = f"r{i}"
        values.append(orjson.dumps({"id": rid, "features": {"indices": idx.tolist(), "values": val.round(5).tolist()}}))
        truth[rid] = int(data.labels[i])
    return values, truth


class Model(NamedTuple):
    """The learner the service runs (a registry name) and its query knob's value, ``{knob: value}``."""

    learner: str
    params: dict[str, float]


def service_learner(name: str) -> str:
    """The registry name of ``--learner``: any spelling of a learner with a query knob, or "default" (the
    service's binary default for its 2²⁰-wide records)."""
    learner = default_learner(2, D) if name == "default" else canonical_name(name)
    if ALGORITHMS[learner].query.budget_param is None:
        raise ValueError(f"{learner!r} has no query knob to set for 10 % queries")
    return learner


def model_for_ten_percent(learner: str, data: Dataset, warmup: int) -> Model:
    """``learner`` with its knob set for a 10 % query ratio over the rows after the first ``warmup``, in
    their order, after learning from those (labels 2,000 records late)."""
    found, _ = find_budget(make(learner, n_features=D), data, 0.10, delay=2000, shuffle=False, warmup=warmup)
    knob = found.query.budget_param
    return Model(learner, {knob: float(getattr(found.query, knob))})


def feed(bootstrap: str, topic: str, values: list[bytes], rate: float = 0.0) -> None:
    """Produce the records (ts = now at produce time), at ``rate`` records/s or as fast as possible."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 2_000_000})
    start = time.monotonic()
    for i, value in enumerate(values):
        if rate > 0:
            due = start + i / rate
            while time.monotonic() < due:
                p.poll(0.0005)  # pacing the source
        rid = value[7 : value.index(b'"', 7)]
        record = value[:-1] + b',"ts":' + repr(time.time()).encode() + b"}"
        while True:
            try:
                p.produce(topic, key=rid, value=record)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(60)


CPU_PARTS = ("the thread running the pipe or the loop", "the rest of its process (librdkafka, the scan thread)",
             "the broker", "the annotator", "the whole machine")


def cpu_s(stat: str) -> float:
    """User + system CPU seconds of a process or a thread, from its /proc stat file."""
    fields = Path(stat).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds spent so far by each of :data:`CPU_PARTS` (Linux /proc). A process's figures
    include its threads that have ended."""

    def __init__(self, broker_pid: int, thread_id: int, annotator_pid: int | None = None) -> None:
        self.broker_pid, self.thread_id, self.annotator_pid = broker_pid, thread_id, annotator_pid

    def read(self) -> np.ndarray:
        thread = cpu_s(f"/proc/self/task/{self.thread_id}/stat")
        machine = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        idle = (machine[3] + machine[4]) / os.sysconf("SC_CLK_TCK")
        busy = sum(machine) / os.sysconf("SC_CLK_TCK") - idle
        return np.array([thread, cpu_s("/proc/self/stat") - thread, cpu_s(f"/proc/{self.broker_pid}/stat"),
                         cpu_s(f"/proc/{self.annotator_pid}/stat") if self.annotator_pid else 0.0, busy, idle])


STATS_MS = 100  # librdkafka's statistics interval for the clients of a drain
REQUESTS = ("Fetch", "Produce")


class BrokerRequests:
    """How many requests of each of :data:`REQUESTS` every client sent the broker between
    :meth:`begin` and :meth:`end`, from librdkafka's statistics (cumulative counts, one report
    every :data:`STATS_MS`, so a window's edges are known to that much). A client of this process
    reports to :meth:`record`, which keeps the report as it is (read when the counts are asked
    for: the service's clients report from its loop, which is being measured); one of another
    process reports through :meth:`report` to a ``queue``, which :meth:`take` empties."""

    def __init__(self, queue: Any = None) -> None:
        self.samples: defaultdict[str, list[tuple[float, Any]]] = defaultdict(list)  # (time, report or counts)
        self.window = (0.0, 0.0)
        self.queue = queue

    @staticmethod
    def counts(stats: str | bytes) -> tuple[int, ...]:
        """The count of each of :data:`REQUESTS` in one statistics JSON, over every broker."""
        brokers = orjson.loads(stats)["brokers"].values()
        return tuple(sum(b["req"].get(r, 0) for b in brokers) for r in REQUESTS)

    def record(self, client: str, stats: str | bytes) -> None:
        self.samples[client].append((time.monotonic(), stats))

    @staticmethod
    def report(queue: Any, client: str, stats: str | bytes) -> None:
        """Send one report's counts to the process that collects them."""
        queue.put((client, time.monotonic(), BrokerRequests.counts(stats)))

    def conf(self, client: str) -> dict[str, Any]:
        """The properties that make a confluent-kafka client of this process report to :meth:`record`."""
        return {"statistics.interval.ms": STATS_MS, "stats_cb": functools.partial(self.record, client)}

    @staticmethod
    def remote_conf(queue: Any, client: str) -> dict[str, Any]:
        """The properties that make a client of another process report through ``queue``."""
        return {"statistics.interval.ms": STATS_MS, "stats_cb": functools.partial(BrokerRequests.report, queue, client)}

    def begin(self) -> None:
        self.window = (time.monotonic(), 0.0)

    def end(self) -> None:
        self.window = (self.window[0], time.monotonic())

    def complete(self) -> bool:
        """Whether every client has reported since the window ended."""
        return all(samples[-1][0] >= self.window[1] for samples in self.samples.values())

    def finish(self, *clients: Any) -> None:
        """End the window, then wait (ten intervals at most) until every client has reported once
        more: the queue's samples are taken (the clients of this process report there too, so it is
        emptied before asking), and ``clients`` are polled, which serves their statistics."""
        self.end()
        deadline = time.monotonic() + 10 * STATS_MS / 1000
        if self.queue is not None:
            self.take(self.queue)
        while not self.complete() and time.monotonic() < deadline:
            if self.queue is not None:
                self.take(self.queue, wait_s=STATS_MS / 1000)
            for client in clients:
                client.poll(STATS_MS / 4000)

    def take(self, queue: Any, wait_s: float = 0.0) -> None:
        """Add the reports another process put on ``queue`` (:meth:`report`), waiting up to
        ``wait_s`` for the first."""
        with contextlib.suppress(Empty):
            client, at, counts = queue.get(timeout=wait_s) if wait_s > 0 else queue.get_nowait()
            while True:
                self.samples[client].append((at, counts))
                client, at, counts = queue.get_nowait()

    def per_second(self) -> dict[str, np.ndarray]:
        """Requests/s of each client over the window: from its last report before the window to
        its first after it."""
        start, stop = self.window
        rates = {}
        for client, samples in self.samples.items():
            before = [s for s in samples if s[0] <= start]
            after = [s for s in samples if s[0] >= stop]
            if before and after:
                (t0, a), (t1, b) = before[-1], after[0]
                counts = [np.array(c if isinstance(c, tuple) else self.counts(c)) for c in (a, b)]
                rates[client] = (counts[1] - counts[0]) / (t1 - t0)
        return rates


def null_pipe(bootstrap: str, source: str, sink: str, n: int, ready: threading.Event,
              batched: bool = False, broker_pid: int | None = None,
              requests: BrokerRequests | None = None, batch_size: int = BATCH_SIZE) -> np.ndarray | None:
    """Consume n records and produce one output each, untouched. With ``broker_pid``, returns the
    CPU seconds of each of :data:`CPU_PARTS` from the first record to the last output's delivery;
    with ``requests``, counts the requests of both clients over that time. It takes up to
    ``batch_size`` records at a time, as the service does: it waits for one, then takes what is there.

    The consumer has the service's fetch settings, the producer its partitioner. Per message, records come from
    ``Consumer.consume`` and go out one ``produce`` call each; ``batched``, they are read as the
    service reads its features (:mod:`consumer.batch_reader`) and a batch goes out per call as the
    service produces its predictions (:class:`consumer.rdkafka.BatchProducer`)."""
    stats = requests.conf if requests else (lambda client: {})
    client_id = f"null-{uuid.uuid4().hex[:6]}"
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": client_id, "client.id": client_id, **CLIENT_SETTINGS,
                  **{k: CONSUMER_DEFAULTS[k] for k in ("fetch.queue.backoff.ms", "queued.min.messages")},
                  "enable.auto.commit": "false",
                  **stats("null pipe: consumer")})
    reader = batch_reader.attach(c, client_id, source) if batched else None
    if batched and reader is None:
        raise RuntimeError("the batched null pipe needs librdkafka's handle (consumer/batch_reader.py)")

    def assigned(cons: Consumer, parts: list[TopicPartition]) -> None:
        cons.assign(parts)
        if reader:
            reader.forward(parts)
        ready.set()

    c.subscribe([source], on_assign=assigned)
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 2_000_000,
            "partitioner": PRODUCER_DEFAULTS["partitioner"], **stats("null pipe: producer")}
    if batched:
        on_stats = conf.pop("stats_cb", None)  # a Python callback goes beside the properties
        p = rdkafka.BatchProducer(rdkafka.load(), conf, _lost, _lost, on_stats)
        reader.warm_up()
    else:
        p = Producer(conf)
    meter = CpuMeter(broker_pid, threading.get_native_id()) if broker_pid else None
    done, started = 0, None
    while done < n:
        if reader:
            stray = c.poll(0)  # the group's events; a record fetched before its partition was forwarded
            got = [] if stray is None or stray.error() else [stray]
            batch = reader.read(batch_size, 0.1)
            count = len(got) + (len(batch) if batch else 0)
        else:
            first = c.poll(0.1)  # as the service: wait for a record, then take what is already there
            got = [] if first is None else [m for m in (first, *c.consume(batch_size - 1, 0)) if m.error() is None]
            batch, count = None, len(got)
        if count:
            if started is None:
                started = meter.read() if meter else 0.0
                if requests:
                    requests.begin()
            done += count
        if reader:
            if got:
                keys, values = pack([m.key() for m in got]), pack([m.value() for m in got])
                p.produce_batch(sink, keys.data, keys.starts, keys.ends, values.data, values.starts, values.ends)
            if batch:
                kb, vb = batch.key_bounds, batch.bounds
                p.produce_batch(sink, batch.keys, kb[:-1], kb[1:], batch.blob, vb[:-1], vb[1:])
                batch.release()
        else:
            for msg in got:
                p.produce(sink, key=msg.key(), value=msg.value())
        p.poll(0)
    p.flush(60)
    spent = meter.read() - started if meter else None
    if requests:
        requests.finish(c, p)  # the source is drained: polling serves the statistics only
    if reader:
        reader.close()
    c.close()
    if batched:
        p.close()
    return spent


def _lost(*why: object) -> None:
    raise RuntimeError(f"the null pipe lost an output: {why[:3]}")


def tail_latencies(bootstrap: str, topic: str, n: int, ready: Any, results: Any, timeout_s: float = 120) -> None:
    """Read ``topic`` from its start as a downstream consumer would, as its outputs arrive, until n
    have come; then put on ``results`` (a queue) two arrays of n latencies in seconds, from each
    input record's ``ts`` to (1) its output's Kafka timestamp, which the producer stamps when it is
    handed the output, and (2) the moment the output reached this reader, after the producer's
    ``linger.ms``, the produce request, and a fetch (fetch.wait.max.ms 10: Tansu answers a waiting
    fetch only when the wait ends). Sets ``ready`` once connected. Runs in a process of its own, so
    that it shares no GIL with what it measures."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{uuid.uuid4().hex[:6]}", **CLIENT_SETTINGS})
    partitions = c.list_topics(topic, timeout=30).topics[topic].partitions
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    c.get_watermark_offsets(TopicPartition(topic, next(iter(partitions))), timeout=30)  # connected to its leader
    ready.set()
    stamped, received, deadline = [], [], time.monotonic() + timeout_s
    while len(received) < n and time.monotonic() < deadline:
        first = c.poll(0.05)  # back as soon as a fetch brings outputs: they arrived now
        now = time.time()
        for msg in () if first is None else (first, *c.consume(10_000, 0)):
            if msg.error() is None:
                ts = orjson.loads(msg.value())["ts"]
                stamped.append(msg.timestamp()[1] / 1000.0 - ts)
                received.append(now - ts)
    c.close()
    results.put((np.asarray(stamped), np.asarray(received)))


@contextlib.contextmanager
def tailing(bootstrap: str, topic: str, n: int, timeout_s: float = 120
            ) -> Iterator[Callable[[], tuple[np.ndarray, np.ndarray]]]:
    """:func:`tail_latencies` in a process of its own while the block runs, connected before the
    block starts. The block gets a function that waits for the two arrays of latencies."""
    fork = multiprocessing.get_context("fork")  # forked before the service's threads start, as the annotator
    ready, results = fork.Event(), fork.Queue()
    reader = fork.Process(target=tail_latencies, args=(bootstrap, topic, n, ready, results, timeout_s), daemon=True)
    reader.start()

    def latencies() -> tuple[np.ndarray, np.ndarray]:
        try:
            stamped, received = results.get(timeout=timeout_s + 30)
        except Empty:
            raise TimeoutError(f"{topic}: the reader did not finish within {timeout_s:.0f} s") from None
        if len(received) < n:
            raise TimeoutError(f"{topic}: {len(received)} of {n} outputs")
        return stamped, received

    try:
        if not ready.wait(60):
            raise TimeoutError(f"{topic}: the latency reader did not connect within 60 s")
        yield latencies
    finally:
        reader.join(10)
        if reader.is_alive():
            reader.terminate()


def annotate(bootstrap: str, topics: dict, truth: dict, stop, requests: Any = None) -> None:
    """Answer every label request at once, until ``stop`` is set (runs in its own process). It
    shares the machine with the service, so it is kept light: it reads the requests as the service
    reads its features, as columns (:mod:`consumer.batch_reader`), takes the id from the request's
    Kafka key, looks up an answer written before the first request, and hands each batch of
    answers to librdkafka in one call (:class:`consumer.rdkafka.BatchProducer`); a request's value is
    never copied into Python (a tombstone, a retracted request, has length 0). With ``requests`` (a
    queue), its clients' request counts go there (see :class:`BrokerRequests`)."""
    stats = functools.partial(BrokerRequests.remote_conf, requests) if requests is not None else (lambda client: {})
    answers = {rid.encode(): orjson.dumps({"id": rid, "label": label}) for rid, label in truth.items()}
    client_id = f"ann-{uuid.uuid4().hex[:6]}"
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": client_id, "client.id": client_id, **CLIENT_SETTINGS,
                  **LABEL_LOOP_FETCH, **stats("annotator: consumer")})
    reader = batch_reader.attach(c, client_id, topics["label_requests"])
    if reader is None:
        raise RuntimeError("the annotator needs librdkafka's handle (consumer/batch_reader.py)")

    def assigned(cons: Consumer, parts: list[TopicPartition]) -> None:
        cons.assign(parts)
        reader.forward(parts)

    c.subscribe([topics["label_requests"]], on_assign=assigned)
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 2, **stats("annotator: producer")}
    on_stats = conf.pop("stats_cb", None)  # a Python callback goes beside the properties
    p = rdkafka.BatchProducer(rdkafka.load(), conf, _lost, _lost, on_stats)
    reader.warm_up()
    while not stop.is_set():
        stray = c.poll(0)  # the group's events; a request fetched before its partition was forwarded
        keys = [stray.key()] if stray is not None and stray.error() is None and len(stray) else []
        batch = reader.read(10_000, 0.1)
        if batch is not None:
            asked = np.flatnonzero(np.diff(batch.bounds) > 0).tolist()
            kb, blob = batch.key_bounds.tolist(), batch.keys
            keys += [blob[kb[k]:kb[k + 1]] for k in asked]
            batch.release()
        if keys:
            ids, labels = pack(keys), pack([answers[key] for key in keys])
            p.produce_batch(topics["labels"], ids.data, ids.starts, ids.ends, labels.data, labels.starts, labels.ends)
        p.poll(0)
    p.flush(10)
    reader.close()
    c.close()
    p.close()


@contextlib.contextmanager
def annotator_running(bootstrap: str, topics: dict, truth: dict,
                      requests: BrokerRequests | None = None) -> Iterator[multiprocessing.Process]:
    """The annotator in a process of its own while the block runs, as in production (in a thread it
    would take the service's GIL). With ``requests``, its clients count their requests there,
    through ``requests.queue``."""
    fork = multiprocessing.get_context("fork")  # the child inherits the ground truth; it opens its own clients
    stop = fork.Event()
    annotator = fork.Process(target=annotate, args=(bootstrap, topics, truth, stop, requests and requests.queue),
                             daemon=True)
    annotator.start()
    try:
        yield annotator
    finally:
        stop.set()
        annotator.join(10)


@contextlib.contextmanager
def service_running(bootstrap: str, topics: dict, model: Model, checkpoints: Path,
                    requests: BrokerRequests | None = None,
                    batch_size: int = BATCH_SIZE) -> Iterator[tuple[Process, threading.Thread]]:
    """The service in a thread of this process while the block runs, keeping its checkpoints in
    ``checkpoints`` (it restores the newest one there); then stopped as SIGTERM stops it (final
    checkpoint, offsets committed). With ``requests``, its clients count their requests there."""
    settings = load_settings(bootstrap_servers=bootstrap, topics=topics, checkpoint_dir=checkpoints,
                             n_features=D, learner=model.learner, learner_params=model.params,
                             kafka_consumer=CLIENT_SETTINGS,
                             kafka_labels_consumer=LABEL_LOOP_FETCH, metrics_port=0, batch_size=batch_size,
                             kafka={"statistics.interval.ms": str(STATS_MS)} if requests else {})
    clients = KafkaClients(settings, on_stats=lambda client, stats: requests.record(f"service: {client}", stats)
                           ) if requests else None
    service = service_for(settings, serve_http=False, clients=clients)
    runner = threading.Thread(target=service.run, daemon=True)
    runner.start()
    try:
        yield service, runner
    finally:
        service.request_stop()
        runner.join(60)
        if runner.is_alive():
            raise TimeoutError("the service did not stop within 60 s")


def new_topics(bootstrap: str) -> dict[str, str]:
    topics = {k: f"{k}-{uuid.uuid4().hex[:6]}" for k in
              ("features", "predictions", "label_requests", "labels", "dead_letters")}
    create_topics(bootstrap, list(topics.values()))
    return topics


def delete_topics(bootstrap: str, names: list[str]) -> None:
    """Delete the topics of a drain that has been measured. Tansu keeps every record in memory: five
    repetitions of four drains of 1,000,000 records held most of this machine's 24 GB, until the
    broker stopped answering (how much it holds does not change what a record costs it; README)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for future in admin.delete_topics(names).values():
        future.result(15)


def output_rate(bootstrap: str, topic: str, n: int, since_ms: int = 0) -> float:
    """Records/s from the first output to the last, by their Kafka timestamps (set when each was
    produced), so nothing polls the pipe while it runs. Outputs stamped before ``since_ms`` (ms since
    the epoch: those of an earlier run on the same topic) are left out; n outputs must remain."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rate-{uuid.uuid4().hex[:6]}", **CLIENT_SETTINGS})
    c.subscribe([topic])
    stamps: list[int] = []
    deadline = time.monotonic() + 120
    while len(stamps) < n and time.monotonic() < deadline:
        stamps += [ts for m in c.consume(10_000, 0.2) if m.error() is None and (ts := m.timestamp()[1]) >= since_ms]
    c.close()
    if len(stamps) < n:
        raise TimeoutError(f"{topic}: {len(stamps)} of {n} outputs")
    return (n - 1) / ((max(stamps) - min(stamps)) / 1000.0)


def wait_until(condition: Any, what: Any, timeout_s: float, every_s: float = 0.02) -> float:
    """Poll another thread's state until ``condition()`` holds (the rates come from the outputs'
    timestamps, not from when this notices); the time it did, or TimeoutError saying ``what()``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what())
        time.sleep(every_s)  # the service raises no event on its counters: look again shortly
    return time.monotonic()


def wait_ready(service: Process, timeout_s: float = 60) -> None:
    wait_until(lambda: service.health.ready()[0], lambda: "service not ready", timeout_s, every_s=0.05)


def wait_scored(service: Process, n: float, timeout_s: float = 600) -> float:
    scored = functools.partial(service.totals.get, "records_scored")
    return wait_until(lambda: scored() >= n, lambda: f"scored {scored()} of {n}", timeout_s)


def wait_labelled(service: Process, timeout_s: float = 180) -> None:
    """Until every label the service asked for has been applied (the annotator answers them all). The
    annotator's consumer joins its group first: on a machine busy with other work that alone has taken
    most of a minute."""
    wait_until(lambda: len(service.pending) == 0, lambda: f"{len(service.pending)} labels still pending", timeout_s)


# The steps of the service loop timed while it drains the backlog: (where the function is looked up,
# its name, the stage it stands for). The scan runs in the scan thread; the others in the loop's.
STAGES = (
    (read_module, "run_scan", "scan (compiled; in the scan thread, beside the loop)"),  # first: not summed
    (read_module, "scan_job", "lay the next batch out for the scan"),
    (messages, "decode_features", "decode the rest (ids, times, CSR rows)"),
    (Learner, "decide", "score + decide (one compiled call per batch)"),
    (score_module, "encode_predictions", "write the predictions (compiled writer)"),
    (Query, "_request", "label requests (pending entries, texts, keys)"),
    (Emitter, "send_packed", "produce the outputs (librdkafka, a call per topic and batch)"),
    (LabelRead, "take", "labels (decode, join, learn)"),
)


@contextlib.contextmanager
def timed_stages() -> Iterator[Counter]:
    """Seconds spent in each of :data:`STAGES` while the block runs (perf_counter around each call)."""
    seconds: Counter = Counter()

    def timer(f: Any, stage: str) -> Any:
        @functools.wraps(f)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                seconds[stage] += time.perf_counter() - start
        return timed

    with contextlib.ExitStack() as patches:
        for owner, name, stage in STAGES:
            patches.enter_context(mock.patch.object(owner, name, timer(getattr(owner, name), stage)))
        yield seconds


@dataclass(frozen=True, slots=True)
class Drains:
    """One repetition of part 1: records/s of each drain, the services' query ratios, CPU seconds
    per record of each of :data:`CPU_PARTS` (and the machine's idle seconds) for the null pipe, the
    batched null pipe and the restored service, its seconds per record in each of :data:`STAGES`,
    and each of those three drains' requests/s per client."""

    null: float
    batched: float
    service: float
    queries: float
    cold: float
    cold_queries: float
    cpu: np.ndarray
    stages: dict[str, float]
    requests: list[dict[str, np.ndarray]]


def drain_backlog(b: str, warm: list[bytes], values: list[bytes], truth: dict, model: Model, workdir: Path,
                  broker_pid: int, batch_size: int = BATCH_SIZE, fresh_first: bool = False) -> Drains:
    """One repetition of part 1, each drain on fresh topics: the two null pipes, then the service
    restored from a checkpoint (it first learns from the ``warm`` records and their labels, then
    stops as on SIGTERM and starts again on a backlog of ``values``) and the service with a fresh
    model on the same backlog, in that order or, ``fresh_first``, the other (the benchmark alternates,
    so that neither service drain always follows the null pipes). CPU, requests and the loop's
    steps are measured for the null pipes and the restored service."""
    n = len(values)
    null_rates, cpu, requests = [], [], []
    for batched in (False, True):
        src, dst = f"src-{uuid.uuid4().hex[:6]}", f"dst-{uuid.uuid4().hex[:6]}"
        create_topics(b, [src, dst])
        feed(b, src, values)
        counted = BrokerRequests()
        cpu.append(null_pipe(b, src, dst, n, threading.Event(), batched=batched, broker_pid=broker_pid,
                             requests=counted, batch_size=batch_size) / n)
        null_rates.append(output_rate(b, dst, n))
        requests.append(counted.per_second())
        delete_topics(b, [src, dst])
    if fresh_first:
        cold_rate, cold_queries = _fresh_drain(b, values, truth, model, workdir, batch_size)
    rate, queries, service_cpu, stages, service_requests = _restored_drain(b, warm, values, truth, model, workdir,
                                                                           broker_pid, batch_size)
    if not fresh_first:
        cold_rate, cold_queries = _fresh_drain(b, values, truth, model, workdir, batch_size)
    return Drains(null_rates[0], null_rates[1], rate, queries, cold_rate, cold_queries, np.array([*cpu, service_cpu]),
                  stages, [*requests, service_requests])


def _restored_drain(b: str, warm: list[bytes], values: list[bytes], truth: dict, model: Model, workdir: Path,
                    broker_pid: int, batch_size: int) -> tuple[float, float, np.ndarray, dict, dict]:
    """The restored service's drain: (records/s, query ratio, CPU seconds per record of each of
    :data:`CPU_PARTS`, seconds per record in each of :data:`STAGES`, requests/s per client)."""
    n = len(values)
    topics, checkpoints = new_topics(b), workdir / uuid.uuid4().hex
    counted = BrokerRequests(multiprocessing.get_context("fork").Queue())
    with annotator_running(b, topics, truth, counted) as annotator:
        feed(b, topics["features"], warm)
        with service_running(b, topics, model, checkpoints, batch_size=batch_size) as (service, _):
            wait_scored(service, len(warm))
            wait_labelled(service)  # the checkpoint then holds a model that learnt from the warm-up's labels
        before = service.totals.get("records_scored"), service.totals.get("label_requests")
        feed(b, topics["features"], values)
        since_ms = int(time.time() * 1000)
        with timed_stages() as seconds, service_running(b, topics, model, checkpoints, counted,
                                                         batch_size) as (service, runner):
            meter = CpuMeter(broker_pid, runner.native_id, annotator.pid)
            wait_scored(service, before[0] + 1)
            started, first = meter.read(), service.totals.get("records_scored")
            counted.begin()
            wait_scored(service, before[0] + n)
            cpu = (meter.read() - started) / (service.totals.get("records_scored") - first)
            counted.finish()  # the service's clients and the annotator's report through the queue
            scored = service.totals.get("records_scored") - before[0]
            queries = (service.totals.get("label_requests") - before[1]) / scored
    rate = output_rate(b, topics["predictions"], n, since_ms)
    delete_topics(b, list(topics.values()))
    return rate, queries, cpu, {k: v / scored for k, v in seconds.items()}, counted.per_second()


def _fresh_drain(b: str, values: list[bytes], truth: dict, model: Model, workdir: Path,
                 batch_size: int) -> tuple[float, float]:
    """The drain of a service with a fresh model: (records/s, query ratio)."""
    n = len(values)
    topics = new_topics(b)
    with annotator_running(b, topics, truth):
        feed(b, topics["features"], values)
        with service_running(b, topics, model, workdir / uuid.uuid4().hex, batch_size=batch_size) as (service, _):
            wait_scored(service, n)
            queries = service.totals.get("label_requests") / service.totals.get("records_scored")
    rate = output_rate(b, topics["predictions"], n)
    delete_topics(b, list(topics.values()))
    return rate, queries


def _ms(latencies: np.ndarray) -> str:
    """p50 / p99 of latencies in seconds, in ms."""
    p50, p99 = np.percentile(latencies, [50, 99]) * 1000
    return f"{p50:.1f} / {p99:.1f} ms"


def _us(seconds: float, none: bool = False) -> str:
    return "–" if none else f"{seconds * 1e6:.2f}"


DRAINS = ("null pipe, one `produce` each", "null pipe, batched", "restored service")


def broker_cpu_per_request(b: str, broker_pid: int, seconds: float = 2.0) -> tuple[float, float]:
    """The broker's CPU seconds per request, each kind alone: (per fetch, from one consumer
    waiting on an empty topic; per produce request, from a producer sending 10,000 records/s of
    200 bytes with ``linger.ms`` 2 and no consumer: its records' share is included)."""
    topic = f"calibrate-{uuid.uuid4().hex[:6]}"
    create_topics(b, [topic])
    counted, assigned = BrokerRequests(), threading.Event()
    consumer = Consumer({"bootstrap.servers": b, "group.id": f"cal-{uuid.uuid4().hex[:6]}", **CLIENT_SETTINGS,
                         **counted.conf("Fetch")})
    consumer.subscribe([topic], on_assign=lambda c, parts: (c.assign(parts), assigned.set()))
    while not assigned.is_set():
        consumer.poll(0.05)
    per_fetch = _per_request(counted, "Fetch", consumer, lambda: consumer.poll(0.05), broker_pid, seconds)
    consumer.close()

    counted = BrokerRequests()
    producer = Producer({"bootstrap.servers": b, "linger.ms": 2, **counted.conf("Produce")})
    start, sent = time.monotonic(), 0

    def paced() -> None:
        nonlocal sent
        due = int((time.monotonic() - start) * 10_000)
        for _ in range(sent, due):
            producer.produce(topic, b"x" * 200)
        sent = max(sent, due)
        producer.poll(0.001)

    per_produce = _per_request(counted, "Produce", producer, paced, broker_pid, seconds)
    producer.flush(10)
    return per_fetch, per_produce


def _per_request(counted: BrokerRequests, kind: str, client: Any, work: Any, broker_pid: int,
                 seconds: float) -> float:
    """Broker CPU seconds per request of ``kind`` while ``work`` runs for ``seconds``."""
    while not counted.samples:  # a first count before the window opens
        work()
    counted.begin()
    cpu = cpu_s(f"/proc/{broker_pid}/stat")
    while time.monotonic() - counted.window[0] < seconds:
        work()
    cpu = cpu_s(f"/proc/{broker_pid}/stat") - cpu
    counted.finish(client)
    requests = counted.per_second()[kind][REQUESTS.index(kind)] * (counted.window[1] - counted.window[0])
    return cpu / requests


def _requests_table(runs: list[Drains], drain_rates: np.ndarray, cost: tuple[float, float]) -> list[str]:
    """Rows of the requests table: each drain's clients, median requests/s over the repetitions,
    and the broker CPU per record they stand for at ``cost`` (seconds per fetch, per produce)."""
    rows = []
    for d, drain in enumerate(DRAINS):
        clients = sorted({client for r in runs for client in r.requests[d]})
        for client in clients:
            got = [(r.requests[d][client], drain_rates[k, d]) for k, r in enumerate(runs) if client in r.requests[d]]
            per_s = np.median([g for g, _ in got], axis=0)
            per_record = np.median([g.sum() / rate for g, rate in got])
            broker = np.median([g @ np.array(cost) / rate for g, rate in got])
            rows.append(f"| {drain} | {client} | {per_s[0]:.0f} | {per_s[1]:.0f} | {per_record * 1000:.2f} | "
                        f"{broker * 1e6:.2f} |")
        total = np.median([sum(r.requests[d].values()) @ np.array(cost) / drain_rates[k, d]
                           for k, r in enumerate(runs)])
        rows.append(f"| {drain} | all | | | | **{total * 1e6:.2f}** |")
    return rows


def results_name(learner: str) -> str:
    """The results file of a run with ``--learner learner``."""
    return "service_throughput.md" if learner == "paa-1" else f"service_throughput_{learner}.md"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # 200,000 records: the null pipe is through in ~0.5 s, and one repetition's ratio to it ranged
    # 32-72 % in a run; at 1,000,000, 52-53 % (README)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rate", type=float, default=20_000, help="records/s for the latency phase")
    ap.add_argument("--seconds", type=float, default=15, help="length of the latency phase")
    # 5: the per-message null pipe's rate moves by up to a third from one repetition to the next
    # (401,000 - 563,000 records/s within a run), and the service is compared with its repetition's
    ap.add_argument("--repeats", type=int, default=5, help="throughput repetitions (null pipe, then service)")
    ap.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                    help="records per batch (ACTIVESTREAM_BATCH_SIZE), the null pipes' too")
    ap.add_argument("--warmup", type=int, default=50_000,
                    help="records the service learns from before it stops and restarts on the backlog")
    ap.add_argument("--learner", default="paa-1",
                    help="registry name of the service's learner, or 'default' (the binary default learner); "
                         "results in service_throughput.md for paa-1, service_throughput_<learner>.md otherwise")
    args = ap.parse_args()
    try:
        learner = service_learner(args.learner)
    except ValueError as exc:
        ap.error(f"--learner: {exc}")
    if args.records < 10 * args.batch_size:  # a drain of a few batches is over before it can be timed
        ap.error(f"--records must be at least 10 batches ({10 * args.batch_size:,} at --batch-size "
                 f"{args.batch_size:,}), got {args.records:,}")
    n = args.records
    data = stream(args.warmup + n)
    values, truth = make_records(data)
    warm, values = values[:args.warmup], values[args.warmup:]
    model = model_for_ten_percent(learner, data, args.warmup)
    workdir = Path(tempfile.mkdtemp(prefix="activestream-bench-"))
    lines = []

    with Broker() as broker:
        b = broker.bootstrap
        runs = [drain_backlog(b, warm, values, truth, model, workdir, broker.pid, args.batch_size,
                              fresh_first=i % 2 == 1) for i in range(args.repeats)]
        per_fetch, per_produce = broker_cpu_per_request(b, broker.pid)
        null_rates, batched_rates, service_rates, cold_rates = (
            np.array([getattr(r, k) for r in runs]) for k in ("null", "batched", "service", "cold"))
        cpu = np.array([r.cpu for r in runs])
        per_stage = {stage: float(np.median([r.stages.get(stage, 0.0) for r in runs])) for _, _, stage in STAGES}
        drain_rates = np.stack([null_rates, batched_rates, service_rates], axis=1)
        requests = _requests_table(runs, drain_rates, (per_fetch, per_produce))
        shares, batched_shares = service_rates / null_rates, service_rates / batched_rates
        cold_shares = cold_rates / null_rates
        queries = float(np.mean([r.queries for r in runs]))
        cold_queries = float(np.mean([r.cold_queries for r in runs]))

        # 2. latency at a fixed rate below capacity
        m = int(args.rate * args.seconds)
        lat_values, lat_truth = make_records(stream(m, seed=1))
        src, dst = f"src-{uuid.uuid4().hex[:6]}", f"dst-{uuid.uuid4().hex[:6]}"
        create_topics(b, [src, dst])
        ready = threading.Event()
        pipe = threading.Thread(target=null_pipe, args=(b, src, dst, m, ready), kwargs={"batch_size": args.batch_size},
                                daemon=True)
        with tailing(b, dst, m) as null_latencies:
            pipe.start()
            ready.wait(30)
            feed(b, src, lat_values, rate=args.rate)
            pipe.join(120)
            null_lat = null_latencies()
        topics = new_topics(b)
        with (annotator_running(b, topics, lat_truth), tailing(b, topics["predictions"], m) as svc_latencies,
              service_running(b, topics, model, workdir / uuid.uuid4().hex, batch_size=args.batch_size)
              as (service, _)):
            wait_ready(service)
            feed(b, topics["features"], lat_values, rate=args.rate)
            wait_scored(service, m)
            svc_lat = svc_latencies()

    knob_text = ", ".join(f"{k} = {v:.4g}" for k, v in model.params.items())
    lines += [
        "# Service throughput and latency through one broker (Tansu on 127.0.0.1)"
        + ("" if args.learner == "paa-1" else f": {args.learner} learner, {learner}"),
        "",
        f"Records: {n:,} sparse (~18 non-zeros, 2^20 dimensions), JSON `{{indices, values}}`; learner "
        f"{model.learner}, {knob_text}, set for a 10 % query ratio after {args.warmup:,} records (replayed "
        f"offline); an annotator answers every request at once. Batches of up to {args.batch_size:,} records "
        "(`ACTIVESTREAM_BATCH_SIZE`; the null pipes take as many at a time).",
        "",
        f"Throughput on a backlog, {args.repeats} repetitions. Each, on fresh topics: the null pipe producing "
        "one call per output, the null pipe producing a batch per call, the service restored from its "
        f"checkpoint (it first learnt from {args.warmup:,} other records of the stream, then stopped as on "
        "SIGTERM; the backlog was fed while it was down), and the service with a fresh model, these two in "
        "alternate orders from one repetition to the next. Each service run is compared with the null pipe runs "
        "of its repetition:",
        "",
        "| | median records/s | range | query ratio |",
        "|---|---|---|---|",
        f"| null pipe, one `produce` per output | {np.median(null_rates):,.0f} | "
        f"{null_rates.min():,.0f} – {null_rates.max():,.0f} | |",
        f"| null pipe, a batch per `rd_kafka_produce_batch` | {np.median(batched_rates):,.0f} | "
        f"{batched_rates.min():,.0f} – {batched_rates.max():,.0f} | |",
        f"| activestream service, restored from its checkpoint | {np.median(service_rates):,.0f} | "
        f"{service_rates.min():,.0f} – {service_rates.max():,.0f} | {queries:.1%} |",
        f"| activestream service, a fresh model | {np.median(cold_rates):,.0f} | "
        f"{cold_rates.min():,.0f} – {cold_rates.max():,.0f} | {cold_queries:.1%} |",
        f"| restored service / null pipe, one `produce` per output | {np.median(shares):.0%} | "
        f"{shares.min():.0%} – {shares.max():.0%} | |",
        f"| restored service / null pipe, batched | {np.median(batched_shares):.0%} | "
        f"{batched_shares.min():.0%} – {batched_shares.max():.0%} | |",
        f"| fresh service / null pipe, one `produce` per output | {np.median(cold_shares):.0%} | "
        f"{cold_shares.min():.0%} – {cold_shares.max():.0%} | |",
        "",
        "Each repetition in turn (the fresh service drained first in the even-numbered ones), the restored "
        "service / null pipe: " + ", ".join(f"{v:.0%}" for v in shares) + "; the fresh service / null pipe: "
        + ", ".join(f"{v:.0%}" for v in cold_shares) + ".",
        "",
        f"Latency at {args.rate:,.0f} records/s for {args.seconds:.0f} s, from each record's timestamp to its "
        "output's Kafka timestamp (stamped when the output is handed to the producer) and to the output reaching a "
        "consumer that reads the topic as it fills (the producer's `linger.ms` 5, the produce request and a fetch "
        "of up to 10 ms added; the service with a fresh model):",
        "",
        "| | p50 / p99 to the output's timestamp | p50 / p99 to a consumer receiving it |",
        "|---|---|---|",
        *[f"| {who} | {_ms(lat[0])} | {_ms(lat[1])} |"
          for who, lat in (("null pipe", null_lat), ("activestream service", svc_lat))],
        "",
        "CPU per record (µs, median of the repetitions; from the first record to the last, read from /proc; "
        "the service restored from its checkpoint):",
        "",
        "| | null pipe, one `produce` each | null pipe, batched | restored service |",
        "|---|---|---|---|",
        *[f"| {part} | " + " | ".join(_us(v, none=part == "the annotator" and j < 2) for j, v in enumerate(row)) + " |"
          for part, row in zip(CPU_PARTS, np.median(cpu, axis=0).T[:len(CPU_PARTS)], strict=True)],
        f"| restored service / null pipe, the whole machine | | | {np.median(cpu[:, 2, 4] / cpu[:, 0, 4]):.1f} × |",
        "| the machine's idle time, share of all its cores | " + " | ".join(
            f"{v:.0%}" for v in np.median(cpu[:, :, 5] / (cpu[:, :, 4] + cpu[:, :, 5]), axis=0)) + " |",
        "",
        f"Requests each Kafka client sent the broker during the drains (librdkafka's statistics every {STATS_MS} "
        "ms, median of the repetitions), and the broker CPU they stand for at its cost per request measured "
        f"alone after the drains: {per_fetch * 1e3:.2f} ms per fetch (one consumer waiting on an empty topic), "
        f"{per_produce * 1e3:.2f} ms per produce request (10,000 records/s of 200 bytes, `linger.ms` 2, records "
        "included):",
        "",
        "| drain | client | Fetch/s | Produce/s | requests per 1,000 records | broker CPU, µs/record |",
        "|---|---|---|---|---|---|",
        *requests,
        "",
        "Where the loop's time goes while the restored service drains the backlog (wall time in each step, µs per "
        "record, median of the repetitions; the scan runs in a thread of its own):",
        "",
        "| step | µs/record |",
        "|---|---|",
        *[f"| {stage} | {v * 1e6:.2f} |" for stage, v in per_stage.items()],
        f"| the rest of the loop (consume, waiting for the scan or for a core, bookkeeping, metrics) | "
        f"{(1 / np.median(service_rates) - sum(list(per_stage.values())[1:])) * 1e6:.2f} |",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / results_name(args.learner)).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
