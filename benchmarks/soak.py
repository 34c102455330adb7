"""The service under steady load for longer than a label TTL: does anything it holds keep growing?

    python -m benchmarks.soak                          # an hour at half the measured maximum, with faults
    python -m benchmarks.soak --profile memory         # 10,000 records/s, 10 % asked, TTL 10 min, 20 min
    python -m benchmarks.soak --quick                  # the hour's schedule in 3 minutes (in CI)
    python -m benchmarks.soak --profile memory --quick
    python -m benchmarks.soak --broker tansu           # on the embedded broker instead of the mock

The broker is librdkafka's mock cluster in a process of its own (:class:`tests.rdmock.MockBroker`), whose
memory is bounded (each partition keeps its newest ~5 MB), so that a run of hours measures the service;
the embedded Tansu broker keeps every record in memory and, within 20 minutes at 10,000 records/s,
slows down enough to starve the service. ``--quick`` runs on Tansu (a few minutes at 2,000 records/s
stay far from that), the broker the other tests use.

A broker and ``python -m consumer run`` (role ``all``,
the default learner, 8 raw dense features, ``ACTIVESTREAM_QUERY_RATE_TARGET=0.1``, the profile's label
TTL and checkpoint interval, every other setting at its default). A feeder process produces records
at the profile's rate (for ``service``: half the rate the same service drains a backlog at, measured
first), paced in tenths of a second, from a linear concept over columns of different scales; an
annotator process answers label requests at once with the concept's label, one per id; in the
``service`` profile it leaves one in ``skip_every`` unanswered, so that requests expire too (in the
``memory`` profile every one is answered: the pending requests stay few, and what grows is the
memory of answered ids).

The ``service`` profile's schedule: a SIGKILL of the service, restarted at once as a supervisor
would; the broker stopped (SIGSTOP) for ``outage_s`` and let go (a restart of either broker loses its
data, which ``benchmarks.chaos`` covers); and a label
storm: for ``storm_s``, labels at ten times the record rate, a third each for ids answered already,
for ids never requested and for requests that expired unanswered. The storm's labels are counted by
the outcome the service gives each.

Every ``sample_s`` the run reads the service's resident memory (``/proc/<pid>/status``), its
``/metrics`` (records, labels, remembered ids, latency, lag, checkpoint size and duration) and the
checkpoint directory. Once one TTL (and a margin) has passed, the memory of answered ids holds one TTL
of labels, so nothing should grow any more: the run passes if no figure rises along a robust line
(Theil–Sen, so one spike from a fault is not a trend) by more than its share of the figure's median
over that window (:data:`RISE`; lag as a share of at least one feeder tick of records). Bytes per
remembered id: the growth of resident memory from the first sample past ``BASELINE_S`` to the
window's mean, over the growth of the ids remembered in between (every other thing that grew counts
against the memory), and the memory alone rebuilt at the same pace under tracemalloc.

Writes ``benchmarks/results/soak.md``, ``.json`` and ``.png`` (``soak-memory.*`` for that profile;
``--quick``: into the temporary directory, so the committed files stay as they are); exits 1 if a
figure kept rising or a storm's label was not counted as what it was.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
import urllib.request
import uuid
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from confluent_kafka import Consumer, Producer
from scipy.stats import theilslopes

from benchmarks.reproduce import commit
from consumer.config import Topics
from consumer.demo.broker import CLIENT_SETTINGS, Broker, create_topics, free_port
from tests.rdmock import MockBroker
from tests.reliability.test_crash_recovery import start_service

__all__ = ["PROFILES", "Profile", "main", "run"]

RESULTS = Path(__file__).parent / "results"
N_FEATURES = 8
QUERY_RATE = 0.1
STORM_FACTOR = 10  # storm labels per record
BASELINE_S = 60.0  # past start-up: the learner, the clients and the broker's buffers have their size
MAX_RATE_RECORDS = 300_000  # the backlog whose drain measures the maximum rate
# On the mock broker each partition keeps its newest ~5 MB: enough partitions that what a restart reads
# again (the records since the last checkpoint, the outputs made after it) is still there.
MOCK_PARTITIONS = 16
TOPIC_KEYS = ("features", "predictions", "label_requests", "labels", "dead_letters")
# The most a figure may rise over the window, as a share of its median: memory is held to a plateau;
# files move with the requests pending and the sealing of segments, and times only to no trend beyond
# their noise (a latency quantile moves a whole histogram bucket).
RISE = {"rss_bytes": 0.05, "remembered": 0.05, "checkpoint_file_bytes": 0.1, "parts_bytes": 0.1,
        "latency_p50_s": 0.2, "latency_p99_s": 0.2, "lag": 0.2, "checkpoint_duration_s": 0.2}
# The feeder sends a tick's worth of records at once, so the lag read at a sample swings within one
# tick: a rise in lag is judged as a share of at least that many records, not of a median below it.
TICKS_PER_S = 10
SIZES = ("rss_bytes", "remembered", "checkpoint_file_bytes", "parts_bytes")
SCALES = np.array([1.0, 10.0, 100.0, 0.1, 1.0, 1000.0, 5.0, 0.01])  # raw columns, as a user's stream has them
CONCEPT = np.array([1.0, -0.08, 0.012, 9.0, -1.5, 0.0007, 0.3, -60.0])  # a label = sign(CONCEPT · x)


@dataclass(frozen=True)
class Profile:
    ttl_s: float
    duration_s: float
    sample_s: float
    checkpoint_every_s: float = 30.0
    records_per_s: float | None = None  # None: half the measured maximum
    kill_at_s: float | None = None
    outage_at_s: float | None = None
    outage_s: float = 30.0
    storm_at_s: float | None = None
    storm_s: float = 60.0
    judged: tuple[str, ...] = tuple(RISE)  # the figures that must not rise; the others are shown
    skip_every: int = 50  # one request in this many is left unanswered, to expire (0: none)

    @property
    def faults(self) -> bool:
        return any(at is not None for at in (self.kill_at_s, self.outage_at_s, self.storm_at_s))

    @property
    def window_from_s(self) -> float:
        """Where the window judged starts: one TTL (and a margin) in, and past the last fault by
        three samples."""
        faults = ((self.kill_at_s, 0.0), (self.outage_at_s, self.outage_s), (self.storm_at_s, self.storm_s))
        settled = max((at + lasting + 3 * self.sample_s for at, lasting in faults if at is not None), default=0.0)
        return max(self.ttl_s + min(60.0, self.ttl_s / 2), settled)


# The faults come first, then the service runs undisturbed for most of the time: the window judged
# starts one TTL in and after the faults have settled, so a leak they caused shows as a rise in it.
PROFILES = {
    "service": Profile(ttl_s=600, duration_s=3600, sample_s=60, kill_at_s=300, outage_at_s=480,
                       storm_at_s=660),
    "service-quick": Profile(ttl_s=30, duration_s=180, sample_s=5, checkpoint_every_s=5, records_per_s=2_000,
                             kill_at_s=20, outage_at_s=33, outage_s=5, storm_at_s=50, storm_s=5),
    # near the service's maximum on this machine: latency and lag are shown, only sizes judged
    "memory": Profile(ttl_s=600, duration_s=1200, sample_s=30, records_per_s=10_000, judged=SIZES, skip_every=0),
    "memory-quick": Profile(ttl_s=40, duration_s=130, sample_s=5, checkpoint_every_s=5, records_per_s=2_000,
                            judged=SIZES, skip_every=0),
}


def records(rng: np.random.Generator, start: int, n: int) -> list[bytes]:
    rows = rng.standard_normal((n, N_FEATURES)) * SCALES
    return [orjson.dumps({"id": f"s{start + k}", "features": row}) for k, row in enumerate(rows.tolist())]


def feed(bootstrap: str, topic: str, rate: float, stop: Any) -> None:
    """Records at ``rate`` a second until ``stop`` (in a process of its own), each tenth of a second's
    worth at once."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 2_000_000})
    rng = np.random.default_rng(0)
    per_tick, n, started = int(rate / TICKS_PER_S), 0, time.monotonic()
    while not stop.is_set():
        for value in records(rng, n, per_tick):
            producer.produce(topic, value, f"s{n}".encode())
            n += 1
        producer.poll(0)
        time.sleep(max(0.0, started + n / rate - time.monotonic()))  # the source's pace, not a wait for a condition
    producer.flush(30)


def annotate(bootstrap: str, topics: dict[str, str], ttl_s: float, skip_every: int, stop: Any, storm: Any,
             storm_rate: float, storm_s: float, sent: Any) -> None:
    """Answer label requests at once with the concept's label, all but one in ``skip_every`` (in a
    process of its own). While ``storm`` is set, also send the storm's labels; what was sent, by
    kind, goes to ``sent`` at its end."""
    group = f"soak-annotator-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, **CLIENT_SETTINGS})
    consumer.subscribe([topics["label_requests"]])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 2_000_000})
    answered: deque[tuple[str, int, float]] = deque(maxlen=100_000)  # (id, label, when)
    skipped: deque[tuple[str, float]] = deque()  # (id, when it was read), oldest first
    seen, rng = 0, random.Random(0)
    while not stop.is_set():
        for msg in consumer.consume(2000, 0.1):
            if msg.error() is not None or not msg.value():
                continue
            request = orjson.loads(msg.value())
            seen += 1
            if skip_every and seen % skip_every == 0:
                skipped.append((request["id"], time.time()))
                continue
            label = 1 if float(np.dot(CONCEPT, request["features"])) > 0 else -1
            producer.produce(topics["labels"], orjson.dumps({"id": request["id"], "label": label}), msg.key())
            answered.append((request["id"], label, time.time()))
        producer.poll(0)
        if storm.is_set():
            sent.put(_storm(producer, topics["labels"], answered, skipped, ttl_s, storm_rate, storm_s, rng))
            storm.clear()
    producer.flush(30)
    consumer.close()


def _storm(producer: Producer, topic: str, answered: deque, skipped: deque, ttl_s: float, rate: float,
           duration_s: float, rng: random.Random) -> dict[str, int]:
    """``rate`` labels a second for ``duration_s``: a third each repeating the label of an id
    answered within the last TTL (one the service still remembers as applied), for an id never
    requested, and for a request that expired unanswered within the last TTL (remembered as expired).
    Where there is none of a kind to send, an unknown id is sent instead."""
    now = time.time()
    # answered within the last TTL, with a margin: still remembered as applied
    again = [(rid, label) for rid, label, at in answered if at > now - ttl_s + 5]
    # expired (read more than a TTL ago, with a margin for the expiry pass) but not yet forgotten
    late = [rid for rid, at in skipped if now - 2 * ttl_s + 5 < at < now - ttl_s - 5]
    counts = {"duplicate": 0, "unknown": 0, "expired": 0}
    per_tick, started, ticks = int(rate / 10), time.monotonic(), 0
    while time.monotonic() - started < duration_s:
        for k in range(per_tick):
            kind = ("duplicate", "unknown", "expired")[k % 3]
            if kind == "duplicate" and again:
                rid, label = rng.choice(again)
            elif kind == "expired" and late:
                rid, label = rng.choice(late), 1
            else:
                kind, rid, label = "unknown", f"ghost-{uuid.uuid4().hex[:12]}", 1
            producer.produce(topic, orjson.dumps({"id": rid, "label": label}), rid.encode())
            counts[kind] += 1
        producer.poll(0)
        ticks += 1
        time.sleep(max(0.0, started + ticks / 10 - time.monotonic()))  # the storm's pace
    producer.flush(60)
    return counts


def scrape(port: int) -> dict[str, float]:
    """The service's /metrics as series → value (empty while it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            out[series] = float(value)
    return out


def rss_bytes(pid: int) -> float:
    """Resident memory of a process; NaN if it has just exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return float("nan")
    return next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")),
                float("nan"))


def quantile(buckets: dict[float, float], q: float) -> float:
    """The ``q`` quantile of a histogram's cumulative buckets (upper bound → count), at the
    bucket's upper bound; NaN when empty."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]] if bounds else 0
    if total <= 0:
        return float("nan")
    return next(b for b in bounds if buckets[b] >= q * total)


def histogram(metrics: dict[str, float], name: str) -> dict[float, float]:
    prefix = f'{name}_bucket{{le="'
    return {float(k[len(prefix):-2]): v for k, v in metrics.items() if k.startswith(prefix)}


def since(now: dict[float, float], before: dict[float, float]) -> dict[float, float]:
    """A histogram's counts since ``before`` (all of them after a restart, which starts it afresh)."""
    diff = {b: n - before.get(b, 0.0) for b, n in now.items()}
    return now if any(v < 0 for v in diff.values()) else diff


def cpu_s(pid: int) -> float:
    """User and system CPU seconds of a process so far; NaN if it has exited."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except FileNotFoundError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sample(t: float, pid: int, port: int, checkpoint_dir: Path, before: dict[str, float],
           broker_pid: int) -> tuple[dict, dict]:
    m = scrape(port)
    latency = since(histogram(m, "activestream_processing_latency_seconds"),
                    histogram(before, "activestream_processing_latency_seconds"))
    durations = [m.get(f"activestream_checkpoint_duration_seconds_{k}", 0.0)
                 - before.get(f"activestream_checkpoint_duration_seconds_{k}", 0.0) for k in ("sum", "count")]
    if durations[1] < 0:  # restarted
        durations = [m.get(f"activestream_checkpoint_duration_seconds_{k}", 0.0) for k in ("sum", "count")]
    files = sorted(checkpoint_dir.glob("checkpoint-*.ckpt")) if checkpoint_dir.is_dir() else []
    parts = list(checkpoint_dir.glob("part-*.ckpt")) if checkpoint_dir.is_dir() else []
    row = {
        "t_s": round(t, 1),
        "rss_bytes": rss_bytes(pid),
        "broker_rss_bytes": rss_bytes(broker_pid),  # Tansu keeps every record in memory; the mock, ~5 MB a partition
        "service_cpu_s": cpu_s(pid),
        "broker_cpu_s": cpu_s(broker_pid),
        "records": m.get("activestream_records_scored_total", 0.0),
        "labels_applied": m.get('activestream_labels_total{outcome="applied"}', 0.0),
        "remembered_applied": m.get('activestream_remembered_label_ids{kind="applied"}', 0.0),
        "remembered_expired": m.get('activestream_remembered_label_ids{kind="expired"}', 0.0),
        "pending": m.get("activestream_pending_label_requests", 0.0),
        "checkpoint_written_bytes": m.get('activestream_checkpoint_bytes{kind="written"}', 0.0),
        "checkpoint_held_bytes": m.get('activestream_checkpoint_bytes{kind="held"}', 0.0),
        "checkpoint_file_bytes": files[-1].stat().st_size if files else 0,  # the newest
        "parts_bytes": sum(p.stat().st_size for p in parts),  # every part on disk, shared by the kept checkpoints
        "checkpoint_duration_s": durations[0] / durations[1] if durations[1] > 0 else float("nan"),
        "lag": sum(v for k, v in m.items() if k.startswith("activestream_consumer_lag_records")),
        "latency_p50_s": quantile(latency, 0.5),
        "latency_p99_s": quantile(latency, 0.99),
    }
    row["remembered"] = row["remembered_applied"] + row["remembered_expired"]
    return row, m


def rise(t: np.ndarray, y: np.ndarray, floor: float = 1e-12) -> float:
    """The rise of a Theil–Sen line over the span of ``t``, as a share of the median of ``y`` (or of
    ``floor``, the figure's noise, where the median is below it)."""
    keep = np.isfinite(y)
    t, y = t[keep], y[keep]
    if t.size < 3:
        return float("nan")
    slope = theilslopes(y, t)[0]
    return float(slope * (t[-1] - t[0]) / max(abs(float(np.median(y))), floor))


def isolated_bytes_per_id(n: int, profile: Profile) -> float:
    """Bytes per id of the memory alone (traced allocations), remembering ``n`` ids over one TTL as
    the service does: the same number per second, and sealed at the same pace."""
    from consumer.pending import _SEGMENTS_PER_TTL, Memory, fingerprints

    per_s = max(1, round(n / profile.ttl_s))
    tracemalloc.start()
    try:
        memory = Memory(profile.ttl_s / _SEGMENTS_PER_TTL)
        for t in range(round(profile.ttl_s)):
            memory.remember(fingerprints([f"s{t * per_s + k}" for k in range(per_s)]), float(t))
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return held / len(memory)


def measure(samples: list[dict], profile: Profile) -> dict[str, Any]:
    window = [s for s in samples if s["t_s"] >= profile.window_from_s]
    base = next(s for s in samples if s["t_s"] >= min(BASELINE_S, profile.ttl_s / 2))
    t = np.array([s["t_s"] for s in window])
    span = samples[-1]["t_s"] - samples[0]["t_s"]
    records_per_s = (samples[-1]["records"] - samples[0]["records"]) / span
    floors = {"lag": records_per_s / TICKS_PER_S}
    figures = {}
    for key, limit in RISE.items():
        y = np.array([s[key] for s in window], dtype=np.float64)
        change = rise(t, y, floors.get(key, 1e-12))
        judged = key in profile.judged
        figures[key] = {"median": float(np.nanmedian(y)) if np.isfinite(y).any() else float("nan"),
                        "max": float(np.nanmax(y)) if np.isfinite(y).any() else float("nan"),
                        "rise": change, "limit": limit if judged else None,
                        "flat": not change > limit if judged else None}
    remembered = float(np.mean([s["remembered"] for s in window]))
    rss_mean = float(np.mean([s["rss_bytes"] for s in window]))
    return {
        "window_s": [float(t[0]), float(t[-1])], "samples_in_window": len(window), "baseline_t_s": base["t_s"],
        "figures": figures,
        "labels_per_s": (samples[-1]["labels_applied"] - samples[0]["labels_applied"]) / span,
        "records_per_s": records_per_s,
        "query_ratio": samples[-1]["labels_applied"] / max(samples[-1]["records"], 1),
        "remembered": remembered,
        # a restart in between would change the process measured: per id only without faults
        "rss_per_remembered_bytes": None if profile.faults else
        (rss_mean - base["rss_bytes"]) / (remembered - base["remembered"]),
        "parts_per_remembered_bytes": figures["parts_bytes"]["median"] / remembered,
        "isolated_per_remembered_bytes": isolated_bytes_per_id(round(remembered), profile),
        "written_per_checkpoint_bytes": float(np.median([s["checkpoint_written_bytes"] for s in window])),
        "flat": all(f["flat"] for f in figures.values() if f["flat"] is not None),
    }


class Service:
    """``python -m consumer run`` as a supervisor runs it: started again at once if killed."""

    def __init__(self, env: dict[str, str], port: int, log: Path) -> None:
        self.env, self.port, self.log = env, port, log
        self.proc = start_service(env, log)
        self.restarts: list[float] = []  # seconds from each kill to ready again
        self.exits: list[int] = []  # exit codes of the processes that stopped by themselves

    def ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not scrape(self.port).get("activestream_ready"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the service did not become ready: {self.log.read_text()[-2000:]}")
            time.sleep(0.1)  # polling another process's /metrics

    def kill_and_restart(self) -> None:
        started = time.monotonic()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = start_service(self.env, self.log)
        self.ready(120)
        self.restarts.append(time.monotonic() - started)

    def check(self) -> None:
        """Start the service again if it stopped (a broker away for longer than the lease's session
        makes it exit 1: another process may hold the lease by then)."""
        if self.proc.poll() is not None:
            self.exits.append(self.proc.returncode)
            if len(self.exits) > 20:
                raise RuntimeError(f"the service keeps exiting ({self.exits}): {self.log.read_text()[-2000:]}")
            self.proc = start_service(self.env, self.log)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def service_env(bootstrap: str, topics: dict[str, str], checkpoint_dir: Path, port: int,
                profile: Profile) -> dict[str, str]:
    return {**os.environ, "ACTIVESTREAM_ROLE": "all", "ACTIVESTREAM_BOOTSTRAP_SERVERS": bootstrap,
            "ACTIVESTREAM_CHECKPOINT_DIR": str(checkpoint_dir), "ACTIVESTREAM_METRICS_PORT": str(port),
            "ACTIVESTREAM_GROUP_ID": f"soak-{uuid.uuid4().hex[:8]}", "ACTIVESTREAM_N_FEATURES": str(N_FEATURES),
            "ACTIVESTREAM_CLASSES": "[-1, 1]", "ACTIVESTREAM_QUERY_RATE_TARGET": str(QUERY_RATE),
            "ACTIVESTREAM_LABELS__TTL_S": str(profile.ttl_s),
            "ACTIVESTREAM_CHECKPOINT__EVERY_S": str(profile.checkpoint_every_s),
            "ACTIVESTREAM_TOPICS": orjson.dumps(topics).decode(),
            "ACTIVESTREAM_KAFKA_CONSUMER": orjson.dumps(CLIENT_SETTINGS).decode(),
            "ACTIVESTREAM_LOG_LEVEL": "WARNING"}


def max_rate(bootstrap: str, topics: dict[str, str], profile: Profile, workdir: Path) -> float:
    """Records/s the service drains a backlog at, with the soak's settings (``topics``: its own, no labels)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 2_000_000})
    rng = np.random.default_rng(1)
    for start in range(0, MAX_RATE_RECORDS, 50_000):
        for value in records(rng, start, 50_000):
            producer.produce(topics["features"], value)
        producer.flush(60)
    port = free_port()
    service = Service(service_env(bootstrap, topics, workdir / "max-ckpt", port, profile), port, workdir / "max.log")
    try:
        service.ready(600)
        started = time.monotonic()
        while (scrape(port).get("activestream_records_scored_total") or 0) < MAX_RATE_RECORDS:
            service.check()
            time.sleep(0.05)  # polling another process's /metrics
        return MAX_RATE_RECORDS / (time.monotonic() - started)
    finally:
        service.stop()


def named_topics() -> dict[str, str]:
    tag = uuid.uuid4().hex[:8]
    return {k: f"{k.replace('_', '-')}-{tag}" for k in TOPIC_KEYS}


def start_broker(kind: str, topics: list[str]) -> Any:
    """The broker (``mock``: bounded memory, :class:`tests.rdmock.MockBroker`; ``tansu``: the embedded
    one, which keeps every record), holding ``topics``."""
    if kind == "mock":
        return MockBroker({**dict.fromkeys(topics, MOCK_PARTITIONS), Topics().lease: 1})
    broker = Broker()
    create_topics(broker.bootstrap, topics, partitions=1)
    return broker


def run(profile: Profile, workdir: Path, broker_kind: str = "mock") -> dict[str, Any]:
    port = free_port()
    checkpoint_dir = workdir / "ckpt"
    fork = multiprocessing.get_context("fork")
    drain_topics, topics = named_topics(), named_topics()
    with start_broker(broker_kind, [*drain_topics.values(), *topics.values()]) as broker:
        drained = max_rate(broker.bootstrap, drain_topics, profile, workdir) if profile.records_per_s is None else None
        rate = profile.records_per_s or drained / 2
        stop, storm, sent = fork.Event(), fork.Event(), fork.Queue()
        answering = (broker.bootstrap, topics, profile.ttl_s, profile.skip_every, stop, storm, STORM_FACTOR * rate,
                     profile.storm_s, sent)
        workers = [fork.Process(target=annotate, args=answering, daemon=True),
                   fork.Process(target=feed, args=(broker.bootstrap, topics["features"], rate, stop), daemon=True)]
        service = Service(service_env(broker.bootstrap, topics, checkpoint_dir, port, profile), port,
                          workdir / "service.log")
        samples: list[dict] = []
        events: list[dict] = []
        schedule = sorted((at, name) for at, name in ((profile.kill_at_s, "kill"), (profile.outage_at_s, "outage"),
                                                      (profile.storm_at_s, "storm")) if at is not None)
        try:
            service.ready(600)  # a checkout without numba's cache compiles the kernels first
            for worker in workers:
                worker.start()
            started = time.monotonic()
            previous: dict[str, float] = {}
            ticks = 0
            while (now := time.monotonic() - started) < profile.duration_s:
                next_sample = (ticks + 1) * profile.sample_s
                if schedule and schedule[0][0] <= min(now, next_sample):
                    _, name = schedule.pop(0)
                    events.append(fault(name, now, service, broker, profile, storm, sent, port))
                    continue
                time.sleep(max(0.0, started + min(next_sample, schedule[0][0] if schedule else next_sample)
                               - time.monotonic()))  # the schedule's next moment
                if time.monotonic() - started < next_sample:
                    continue
                ticks += 1
                service.check()
                row, metrics = sample(time.monotonic() - started, service.proc.pid, port, checkpoint_dir, previous,
                                      broker.pid)
                if not metrics.get("activestream_ready"):  # starting again: no figures of its own yet
                    print(f"{row['t_s']:.0f} s: not ready, no sample", flush=True)
                    continue
                samples.append(row)
                previous = metrics
                print(json.dumps(row), flush=True)
        finally:
            stop.set()
            for worker in workers:
                if worker.pid is not None:
                    worker.join(60)
            service.stop()
    return {"broker": broker_kind, "records_per_s_fed": rate, "drained_per_s": drained, "events": events,
            "restart_s": service.restarts, "exits": service.exits, "samples": samples, **measure(samples, profile)}


def fault(name: str, at: float, service: Service, broker: Any, profile: Profile, storm: Any, sent: Any,
          port: int) -> dict[str, Any]:
    """Inject one scheduled fault; what happened."""
    print(f"{at:.0f} s: {name}", flush=True)
    if name == "kill":
        service.kill_and_restart()
        return {"at_s": round(at), "fault": "SIGKILL, started again", "ready_again_s": round(service.restarts[-1], 1)}
    if name == "outage":
        os.kill(broker.pid, signal.SIGSTOP)
        try:
            time.sleep(profile.outage_s)  # the fault's duration
        finally:
            os.kill(broker.pid, signal.SIGCONT)
        return {"at_s": round(at), "fault": f"broker stopped (SIGSTOP) for {profile.outage_s:.0f} s"}
    before = scrape(port)
    storm.set()
    counts = sent.get(timeout=profile.storm_s + 120)
    deadline = time.monotonic() + 120
    outcomes: dict[str, float] = {}
    while time.monotonic() < deadline:
        now = scrape(port)
        outcomes = {k: now.get(f'activestream_labels_total{{outcome="{k}"}}', 0.0)
                    - before.get(f'activestream_labels_total{{outcome="{k}"}}', 0.0)
                    for k in ("duplicate", "unknown", "expired", "overflow")}
        if sum(outcomes.values()) >= sum(counts.values()):
            break
        time.sleep(0.5)  # polling another process's /metrics until it has read the storm
    return {"at_s": round(at), "fault": f"label storm for {profile.storm_s:.0f} s", "sent": counts,
            "counted": {k: int(v) for k, v in outcomes.items()}, "rss_before": rss_bytes(service.proc.pid)}


def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB"


def sizing(result: dict[str, Any]) -> list[str]:
    """Memory and checkpoint sizes for other label rates and TTLs, from this run's per-id figures."""
    # the larger of the two: a process with pages to spare may hold the ids without growing
    per_rss = max(result["rss_per_remembered_bytes"], result["isolated_per_remembered_bytes"])
    per_disk = result["parts_per_remembered_bytes"]
    checkpoint_every_s = result["profile"]["checkpoint_every_s"]
    per_written = result["written_per_checkpoint_bytes"] / (result["labels_per_s"] * checkpoint_every_s)
    lines = ["| labels/s | TTL | ids remembered | memory | checkpoint parts on disk | written per checkpoint |",
             "|---:|---:|---:|---:|---:|---:|"]
    for rate in (10, 100, 1_000, 10_000):
        for ttl_s, ttl in ((600, "10 min"), (3600, "1 h")):
            n = rate * ttl_s
            lines.append(f"| {rate:,} | {ttl} | {n:,} | {_mb(n * per_rss)} | {_mb(n * per_disk)} | "
                         f"{_mb(rate * checkpoint_every_s * per_written)} |")
    return lines


_NAMES = {"rss_bytes": "resident memory", "remembered": "ids remembered (applied and expired)",
          "checkpoint_file_bytes": "the newest checkpoint's own file", "parts_bytes": "parts on disk",
          "latency_p50_s": "p50 latency", "latency_p99_s": "p99 latency", "lag": "consumer lag (records)",
          "checkpoint_duration_s": "checkpoint duration"}


def _shown(key: str, value: float) -> str:
    if key.endswith("_bytes"):
        return _mb(value)
    if key.endswith("_s"):
        return f"{1e3 * value:,.0f} ms"
    return f"{value:,.0f}"


def plot(r: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.array([s["t_s"] for s in r["samples"]]) / 60
    fig, axes = plt.subplots(4, 2, figsize=(11, 10), sharex=True)
    for ax, key in zip(axes.flat, _NAMES, strict=True):
        y = np.array([s[key] for s in r["samples"]], dtype=np.float64)
        scale, unit = (1e-6, "MB") if key.endswith("_bytes") else (1e3, "ms") if key.endswith("_s") else (1, "")
        ax.plot(t, y * scale, marker=".", lw=1)
        ax.set_title(f"{_NAMES[key]}" + (f" ({unit})" if unit else ""), fontsize=10)
        ax.axvspan(r["window_s"][0] / 60, r["window_s"][1] / 60, color="0.92", zorder=0)
        for event in r["events"]:
            ax.axvline(event["at_s"] / 60, color="tab:red", lw=0.8, ls="--")
        ax.set_ylim(bottom=0)
    for ax in axes[-1]:
        ax.set_xlabel("minutes")
    fig.suptitle("Soak: shaded, the window judged (past one TTL); dashed, the faults", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


_BROKERS = {"mock": "librdkafka's mock cluster (one broker in a process of its own, each partition keeping its "
                    f"newest ~5 MB; {MOCK_PARTITIONS} partitions a topic)",
            "tansu": "the embedded broker (Tansu, every record kept in memory)"}


def render(r: dict[str, Any], image: str | None) -> str:
    p, f = r["profile"], r["figures"]
    rows = [s for s in r["samples"] if round(s["t_s"]) % 60 < p["sample_s"]] if p["duration_s"] >= 600 else r["samples"]
    verdict = "kept flat" if r["flat"] else "did NOT all keep flat"
    fed = (f"{r['records_per_s_fed']:,.0f} records/s (half the {r['drained_per_s']:,.0f} records/s it drained a "
           "backlog at, measured first)" if r["drained_per_s"] else f"{r['records_per_s_fed']:,.0f} records/s")
    out = [
        f"# Soak: profile {r['name']}", "",
        "<!-- provenance -->",
        f"Made {r['made']} at commit `{r['commit']}` by `{r['command']}` ({r['seconds']:.0f} s).",
        "<!-- /provenance -->", "",
        f"`python -m consumer run` (role `all`, the default learner, {N_FEATURES} raw dense features, "
        f"`ACTIVESTREAM_QUERY_RATE_TARGET={QUERY_RATE}`, `ACTIVESTREAM_LABELS__TTL_S={p['ttl_s']:.0f}`, "
        f"`ACTIVESTREAM_CHECKPOINT__EVERY_S={p['checkpoint_every_s']:.0f}`, every other setting at its default) "
        f"on {_BROKERS[r.get('broker', 'tansu')]}, fed {fed} for {p['duration_s'] / 60:.0f} min; "
        "label requests answered at once"
        + (f", but for one in {p['skip_every']}, left to expire." if p["skip_every"] else ", every one."), "",
        "## Summary", "",
        f"- Scored {r['records_per_s']:,.0f} records/s and applied {r['labels_per_s']:,.0f} labels/s "
        f"(query ratio {r['query_ratio']:.3f}). "
        + (f"The service stopped by itself {len(r['exits'])} time(s) (exit codes {r['exits']}: a broker away "
           "for longer than the trainer lease's session, 2 s here, makes it exit 1) and was "
           "started again, as a supervisor does." if r["exits"] else "It never stopped by itself."),
        f"- From {r['window_s'][0]:.0f} s to {r['window_s'][1]:.0f} s (past one TTL), each figure {verdict}: "
        "the rise of a Theil–Sen line over the window, as a share of the median, against its limit.", "",
        "| figure | median | max | rise | limit | flat |", "|---|---:|---:|---:|---:|---|",
    ]
    for key, name in _NAMES.items():
        limit, flat = f[key]["limit"], f[key]["flat"]
        out.append(f"| {name} | {_shown(key, f[key]['median'])} | {_shown(key, f[key]['max'])} | "
                   f"{f[key]['rise']:+.1%} | {'shown only' if limit is None else f'{limit:.0%}'} | "
                   f"{'' if flat is None else 'yes' if flat else 'no'} |")
    whole = ("" if r["rss_per_remembered_bytes"] is None else
             f"**{r['rss_per_remembered_bytes']:.1f} bytes** for the whole process (its growth from "
             f"{r['baseline_t_s']:.0f} s to the window, over the growth of the ids it remembers); ")
    out += ["",
            f"- Resident memory per remembered id: {whole}the memory of ids alone, rebuilt in isolation at the same "
            f"pace: {r['isolated_per_remembered_bytes']:.1f} bytes (traced allocations).",
            f"- Parts on disk per remembered id: {r['parts_per_remembered_bytes']:.1f} bytes; each checkpoint "
            f"writes {_mb(r['written_per_checkpoint_bytes'])} (median in the window): its own file, what was "
            "remembered since the previous one, and a sealed segment now and then.", ""]
    if r["events"]:
        out += ["## Faults", "", "| at | fault | what followed |", "|---:|---|---|"]
        for e in r["events"]:
            if "sent" in e:
                what = ("sent " + ", ".join(f"{v:,} {k}" for k, v in e["sent"].items()) + "; counted "
                        + ", ".join(f"{v:,} {k}" for k, v in e["counted"].items()))
            else:
                what = f"ready again in {e['ready_again_s']} s" if "ready_again_s" in e else ""
            out.append(f"| {e['at_s'] / 60:.1f} min | {e['fault']} | {what} |")
        out.append("")
    if image:
        out += [f"![the soak's figures over time]({image})", ""]
    if r["rss_per_remembered_bytes"] is not None:
        out += ["## Sizing", "",
                "Scaled from this run's figures per remembered id (memory: the larger of the whole process's and "
                f"the ids' alone; parts on disk), checkpoints every {p['checkpoint_every_s']:.0f} s:", "",
                *sizing(r), ""]
    out += ["## Samples", "",
            "| t (s) | RSS | remembered | pending | checkpoint written | newest file | parts | checkpoint (ms) | "
            "lag | p50 (ms) | p99 (ms) | service CPU | broker CPU | broker RSS |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    shown = {id(s) for s in rows}
    previous = None
    for s in r["samples"]:
        cpu = ["", ""]
        if previous is not None and s["t_s"] > previous["t_s"]:
            span = s["t_s"] - previous["t_s"]
            cpu = [f"{(s[k] - previous[k]) / span:.0%}" for k in ("service_cpu_s", "broker_cpu_s")]
        previous = s
        if id(s) not in shown:
            continue
        out.append(f"| {s['t_s']:.0f} | {_mb(s['rss_bytes'])} | {s['remembered']:,.0f} | {s['pending']:,.0f} "
                   f"| {_mb(s['checkpoint_written_bytes'])} | {_mb(s['checkpoint_file_bytes'])} "
                   f"| {_mb(s['parts_bytes'])} | {1e3 * s['checkpoint_duration_s']:.0f} | {s['lag']:,.0f} "
                   f"| {1e3 * s['latency_p50_s']:.0f} | {1e3 * s['latency_p99_s']:.0f} | {cpu[0]} | {cpu[1]} "
                   f"| {_mb(s['broker_rss_bytes'])} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", choices=["service", "memory"], default="service")
    parser.add_argument("--quick", action="store_true", help="a short run, written to the temporary directory")
    parser.add_argument("--broker", choices=["mock", "tansu"], default=None,
                        help="librdkafka's mock cluster (bounded memory; the default of the long runs) or the "
                        "embedded Tansu broker (the default of --quick, whose minutes it holds easily)")
    args = parser.parse_args(argv)
    broker = args.broker or ("tansu" if args.quick else "mock")
    name = f"{args.profile}-quick" if args.quick else args.profile
    profile = PROFILES[name]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        result = run(profile, Path(tmp), broker)
    command = "python -m benchmarks.soak " + " ".join(argv if argv is not None else sys.argv[1:])
    result = {"name": name, "profile": asdict(profile), "made": dt.date.today().isoformat(), "commit": commit(),
              "command": command.strip(), "seconds": time.time() - started, **result}
    result["provenance"] = {key: result[key] for key in ("made", "commit", "command")} | {
        "minutes": round(result["seconds"] / 60, 1), "settings": asdict(profile)}
    out = Path(tempfile.gettempdir()) if args.quick else RESULTS
    stem = "soak" if args.profile == "service" else f"soak-{args.profile}"
    stem += "-quick" if args.quick else ""
    plot(result, out / f"{stem}.png")
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / f"{stem}.md").write_text(render(result, f"{stem}.png"))
    print(render(result, None))
    counted = all(e["sent"][k] == e["counted"][k] for e in result["events"] if "sent" in e for k in e["sent"])
    return 0 if result["flat"] and counted else 1


if __name__ == "__main__":
    sys.exit(main())
