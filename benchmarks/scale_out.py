"""Scale-out: scorer and trainer processes through one broker (Tansu on 127.0.0.1), on this machine.

    python -m benchmarks.scale_out [--records 600000] [--scorers 1 2 3] [--repeats 2] [--failovers 3]
                                   [--dims 16 20 24] [--quick]

1. Throughput: a backlog of feature records (a8a from the shared datasets, 123 dimensions, ~14
   non-zeros, passed over as many times as needed with fresh ids; a synthetic stream of the same
   shape if the file is not staged) on a 4-partition features topic. One trainer
   (``ACTIVESTREAM_ROLE=trainer``) is started and becomes active, then k scorers
   (``ACTIVESTREAM_ROLE=scorer``, each a ``python -m consumer run`` process) at once, on the empty
   topic; once every scorer is ready they are paused (SIGSTOP), the backlog is loaded, and they are
   resumed together (see :func:`drain` for why). Records/s from the resumption to the last
   prediction (the newest Kafka timestamp of the predictions topic once the scorers have scored the
   backlog). Each scorer holds a 10 % query rate (``ACTIVESTREAM_QUERY_RATE_TARGET``); an annotator
   in a process of its own answers each label request 0.5 s after reading it. CPU seconds of each
   process over the same window, from /proc/<pid>/stat (the trainer's until it has applied every
   label the window asked for).
2. Model version lag: each scorer's ``activestream_model_swap_delay_seconds`` histogram (from a
   version's ``published_at`` to the scorer scoring with it), the scorers of a run summed, p50 / p99
   by linear interpolation inside the bucket that holds the quantile (as Prometheus'
   ``histogram_quantile``).
3. Failover: two trainers (one active, one standby), one scorer, records fed at a steady rate. The
   active trainer is killed with SIGKILL; from the kill to the standby's
   ``activestream_trainer_active`` reading 1 (its /metrics polled every 20 ms) and to the
   ``published_at`` of the first model manifest of a new epoch on the model topic. The killed
   trainer is started again as the next standby, and the kill repeated.
4. Bytes per model version: paa-1 at each dimension, published with
   :class:`consumer.model_topic.ModelPublisher` to a broker: a full snapshot (after 1,000 labels),
   then deltas, each after 100 more labels of ~20 non-zeros; bytes, chunks, the time to encode
   (the ``.npz`` archive, and for a delta the diff too) and the time to publish (encode, send every
   chunk and the manifest, wait for their acknowledgements).

Writes benchmarks/results/scale_out.md and scale_out.json (``--quick``: into the temporary directory).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from confluent_kafka import Consumer, Producer, TopicPartition

from benchmarks.reproduce import data_dir
from consumer.config import Settings
from consumer.demo.annotator import Annotator
from consumer.demo.broker import CLIENT_SETTINGS, Broker, create_topics, free_port
from consumer.kafka import CONSUMER_DEFAULTS
from consumer.model_topic import DEFAULT_CHUNK_BYTES, ModelPublisher, delta, encode_state
from learners import make
from learners.datasets import Dataset, read_libsvm
from learners.synthetic import synthetic_sparse

RESULTS = Path(__file__).parent / "results"
PARTITIONS = 4
DIMENSIONS = 123  # a8a's
QUERY_RATE = 0.10
LABEL_DELAY_S = 0.5
TOPIC_KEYS = ("features", "predictions", "label_requests", "labels", "dead_letters", "model", "lease")
POLL_S = 0.02
SCORER_SESSION_MS = CONSUMER_DEFAULTS["session.timeout.ms"]


# -- the records ------------------------------------------------------------------------------------------


def dataset(root: Path | None = None) -> Dataset:
    """a8a from the shared datasets; a synthetic stream of its shape if the file is not staged."""
    path = (root or data_dir()) / "a8a.xz"
    if path.exists():
        return read_libsvm(path).with_features(DIMENSIONS)
    fallback = synthetic_sparse(n=32_561, d=DIMENSIONS, nnz=14, seed=0)
    return Dataset(fallback.rows, fallback.labels, "synthetic")


def make_records(data: Dataset, n: int) -> tuple[list[bytes], dict[str, int]]:
    """n JSON feature records: the dataset's rows in order, over and over, each pass with fresh ids."""
    rows = []
    for i in range(data.n):
        idx, val = data.rows.row(i)
        rows.append(orjson.dumps({"indices": idx.tolist(), "values": val.tolist()}))
    values, truth = [], {}
    for k in range(n):
        i = k % data.n
        rid = f"p{k // data.n}r{i}"
        values.append(b'{"id":"' + rid.encode() + b'","features":' + rows[i] + b"}")
        truth[rid] = int(data.labels[i])
    return values, truth


def preload(bootstrap: str, topic: str, values: Sequence[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 2_000_000})
    for value in values:
        rid = value[7: value.index(b'"', 7)]
        while True:
            try:
                p.produce(topic, key=rid, value=value)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(120):
        raise RuntimeError("the backlog was not all acknowledged")


def fresh_topics(bootstrap: str) -> dict[str, str]:
    tag = uuid.uuid4().hex[:8]
    topics = {k: f"so-{k.replace('_', '-')}-{tag}" for k in TOPIC_KEYS}
    create_topics(bootstrap, [topics[k] for k in ("features", "predictions", "label_requests", "labels")],
                  PARTITIONS)
    create_topics(bootstrap, [topics[k] for k in ("dead_letters", "model", "lease")], 1)
    return topics


# -- reading processes ------------------------------------------------------------------------------------


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_s() -> tuple[float, float]:
    """(busy, idle) CPU seconds of the whole machine, all cores, from /proc/stat."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK"), idle / os.sysconf("SC_CLK_TCK")


def metric(text: str, name: str) -> float | None:
    """A sample's value from a Prometheus text exposition: ``name`` with its labels, if any, as written."""
    for line in text.splitlines():
        if line.startswith(name + " ") or (line.startswith(name + "{") and "{" not in name):
            return float(line.rsplit(" ", 1)[1])
    return None


def histogram(text: str, name: str) -> list[tuple[float, float]]:
    """The cumulative buckets (upper bound, count) of a histogram, +Inf last."""
    out = []
    for line in text.splitlines():
        if line.startswith(name + "_bucket{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            out.append((float(le), float(line.rsplit(" ", 1)[1])))
    return sorted(out)


def add_histograms(parts: Sequence[list[tuple[float, float]]]) -> list[tuple[float, float]]:
    total: dict[float, float] = {}
    for buckets in parts:
        for le, count in buckets:
            total[le] = total.get(le, 0.0) + count
    return sorted(total.items())


def quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """The q-quantile of cumulative buckets, interpolated linearly inside its bucket (the lower
    bound of the first bucket taken as 0) as Prometheus' histogram_quantile does; the highest
    finite bound if it falls in +Inf. None with no observations."""
    if not buckets or buckets[-1][1] == 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * ((rank - below) / (count - below) if count > below else 0.0)
        lower, below = le, count
    return lower


class Cluster:
    """The service processes of one deployment, each with its own metrics port and log file."""

    def __init__(self, bootstrap: str, topics: dict[str, str], directory: Path, extra: dict[str, str]) -> None:
        self.directory = directory
        self.base = {**os.environ,
                     "ACTIVESTREAM_BOOTSTRAP_SERVERS": bootstrap,
                     "ACTIVESTREAM_GROUP_ID": f"scale-{uuid.uuid4().hex[:8]}",
                     "ACTIVESTREAM_TOPICS": orjson.dumps(topics).decode(),
                     "ACTIVESTREAM_KAFKA_CONSUMER": orjson.dumps(CLIENT_SETTINGS).decode(),
                     "ACTIVESTREAM_N_FEATURES": str(DIMENSIONS), "ACTIVESTREAM_LEARNER": "paa-1",
                     "ACTIVESTREAM_QUERY_RATE_TARGET": str(QUERY_RATE),
                     "ACTIVESTREAM_CHECKPOINT_DIR": str(directory / "unused"),
                     "ACTIVESTREAM_LOG_LEVEL": "WARNING", **extra}
        self.processes: dict[str, tuple[subprocess.Popen, int]] = {}

    def start(self, name: str, role: str, extra: dict[str, str] | None = None) -> None:
        port = free_port()
        env = {**self.base, "ACTIVESTREAM_ROLE": role, "ACTIVESTREAM_METRICS_PORT": str(port), **(extra or {})}
        with open(self.directory / f"{name}.log", "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "consumer", "run"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=log)
        self.processes[name] = (proc, port)

    def pid(self, name: str) -> int:
        return self.processes[name][0].pid

    def alive(self, name: str) -> bool:
        return self.processes[name][0].poll() is None

    def metrics(self, name: str) -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.processes[name][1]}/metrics", timeout=2) as r:
                return r.read().decode()
        except OSError:
            return ""

    def value(self, name: str, sample: str) -> float | None:
        return metric(self.metrics(name), sample)

    def active_trainer(self) -> str | None:
        live = [n for n in self.processes if n.startswith("trainer") and self.alive(n)]
        return next((n for n in live if self.value(n, "activestream_trainer_active") == 1.0), None)

    def kill(self, name: str) -> float:
        """SIGKILL ``name``; the wall-clock time of the kill."""
        proc = self.processes[name][0]
        at = time.time()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        return at

    def stop(self) -> dict[str, int]:
        codes = {}
        for proc, _ in self.processes.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for name, (proc, _) in self.processes.items():
            try:
                codes[name] = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[name] = -9
        return codes

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.directory.glob("*.log")))


def wait_for(condition: Callable[[], Any], timeout_s: float, what: str, detail: Callable[[], str] = str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if got := condition():
            return got
        time.sleep(POLL_S)  # polling other processes' state: nothing to wait on
    raise TimeoutError(f"{what} within {timeout_s} s\n{detail()}")


def run_annotator(bootstrap: str, requests: str, labels: str, truth: dict[str, int], ready: Any, stop: Any,
                  answered: Any, parent: int) -> None:
    """The annotator, in a process of its own (its CPU is then its own); it stops with its parent."""
    annotator = Annotator(bootstrap, requests, labels, truth, delay_s=LABEL_DELAY_S, cost=1.0,
                          consumer_settings=CLIENT_SETTINGS)
    annotator.start()
    annotator.ready.wait(60)
    ready.set()
    while not stop.wait(0.1) and os.getppid() == parent:
        answered.value = annotator.answered
    annotator.stop()
    annotator.join(10)
    answered.value = annotator.answered


class AnnotatorProcess:
    def __init__(self, bootstrap: str, topics: dict[str, str], truth: dict[str, int]) -> None:
        ctx = multiprocessing.get_context("spawn")  # no fork of a process holding librdkafka threads
        self.ready, self.stop_event, self.answered = ctx.Event(), ctx.Event(), ctx.Value("q", 0)
        self.process = ctx.Process(target=run_annotator, daemon=True,
                                   args=(bootstrap, topics["label_requests"], topics["labels"], truth,
                                         self.ready, self.stop_event, self.answered, os.getpid()))

    def start(self) -> AnnotatorProcess:
        self.process.start()
        if not self.ready.wait(120):
            raise TimeoutError("the annotator never got the requests topic")
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()


class LastTimestamp:
    """The newest Kafka timestamp of a topic. Tansu answers ListOffsets with an end offset that can
    trail the log by up to a batch, so each partition is read from a little before it to the end
    (the end-of-partition event, from the fetch responses' high watermark)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ends-{uuid.uuid4().hex[:6]}",
                                  "enable.auto.commit": False, "enable.partition.eof": True, **CLIENT_SETTINGS})

    def read(self, margin: int = 10_000) -> float:
        newest, parts = 0.0, []
        for p in range(PARTITIONS):
            end = self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=5, cached=False)[1]
            parts.append(TopicPartition(self.topic, p, max(0, end - margin)))
        self.consumer.assign(parts)
        at_end: set[int] = set()
        deadline = time.monotonic() + 30
        while len(at_end) < PARTITIONS:
            if time.monotonic() > deadline:
                raise TimeoutError(f"cannot read {self.topic} to its end")
            for msg in self.consumer.consume(10_000, 0.2):
                if msg.error() is None:
                    newest = max(newest, msg.timestamp()[1] / 1000)
                else:
                    at_end.add(msg.partition())
        return newest

    def close(self) -> None:
        self.consumer.close()


# -- 1 and 2: throughput, CPU and model lag -----------------------------------------------------------------


def drain(values: Sequence[bytes], truth: dict[str, int], scorers: int, directory: Path) -> dict[str, Any]:
    """One drain of the backlog by ``scorers`` scorers and one trainer, on a broker of its own.

    Scorers started together still become ready seconds apart (imports and warm-up on a busy
    machine), and the first would drain much of a backlog alone. So they start on an empty features
    topic; once every one is ready they are paused (SIGSTOP), the backlog is loaded, and they are
    resumed (SIGCONT) together. Their features consumers use the production session timeout
    (:data:`SCORER_SESSION_MS`), which the pause stays well within, so the group is not rebalanced."""
    n = len(values)
    with Broker() as broker:
        topics = fresh_topics(broker.bootstrap)
        annotator = AnnotatorProcess(broker.bootstrap, topics, truth).start()
        cluster = Cluster(broker.bootstrap, topics, directory, {})
        names = [f"scorer-{k}" for k in range(scorers)]

        def total(sample: str) -> float:
            return sum(cluster.value(name, sample) or 0.0 for name in names)
        try:
            cluster.start("trainer", "trainer")
            wait_for(lambda: cluster.value("trainer", "activestream_trainer_active") == 1.0, 120,
                     "the trainer never became active", cluster.logs)
            started = time.monotonic()
            pausable = {"ACTIVESTREAM_KAFKA_CONSUMER": orjson.dumps(
                {**CLIENT_SETTINGS, "session.timeout.ms": SCORER_SESSION_MS}).decode()}
            for name in names:
                cluster.start(name, "scorer", pausable)
            ready: dict[str, float] = {}

            def all_ready() -> bool:
                for name in names:
                    if name not in ready and cluster.value(name, "activestream_ready") == 1.0:
                        ready[name] = time.monotonic() - started
                return len(ready) == scorers

            wait_for(all_ready, 180, "the scorers never became ready", cluster.logs)
            for name in names:
                os.kill(cluster.pid(name), signal.SIGSTOP)
            paused = time.monotonic()
            preload(broker.bootstrap, topics["features"], values)
            pause_s = time.monotonic() - paused
            pids = {"scorers": [cluster.pid(s) for s in names], "trainer": [cluster.pid("trainer")],
                    "broker": [broker.pid], "annotator": [annotator.process.pid]}
            cpu0 = {role: sum(cpu_s(p) for p in ps) for role, ps in pids.items()}
            machine0 = machine_s()
            t0 = time.time()
            for name in names:
                os.kill(cluster.pid(name), signal.SIGCONT)
            done_at_ready = int(total("activestream_records_scored_total"))  # anything before the pause
            print(f"  {scorers} scorer(s) ready after {', '.join(f'{r:.1f}' for r in ready.values())} s, "
                  f"paused {pause_s:.1f} s for the backlog", flush=True)
            # the scorers' own counts, read every 0.1 s: /metrics costs them a little CPU, and the end of the
            # window is the predictions' timestamps, not this poll
            deadline = time.monotonic() + 600
            while total("activestream_records_scored_total") < n:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the backlog was not all scored\n{cluster.logs()}")
                time.sleep(0.1)
            cpu1 = {role: sum(cpu_s(p) for p in ps) for role, ps in pids.items()}
            machine1 = machine_s()
            # everything else that ran over the drain: this script, and other work on the machine
            rest = (machine1[0] - machine0[0]) - sum(cpu1[role] - cpu0[role] for role in pids)
            last = LastTimestamp(broker.bootstrap, topics["predictions"])
            try:
                t1 = last.read()
            finally:
                last.close()
            print(f"  drained in {t1 - t0:.1f} s; waiting for the trainer", flush=True)
            # the trainer's share of the window: until it has applied every label it was asked for
            asked = total("activestream_label_requests_total")
            wait_for(lambda: cluster.value("trainer", 'activestream_labels_total{outcome="applied"}') == asked,
                     300, "the trainer never applied every label",
                     lambda: f"{asked} asked, {annotator.answered.value} answered\n{cluster.logs()}")
            cpu1.update({role: cpu_s(pids[role][0]) for role in ("trainer", "annotator")})
            scorer_metrics = {name: cluster.metrics(name) for name in names}
            trainer_metrics = cluster.metrics("trainer")
        finally:
            annotator.stop()
            codes = cluster.stop()
    window = t1 - t0
    records = n - done_at_ready
    swaps = add_histograms([histogram(text, "activestream_model_swap_delay_seconds") for text in
                            scorer_metrics.values()])
    publications = sum(metric(trainer_metrics, f'activestream_model_publications_total{{kind="{k}"}}') or 0
                       for k in ("full", "delta"))
    busy, idle = (machine1[0] - machine0[0], machine1[1] - machine0[1])
    return {
        "scorers": scorers, "records": n, "predicted_before_ready": done_at_ready, "window_s": window,
        "records_per_s": records / window, "ready_after_s": ready, "paused_s": pause_s, "label_requests": asked,
        "labels_answered": annotator.answered.value,
        "cpu_s": {role: cpu1[role] - cpu0[role] for role in cpu0},
        "cpu_s_per_1000": {role: 1000 * (cpu1[role] - cpu0[role]) / records for role in cpu0},
        "machine_busy_share": busy / (busy + idle) if busy + idle else None,
        "rest_cpu_s_per_1000": 1000 * rest / records,
        "swap_delay_buckets": swaps, "swaps": swaps[-1][1] if swaps else 0,
        "swap_p50_s": quantile(swaps, 0.5), "swap_p99_s": quantile(swaps, 0.99),
        "publications": publications, "exit_codes": codes,
    }


# -- 3: failover ------------------------------------------------------------------------------------------


class ModelWatcher(threading.Thread):
    """Every model manifest on the model topic, as (epoch, version, kind, published_at, seen at)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="model-watcher", daemon=True)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"w-{uuid.uuid4().hex[:6]}",
                                  "enable.auto.commit": False, **CLIENT_SETTINGS})
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.manifests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            for msg in self.consumer.consume(500, 0.05):
                key = msg.key() if msg.error() is None else None
                if key is None or not key.startswith(b"model/manifest/") or msg.value() is None:
                    continue
                manifest = json.loads(msg.value())
                with self.lock:
                    self.manifests.append({k: manifest[k] for k in ("epoch", "version", "kind", "published_at")}
                                          | {"seen_at": time.time()})
        self.consumer.close()

    def first_after(self, epoch: int) -> dict[str, Any] | None:
        with self.lock:
            return next((m for m in self.manifests if m["epoch"] > epoch), None)

    def newest_epoch(self) -> int:
        with self.lock:
            return max((m["epoch"] for m in self.manifests), default=-1)


def feed_steadily(bootstrap: str, topic: str, values: Sequence[bytes], rate: float, halt: threading.Event) -> int:
    """Produce ``values`` (over and over, with fresh ids) at ``rate`` records/s until ``halt``."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    started, i = time.monotonic(), 0
    while not halt.is_set():
        value = values[i % len(values)]
        rid = value[7: value.index(b'"', 7)]
        p.produce(topic, key=rid, value=value)
        i += 1
        if i % 100 == 0:
            p.poll(0)
            ahead = i / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)  # the feed's pace, not a wait for a condition
    p.flush(30)
    return i


def failovers(values: Sequence[bytes], truth: dict[str, int], kills: int, rate: float,
              directory: Path) -> list[dict[str, Any]]:
    """``kills`` SIGKILLs of the active trainer, each followed by the standby's takeover; the
    killed trainer comes back as the next standby."""
    out = []
    with Broker() as broker:
        topics = fresh_topics(broker.bootstrap)
        annotator = AnnotatorProcess(broker.bootstrap, topics, truth).start()
        cluster = Cluster(broker.bootstrap, topics, directory, {})
        watcher = ModelWatcher(broker.bootstrap, topics["model"])
        watcher.start()
        halt = threading.Event()
        feeder = threading.Thread(target=feed_steadily, args=(broker.bootstrap, topics["features"], values, rate,
                                                               halt), daemon=True)
        try:
            cluster.start("trainer-a", "trainer")
            wait_for(lambda: cluster.active_trainer() == "trainer-a", 120, "the first trainer never became active",
                     cluster.logs)
            cluster.start("trainer-b", "trainer")
            cluster.start("scorer", "scorer")
            wait_for(lambda: cluster.value("scorer", "activestream_ready") == 1.0, 120,
                     "the scorer never became ready", cluster.logs)
            feeder.start()
            for _ in range(kills):
                active = cluster.active_trainer()
                standby = "trainer-b" if active == "trainer-a" else "trainer-a"
                # the standby is up and in the lease group: its /metrics answer, it is not active, and a
                # publication of the active trainer's epoch has happened since (labels are flowing)
                wait_for(lambda s=standby: cluster.value(s, "activestream_trainer_active") == 0.0, 120,
                         "the standby never came up", cluster.logs)
                epoch = watcher.newest_epoch()
                seen = len(watcher.manifests)
                wait_for(lambda s=seen: len(watcher.manifests) > s + 2, 60, "no publications before the kill",
                         cluster.logs)
                time.sleep(2.0)  # a join of the lease group takes half a session timeout: be sure it is done
                killed_at = cluster.kill(active)
                wait_for(lambda s=standby: cluster.value(s, "activestream_trainer_active") == 1.0 or None, 120,
                         "the standby never took over", cluster.logs)
                active_at = time.time()
                first = wait_for(lambda e=epoch: watcher.first_after(e), 120, "no publication of a new epoch",
                                 cluster.logs)
                out.append({"killed": active, "standby": standby, "epoch_before": epoch,
                            "to_active_s": active_at - killed_at, "to_publication_s": first["published_at"] - killed_at,
                            "to_publication_seen_s": first["seen_at"] - killed_at, "first": first})
                print(f"  failover {len(out)}: {active} killed, {standby} active after "
                      f"{out[-1]['to_active_s']:.2f} s, published after {out[-1]['to_publication_s']:.2f} s",
                      flush=True)
                cluster.start(active, "trainer")  # the next standby
        finally:
            halt.set()
            if feeder.is_alive():
                feeder.join(30)
            watcher.halt.set()
            watcher.join(10)
            annotator.stop()
            cluster.stop()
    return out


# -- 4: bytes per model version ----------------------------------------------------------------------------


def publication_sizes(dims: Sequence[int], deltas: int) -> list[dict[str, Any]]:
    """A full snapshot and ``deltas`` deltas of paa-1 at each dimension, published to one broker."""
    out = []
    with Broker() as broker:
        for d in dims:
            topic = f"so-model-{d}-{uuid.uuid4().hex[:6]}"
            create_topics(broker.bootstrap, [topic], 1)
            data = synthetic_sparse(n=1_000 + 100 * deltas, d=d, nnz=20, seed=d)
            learner = make("paa-1", n_features=d)
            producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                                 "message.max.bytes": DEFAULT_CHUNK_BYTES + 100_000})
            publisher = ModelPublisher(producer, topic, timeout_s=120)
            publisher.start(epoch=1, after_version=0)
            learner.learn_many(data.rows.take(np.arange(1_000)), data.labels[:1_000], scored=False)
            state = learner.state_dict()
            started = time.perf_counter()
            encode_state(state)
            encoded = time.perf_counter() - started
            started = time.perf_counter()
            full = publisher.publish(state, epoch=1, kind="full")
            row = {"dimensions": d, "full": {"bytes": full.bytes, "chunks": full.chunks, "encode_s": encoded,
                                            "publish_s": time.perf_counter() - started}, "deltas": []}
            previous = state
            for k in range(deltas):
                start = 1_000 + 100 * k
                learner.learn_many(data.rows.take(np.arange(start, start + 100)), data.labels[start:start + 100],
                                   scored=False)
                state = learner.state_dict()
                started = time.perf_counter()
                encode_state(delta(previous, state))
                encoded = time.perf_counter() - started
                started = time.perf_counter()
                got = publisher.publish(state, epoch=1)
                row["deltas"].append({"kind": got.kind, "bytes": got.bytes, "chunks": got.chunks,
                                      "encode_s": encoded, "publish_s": time.perf_counter() - started,
                                      "changed": int(np.count_nonzero(state["rule.w"] != previous["rule.w"]))})
                previous = state
            producer.flush(30)
            print(f"  2^{d.bit_length() - 1}: full {full.bytes:,} bytes in {full.chunks} chunks, "
                  f"{row['full']['publish_s']:.2f} s; delta {row['deltas'][-1]['bytes']:,} bytes", flush=True)
            out.append(row)
    return out


# -- the report ---------------------------------------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{1000 * seconds:,.0f} ms" if seconds >= 0.1 else f"{1000 * seconds:.1f} ms"


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def summarise(drains: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per scorer count: medians over the repetitions."""
    out = []
    for k in sorted({d["scorers"] for d in drains}):
        runs = [d for d in drains if d["scorers"] == k]
        swaps = add_histograms([r["swap_delay_buckets"] for r in runs])
        out.append({
            "scorers": k, "runs": len(runs),
            "records_per_s": _median([r["records_per_s"] for r in runs]),
            "records_per_s_each": [r["records_per_s"] for r in runs],
            "window_s": _median([r["window_s"] for r in runs]),
            "before_ready_share": _median([r["predicted_before_ready"] / r["records"] for r in runs]),
            "query_ratio": _median([r["label_requests"] / r["records"] for r in runs]),
            "cpu_s_per_1000": {role: _median([r["cpu_s_per_1000"][role] for r in runs])
                               for role in runs[0]["cpu_s_per_1000"]},
            "machine_busy_share": _median([r["machine_busy_share"] for r in runs]),
            "rest_cpu_s_per_1000": _median([r["rest_cpu_s_per_1000"] for r in runs]),
            "swaps": swaps[-1][1] if swaps else 0, "swap_p50_s": quantile(swaps, 0.5),
            "swap_p99_s": quantile(swaps, 0.99), "swap_le_2s_share": _share_within(swaps, 2.0),
            "publications": _median([r["publications"] for r in runs]),
        })
    return out


def _share_within(buckets: list[tuple[float, float]], bound: float) -> float | None:
    total = buckets[-1][1] if buckets else 0
    return next((c / total for le, c in buckets if le == bound), None) if total else None


def projection(row: dict[str, Any]) -> dict[str, float]:
    """Records/s a machine of C cores could sustain, from the CPU per record of each role."""
    c = row["cpu_s_per_1000"]
    per_record = {role: c[role] / 1000 for role in c}
    return {"scorer_core_records_per_s": 1 / per_record["scorers"],
            "pipeline_cpu_us_per_record": 1e6 * sum(per_record.values())}


def write(results: dict[str, Any], out: Path, stem: str = "scale_out") -> None:
    s, a = results["summary"], results["settings"]
    n_cores = os.cpu_count()
    lines = [
        "# Scale-out: scorers and trainers as separate processes through one broker (Tansu on 127.0.0.1)",
        "",
        f"Machine: {n_cores} cores, shared by every process below (the broker, each scorer, the trainer, the "
        "annotator and this script). Records: "
        f"{a['records']:,} feature records from {a['source']} ({DIMENSIONS} dimensions, "
        f"{a['nnz_mean']:.1f} non-zeros on average; {a['passes']} passes over its {a['rows']:,} rows, fresh ids "
        "each pass), JSON `{indices, values}`, on a 4-partition features topic. Learner paa-1; each scorer "
        "holds a 10 % query rate (`ACTIVESTREAM_QUERY_RATE_TARGET`); "
        "an annotator in a process of its own answers each label request 0.5 s after reading it. Service "
        "settings are the defaults (model published every 1 s or 1,000 labels, batches of up to 2,000 records) "
        "except the client settings of the test broker (`consumer.demo.broker.CLIENT_SETTINGS`: "
        "`session.timeout.ms` 2000, `fetch.wait.max.ms` 10). The machine is shared with other work, which "
        "comes and goes: the spread between repetitions below is mostly that, and \"machine busy\" counts "
        "everything that ran.",
        "",
        "## Throughput and CPU per role",
        "",
        "One trainer is started and becomes active (no standby in these runs: it would only heartbeat), then the "
        "scorers, all at once, on an empty features topic. Started together they still become ready seconds apart "
        "(imports and warm-up on a busy machine), and the first would drain much of the backlog alone; so once "
        "every scorer reports ready (`activestream_ready` 1) they are paused (SIGSTOP), the backlog is loaded "
        f"(median {a['pause_s']:.1f} s), and they are resumed together (SIGCONT). Their features consumers use "
        f"the production `session.timeout.ms` ({SCORER_SESSION_MS} ms), which the pause stays well within, so "
        "the group is not rebalanced. Records/s: the backlog over the time from the resumption to the newest "
        "Kafka timestamp of the predictions topic, once the scorers' `activestream_records_scored_total` add up "
        f"to the backlog. Median of {a['repeats']} repetitions, each on a broker of its own, the scorer counts "
        "in alternate orders.",
        "",
        "| scorers | records/s | each run | drain | query ratio | model publications |",
        "|---|---|---|---|---|---|",
    ]
    for row in s:
        lines.append(f"| {row['scorers']} | **{row['records_per_s']:,.0f}** | "
                     f"{', '.join(f'{x:,.0f}' for x in row['records_per_s_each'])} | {row['window_s']:.1f} s | "
                     f"{row['query_ratio']:.1%} | {row['publications']:.0f} |")
    lines += [
        "",
        "CPU seconds per 1,000 records over the same window, read from /proc/<pid>/stat (user + system, every "
        "thread of the process); all the scorers together, and the trainer until it has applied every label "
        "the window's records asked for. The rest of the machine: its busy time over the drain (/proc/stat) "
        "less these processes' — this script, and whatever other work shared the machine then:",
        "",
        "| scorers | scorers (all) | trainer | broker | annotator | sum | the rest of the machine | machine busy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in s:
        c = row["cpu_s_per_1000"]
        lines.append(f"| {row['scorers']} | {c['scorers']:.4f} | {c['trainer']:.4f} | {c['broker']:.4f} | "
                     f"{c['annotator']:.4f} | {sum(c.values()):.4f} | {row['rest_cpu_s_per_1000']:.4f} | "
                     f"{row['machine_busy_share']:.0%} |")
    one = s[0]
    c1 = one["cpu_s_per_1000"]
    scorer_us, broker_us, trainer_us = (1000 * c1["scorers"], 1000 * c1["broker"], 1000 * c1["trainer"])
    lines += [
        "",
        "### Beyond this machine",
        "",
        f"On {n_cores} cores every process competes for the same CPU. With one scorer the machine was "
        f"{one['machine_busy_share']:.0%} busy over the drain (a scorer's loop is one thread; the broker, the "
        "trainer and the annotator share the rest). "
        + "; ".join(f"{row['scorers']} scorers reached {row['records_per_s'] / one['records_per_s']:.2f} × its "
                    f"records/s, the machine {row['machine_busy_share']:.0%} busy" for row in s[1:])
        + ". Once every core is busy, another scorer only adds its own overhead (its polling, heartbeats, model "
        "swaps) and takes CPU from the broker and the trainer it depends on, so records/s cannot keep scaling "
        "with scorers here. What predicts throughput on N cores is the CPU each role spends per record. With one "
        f"scorer (the least contention): a scorer spends {scorer_us:.1f} µs per record, the broker "
        f"{broker_us:.1f} µs (features read, predictions and label requests written, labels and the model "
        f"topic), the trainer {trainer_us:.1f} µs (at a {one['query_ratio']:.0%} query ratio: "
        f"{1000 * c1['trainer'] / max(one['query_ratio'], 1e-9):.0f} µs per label, its polling while idle "
        "included, so an upper estimate). Scorers are independent (one consumer group, partitions split "
        f"between them), so N cores given to scorers sustain about N × 1,000,000 / {scorer_us:.1f} ≈ "
        f"N × {1e6 / scorer_us:,.0f} records/s, up to one scorer per features partition (4 here: add "
        "partitions to go further). The one active trainer does not scale out (one lease): on a core of its "
        f"own it keeps up with about 1,000,000 / {trainer_us:.1f} ≈ {1e6 / trainer_us:,.0f} records/s at this "
        "query ratio (divide by the query ratio's growth if it is higher). The broker needs "
        f"{broker_us:.1f} µs per record on top, wherever it runs (Tansu here; Kafka spreads it over its "
        "brokers). Example: 8 cores for scorers, 1 for the trainer, the brokers elsewhere → "
        f"min(8 × {1e6 / scorer_us:,.0f}, {1e6 / trainer_us:,.0f}) = "
        f"{min(8e6 / scorer_us, 1e6 / trainer_us):,.0f} records/s. These are CPU-bound ceilings: they "
        "assume the brokers and the network keep up, and they come from a shared 2-core machine (the CPU per "
        "record of each role at 2 and 3 scorers, in the table above, shows how much contention adds).",
        "",
        "## Model version lag",
        "",
        "From a version's `published_at` (its manifest on the model topic) to a scorer scoring with it (the "
        "scorer swaps a complete version in between two batches): each scorer's "
        "`activestream_model_swap_delay_seconds` histogram, the scorers of every repetition of a count summed; "
        "p50 and p99 interpolated linearly inside the bucket that holds them (buckets 10, 25, 50, 100, 250, "
        "500 ms, 1, 2, 5 s …), so they are known to within their bucket. The clocks are the same machine's. "
        "A scorer looks for a new version between two batches, so the lag grows as its batches take longer "
        "on a machine with more processes per core.",
        "",
        "| scorers | swaps observed | p50 | p99 | within 2 s |",
        "|---|---|---|---|---|",
    ]
    for row in s:
        within = "–" if row["swap_le_2s_share"] is None else f"{row['swap_le_2s_share']:.1%}"
        lines.append(f"| {row['scorers']} | {row['swaps']:.0f} | {_ms(row['swap_p50_s'])} | "
                     f"{_ms(row['swap_p99_s'])} | {within} |")
    f = results["failover"]
    if f:
        to_active = [x["to_active_s"] for x in f]
        to_pub = [x["to_publication_s"] for x in f]
        lines += [
            "",
            "## Trainer failover",
            "",
            f"Two trainers and one scorer, {a['failover_rate']:,.0f} records/s fed steadily; the active trainer "
            "(`activestream_trainer_active` 1) killed with SIGKILL once it had published a few versions, the "
            "standby's /metrics polled every 20 ms, and the model topic read for the first manifest of a new "
            "epoch (its `published_at`). The killed trainer was started again as the next standby. "
            "`session.timeout.ms` 2000 (the test client settings).",
            "",
            "| kill | killed | to the standby active | to its first publication |",
            "|---|---|---|---|",
        ]
        for i, x in enumerate(f, 1):
            lines.append(f"| {i} | {x['killed']} | {x['to_active_s']:.2f} s | {x['to_publication_s']:.2f} s |")
        lines += [
            "",
            f"Median: {_median(to_active):.2f} s to active, {_median(to_pub):.2f} s to the first publication. "
            "The lease is the group membership of `<group_id>-lease`: a member that dies is dropped only when "
            "its session times out, so the takeover cannot come before `session.timeout.ms` (2 s here), then "
            "the standby's rebalance (this broker answers a join after about half a session timeout), then the "
            "restore of the newest checkpoint from the model topic and the first full snapshot. With the "
            f"production default (`consumer/kafka.py` CONSUMER_DEFAULTS, `session.timeout.ms` "
            f"{CONSUMER_DEFAULTS['session.timeout.ms']}) the session part grows by "
            f"{(int(CONSUMER_DEFAULTS['session.timeout.ms']) - 2000) / 1000:.0f} s: about "
            f"{_median(to_active) + (int(CONSUMER_DEFAULTS['session.timeout.ms']) - 2000) / 1000:.0f} s to "
            f"active and {_median(to_pub) + (int(CONSUMER_DEFAULTS['session.timeout.ms']) - 2000) / 1000:.0f} s "
            "to the first publication (more on this broker, whose join wait is half the session too: "
            f"+{(int(CONSUMER_DEFAULTS['session.timeout.ms']) - 2000) / 2000:.0f} s). Scoring never stops "
            "meanwhile: the scorers keep the last version they had.",
        ]
    lines += [
        "",
        "## Bytes per model version",
        "",
        "paa-1 published with `consumer.model_topic.ModelPublisher` (chunks of at most 900,000 bytes) to the "
        "broker, no service process: a full snapshot after 1,000 labels, then "
        f"{a['deltas']} deltas, each after 100 more labels of 20 non-zeros (synthetic rows). Encode: the "
        "`.npz` archive (for a delta, the diff against the previous version too). Publish: "
        "`ModelPublisher.publish` (encode, send every chunk, wait for the acknowledgements, then the manifest). "
        "Median of the deltas.",
        "",
        "| dimensions | full: bytes | chunks | encode | publish | delta: bytes | chunks | encode | publish "
        "| weights changed per delta |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["bytes"]:
        full, ds = row["full"], row["deltas"]
        med = {k: _median([x[k] for x in ds]) for k in ("bytes", "chunks", "encode_s", "publish_s", "changed")}
        kinds = {x["kind"] for x in ds}
        lines.append(f"| 2^{row['dimensions'].bit_length() - 1} | {full['bytes']:,} | {full['chunks']} | "
                     f"{_ms(full['encode_s'])} | {_ms(full['publish_s'])} | {med['bytes']:,.0f}"
                     f"{'' if kinds == {'delta'} else ' (' + '/'.join(sorted(kinds)) + ')'} | {med['chunks']:.0f} | "
                     f"{_ms(med['encode_s'])} | {_ms(med['publish_s'])} | {med['changed']:,.0f} |")
    lines += [
        "",
        "A full snapshot is the weight vector as it is (8 bytes a dimension, no compression); a delta holds the "
        "indices and new values of the weights that changed (12 bytes each at these sizes) and stays small "
        "whatever the dimension, but computing it compares every weight of the two versions, so its encode "
        "time grows with the dimension. The trainer publishes a full snapshot every 50 deltas "
        "(`ACTIVESTREAM_MODEL__FULL_EVERY`) and at each new epoch (a failover).",
        "",
        f"Raw figures: `{stem}.json`.",
    ]
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    (out / f"{stem}.json").write_text(json.dumps(results, indent=1, default=float) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=600_000, help="backlog drained by each run")
    ap.add_argument("--scorers", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--repeats", type=int, default=3, help="drains per scorer count")
    ap.add_argument("--failovers", type=int, default=3, help="SIGKILLs of the active trainer")
    ap.add_argument("--failover-rate", type=float, default=5_000, help="records/s fed during the failovers")
    ap.add_argument("--dims", type=int, nargs="+", default=[16, 20, 24], help="log2 of the model dimensions")
    ap.add_argument("--deltas", type=int, default=5, help="deltas published at each dimension")
    ap.add_argument("--quick", action="store_true", help="small settings, written to the temporary directory")
    ap.add_argument("--out", type=Path, help="directory of scale_out.md and .json (default benchmarks/results; "
                    "with --quick, the temporary directory, so the committed files stay as they are)")
    args = ap.parse_args(argv)
    if args.quick:
        args.records, args.repeats, args.failovers, args.dims, args.deltas = 100_000, 1, 1, [16, 20], 2
    out = args.out or (Path(tempfile.gettempdir()) if args.quick else RESULTS)
    started = time.perf_counter()
    data = dataset()
    values, truth = make_records(data, args.records)
    settings = {"records": args.records, "source": "a8a" if data.name != "synthetic" else "a synthetic stream",
                "rows": data.n, "passes": -(-args.records // data.n),
                "nnz_mean": float(np.diff(data.rows.indptr).mean()), "repeats": args.repeats,
                "scorer_session_ms": SCORER_SESSION_MS,
                "failover_rate": args.failover_rate, "deltas": args.deltas, "partitions": PARTITIONS,
                "query_rate_target": QUERY_RATE, "label_delay_s": LABEL_DELAY_S,
                "batch_size": Settings.model_fields["batch_size"].default, "client_settings": CLIENT_SETTINGS}
    drains = []
    with tempfile.TemporaryDirectory(prefix="scale-out-") as tmp:
        for rep in range(args.repeats):
            order = args.scorers if rep % 2 == 0 else list(reversed(args.scorers))
            for k in order:
                directory = Path(tmp) / f"drain-{k}-{rep}"
                directory.mkdir()
                got = drain(values, truth, k, directory)
                drains.append(got)
                print(f"drain: {k} scorer(s), {got['records_per_s']:,.0f} records/s over {got['window_s']:.1f} s, "
                      f"swaps p50 {_ms(got['swap_p50_s'])} p99 {_ms(got['swap_p99_s'])}", flush=True)
        directory = Path(tmp) / "failover"
        directory.mkdir()
        failover = failovers(values, truth, args.failovers, args.failover_rate, directory) if args.failovers else []
    sizes = publication_sizes([2**d for d in args.dims], args.deltas)
    settings["pause_s"] = _median([d["paused_s"] for d in drains])
    results = {"settings": settings, "summary": summarise(drains), "drains": drains, "failover": failover,
               "bytes": sizes, "minutes": (time.perf_counter() - started) / 60}
    write(results, out)
    print(f"wrote {out / 'scale_out.md'} in {results['minutes']:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
