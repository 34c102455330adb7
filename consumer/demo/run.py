"""``activestream demo``: the whole loop on one machine, no Docker, no Kafka installation.

It starts an embedded broker, creates the five topics, runs the service, streams a dataset into the
features topic, answers label requests with a simulated annotator (ground truth after a delay, at a
cost), follows the predictions to score them against the ground truth, shows progress, and ends with
a report: records, query ratio beside its target, labels, cost, online accuracy/F1 against the
truth and the service's own importance-weighted accuracy estimate beside it. The service holds a
query-rate target of :data:`consumer.demo.QUERY_RATE_TARGET` unless the options set another or none.

With ``--bootstrap`` it uses that Kafka instead of the embedded broker; with ``--service URL`` it
runs no service of its own but feeds and answers one that already runs (``activestream run``) and
reads that service's totals and target from its ``/metrics`` (the compose demo in ``deploy/compose``).

With ``--annotator label-studio`` people answer instead, in the user's Label Studio
(:mod:`consumer.demo.people`): the demo runs until every request is answered or expired, until its
timeout, or until Ctrl-C (or SIGTERM), and reports the labels they gave beside the truth.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
from confluent_kafka import Consumer

from consumer.annotate.config import load_annotate_settings
from consumer.config import Settings, load_settings
from consumer.demo import QUERY_RATE_TARGET
from consumer.demo.annotator import Annotator
from consumer.demo.broker import CLIENT_SETTINGS, LABEL_LOOP_FETCH, Broker, create_topics
from consumer.demo.feed import DemoStream, Feeder, drifting_stream, from_dataset
from consumer.demo.people import LabelStudioAnnotators, connector_settings
from consumer.demo.remote import RemoteTotals
from consumer.demo.report import RunningF1, Sample, recovery, write_report
from consumer.process import Process
from consumer.roles import service_for
from learners.evaluation import binary_metrics, multiclass_metrics

__all__ = ["ANNOTATORS", "DemoOptions", "run_demo"]

_SAMPLE_EVERY_S = 0.25  # the report's curves: a point every quarter second
_MISSING = object()  # a record the scoreboard saw no prediction for: never right

TOPICS = {"features": "features", "predictions": "predictions", "label_requests": "label-requests",
          "labels": "labels", "dead_letters": "dead-letters"}


@dataclass(frozen=True, slots=True)
class DemoOptions:
    data: list[str] = field(default_factory=list)
    learner: str | None = None  # default: the registry's for the stream's number of classes
    records: int = 10_000
    label_delay_s: float = 0.1
    label_cost: float = 1.0
    rate: float = 1000.0  # records per second fed (0: all at once)
    params: dict[str, Any] = field(default_factory=dict)
    port: int | None = None
    metrics_port: int = 0
    checkpoint_dir: str | None = None
    positive: Any = None
    timeout_s: float = 600.0
    report: str | None = None  # write an HTML report with the demo's curves here
    bootstrap: str | None = None  # an existing Kafka instead of the embedded broker
    service_url: str | None = None  # a running service to feed (its metrics endpoint), instead of our own
    clients: dict[str, str] | None = None  # the demo's own consumers' properties (default: by broker)
    query_rate_target: float | None = QUERY_RATE_TARGET  # ACTIVESTREAM_QUERY_RATE_TARGET of our service (None: none)
    annotator: str = "simulated"  # or "label-studio": people label in the user's Label Studio
    label_studio: Any = None  # the Label Studio client (default: ACTIVESTREAM_ANNOTATE__URL's)


def _stream(opts: DemoOptions) -> DemoStream:
    # A service that runs on may have seen earlier runs' ids: give this run's records their own.
    prefix = f"{uuid.uuid4().hex[:6]}-r" if opts.service_url else "r"
    if not opts.data:
        return drifting_stream(opts.records, id_prefix=prefix)
    from learners import make
    from learners.data_spec import resolve
    from learners.datasets import concat

    data = concat([resolve(spec) for spec in opts.data])
    multiclass = make(opts.learner).multiclass if opts.learner else len(data.classes()) > 2
    classes = data.classes() if multiclass else list(data.binary_classes(opts.positive))
    return from_dataset(data, classes, opts.records, id_prefix=prefix)


class _Scoreboard:
    """Follows the predictions topic and scores every record against the ground truth."""

    def __init__(self, bootstrap: str, topic: str, truth: dict, classes: Sequence[Any], clients: dict) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"scoreboard-{uuid.uuid4().hex[:8]}",
                                   **clients})
        self.ready = threading.Event()
        self._consumer.subscribe([topic], on_assign=lambda c, parts: (c.assign(parts), self.ready.set()))
        self._truth = truth
        self.running_f1 = RunningF1(classes)
        self.predicted: dict[str, Any] = {}
        self.correct = 0

    def poll(self, timeout: float) -> None:
        for msg in self._consumer.consume(5000, timeout):
            if msg.error() is None and msg.value() is not None:
                p = orjson.loads(msg.value())
                if p["id"] not in self.predicted and p["id"] in self._truth:  # not another run's record
                    actual, guess = self._truth[p["id"]], p["label"]
                    self.predicted[p["id"]] = guess
                    self.correct += actual == guess
                    self.running_f1.add(actual, guess)

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

    def show(self, done: int, t: Any, board: _Scoreboard, final: bool = False) -> None:
        now = time.monotonic()
        if not (self._tty or final or now - self._last >= 2.0):
            return
        self._last = now
        width = 24
        filled = int(width * done / max(self._total, 1))
        scored = t.get("records_scored")
        line = (f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self._total} records · "
                f"queries {t.get('label_requests') / max(scored, 1):.1%} · labels {t.get('labels.applied'):.0f} · "
                f"accuracy {board.accuracy():.3f} (estimated {1 - t.estimated_error_rate():.3f})")
        self._out.write(f"\r{line}\x1b[K" if self._tty else line + "\n")
        self._out.flush()


def _sample(started: float, board: _Scoreboard, t: Any) -> Sample:
    return Sample(time.monotonic() - started, len(board.predicted), board.correct, board.running_f1.value(),
                  t.get("records_scored"), t.get("label_requests"), t.get("labels.applied"), t.get("labels.expired"),
                  t.get("labelling_cost"), t.get("importance_weighted_labels"), t.get("importance_weighted_mistakes"))


def service_settings(opts: DemoOptions, stream: DemoStream, bootstrap: str, checkpoint_dir: Any) -> Settings:
    """The settings of the demo's own service: the embedded broker's client settings (none for a
    Kafka of the user's), and the label loop's longer fetch wait either way."""
    return load_settings(
        bootstrap_servers=bootstrap, topics=TOPICS, checkpoint_dir=checkpoint_dir, learner=opts.learner,
        learner_params=opts.params, n_features=stream.n_features, classes=stream.classes,
        kafka_consumer=CLIENT_SETTINGS if not opts.bootstrap else {}, kafka_labels_consumer=LABEL_LOOP_FETCH,
        metrics_port=opts.metrics_port, checkpoint={"every_s": 5.0}, query_rate_target=opts.query_rate_target,
        labels={"ttl_s": _ttl_s(opts), "cost_per_request": opts.label_cost},
    )


def _ttl_s(opts: DemoOptions) -> float:
    """How long a label request waits: people take as long as the demo runs; the simulated
    annotator answers within its delay."""
    return max(60.0, opts.timeout_s) if opts.annotator == "label-studio" else max(60.0, 20 * opts.label_delay_s)


def run_demo(opts: DemoOptions, progress=sys.stderr) -> dict[str, Any]:
    if opts.annotator not in ANNOTATORS:
        raise ValueError(f"--annotator must be one of {', '.join(ANNOTATORS)}, got {opts.annotator!r}")
    if opts.annotator == "label-studio":
        load_annotate_settings()  # a missing token or a bad URL stops the demo before anything starts
    stream = _stream(opts)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        if opts.bootstrap:
            bootstrap, clients = opts.bootstrap, {"auto.offset.reset": "latest"}  # a Kafka with history
        else:
            bootstrap, clients = stack.enter_context(Broker(port=opts.port)).bootstrap, CLIENT_SETTINGS
        clients = opts.clients if opts.clients is not None else clients
        create_topics(bootstrap, list(TOPICS.values()))
        service = runner = None
        if opts.service_url:
            totals: Any = RemoteTotals(opts.service_url)
            learner = opts.learner or "(the running service's)"
        else:
            checkpoint_dir = opts.checkpoint_dir or stack.enter_context(
                tempfile.TemporaryDirectory(prefix="activestream-demo-"))
            service = service_for(service_settings(opts, stream, bootstrap, checkpoint_dir))
            runner = threading.Thread(target=service.run, name="activestream-service", daemon=True)
            runner.start()
            totals, learner = service.totals, service.learner.name
        board, samples = _Scoreboard(bootstrap, TOPICS["predictions"], stream.truth, stream.classes, clients), []
        annotator = None
        try:
            annotator = _annotator(opts, stream, bootstrap, clients, started)
            _play(opts, stream, bootstrap, clients, service, runner, totals, board, samples, started, progress,
                  annotator)
        finally:
            if service is not None:
                service.request_stop()
                runner.join(60)
            board.close()
    report = _report(opts, stream, learner, totals, board, time.monotonic() - started)
    hits = [board.predicted.get(k, _MISSING) == v for k, v in stream.truth.items()]  # in stream order
    if stream.change_at is not None:
        report["drift"] = recovery(hits, stream.change_at)
    if isinstance(annotator, LabelStudioAnnotators):
        given = annotator.summary()
        report["people"] = {"project_url": annotator.url, "labels": given,
                            "agreeing": sum(g["label"] == g["truth"] for g in given) / len(given) if given else None}
    if opts.report:
        write_report(opts.report, report, samples, hits)
    return report


ANNOTATORS = ("simulated", "label-studio")


def _annotator(opts: DemoOptions, stream: DemoStream, bootstrap: str, clients: dict,
               started: float) -> Annotator | LabelStudioAnnotators:
    """Who answers the label requests: the simulated annotator, or people in Label Studio (whose
    project is found or made here, so that a refused token stops the demo before it streams)."""
    if opts.annotator == "simulated":
        return Annotator(bootstrap, TOPICS["label_requests"], TOPICS["labels"], stream.truth,
                         opts.label_delay_s, opts.label_cost, {**clients, **LABEL_LOOP_FETCH})
    settings = connector_settings(bootstrap, TOPICS, list(stream.classes), {**clients, **LABEL_LOOP_FETCH})
    people = LabelStudioAnnotators(settings, stream.truth, clients, ls=opts.label_studio)
    people.start_connector(started + min(opts.timeout_s, 120.0))
    return people


def _answered_all(annotator: Annotator | LabelStudioAnnotators, t: Any) -> bool:
    """Every label request seen is answered, and the service has settled every answer."""
    if isinstance(annotator, LabelStudioAnnotators):  # people: a request is answered, or it expired
        return t.get("labels.applied") + t.get("label_requests_expired") >= t.get("label_requests")
    answered = annotator.requested == annotator.answered and annotator.waiting == 0
    return answered and t.get("labels.applied") + t.get("labels.expired") + t.get("labels.duplicate") >= \
        annotator.answered


def _play(opts: DemoOptions, stream: DemoStream, bootstrap: str, clients: dict, service: Process | None,
          runner: threading.Thread | None, t: Any, board: _Scoreboard, samples: list[Sample], started: float,
          progress, annotator: Annotator | LabelStudioAnnotators) -> None:
    """Feed the stream, answer its label requests, follow its predictions until all are settled
    (people: until they answered every request, the timeout, Ctrl-C or SIGTERM)."""
    n = len(stream.values)
    remote = service is None
    people = isinstance(annotator, LabelStudioAnnotators)
    feeder = Feeder(bootstrap, TOPICS["features"], stream, opts.rate)
    bar = _Progress(progress, n)
    annotator.start()
    deadline = time.monotonic() + opts.timeout_s
    if people:
        progress.write(f"Label the tasks at {annotator.url} (Ctrl-C to stop and see the report)\n")
        progress.flush()

    def alive() -> bool:
        return remote or runner.is_alive()

    def sample() -> None:
        if remote:
            t.refresh()
        samples.append(_sample(started, board, t))

    restore_sigterm = _stop_on_sigterm() if people else None
    try:
        # everybody joins their consumer group before the first record is fed
        while not (annotator.ready.is_set() and board.ready.is_set() and (remote or service.health.ready()[0])):
            board.poll(0.1)
            if time.monotonic() > deadline or not alive():
                raise RuntimeError("the demo's clients did not join their groups")
        feeder.start()
        sample()
        while True:
            board.poll(0.2)
            if time.monotonic() - started - samples[-1].seconds >= _SAMPLE_EVERY_S:
                sample()
            bar.show(len(board.predicted), t, board)
            if len(board.predicted) >= n and _answered_all(annotator, t):
                break
            if not alive():
                raise RuntimeError("the service stopped unexpectedly (see the log above)")
            if people and annotator.error is not None:
                raise RuntimeError(f"the Label Studio connector stopped: {annotator.error}")
            if time.monotonic() > deadline:
                if people:  # people stop when they like: the report shows what they labelled
                    break
                raise TimeoutError(f"the demo did not finish within {opts.timeout_s:.0f} s")
    except KeyboardInterrupt:
        if not people:
            raise
    finally:
        if restore_sigterm is not None:
            restore_sigterm()
        bar.show(len(board.predicted), t, board, final=True)
        if bar._tty:
            progress.write("\n")
        feeder.stop()
        annotator.stop()
        annotator.join(15)
    if remote:
        t.refresh()
    last = _sample(started, board, t)
    if samples and samples[-1].predicted == last.predicted:
        samples[-1] = last  # the final totals, at the same point of the stream
    else:
        samples.append(last)


def _stop_on_sigterm() -> Callable[[], None] | None:
    """While people label, SIGTERM ends the session as Ctrl-C does, with the report: a script or a
    process manager stops it so, and a background job's Ctrl-C never arrives (shells start those with
    SIGINT ignored). Returns what puts the previous handler back; None off the main thread, where no
    handler can be set."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _report(opts: DemoOptions, stream: DemoStream, learner: str, t: Any, board: _Scoreboard,
            seconds: float) -> dict[str, Any]:
    ids = [k for k in stream.truth if k in board.predicted]
    truth = np.array([stream.truth[k] for k in ids], dtype=object)
    predicted = np.array([board.predicted[k] for k in ids], dtype=object)
    classes = list(stream.classes)
    no_queries = np.zeros(len(ids), dtype=bool)
    # A prediction outside the stream's classes (None: a running service that has not learnt its
    # classes from the labels yet) is a mistake: scored as a class other than the truth.
    if len(classes) == 2:
        codes = {classes[0]: -1, classes[1]: 1}
        y = np.array([codes[v] for v in truth])
        m = binary_metrics(y, np.array([codes.get(g, -c) for g, c in zip(predicted, y, strict=True)]), no_queries)
    else:
        index = {c: i for i, c in enumerate(classes)}
        y = np.array([index[v] for v in truth])
        guesses = [index.get(g, (i + 1) % len(classes)) for g, i in zip(predicted, y, strict=True)]
        m = multiclass_metrics(y, np.array(guesses), no_queries, len(classes))
    scored = t.get("records_scored")
    target = t.query_rate_target if opts.service_url else opts.query_rate_target  # a running service's own
    dead = sum(v for k, v in t.values.items() if k.startswith("dead_letters."))
    return {
        "data": stream.name, "learner": learner, "records": len(stream.values),
        "predictions": len(board.predicted), "label_requests": int(t.get("label_requests")),
        "labels_applied": int(t.get("labels.applied")), "labels_expired": int(t.get("labels.expired")),
        "requests_expired": int(t.get("label_requests_expired")),
        "query_ratio": t.get("label_requests") / scored if scored else 0.0, "query_rate_target": target,
        "labelling_cost": t.get("labelling_cost"), "accuracy": m.accuracy, "f1": m.f1,
        "estimated_accuracy": 1.0 - t.estimated_error_rate(), "dead_letters": int(dead),
        "annotator": opts.annotator, "label_delay_s": opts.label_delay_s, "seconds": seconds,
        "records_per_second": len(board.predicted) / seconds,
    }
