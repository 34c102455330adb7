"""Whether each hand-written fast path earns its place: each against what the service would do
without it, measured in one sitting on the service's own records.

    python -m benchmarks.fast_paths              # benchmarks/results/fast_paths.md and .json
    python -m benchmarks.fast_paths --quick      # small sizes, 2 repeats, written to the temporary directory

Four fast paths, each doing the same job as its alternatives:

1. **The batch producer** (:class:`consumer.rdkafka.BatchProducer`, one ``rd_kafka_produce_batch``
   call per batch) against confluent-kafka's ``Producer.produce_batch`` (a list of message dicts per
   batch; only in confluent-kafka releases that have it) and against one ``Producer.produce`` per
   message, as :meth:`consumer.kafka.Emitter.send_packed` falls back to. The job: the service's
   predictions (written by :func:`consumer.fastwrite.write_predictions`, keyed by their ids),
   :data:`BATCH` per hand-over, from the batch's :class:`~consumer.fastwrite.Packed` keys and values
   to every message acknowledged by the embedded broker; each producer with the service's settings
   (:data:`consumer.kafka.PRODUCER_DEFAULTS`), confluent-kafka's with one ``on_delivery`` callback
   for all messages, as the service's. Messages/s from the first hand-over to the last
   acknowledgement, and the process's CPU (librdkafka's threads included, the broker's not) per message.
2. **The compiled JSON reader** (:mod:`consumer.fastjson`, as the service reaches it through
   :func:`consumer.records.decode_feature_batch`) against ``orjson.loads`` per record and the same
   CSR arrays built with numpy (:func:`orjson_rows`, which checks nothing: the least the job costs
   that way), and, for reference, the service's own orjson path (``records._python_batch``, which
   checks what the compiled reader checks). The job: a batch of feature records to ids, times and
   CSR rows. Two shapes: dense lists of 8 numbers, and a8a's sparse ``{indices, values}`` (about 14
   non-zeros of 123), both without ``ts`` as the demo's feeds write them. Rows/s.
3. **The compiled writer** (:mod:`consumer.fastwrite`) against ``orjson.dumps`` of each record's
   dict (the dicts built from the same columns, inside the timing). The job: a batch's decided
   columns to the JSON values of its predictions, and of its label requests (whose features the
   alternative gets already parsed, outside the timing). Rows/s; the outputs are checked to be the
   same JSON objects (and whether they are the same bytes).
4. **The batch reader** (:mod:`consumer.batch_reader`, through :func:`~consumer.batch_reader.attach`
   as the service makes it) against ``Consumer.consume(BATCH)`` on its own, each message's value
   then taken into Python bytes and joined, with the partitions and offsets as columns, as the
   service's loop does before its scan. The job: a preloaded topic of a8a feature records, read to
   its end through ``assign`` (no group join), each batch asked for as ``FeatureRead.take``
   does (wait for the first record, then take what is there). Messages/s after the first batch
   (which waits for the connection: not timed), and the process's CPU per message.

Each variant runs ``--repeats`` times, the variants in turn (in a rotated order each round, so that
a busy moment of the machine hits each alike), after one untimed run of each. Reported: the median
and the spread (min–max) of each. Verdict per fast path: it *wins* when its worst run beats every
alternative's best run (it wins by more than the runs' spread), else it *does not win*; judged on
messages or rows per second, and the same rule on CPU per message is given beside it where measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from benchmarks.reproduce import commit, run_meta, write_results

__all__ = ["Runs", "beats", "main", "orjson_rows", "verdict"]

RESULTS = Path(__file__).parent / "results"
BATCH = 2_000  # the service's default batch size (ACTIVESTREAM_BATCH_SIZE)
DENSE_FEATURES = 8
CLIENT_ID = "fast-paths-reader"
FULL = {"messages": 500_000, "rows": 400_000, "read": 600_000, "repeats": 5}
QUICK = {"messages": 4_000, "rows": 4_000, "read": 4_000, "repeats": 2}


# -- the record of a measurement and its verdict -----------------------------------------------------------


@dataclass
class Runs:
    """One variant's runs of one workload: ``rate`` per run (messages or rows per second) and, where
    measured, the process's CPU µs per message."""

    fast_path: str
    workload: str
    variant: str
    is_fast_path: bool
    unit: str
    rate: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.rate)

    def summary(self) -> dict[str, Any]:
        cpu = {"cpu_us_median": statistics.median(self.cpu_us), "cpu_us_min": min(self.cpu_us),
               "cpu_us_max": max(self.cpu_us)} if self.cpu_us else {}
        return {"median": self.median, "min": min(self.rate), "max": max(self.rate), **cpu}


def beats(fast: Sequence[float], other: Sequence[float], higher_is_better: bool = True) -> bool:
    """Whether the worst of ``fast`` beats the best of ``other`` (so by more than the runs' spread)."""
    return min(fast) > max(other) if higher_is_better else max(fast) < min(other)


def verdict(fast: Runs, others: Sequence[Runs]) -> str:
    """"wins" when the fast path's worst run beats every alternative's best run, else "does not win"."""
    return "wins" if all(beats(fast.rate, o.rate) for o in others) else "does not win"


def _cpu_s() -> float:
    """CPU seconds of this process so far, every thread's (librdkafka's included)."""
    return time.process_time()


# -- 1. the batch producer ---------------------------------------------------------------------------------


def predictions(n: int, seed: int = 0) -> list[tuple[Any, Any]]:
    """n predictions as the service writes them, in batches of :data:`BATCH`: (keys, values), each
    a :class:`~consumer.fastwrite.Packed` (the ids in UTF-8; :func:`consumer.fastwrite.write_predictions`)."""
    from consumer.fastwrite import write_predictions
    from consumer.records import pack_keys

    rng = np.random.default_rng(seed)
    batches = []
    for lo in range(0, n, BATCH):
        m = min(BATCH, n - lo)
        ids = [f"p0r{k}" for k in range(lo, lo + m)]
        scores = rng.standard_normal(m)
        values = write_predictions(ids, np.where(scores >= 0, 1, -1).tolist(), scores, 1 / (1 + np.exp(-scores)),
                                   rng.random(m) < 0.05, 1.765e9 + np.arange(lo, lo + m) / 1000, 5_000,
                                   1.765e9 + 61.25, "features", np.zeros(m, dtype=np.int64),
                                   np.arange(lo, lo + m, dtype=np.int64))
        batches.append((pack_keys(ids), values))
    return batches


def _producer_variants() -> dict[str, Callable[[str, list], Any]]:
    return {"BatchProducer.produce_batch (ctypes)": _batch_producer, "Producer.produce_batch": _confluent_batch,
            "Producer.produce per message": _confluent_each}


def _batch_producer(bootstrap: str, failed: list) -> Any:
    from consumer import rdkafka
    from consumer.kafka import PRODUCER_DEFAULTS
    from consumer.rdkafka import BatchProducer

    producer = BatchProducer(rdkafka.load(), {**PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap},
                             lambda *failure: failed.append(failure), lambda *error: None)

    def send(topic: str, keys: Any, values: Any) -> None:
        refused = producer.produce_batch(topic, keys.data, keys.starts, keys.ends, values.data, values.starts,
                                         values.ends)
        if len(refused):
            raise RuntimeError(f"librdkafka refused {len(refused)} messages")
        producer.poll(0)

    return producer, send


def _confluent(bootstrap: str, failed: list) -> Any:
    from confluent_kafka import Producer

    from consumer.kafka import PRODUCER_DEFAULTS

    def delivered(err: Any, msg: Any) -> None:  # the service's one callback (failures only reach it)
        if err is not None:
            failed.append(err)

    return Producer({**PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap, "on_delivery": delivered})


def _confluent_batch(bootstrap: str, failed: list) -> Any:
    producer = _confluent(bootstrap, failed)

    def send(topic: str, keys: Any, values: Any) -> None:
        batch = [{"key": k, "value": v} for k, v in zip(keys, values, strict=True)]
        if producer.produce_batch(topic, batch) != len(batch):
            raise RuntimeError("Producer.produce_batch did not take every message")
        producer.poll(0)

    return producer, send


def _confluent_each(bootstrap: str, failed: list) -> Any:
    producer = _confluent(bootstrap, failed)

    def send(topic: str, keys: Any, values: Any) -> None:
        produce = producer.produce
        for key, value in zip(keys, values, strict=True):  # as Emitter.send_packed without a batch producer
            produce(topic, value, key)
        producer.poll(0)

    return producer, send


def produce_run(make: Callable, bootstrap: str, batches: list) -> tuple[float, float]:
    """(messages/s, CPU µs per message) of one producer sending ``batches`` to a new topic, from
    the first hand-over to the last acknowledgement."""
    from consumer.demo.broker import create_topics
    from consumer.kafka import close_producer

    topic = f"fast-produce-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [topic])
    failed: list = []
    producer, send = make(bootstrap, failed)
    n = sum(len(values) for _, values in batches)
    try:
        send(topic, *batches[0])  # untimed: connected, the topic known
        if producer.flush(30):
            raise RuntimeError("the first batch was not acknowledged")
        cpu, started = _cpu_s(), time.perf_counter()
        for keys, values in batches:
            send(topic, keys, values)
        if producer.flush(120) or failed:
            raise RuntimeError(f"not delivered: {len(failed)} failed")
        seconds, cpu = time.perf_counter() - started, _cpu_s() - cpu
    finally:
        close_producer(producer)
        _delete_topic(bootstrap, topic)
    return n / seconds, cpu / n * 1e6


def _delete_topic(bootstrap: str, topic: str) -> None:
    """The broker keeps every topic in memory: a run's topic goes with it."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})  # kept until the answer is in
    for future in admin.delete_topics([topic]).values():
        future.result(15)


# -- 2. the compiled JSON reader ---------------------------------------------------------------------------


def dense_records(n: int, seed: int = 0) -> list[bytes]:
    """n feature records of 8 dense numbers each, as a feed writes them (no ``ts``)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, DENSE_FEATURES))
    x[rng.random(x.shape) < 0.1] = 0.0  # a few zeros, which the reader drops
    return [orjson.dumps({"id": f"d{k}", "features": row}) for k, row in enumerate(x.tolist())]


def sparse_records(n: int) -> tuple[list[bytes], int, str]:
    """n of a8a's rows as the service's feature records (``{indices, values}``), the dimension, and
    the source (a synthetic stream of a8a's shape where a8a is not staged)."""
    from benchmarks.scale_out import DIMENSIONS, dataset, make_records

    data = dataset()
    return make_records(data, n)[0], DIMENSIONS, data.name


def orjson_rows(values: Sequence[bytes], n_features: int, default_ts: Callable[[np.ndarray], np.ndarray],
                ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(ids, times, indptr, indices, data) of feature records read by ``orjson.loads``, the CSR
    arrays built with numpy: zeros dropped, sparse indices taken as they come (sorted and distinct
    in the records measured here). Nothing is checked: no shape, type, range or duplicate."""
    loads = orjson.loads
    objs = [loads(v) for v in values]
    n = len(objs)
    ids = [o["id"] for o in objs]
    features = [o["features"] for o in objs]
    ts = np.array([o.get("ts", np.nan) for o in objs], dtype=np.float64)
    missing = np.isnan(ts)
    if missing.any():
        ts[missing] = default_ts(np.flatnonzero(missing))
    if all(type(f) is list for f in features):  # dense: one 2-D array
        dense = np.array(features, dtype=np.float64).reshape(n, n_features)
        keep = dense != 0.0
        rows, indices = np.nonzero(keep)
        data = dense[keep]
    else:
        lengths = np.fromiter((len(f["indices"]) for f in features), dtype=np.int64, count=n)
        indices = np.fromiter(chain.from_iterable(f["indices"] for f in features), dtype=np.int64)
        data = np.fromiter(chain.from_iterable(f["values"] for f in features), dtype=np.float64)
        rows = np.repeat(np.arange(n), lengths)
        keep = data != 0.0
        rows, indices, data = rows[keep], indices[keep], data[keep]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return ids, ts, indptr, indices.astype(np.int32), data


def _reader_variants(n_features: int) -> dict[str, Callable[[list[bytes]], Any]]:
    from consumer.records.feature_batch import _python_batch, decode_feature_batch

    def now(ks: np.ndarray) -> np.ndarray:
        return np.full(len(ks), 1.765e9)

    return {"compiled reader (decode_feature_batch)": lambda v: decode_feature_batch(v, n_features, now),
            "orjson.loads + numpy CSR": lambda v: orjson_rows(v, n_features, now),
            "the service's orjson path (records._python_batch)": lambda v: _python_batch(v, n_features, now)}


def rows_per_s(run: Callable[[list[bytes]], Any], batches: list[list[bytes]]) -> float:
    """Rows/s of ``run`` over every batch."""
    started = time.perf_counter()
    for values in batches:
        run(values)
    return sum(map(len, batches)) / (time.perf_counter() - started)


def _batched(items: Sequence[Any]) -> list[Any]:
    return [items[lo:lo + BATCH] for lo in range(0, len(items), BATCH)]


# -- 3. the compiled writer --------------------------------------------------------------------------------


@dataclass
class Columns:
    """A batch's decided columns, as the service hands them to the writer."""

    ids: list[str]
    labels: list[int]
    scores: np.ndarray
    probabilities: np.ndarray
    requested: np.ndarray
    ts: np.ndarray
    partitions: np.ndarray
    offsets: np.ndarray
    features: Any  # Packed: each record's "features" as received
    parsed: list[Any]  # the same, parsed (what the orjson writer gets)


VERSION, NOW, TTL_S, TOPIC = 5_000, 1.765e9 + 61.25, 600.0, "features"


def columns(records: list[bytes], seed: int = 0) -> list[Columns]:
    """Decided columns for ``records`` (feature records), a batch of :data:`BATCH` each."""
    from consumer.fastwrite import pack

    rng = np.random.default_rng(seed)
    out = []
    for lo in range(0, len(records), BATCH):
        part = [orjson.loads(v) for v in records[lo:lo + BATCH]]
        m = len(part)
        scores = rng.standard_normal(m)
        out.append(Columns([p["id"] for p in part], np.where(scores >= 0, 1, -1).tolist(), scores,
                           1 / (1 + np.exp(-scores)), rng.random(m) < 0.05,
                           1.765e9 + np.arange(lo, lo + m) / 1000, np.zeros(m, dtype=np.int64),
                           np.arange(lo, lo + m, dtype=np.int64), pack([orjson.dumps(p["features"]) for p in part]),
                           [p["features"] for p in part]))
    return out


def compiled_predictions(c: Columns) -> Any:
    from consumer.fastwrite import write_predictions

    return write_predictions(c.ids, c.labels, c.scores, c.probabilities, c.requested, c.ts, VERSION, NOW, TOPIC,
                             c.partitions, c.offsets)


def orjson_predictions(c: Columns) -> list[bytes]:
    dumps = orjson.dumps
    return [dumps({"v": 1, "id": i, "label": label, "score": s, "probability": p, "label_requested": r,
                   "model_version": VERSION, "ts": t, "predicted_at": NOW, "source": f"{TOPIC}:{part}:{o}"})
            for i, label, s, p, r, t, part, o in zip(c.ids, c.labels, c.scores.tolist(), c.probabilities.tolist(),
                                                     c.requested.tolist(), c.ts.tolist(), c.partitions.tolist(),
                                                     c.offsets.tolist(), strict=True)]


def compiled_requests(c: Columns) -> Any:
    from consumer.fastwrite import write_label_requests

    return write_label_requests(c.ids, c.features, c.labels, c.scores, c.probabilities, 1 - c.probabilities,
                                np.ones(len(c.ids)), NOW, NOW + TTL_S, VERSION, TOPIC, c.partitions, c.offsets)


def orjson_requests(c: Columns) -> list[bytes]:
    dumps = orjson.dumps
    return [dumps({"v": 1, "id": i, "features": f, "prediction": label, "score": s, "probability": p,
                   "uncertainty": 1 - p, "cost": 1.0, "requested_at": NOW, "expires_at": NOW + TTL_S,
                   "model_version": VERSION, "source": f"{TOPIC}:{part}:{o}"})
            for i, f, label, s, p, part, o in zip(c.ids, c.parsed, c.labels, c.scores.tolist(),
                                                  c.probabilities.tolist(), c.partitions.tolist(), c.offsets.tolist(),
                                                  strict=True)]


def same_outputs(compiled: Any, plain: list[bytes]) -> tuple[bool, bool]:
    """(the same JSON objects once parsed, the same bytes) of two writers' outputs."""
    ours = list(compiled)
    return ([orjson.loads(a) for a in ours] == [orjson.loads(b) for b in plain]), ours == plain


# -- 4. the batch reader -----------------------------------------------------------------------------------


def _consumer(bootstrap: str) -> Any:
    from confluent_kafka import Consumer

    from consumer.demo.broker import CLIENT_SETTINGS
    from consumer.kafka import CONSUMER_DEFAULTS

    return Consumer({**CONSUMER_DEFAULTS, **CLIENT_SETTINGS, "bootstrap.servers": bootstrap,
                     "group.id": f"fast-read-{uuid.uuid4().hex[:8]}", "client.id": CLIENT_ID})


def read_run(with_reader: bool, bootstrap: str, topic: str, n: int, timeout_s: float = 120.0) -> tuple[float, float]:
    """(messages/s, CPU µs per message) of reading ``topic``'s ``n`` records to the end, a batch of
    :data:`BATCH` at a time, each batch taken as far as the service's loop takes it before its
    scan: the values end to end with their bounds, the partitions and offsets as columns."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    from consumer import batch_reader, messages
    from consumer.fastjson.blob import _joined

    consumer = _consumer(bootstrap)
    reader = batch_reader.attach(consumer, CLIENT_ID, topic) if with_reader else None
    if with_reader and reader is None:
        raise RuntimeError("the batch reader could not attach to the consumer")
    partitions = [TopicPartition(topic, 0, OFFSET_BEGINNING)]
    consumer.assign(partitions)
    if reader is not None:
        reader.forward(partitions)

    def take() -> int:  # as FeatureRead.take: wait for the first record only
        first = consumer.poll(0 if reader is not None else 0.5)  # with a reader: the group's events
        if reader is not None and first is None:
            batch = reader.read(BATCH, 0.5)
            if batch is None:
                return 0
            messages.values_of(batch)  # the blob and bounds as they are: nothing to copy
            messages.places_of(batch)
            batch.release()
            return len(batch)
        taken = [] if first is None else [first, *consumer.consume(BATCH - 1, 0)]
        good = [m for m in taken if m.error() is None]
        values, _ = messages.values_of(good)
        _joined(values)  # what scan_job does with them
        messages.places_of(good)
        return len(good)

    try:
        deadline = time.monotonic() + timeout_s
        first = 0
        while first == 0:  # untimed: the connection and the first fetch
            first = take()
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing read from {topic}")
        got, cpu, started = first, _cpu_s(), time.perf_counter()
        while got < n:
            got += take()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{got} of {n} records read from {topic}")
        seconds, cpu = time.perf_counter() - started, _cpu_s() - cpu
    finally:
        if reader is not None:
            reader.close()
        consumer.close()
    return (got - first) / seconds, cpu / (got - first) * 1e6


# -- the sitting -------------------------------------------------------------------------------------------


def _rounds(variants: Sequence[Any], repeats: int) -> list[Any]:
    """Each variant once per round, in an order rotated by one each round."""
    return [variants[(r + j) % len(variants)] for r in range(repeats) for j in range(len(variants))]


def has_produce_batch() -> bool:
    from confluent_kafka import Producer

    return hasattr(Producer, "produce_batch")


def measure(sizes: dict[str, int], log: Callable[[str], None] = print) -> tuple[list[Runs], dict[str, Any]]:
    """Every A/B of the sitting; returns the runs and the writers' equivalence checks."""
    from consumer.demo.broker import Broker, create_topics

    repeats = sizes["repeats"]
    runs: list[Runs] = []
    checks: dict[str, Any] = {}

    def record(r: Runs, rate: float, cpu_us: float | None = None) -> None:
        r.rate.append(rate)
        if cpu_us is not None:
            r.cpu_us.append(cpu_us)
        cpu = "" if cpu_us is None else f", {cpu_us:.2f} µs CPU per message"
        log(f"  {r.workload} | {r.variant}: {rate:,.0f} {r.unit}{cpu}")

    # 2. the compiled JSON reader, 3. the compiled writer: no broker
    sparse, d, checks["sparse_source"] = sparse_records(sizes["rows"])
    for shape, values, n_features in (("dense, 8 numbers", dense_records(sizes["rows"]), DENSE_FEATURES),
                                      ("a8a sparse, 123 dimensions", sparse, d)):
        batches = _batched(values)
        variants = [Runs("compiled JSON reader", shape, name, k == 0, "rows/s")
                    for k, name in enumerate(_reader_variants(n_features))]
        runs += variants
        calls = _reader_variants(n_features)
        log(f"reader, {shape}")
        for r in variants:
            rows_per_s(calls[r.variant], batches[:1])  # untimed: compiled loops loaded
        for r in _rounds(variants, repeats):
            record(r, rows_per_s(calls[r.variant], batches))
    decided = columns(sparse)
    for kind, fast, plain in (("predictions", compiled_predictions, orjson_predictions),
                              ("label requests", compiled_requests, orjson_requests)):
        same, identical = zip(*(same_outputs(fast(c), plain(c)) for c in decided), strict=True)
        checks.setdefault("writer", {})[kind] = {"same_json": all(same), "same_bytes": all(identical)}
        variants = [Runs("compiled writer", kind, f"compiled writer (fastwrite.write_{kind.replace(' ', '_')})",
                         True, "rows/s"),
                    Runs("compiled writer", kind, "orjson.dumps of each dict", False, "rows/s")]
        runs += variants
        calls = {variants[0].variant: fast, variants[1].variant: plain}
        log(f"writer, {kind}: same JSON {all(same)}, same bytes {all(identical)}")
        for r in _rounds(variants, repeats):
            started = time.perf_counter()
            for c in decided:
                calls[r.variant](c)
            record(r, len(sparse) / (time.perf_counter() - started))

    # 1. the batch producer, 4. the batch reader: through the embedded broker
    with Broker() as broker:
        batches = predictions(sizes["messages"])
        makers = {k: v for k, v in _producer_variants().items() if k != "Producer.produce_batch" or has_produce_batch()}
        variants = [Runs("batch producer", "predictions", name, k == 0, "messages/s")
                    for k, name in enumerate(makers)]
        runs += variants
        log("producer")
        for r in variants:
            produce_run(makers[r.variant], broker.bootstrap, batches[:2])  # untimed
        for r in _rounds(variants, repeats):
            record(r, *produce_run(makers[r.variant], broker.bootstrap, batches))
        del batches

        from benchmarks.scale_out import preload

        topic = f"fast-read-{uuid.uuid4().hex[:8]}"
        create_topics(broker.bootstrap, [topic])
        records = (sparse * (sizes["read"] // len(sparse) + 1))[:sizes["read"]]
        preload(broker.bootstrap, topic, records)
        variants = [Runs("batch reader", "a8a feature records", "batch reader (batch_reader.attach)", True,
                         "messages/s"),
                    Runs("batch reader", "a8a feature records", "Consumer.consume + values", False, "messages/s")]
        runs += variants
        log("reader of the broker")
        for r in variants:
            read_run(r.is_fast_path, broker.bootstrap, topic, len(records))  # untimed
        for r in _rounds(variants, repeats):
            record(r, *read_run(r.is_fast_path, broker.bootstrap, topic, len(records)))
    return runs, checks


def _alternatives(runs: list[Runs], fast: Runs) -> list[Runs]:
    return [o for o in runs if (o.fast_path, o.workload) == (fast.fast_path, fast.workload) and not o.is_fast_path]


def verdicts(runs: list[Runs]) -> dict[str, dict[str, str]]:
    """{fast path: {workload: verdict}}."""
    out: dict[str, dict[str, str]] = {}
    for r in runs:
        if r.is_fast_path:
            out.setdefault(r.fast_path, {})[r.workload] = verdict(r, _alternatives(runs, r))
    return out


def cpu_verdicts(runs: list[Runs]) -> dict[str, dict[str, str]]:
    """The same rule on CPU per message (lower is better), where it was measured."""
    out: dict[str, dict[str, str]] = {}
    for r in runs:
        if r.is_fast_path and r.cpu_us:
            wins = all(beats(r.cpu_us, o.cpu_us, higher_is_better=False) for o in _alternatives(runs, r))
            out.setdefault(r.fast_path, {})[r.workload] = "wins" if wins else "does not win"
    return out


def render(runs: list[Runs], checks: dict[str, Any], meta: dict[str, Any]) -> str:
    judged, by_cpu = verdicts(runs), cpu_verdicts(runs)
    lines = ["# Fast paths: each against what the service would do without it", "",
             f"Made {meta['date']} at commit `{meta['commit']}` by `{meta['command']}` ({meta['minutes']:.1f} min), "
             f"confluent-kafka {meta['confluent_kafka']} (librdkafka {meta['librdkafka']}), on a shared 2-core "
             "machine. "
             f"Settings: {meta['repeats']} runs of each variant, in turn, after an untimed one; batches of {BATCH:,}; "
             f"{meta['messages']:,} predictions produced per run; {meta['rows']:,} rows read or written per run; "
             f"{meta['read']:,} records read from the broker per run; sparse records from {checks['sparse_source']}. "
             "What each A/B measures: "
             "`benchmarks/fast_paths.py`'s docstring. A fast path *wins* when its worst run beats every "
             "alternative's best run.", ""]
    for fast_path, label in (("batch producer", "The batch producer (`consumer/rdkafka.py`)"),
                             ("compiled JSON reader", "The compiled JSON reader (`consumer/fastjson/`)"),
                             ("compiled writer", "The compiled writer (`consumer/fastwrite.py`)"),
                             ("batch reader", "The batch reader (`consumer/batch_reader.py`)")):
        mine = [r for r in runs if r.fast_path == fast_path]
        if not mine:
            continue
        with_cpu = any(r.cpu_us for r in mine)
        cpu_head = " CPU µs/message, median (min–max) |" if with_cpu else ""
        lines += [f"## {label}", "", "| workload | variant | median | min–max |" + cpu_head,
                  "|---|---|---:|---:|" + ("---:|" if with_cpu else "")]
        for r in mine:
            s = r.summary()
            cpu = f" {s['cpu_us_median']:.2f} ({s['cpu_us_min']:.2f}–{s['cpu_us_max']:.2f}) |" if with_cpu else ""
            lines.append(f"| {r.workload} | {r.variant} | {s['median']:,.0f} {r.unit} | "
                         f"{s['min']:,.0f}–{s['max']:,.0f} |{cpu}")
        lines += [""] + [f"- {workload}: **{v}**" + (f" (by CPU per message: {by_cpu[fast_path][workload]})"
                                                     if workload in by_cpu.get(fast_path, {}) else "")
                         for workload, v in judged[fast_path].items()]
        if fast_path == "batch producer" and not meta["produce_batch"]:
            lines.append("- confluent-kafka's `Producer.produce_batch` is not in this release: not measured.")
        if fast_path == "batch producer":
            lines.append(f"- confluent-kafka {meta['oldest_allowed']}, the oldest release the project allows, has "
                         "no `Producer.produce_batch` (its `cimpl` extension lacks the method; it was added by "
                         "confluent-kafka-python pull request #2047, September 2025): there the alternative to the "
                         "batch producer is `produce` per message.")
        if fast_path == "compiled writer":
            lines += [f"- {kind}: the same JSON objects {'yes' if c['same_json'] else 'NO'}, the same bytes "
                      f"{'yes' if c['same_bytes'] else 'no'}" for kind, c in checks["writer"].items()]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from importlib import metadata

    import confluent_kafka

    parser = argparse.ArgumentParser(prog="python -m benchmarks.fast_paths", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 2 repeats, into the temporary directory")
    parser.add_argument("--repeats", type=int, help=f"runs of each variant (default {FULL['repeats']})")
    parser.add_argument("--messages", type=int, help=f"predictions produced per run (default {FULL['messages']:,})")
    parser.add_argument("--rows", type=int, help=f"rows read or written per run (default {FULL['rows']:,})")
    parser.add_argument("--read", type=int, help=f"records read from the broker per run (default {FULL['read']:,})")
    parser.add_argument("--out", type=Path, help="directory of fast_paths.md and .json")
    args = parser.parse_args(argv)
    sizes = {k: getattr(args, k) or v for k, v in (QUICK if args.quick else FULL).items()}
    out = args.out or (Path(tempfile.gettempdir()) if args.quick else RESULTS)
    command = ("python -m benchmarks.fast_paths " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    started = time.perf_counter()
    commit_id = commit()
    runs, checks = measure(sizes)
    meta = run_meta(command, commit_id, started, **sizes, batch=BATCH,
                    confluent_kafka=metadata.version("confluent-kafka"), librdkafka=confluent_kafka.libversion()[0],
                    produce_batch=has_produce_batch(), oldest_allowed="2.8.2", checks=checks,
                    verdicts=verdicts(runs), cpu_verdicts=cpu_verdicts(runs),
                    summary={f"{r.fast_path} | {r.workload} | {r.variant}": r.summary() for r in runs})
    text = render(runs, checks, meta)
    write_results(out, "fast_paths", text, meta, "runs", runs)
    print(text)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
