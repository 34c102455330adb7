"""End-to-end throughput and latency of one service process through a real broker, beside the limit.

    python -m benchmarks.service_throughput [--records 200000] [--repeats 5] [--rate 20000] [--seconds 15]

1. Throughput: a backlog of N feature records (sparse, ~18 non-zeros, 2^20 dimensions) is drained
   (a) by a null service that consumes and produces one output per input with no decoding or
   scoring, and (b) by the service (paa-1 with δ set for ~10 % queries, an annotator in a process of
   its own answering every label request at once). Records/second from the first output to the
   last, by the outputs' Kafka timestamps; repeated, each service run beside the null pipe run just
   before it (the broker's speed varies).
2. Latency: records are fed at a fixed rate below capacity; latency = Kafka timestamp of the
   prediction − the record's timestamp, p50 / p99, for the null pipe and the service.
3. Where the time goes: the service's stages timed in-process on the same records (decode, score and
   decide, encode, produce) and the rest (consume, bookkeeping) by difference.

Writes benchmarks/results/service_throughput.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import orjson
from confluent_kafka import Consumer, Producer

from consumer import rdkafka, steps
from consumer.config import load_settings
from consumer.demo.broker import CLIENT_SETTINGS, LABELS_CONSUMER_SETTINGS, Broker, create_topics
from consumer.fastwrite import pack, write_label_requests
from consumer.kafka import CONSUMER_DEFAULTS
from consumer.records import encode_predictions, pack_keys
from consumer.service import Service
from learners import make
from learners.datasets import synthetic_sparse
from learners.replay import find_budget

RESULTS = Path(__file__).parent / "results"
D = 2**20


def make_records(n: int, seed: int = 0) -> tuple[list[bytes], dict[str, int]]:
    data = synthetic_sparse(n=n, d=D, nnz=18, seed=seed)
    values, truth = [], {}
    for i in range(n):
        idx, val = data.rows.row(i)
        rid = f"r{i}"
        values.append(orjson.dumps({"id": rid, "features": {"indices": idx.tolist(), "values": val.round(5).tolist()}}))
        truth[rid] = int(data.labels[i])
    return values, truth


def delta_for_ten_percent(n: int) -> float:
    learner, _ = find_budget(make("paa-1", n_features=D), synthetic_sparse(n=min(n, 100_000), d=D, seed=0),
                                  0.10, delay=2000)
    return float(learner.query.delta)


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


def null_pipe(bootstrap: str, source: str, sink: str, n: int, ready: threading.Event,
              batched: bool = False) -> tuple[float, float]:
    """Consume n records and produce one output each, untouched; returns (first, last) times.

    The consumer has the service's fetch settings; the outputs are produced one ``produce`` call
    each, or, ``batched``, a consumed batch per call as the service produces its predictions
    (:class:`consumer.rdkafka.BatchProducer`)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"null-{uuid.uuid4().hex[:6]}", **CLIENT_SETTINGS,
                  "fetch.queue.backoff.ms": CONSUMER_DEFAULTS["fetch.queue.backoff.ms"], "enable.auto.commit": "false"})
    c.subscribe([source], on_assign=lambda cons, parts: (cons.assign(parts), ready.set()))
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 2_000_000}
    p = rdkafka.BatchProducer(rdkafka.load(), conf, _lost, _lost) if batched else Producer(conf)
    done, first = 0, None
    while done < n:
        got = [msg for msg in c.consume(500, 0.1) if msg.error() is None]
        if got:
            first = first or time.monotonic()
            done += len(got)
        if batched and got:
            keys, values = pack([m.key() for m in got]), pack([m.value() for m in got])
            p.produce_batch(sink, keys.data, keys.starts, keys.ends, values.data, values.starts, values.ends)
        else:
            for msg in got:
                p.produce(sink, key=msg.key(), value=msg.value())
        p.poll(0)
    p.flush(60)
    last = time.monotonic()
    c.close()
    if batched:
        p.close()
    return first, last


def _lost(*why: object) -> None:
    raise RuntimeError(f"the null pipe lost an output: {why[:3]}")


def output_latencies(bootstrap: str, topic: str, n: int, timeout_s: float = 120) -> np.ndarray:
    """(Kafka timestamp of each output − the input record's ts) in seconds, for n outputs."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{uuid.uuid4().hex[:6]}", **CLIENT_SETTINGS})
    c.subscribe([topic])
    out, deadline = [], time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        for msg in c.consume(5000, 0.2):
            if msg.error() is None:
                ts = orjson.loads(msg.value())["ts"]
                out.append(msg.timestamp()[1] / 1000.0 - ts)
    c.close()
    return np.asarray(out)


def annotate(bootstrap: str, topics: dict, truth: dict, stop) -> None:
    """Answer every label request as soon as it is read, until ``stop`` is set (runs in its own
    process). It shares the machine with the service, so it is kept light: the id is the request's
    Kafka key, and its fetches wait as long as the service's labels consumer's."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ann-{uuid.uuid4().hex[:6]}", **CLIENT_SETTINGS,
                  **LABELS_CONSUMER_SETTINGS})
    c.subscribe([topics["label_requests"]])
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    while not stop.is_set():
        for msg in c.consume(1000, 0.1):
            if msg.error() is None and msg.value() is not None:
                rid = msg.key().decode()
                p.produce(topics["labels"], key=msg.key(), value=orjson.dumps({"id": rid, "label": truth[rid]}))
        p.poll(0)
    p.flush(10)
    c.close()


def run_service(bootstrap: str, topics: dict, delta: float, truth: dict, workdir: Path):
    """The service in a thread of this process; the annotator in a process of its own, as in
    production (in a thread it would take the service's GIL)."""
    settings = load_settings(bootstrap_servers=bootstrap, topics=topics, checkpoint_dir=workdir / uuid.uuid4().hex,
                             n_features=D, learner="paa-1", learner_params={"delta": delta},
                             kafka_consumer=CLIENT_SETTINGS, kafka_labels_consumer=LABELS_CONSUMER_SETTINGS,
                             metrics_port=0, batch_size=1000)
    fork = multiprocessing.get_context("fork")  # the child inherits the ground truth; it opens its own clients
    stop = fork.Event()
    annotator = fork.Process(target=annotate, args=(bootstrap, topics, truth, stop), daemon=True)
    annotator.start()
    service = Service(settings, serve_http=False)
    runner = threading.Thread(target=service.run, daemon=True)
    runner.start()
    return service, runner, stop, annotator


def output_rate(bootstrap: str, topic: str, n: int) -> float:
    """Records/s from the first output to the last, by their Kafka timestamps (set when each was
    produced), so nothing polls the pipe while it runs."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rate-{uuid.uuid4().hex[:6]}", **CLIENT_SETTINGS})
    c.subscribe([topic])
    stamps: list[int] = []
    deadline = time.monotonic() + 120
    while len(stamps) < n and time.monotonic() < deadline:
        stamps += [m.timestamp()[1] for m in c.consume(10_000, 0.2) if m.error() is None]
    c.close()
    if len(stamps) < n:
        raise TimeoutError(f"{topic}: {len(stamps)} of {n} outputs")
    return (n - 1) / ((max(stamps) - min(stamps)) / 1000.0)


def wait_ready(service: Service, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not service.health.ready()[0]:
        if time.monotonic() > deadline:
            raise TimeoutError("service not ready")
        time.sleep(0.05)  # polling another thread's state


def wait_scored(service: Service, n: float, timeout_s: float = 600) -> float:
    deadline = time.monotonic() + timeout_s
    while service.totals.get("records_scored") < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"scored {service.totals.get('records_scored')} of {n}")
        time.sleep(0.02)  # polling another thread's counter (the rate comes from the outputs' timestamps)
    return time.monotonic()


def stages(values: list[bytes], delta: float) -> dict[str, float]:
    """Seconds per record of each in-process stage, on the same records, with a trained model
    (so that about the same share of records is queried as in the run)."""
    learner = make("paa-1", n_features=D, delta=delta)
    warm = synthetic_sparse(n=100_000, d=D, nnz=18, seed=0)
    learner.learn_many(warm.rows, warm.labels)
    unreachable = {"bootstrap.servers": "127.0.0.1:1", "queue.buffering.max.messages": 2_000_000, "log_level": 0}
    batches = rdkafka.BatchProducer(rdkafka.load(), unreachable, _lost, lambda *_: None)  # no broker, on purpose

    class Msg:
        def __init__(self, v: bytes, off: int) -> None:
            self.v, self.off = v, off

        def value(self) -> bytes:
            return self.v

        def timestamp(self) -> tuple[int, int]:
            return 1, 0

        def topic(self) -> str:
            return "features"

        def partition(self) -> int:
            return 0

        def offset(self) -> int:
            return self.off

    stamp = repr(time.time()).encode()  # as feed() writes them: 17 significant digits
    msgs = [Msg(v[:-1] + b',"ts":' + stamp + b"}", i) for i, v in enumerate(values)]
    t = {}
    start = time.perf_counter()
    decoded = [steps.decode_features(msgs[i : i + 1000], D, 0.0)[0] for i in range(0, len(msgs), 1000)]
    t["decode (compiled scanner + numpy checks)"] = time.perf_counter() - start
    start = time.perf_counter()
    decisions = [learner.decide(batch.rows, ids=batch.keys()) for batch in decoded]
    t["score + decide (one compiled call per batch)"] = time.perf_counter() - start
    encode, produce = "encode outputs (compiled writer, keys, requests)", "produce (librdkafka, a call per batch)"
    t[encode] = t[produce] = 0.0
    for b, (batch, dec) in enumerate(zip(decoded, decisions, strict=True)):  # batch by batch, as the service does
        start = time.perf_counter()
        labels = dec.label.tolist()
        mine = [msgs[1000 * b + k] for k in batch.positions]
        partitions, offsets = [m.partition() for m in mine], [m.offset() for m in mine]
        encoded = encode_predictions(batch.ids, labels, dec.scores.p, dec.probability, dec.query, batch.ts, 0, 0.0,
                                    "features", partitions, offsets)
        keys = batch.packed_ids()
        at = np.flatnonzero(dec.query)
        asked = at.tolist()
        batch.rows.take(at)  # the pending entries' copy of their rows
        requests = write_label_requests(
            [batch.ids[i] for i in asked], batch.features_packed(asked), [labels[i] for i in asked],
            dec.scores.p[at], dec.probability[at], np.full(len(asked), 0.5), [1.0] * len(asked), 0.0, 0.0, 0,
            "features", [partitions[i] for i in asked], [offsets[i] for i in asked])
        request_keys = pack_keys([batch.ids[i] for i in asked])
        encoded_at = time.perf_counter()
        batches.produce_batch("predictions", keys.data, keys.starts, keys.ends, encoded.data, encoded.starts,
                              encoded.ends)
        batches.produce_batch("label_requests", request_keys.data, request_keys.starts, request_keys.ends,
                              requests.data, requests.starts, requests.ends)
        t[encode] += encoded_at - start
        t[produce] += time.perf_counter() - encoded_at
    batches.close()
    return {k: v / len(values) for k, v in t.items()}


def drain_backlog(b: str, values: list[bytes], truth: dict, delta: float,
                  workdir: Path) -> tuple[float, float, float, float]:
    """One repetition of part 1: (null pipe records/s, batched null pipe records/s, service
    records/s, the service's query ratio), each draining the same backlog from fresh topics."""
    n = len(values)
    null_rates = []
    for batched in (False, True):
        src, dst = f"src-{uuid.uuid4().hex[:6]}", f"dst-{uuid.uuid4().hex[:6]}"
        create_topics(b, [src, dst])
        feed(b, src, values)
        null_pipe(b, src, dst, n, threading.Event(), batched=batched)
        null_rates.append(output_rate(b, dst, n))
    topics = {k: f"{k}-{uuid.uuid4().hex[:6]}" for k in
              ("features", "predictions", "label_requests", "labels", "dead_letters")}
    create_topics(b, list(topics.values()))
    feed(b, topics["features"], values)
    service, runner, stop, annotator = run_service(b, topics, delta, truth, workdir)
    wait_scored(service, n)
    queries = service.totals.get("label_requests") / service.totals.get("records_scored")
    stop.set()
    service.request_stop()
    runner.join(60)
    annotator.join(10)
    return null_rates[0], null_rates[1], output_rate(b, topics["predictions"], n), queries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rate", type=float, default=20_000, help="records/s for the latency phase")
    ap.add_argument("--seconds", type=float, default=15, help="length of the latency phase")
    ap.add_argument("--repeats", type=int, default=5, help="throughput repetitions (null pipe, then service)")
    args = ap.parse_args()
    n = args.records
    values, truth = make_records(n)
    delta = delta_for_ten_percent(n)
    workdir = Path(tempfile.mkdtemp(prefix="activestream-bench-"))
    lines = []

    with Broker() as broker:
        b = broker.bootstrap
        runs = [drain_backlog(b, values, truth, delta, workdir) for _ in range(args.repeats)]
        null_rates, batched_rates, service_rates, query_ratios = (np.array(c) for c in zip(*runs, strict=True))
        shares, batched_shares = service_rates / null_rates, service_rates / batched_rates
        queries = float(np.mean(query_ratios))

        # 2. latency at a fixed rate below capacity
        m = int(args.rate * args.seconds)
        lat_values, lat_truth = make_records(m, seed=1)
        src, dst = f"src-{uuid.uuid4().hex[:6]}", f"dst-{uuid.uuid4().hex[:6]}"
        create_topics(b, [src, dst])
        ready = threading.Event()
        pipe = threading.Thread(target=null_pipe, args=(b, src, dst, m, ready), daemon=True)
        pipe.start()
        ready.wait(30)
        feed(b, src, lat_values, rate=args.rate)
        pipe.join(120)
        null_lat = output_latencies(b, dst, m)
        topics = {k: f"{k}-{uuid.uuid4().hex[:6]}" for k in
                  ("features", "predictions", "label_requests", "labels", "dead_letters")}
        create_topics(b, list(topics.values()))
        service, runner, stop, annotator = run_service(b, topics, delta, lat_truth, workdir)
        wait_ready(service)
        feed(b, topics["features"], lat_values, rate=args.rate)
        wait_scored(service, m)
        stop.set()
        service.request_stop()
        runner.join(60)
        annotator.join(10)
        svc_lat = output_latencies(b, topics["predictions"], m)

    runs = [stages(values[:50_000], delta) for _ in range(3)]  # the first pass pays for fresh memory
    per_record = {k: min(r[k] for r in runs) for k in runs[0]}
    busy = sum(per_record.values())
    lines += [
        "# Service throughput and latency through one broker (Tansu on 127.0.0.1)",
        "",
        f"Records: {n:,} sparse (~18 non-zeros, 2^20 dimensions), JSON `{{indices, values}}`; learner paa-1, "
        f"δ = {delta:.4g} (query ratio {queries:.1%}); an annotator answers every request at once.",
        "",
        f"Throughput on a backlog, {args.repeats} repetitions (each: the null pipe producing one call per "
        "output, the null pipe producing a batch per call, then the service, on fresh topics); each service "
        "run is compared with the null pipe runs just before it:",
        "",
        "| | median records/s | range |",
        "|---|---|---|",
        f"| null pipe, one `produce` per output | {np.median(null_rates):,.0f} | "
        f"{null_rates.min():,.0f} – {null_rates.max():,.0f} |",
        f"| null pipe, a batch per `rd_kafka_produce_batch` | {np.median(batched_rates):,.0f} | "
        f"{batched_rates.min():,.0f} – {batched_rates.max():,.0f} |",
        f"| activestream service | {np.median(service_rates):,.0f} | "
        f"{service_rates.min():,.0f} – {service_rates.max():,.0f} |",
        f"| service / null pipe, one `produce` per output | {np.median(shares):.0%} | "
        f"{shares.min():.0%} – {shares.max():.0%} |",
        f"| service / null pipe, batched | {np.median(batched_shares):.0%} | "
        f"{batched_shares.min():.0%} – {batched_shares.max():.0%} |",
        "",
        f"Latency at {args.rate:,.0f} records/s for {args.seconds:.0f} s (record timestamp → output timestamp):",
        "",
        "| | p50 | p99 |",
        "|---|---|---|",
        f"| null pipe | {np.percentile(null_lat, 50) * 1000:.1f} ms | {np.percentile(null_lat, 99) * 1000:.1f} ms |",
        f"| activestream service | {np.percentile(svc_lat, 50) * 1000:.1f} ms | "
        f"{np.percentile(svc_lat, 99) * 1000:.1f} ms |",
        "",
        "Where a record's time goes in the service (in-process, same records, µs per record, best of 3):",
        "",
        "| stage | µs/record |",
        "|---|---|",
        *[f"| {k} | {v * 1e6:.2f} |" for k, v in per_record.items()],
        f"| consume, labels, bookkeeping (the rest of 1/throughput) | "
        f"{max(0.0, 1e6 / np.median(service_rates) - busy * 1e6):.2f} |",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "service_throughput.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
