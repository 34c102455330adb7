"""``activestream demo``: the whole loop on one machine, no Docker, no Kafka installation.

It starts an embedded broker, creates the five topics, runs the service, streams a dataset into the
features topic, answers label requests with a simulated annotator (ground truth after a delay, at a
cost), follows the predictions to score them against the ground truth, shows progress, and ends with
a report: records, query ratio, labels, cost, online accuracy/F1 against the truth and the
service's own importance-weighted accuracy estimate beside it.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from confluent_kafka import Consumer

from consumer.config import load_settings
from consumer.demo.annotator import Annotator
from consumer.demo.broker import CLIENT_SETTINGS, Broker, create_topics
from consumer.demo.feed import DemoStream, Feeder, drifting_stream, from_dataset
from consumer.demo.report import Sample, write_report
from consumer.service import Service
from learners.evaluation import binary_metrics, multiclass_metrics

__all__ = ["DemoOptions", "run_demo"]

_SAMPLE_EVERY_S = 0.25  # the report's curves: a point every quarter second

TOPICS = {"features": "features", "predictions": "predictions", "label_requests": "label-requests",
          "labels": "labels", "dead_letters": "dead-letters"}


@dataclass(frozen=True, slots=True)
class DemoOptions:
    data: list[str] = field(default_factory=list)
    learner: str = "paa-1"
    records: int = 10_000
    label_delay_s: float = 1.0
    label_cost: float = 1.0
    rate: float = 1000.0  # records per second fed (0: all at once)
    params: dict[str, Any] = field(default_factory=dict)
    port: int | None = None
    metrics_port: int = 0
    checkpoint_dir: str | None = None
    positive: Any = None
    timeout_s: float = 600.0
    report: str | None = None  # write an HTML report with the demo's curves here


def _stream(opts: DemoOptions) -> DemoStream:
    if not opts.data:
        return drifting_stream(opts.records)
    from learners import make
    from learners.datasets import concat, resolve

    data = concat([resolve(spec) for spec in opts.data])
    multiclass = make(opts.learner).multiclass
    classes = data.classes() if multiclass else list(data.binary_classes(opts.positive))
    return from_dataset(data, classes, opts.records)


class _Scoreboard:
    """Follows the predictions topic and scores every record against the ground truth."""

    def __init__(self, bootstrap: str, topic: str, truth: dict) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"scoreboard-{uuid.uuid4().hex[:8]}",
                                   **CLIENT_SETTINGS})
        self.ready = threading.Event()
        self._consumer.subscribe([topic], on_assign=lambda c, parts: (c.assign(parts), self.ready.set()))
        self._truth = truth
        self.predicted: dict[str, Any] = {}
        self.correct = 0

    def poll(self, timeout: float) -> None:
        for msg in self._consumer.consume(5000, timeout):
            if msg.error() is None and msg.value() is not None:
                p = orjson.loads(msg.value())
                if p["id"] not in self.predicted:
                    self.predicted[p["id"]] = p["label"]
                    self.correct += self._truth[p["id"]] == p["label"]

    def accuracy(self) -> float:
        if not self.predicted:
            return float("nan")
        return float(np.mean([self._truth[k] == v for k, v in self.predicted.items()]))

    def close(self) -> None:
        self._consumer.close()


class _Progress:
    """A progress bar with a live summary: redrawn in place on a terminal, a line every 2 s otherwise."""

    def __init__(self, out, total: int) -> None:
        self._out, self._total = out, total
        self._tty = hasattr(out, "isatty") and out.isatty()
        self._last = -1e9

    def show(self, done: int, service: Service, board: _Scoreboard, final: bool = False) -> None:
        now = time.monotonic()
        if not (self._tty or final or now - self._last >= 2.0):
            return
        self._last = now
        t = service.totals
        width = 24
        filled = int(width * done / max(self._total, 1))
        scored = t.get("records_scored")
        line = (f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self._total} records · "
                f"queries {t.get('label_requests') / max(scored, 1):.1%} · labels {t.get('labels.applied'):.0f} · "
                f"accuracy {board.accuracy():.3f} (estimated {1 - t.estimated_error_rate():.3f})")
        self._out.write(f"\r{line}\x1b[K" if self._tty else line + "\n")
        self._out.flush()


def _sample(started: float, board: _Scoreboard, t: Any) -> Sample:
    return Sample(time.monotonic() - started, len(board.predicted), board.correct, t.get("records_scored"),
                  t.get("label_requests"), t.get("labels.applied"), t.get("labels.expired"), t.get("labelling_cost"),
                  t.get("importance_weighted_labels"), t.get("importance_weighted_mistakes"))


def run_demo(opts: DemoOptions, progress=sys.stderr) -> dict[str, Any]:
    stream = _stream(opts)
    n = len(stream.values)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        checkpoint_dir = opts.checkpoint_dir or stack.enter_context(
            tempfile.TemporaryDirectory(prefix="activestream-demo-"))
        report, samples = _run(opts, stream, n, started, Path(checkpoint_dir), progress)
    if opts.report:
        write_report(opts.report, report, samples)
    return report


def _run(opts: DemoOptions, stream: DemoStream, n: int, started: float, checkpoint_dir: Path,
         progress) -> tuple[dict[str, Any], list[Sample]]:
    samples: list[Sample] = []
    with Broker(port=opts.port) as broker:
        create_topics(broker.bootstrap, list(TOPICS.values()))
        settings = load_settings(
            bootstrap_servers=broker.bootstrap, topics=TOPICS, checkpoint_dir=checkpoint_dir, learner=opts.learner,
            learner_params=opts.params, n_features=stream.n_features, classes=stream.classes,
            kafka_consumer=CLIENT_SETTINGS, metrics_port=opts.metrics_port, checkpoint={"every_s": 5.0},
            labels={"ttl_s": max(60.0, 20 * opts.label_delay_s), "cost_per_request": opts.label_cost},
        )
        service = Service(settings)
        runner = threading.Thread(target=service.run, name="activestream-service", daemon=True)
        runner.start()
        annotator = Annotator(broker.bootstrap, TOPICS["label_requests"], TOPICS["labels"], stream.truth,
                              opts.label_delay_s, opts.label_cost, CLIENT_SETTINGS)
        feeder = Feeder(broker.bootstrap, TOPICS["features"], stream, opts.rate)
        board = _Scoreboard(broker.bootstrap, TOPICS["predictions"], stream.truth)
        bar = _Progress(progress, n)
        annotator.start()
        deadline = time.monotonic() + opts.timeout_s
        t = service.totals
        try:
            # everybody joins their consumer group before the first record is fed
            while not (annotator.ready.is_set() and board.ready.is_set() and service.health.ready()[0]):
                board.poll(0.1)
                if time.monotonic() > deadline or not runner.is_alive():
                    raise RuntimeError("the demo's clients did not join their groups")
            feeder.start()
            samples.append(_sample(started, board, t))
            while True:
                board.poll(0.2)
                bar.show(len(board.predicted), service, board)
                if time.monotonic() - started - samples[-1].seconds >= _SAMPLE_EVERY_S:
                    samples.append(_sample(started, board, t))
                answered_all = annotator.requested == annotator.answered and annotator.waiting == 0
                settled = t.get("labels.applied") + t.get("labels.expired") + t.get("labels.duplicate") >= \
                    annotator.answered
                if len(board.predicted) >= n and answered_all and settled:
                    break
                if not runner.is_alive():
                    raise RuntimeError("the service stopped unexpectedly (see the log above)")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the demo did not finish within {opts.timeout_s:.0f} s")
        finally:
            bar.show(len(board.predicted), service, board, final=True)
            if bar._tty:
                progress.write("\n")
            feeder.stop()
            annotator.stop()
            service.request_stop()
            runner.join(60)
            annotator.join(15)
            board.close()
    last = _sample(started, board, t)
    if samples and samples[-1].predicted == last.predicted:
        samples[-1] = last  # the final totals, at the same point of the stream
    else:
        samples.append(last)
    return _report(opts, stream, service, board, time.monotonic() - started), samples


def _report(opts: DemoOptions, stream: DemoStream, service: Service, board: _Scoreboard,
            seconds: float) -> dict[str, Any]:
    t = service.totals
    ids = [k for k in stream.truth if k in board.predicted]
    truth = np.array([stream.truth[k] for k in ids], dtype=object)
    predicted = np.array([board.predicted[k] for k in ids], dtype=object)
    classes = list(stream.classes)
    no_queries = np.zeros(len(ids), dtype=bool)
    if len(classes) == 2:
        codes = {classes[0]: -1, classes[1]: 1}
        m = binary_metrics(np.array([codes[v] for v in truth]), np.array([codes[v] for v in predicted]), no_queries)
    else:
        index = {c: i for i, c in enumerate(classes)}
        m = multiclass_metrics(np.array([index[v] for v in truth]), np.array([index[v] for v in predicted]),
                               no_queries, len(classes))
    scored = t.get("records_scored")
    dead = sum(v for k, v in t.values.items() if k.startswith("dead_letters."))
    return {
        "data": stream.name, "learner": service.learner.name, "records": len(stream.values),
        "predictions": len(board.predicted), "label_requests": int(t.get("label_requests")),
        "labels_applied": int(t.get("labels.applied")), "labels_expired": int(t.get("labels.expired")),
        "requests_expired": int(t.get("label_requests_expired")),
        "query_ratio": t.get("label_requests") / scored if scored else 0.0,
        "labelling_cost": t.get("labelling_cost"), "accuracy": m.accuracy, "f1": m.f1,
        "estimated_accuracy": 1.0 - t.estimated_error_rate(), "dead_letters": int(dead),
        "label_delay_s": opts.label_delay_s, "seconds": seconds, "records_per_second": len(board.predicted) / seconds,
    }
