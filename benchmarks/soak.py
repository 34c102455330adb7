"""The service under steady load for longer than a label TTL: does what it holds stop growing?

    python -m benchmarks.soak --profile memory     # 10,000 records/s, 10 % asked, TTL 10 min, 20 min
    python -m benchmarks.soak --profile memory --quick   # 2,000 records/s, TTL 40 s, 2 min (in CI)

The embedded broker (``consumer.demo.broker.Broker``) and ``python -m consumer run`` (role ``all``,
the default learner, 8 dense features, ``ACTIVESTREAM_QUERY_RATE_TARGET=0.1``, the label TTL of the
profile, every other setting at its default). A feeder process produces records at the profile's
rate, paced in tenths of a second, from a linear concept over columns of different scales; an
annotator process answers every label request at once with the concept's label (one per id).

Every ``sample_s`` the run reads the service's resident memory (``/proc/<pid>/status``), its
``/metrics`` (records, labels, remembered ids, the last checkpoint's size, lag, latency) and the
checkpoint directory's size on disk. Once one TTL (and a minute) has passed, the memory of applied
ids holds one TTL of labels, so nothing should grow any more: the run passes if each of resident
memory, remembered ids and the checkpoint's bytes changes by less than ``FLAT`` of its mean over that
window (a least-squares line through the samples). Bytes per remembered id are the growth of
resident memory from the first sample past ``BASELINE_S`` to the window's mean, over the growth of
remembered ids in between: every other thing that grew is counted against the memory.

Writes ``benchmarks/results/soak-<profile>.md`` and ``.json`` (``--quick``: into the temporary
directory, so the committed files stay as they are); exits 1 if a figure did not plateau.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from confluent_kafka import Consumer, Producer

from benchmarks.reproduce import commit
from consumer.demo.broker import CLIENT_SETTINGS, Broker, free_port
from tests.kafka_helpers import unique_topics
from tests.reliability.test_crash_recovery import start_service

__all__ = ["PROFILES", "Profile", "main", "run"]

RESULTS = Path(__file__).parent / "results"
N_FEATURES = 8
QUERY_RATE = 0.1
FLAT = 0.05  # the most a plateaued figure may change over the window, as a share of its mean
BASELINE_S = 60.0  # past start-up: the learner, the clients and the broker's buffers have their size
SCALES = np.array([1.0, 10.0, 100.0, 0.1, 1.0, 1000.0, 5.0, 0.01])  # raw columns, as a user's stream has them
CONCEPT = np.array([1.0, -0.08, 0.012, 9.0, -1.5, 0.0007, 0.3, -60.0])  # a label = sign(CONCEPT · x)


@dataclass(frozen=True)
class Profile:
    records_per_s: float
    ttl_s: float
    duration_s: float
    sample_s: float
    checkpoint_every_s: float


PROFILES = {
    "memory": Profile(records_per_s=10_000, ttl_s=600, duration_s=1200, sample_s=30, checkpoint_every_s=30),
    "memory-quick": Profile(records_per_s=2_000, ttl_s=40, duration_s=130, sample_s=5, checkpoint_every_s=5),
}


def feed(bootstrap: str, topic: str, rate: float, stop: Any) -> None:
    """Records at ``rate`` a second until ``stop`` (in a process of its own), each tenth of a second's
    worth at once."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    rng = np.random.default_rng(0)
    per_tick, n, started = int(rate / 10), 0, time.monotonic()
    while not stop.is_set():
        rows = rng.standard_normal((per_tick, N_FEATURES)) * SCALES
        for row in rows.tolist():
            producer.produce(topic, orjson.dumps({"id": f"s{n}", "features": row}), f"s{n}".encode())
            n += 1
        producer.poll(0)
        time.sleep(max(0.0, started + n / rate - time.monotonic()))  # the source's pace, not a wait for a condition
    producer.flush(30)


def annotate(bootstrap: str, topics: dict[str, str], stop: Any) -> None:
    """Answer every label request at once with the concept's label (in a process of its own)."""
    group = f"soak-annotator-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, **CLIENT_SETTINGS})
    consumer.subscribe([topics["label_requests"]])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    while not stop.is_set():
        for msg in consumer.consume(2000, 0.1):
            if msg.error() is not None or not msg.value():
                continue
            request = orjson.loads(msg.value())
            label = 1 if float(np.dot(CONCEPT, request["features"])) > 0 else -1
            producer.produce(topics["labels"], orjson.dumps({"id": request["id"], "label": label}), msg.key())
        producer.poll(0)
    producer.flush(30)
    consumer.close()


def scrape(port: int) -> dict[str, float]:
    """The service's /metrics as series → value (empty while it does not answer)."""
    import urllib.request

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


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


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


def sample(t: float, pid: int, port: int, checkpoint_dir: Path, before: dict[str, float]) -> tuple[dict, dict]:
    m = scrape(port)
    earlier = histogram(before, "activestream_processing_latency_seconds")  # since the previous sample
    latency = {b: n - earlier.get(b, 0.0) for b, n in histogram(m, "activestream_processing_latency_seconds").items()}
    files = sorted(checkpoint_dir.glob("checkpoint-*.ckpt")) if checkpoint_dir.is_dir() else []
    parts = list(checkpoint_dir.glob("part-*.ckpt")) if checkpoint_dir.is_dir() else []
    row = {
        "t_s": round(t, 1),
        "rss_bytes": rss_bytes(pid),
        "records": m.get("activestream_records_scored_total", 0.0),
        "labels_applied": m.get('activestream_labels_total{outcome="applied"}', 0.0),
        "remembered_applied": m.get('activestream_remembered_label_ids{kind="applied"}', 0.0),
        "remembered_expired": m.get('activestream_remembered_label_ids{kind="expired"}', 0.0),
        "pending": m.get("activestream_pending_label_requests", 0.0),
        "checkpoint_written_bytes": m.get('activestream_checkpoint_bytes{kind="written"}', 0.0),
        "checkpoint_held_bytes": m.get('activestream_checkpoint_bytes{kind="held"}', 0.0),
        "checkpoint_file_bytes": files[-1].stat().st_size if files else 0,  # the newest
        "parts_bytes": sum(p.stat().st_size for p in parts),  # every part on disk, shared by the kept checkpoints
        "lag": sum(v for k, v in m.items() if k.startswith("activestream_consumer_lag_records")),
        "latency_p50_s": quantile(latency, 0.5),
        "latency_p99_s": quantile(latency, 0.99),
    }
    return row, m


def trend(t: np.ndarray, y: np.ndarray) -> float:
    """Change of the least-squares line over the span of ``t``, as a share of the mean of ``y``."""
    slope = np.polyfit(t, y, 1)[0]
    return float(slope * (t[-1] - t[0]) / max(abs(float(np.mean(y))), 1e-12))


def measure(samples: list[dict], profile: Profile) -> dict[str, Any]:
    window = [s for s in samples if s["t_s"] >= profile.ttl_s + min(60.0, profile.ttl_s / 2)]
    base = next(s for s in samples if s["t_s"] >= min(BASELINE_S, profile.ttl_s / 2))
    t = np.array([s["t_s"] for s in window])
    figures = {}
    for key in ("rss_bytes", "remembered_applied", "checkpoint_file_bytes", "parts_bytes"):
        y = np.array([s[key] for s in window], dtype=np.float64)
        figures[key] = {"mean": float(y.mean()), "trend": trend(t, y), "flat": abs(trend(t, y)) < FLAT}
    remembered = figures["remembered_applied"]["mean"] + np.mean([s["remembered_expired"] for s in window])
    grew = remembered - base["remembered_applied"] - base["remembered_expired"]
    span = samples[-1]["t_s"] - samples[0]["t_s"]
    return {
        "window_s": [float(t[0]), float(t[-1])], "samples_in_window": len(window), "baseline_t_s": base["t_s"],
        "figures": figures,
        "labels_per_s": (samples[-1]["labels_applied"] - samples[0]["labels_applied"]) / span,
        "records_per_s": (samples[-1]["records"] - samples[0]["records"]) / span,
        "query_ratio": samples[-1]["labels_applied"] / max(samples[-1]["records"], 1),
        "remembered": remembered,
        "rss_per_remembered_bytes": (figures["rss_bytes"]["mean"] - base["rss_bytes"]) / grew,
        "parts_per_remembered_bytes": figures["parts_bytes"]["mean"] / remembered,
        "isolated_per_remembered_bytes": isolated_bytes_per_id(round(remembered), profile),
        "written_per_checkpoint_bytes": float(np.median([s["checkpoint_written_bytes"] for s in window])),
        "max_lag": max(s["lag"] for s in window),
        "flat": all(f["flat"] for f in figures.values()),
    }


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


def run(profile: Profile, workdir: Path) -> dict[str, Any]:
    port = free_port()
    checkpoint_dir = workdir / "ckpt"
    log = workdir / "service.log"
    fork = multiprocessing.get_context("fork")
    with Broker() as broker:
        topics = unique_topics(broker.bootstrap, partitions=1)
        env = {**os.environ, "ACTIVESTREAM_ROLE": "all", "ACTIVESTREAM_BOOTSTRAP_SERVERS": broker.bootstrap,
               "ACTIVESTREAM_CHECKPOINT_DIR": str(checkpoint_dir), "ACTIVESTREAM_METRICS_PORT": str(port),
               "ACTIVESTREAM_GROUP_ID": f"soak-{uuid.uuid4().hex[:8]}", "ACTIVESTREAM_N_FEATURES": str(N_FEATURES),
               "ACTIVESTREAM_CLASSES": "[-1, 1]", "ACTIVESTREAM_QUERY_RATE_TARGET": str(QUERY_RATE),
               "ACTIVESTREAM_LABELS__TTL_S": str(profile.ttl_s),
               "ACTIVESTREAM_CHECKPOINT__EVERY_S": str(profile.checkpoint_every_s),
               "ACTIVESTREAM_TOPICS": orjson.dumps(topics).decode(),
               "ACTIVESTREAM_KAFKA_CONSUMER": orjson.dumps(CLIENT_SETTINGS).decode(),
               "ACTIVESTREAM_LOG_LEVEL": "WARNING"}
        stop = fork.Event()
        workers = [fork.Process(target=annotate, args=(broker.bootstrap, topics, stop), daemon=True),
                   fork.Process(target=feed, args=(broker.bootstrap, topics["features"], profile.records_per_s, stop),
                                daemon=True)]
        proc = start_service(env, log)
        samples: list[dict] = []
        try:
            deadline = time.monotonic() + 600  # a checkout without numba's cache compiles the kernels first
            while not scrape(port).get("activestream_ready"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the service did not become ready: {log.read_text()[-2000:]}")
                time.sleep(0.2)  # polling another process's /metrics
            for worker in workers:
                worker.start()
            started = time.monotonic()
            previous: dict[str, float] = {}
            while time.monotonic() - started < profile.duration_s:
                time.sleep(max(0.0, started + (len(samples) + 1) * profile.sample_s - time.monotonic()))
                if proc.poll() is not None:
                    raise RuntimeError(f"the service exited ({proc.returncode}): {log.read_text()[-2000:]}")
                row, previous = sample(time.monotonic() - started, proc.pid, port, checkpoint_dir, previous)
                samples.append(row)
                print(json.dumps(row), flush=True)
        finally:
            stop.set()
            for worker in workers:
                if worker.pid is not None:
                    worker.join(60)
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
    return {"samples": samples, **measure(samples, profile)}


def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB"


def sizing(result: dict[str, Any]) -> list[str]:
    """Memory and checkpoint sizes for other label rates and TTLs, from this run's per-id figures."""
    per_rss, per_disk = result["rss_per_remembered_bytes"], result["parts_per_remembered_bytes"]
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


def render(r: dict[str, Any]) -> str:
    p, f = r["profile"], r["figures"]
    rows = [s for s in r["samples"] if round(s["t_s"]) % 60 < p["sample_s"]] if p["duration_s"] >= 600 else r["samples"]
    verdict = "plateaued" if r["flat"] else "did NOT plateau"
    out = [
        f"# Soak: profile {r['name']}", "",
        "<!-- provenance -->",
        f"Made {r['made']} at commit `{r['commit']}` by `{r['command']}` ({r['seconds']:.0f} s).",
        "<!-- /provenance -->", "",
        f"`python -m consumer run` (role `all`, the default learner, {N_FEATURES} raw dense features, "
        f"`ACTIVESTREAM_QUERY_RATE_TARGET={QUERY_RATE}`, `ACTIVESTREAM_LABELS__TTL_S={p['ttl_s']:.0f}`, "
        f"`ACTIVESTREAM_CHECKPOINT__EVERY_S={p['checkpoint_every_s']:.0f}`, every other setting at its default) "
        f"on the embedded broker, fed {p['records_per_s']:,.0f} "
        f"records/s for {p['duration_s'] / 60:.0f} min; every label request answered at once.", "",
        "## Summary", "",
        f"- Scored {r['records_per_s']:,.0f} records/s and applied {r['labels_per_s']:,.0f} labels/s "
        f"(query ratio {r['query_ratio']:.3f}); the largest lag in the window was {r['max_lag']:,.0f} records.",
        f"- From {r['window_s'][0]:.0f} s to {r['window_s'][1]:.0f} s (past one TTL), each figure {verdict} "
        f"(a change under {FLAT:.0%} of its mean along a least-squares line):", "",
        "| figure | mean over the window | change over the window | flat |", "|---|---:|---:|---|",
    ]
    names = {"rss_bytes": "resident memory", "remembered_applied": "ids remembered as applied",
             "checkpoint_file_bytes": "the newest checkpoint's own file", "parts_bytes": "parts on disk"}
    for key, name in names.items():
        mean = f[key]["mean"]
        shown = f"{mean:,.0f}" if key == "remembered_applied" else _mb(mean)
        out.append(f"| {name} | {shown} | {f[key]['trend']:+.1%} | {'yes' if f[key]['flat'] else 'no'} |")
    out += ["",
            f"- Resident memory per remembered id: **{r['rss_per_remembered_bytes']:.1f} bytes** (the growth of the "
            f"whole process from {r['baseline_t_s']:.0f} s to the window, over the growth of the ids it remembers); "
            f"the memory of ids alone, rebuilt in isolation at the same pace: {r['isolated_per_remembered_bytes']:.1f} "
            "bytes (traced allocations).",
            f"- Parts on disk per remembered id: {r['parts_per_remembered_bytes']:.1f} bytes; each checkpoint "
            f"writes {_mb(r['written_per_checkpoint_bytes'])} (median in the window): its own file, what was "
            "remembered since the previous one, and a sealed segment now and then.", "",
            "## Sizing", "",
            f"Scaled from this run's figures per remembered id (resident memory, parts), checkpoints every "
            f"{p['checkpoint_every_s']:.0f} s:", "",
            *sizing(r), "",
            "## Samples", "",
            "| t (s) | RSS | remembered | pending | checkpoint written | checkpoint held | newest file | parts | lag | "
            "p50 latency (ms) | p99 latency (ms) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in rows:
        remembered = s["remembered_applied"] + s["remembered_expired"]
        out.append(f"| {s['t_s']:.0f} | {_mb(s['rss_bytes'])} | {remembered:,.0f} "
                   f"| {s['pending']:,.0f} | {_mb(s['checkpoint_written_bytes'])} | {_mb(s['checkpoint_held_bytes'])} "
                   f"| {_mb(s['checkpoint_file_bytes'])} | {_mb(s['parts_bytes'])} | {s['lag']:,.0f} "
                   f"| {1e3 * s['latency_p50_s']:.0f} "
                   f"| {1e3 * s['latency_p99_s']:.0f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", choices=["memory"], default="memory")
    parser.add_argument("--quick", action="store_true", help="a short run, written to the temporary directory")
    args = parser.parse_args(argv)
    name = f"{args.profile}-quick" if args.quick else args.profile
    profile = PROFILES[name]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        result = run(profile, Path(tmp))
    command = "python -m benchmarks.soak " + " ".join(argv if argv is not None else sys.argv[1:])
    result = {"name": name, "profile": asdict(profile), "made": dt.date.today().isoformat(), "commit": commit(),
              "command": command.strip(), "seconds": time.time() - started, **result}
    result["provenance"] = {key: result[key] for key in ("made", "commit", "command")} | {
        "minutes": round(result["seconds"] / 60, 1), "settings": asdict(profile)}
    out = Path(tempfile.gettempdir()) if args.quick else RESULTS
    (out / f"soak-{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / f"soak-{name}.md").write_text(render(result))
    print(render(result))
    return 0 if result["flat"] else 1


if __name__ == "__main__":
    sys.exit(main())
