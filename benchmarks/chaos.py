"""Fault scenarios for the single-process service (``ACTIVESTREAM_ROLE=all``), counted.

    python -m benchmarks.chaos                  # every scenario at full size (SIGKILL x 50 over 200,000 records)
    python -m benchmarks.chaos --properties     # and the property tests with the long Hypothesis profile
    python -m benchmarks.chaos --quick          # reduced sizes (e.g. 20,000 records, 5 kills)
    python -m benchmarks.chaos --only sigkill outage --quick

Scenarios: ``sigkill`` (SIGKILL at random moments), ``outage`` (every broker down, back with its
data), ``data_loss`` (the broker back without its data), ``request_errors`` (failing produce,
fetch and commit requests), ``revocation`` (a second consumer joining mid-batch and
mid-checkpoint), ``unwritable`` (checkpoint writes failing), ``corrupt`` (the newest checkpoint
truncated or corrupted), ``clock_skew`` (producer clocks a day off, records 50 years off) and
``properties`` (pytest in a subprocess, ``ACTIVESTREAM_HYPOTHESIS_PROFILE=long``).

For each scenario: the records, the labels, the faults injected, and four counts whose target is 0:
predictions missing (a record with no prediction), decisions changed (a record predicted twice with
different decisions), labels lost (answered but not in the model) and labels applied twice. The
counts are measured from the outputs read back from the broker and from the newest checkpoint's
counters, as ``tests/reliability/test_crash_recovery.py`` does.

Writes ``benchmarks/results/chaos.json`` and ``chaos.md``. A run of some scenarios (``--only``)
replaces those scenarios' entries at that size and keeps the others', each with its command and size.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import errno
import json
import logging
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from consumer.checkpoint import CheckpointStore
from consumer.demo.broker import CLIENT_SETTINGS, Broker, create_topics, free_port
from consumer.errors import CheckpointError, ConfigError, LeaseLost
from consumer.process import Process
from consumer.roles import service_for
from consumer.state import part_of, unpack_offsets
from tests.integration.test_faults import mock_topics
from tests.kafka_helpers import ghost_leader, produce_features, read_all, run_until, settings_for, stream, unique_topics
from tests.rdmock import ApiKey, MockCluster
from tests.reliability.test_crash_recovery import DedupAnnotator, metric, start_service

__all__ = ["SCENARIOS", "Outcome", "main", "run_scenarios"]

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]


@dataclass(slots=True)
class Outcome:
    """What one scenario injected and what it counted. A count is None when the scenario could not
    measure it (the note says why): never a 0 that was not counted."""

    name: str
    title: str
    size: str  # "full", "quick" or "tiny" (the test's settings)
    records: int
    labels: int  # labels answered by the annotator
    injected: str
    missing: int | None
    changed: int | None
    lost: int | None
    doubled: int | None
    note: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    command: str = ""
    made: str = ""

    @property
    def clean(self) -> bool:
        if "exit" in self.details:  # property tests: the counts do not apply, a falsified property fails pytest
            return self.details["exit"] == 0
        return all(c == 0 for c in (self.missing, self.changed, self.lost, self.doubled))


# -- counting ----------------------------------------------------------------------------------------------


def count_outputs(bootstrap: str, topics: dict[str, str], ids: set[str]) -> dict[str, Any]:
    """From the predictions topic: the ids with no prediction, the ids predicted twice with different
    decisions, re-emitted predictions (same decision again: allowed), and the ids whose prediction
    asked for a label."""
    by_id: dict[str, set[tuple]] = {}
    total = 0
    for m in read_all(bootstrap, topics["predictions"], timeout_s=120):
        p = orjson.loads(m.value())
        total += 1
        by_id.setdefault(p["id"], set()).add((p["label"], p["probability"], p["label_requested"]))
    requested = {rid for rid, seen in by_id.items() if any(d[2] for d in seen)}
    return {"missing": len(ids - set(by_id)), "changed": sum(len(s) > 1 for s in by_id.values()),
            "predictions": total, "re_emitted": total - len(by_id), "requested": requested,
            "unexpected": len(set(by_id) - ids)}


def count_labels(checkpoint_dir: Path, answered: int) -> dict[str, Any]:
    """From the newest checkpoint: the labels in the model against those the annotator answered
    (each id once), and the service's own label counters."""
    latest = CheckpointStore(checkpoint_dir, keep=1).latest()
    if latest is None:
        return {"lost": None, "doubled": None, "in_model": None}
    _, state = latest
    totals = orjson.loads(str(state["totals.counts"]))
    in_model = int(state["learner.counters"][1])
    return {"lost": max(0, answered - in_model), "doubled": max(0, in_model - answered), "in_model": in_model,
            "applied": totals.get("labels.applied", 0), "duplicate": totals.get("labels.duplicate", 0),
            "unknown": totals.get("labels.unknown", 0), "label_requests": totals.get("label_requests", 0),
            "label_totals": {k: v for k, v in totals.items() if k.startswith("labels.")}}


def _service_env(bootstrap: str, topics: dict[str, str], checkpoint_dir: Path, port: int,
                 **extra: str) -> dict[str, str]:
    return {**os.environ, "ACTIVESTREAM_ROLE": "all",
            "ACTIVESTREAM_BOOTSTRAP_SERVERS": bootstrap, "ACTIVESTREAM_CHECKPOINT_DIR": str(checkpoint_dir),
            "ACTIVESTREAM_METRICS_PORT": str(port), "ACTIVESTREAM_GROUP_ID": f"chaos-{topics['features']}",
            "ACTIVESTREAM_N_FEATURES": "8", "ACTIVESTREAM_BATCH_SIZE": "200",
            "ACTIVESTREAM_CHECKPOINT__EVERY_S": "0.3", "ACTIVESTREAM_CHECKPOINT__EVERY_LABELS": "25",
            "ACTIVESTREAM_LEARNER": "paa-1", "ACTIVESTREAM_LEARNER_PARAMS": '{"delta": 0.3}',
            "ACTIVESTREAM_TOPICS": orjson.dumps(topics).decode(),
            "ACTIVESTREAM_KAFKA_CONSUMER": orjson.dumps(CLIENT_SETTINGS).decode(), **extra}


def _scored(port: int) -> float:
    return metric(port, "activestream_records_scored_total") or 0


def _settled(port: int, n: int, annotator: DedupAnnotator) -> bool:
    """Every record scored, every request answered, every answer learnt."""
    requested = metric(port, "activestream_label_requests_total") or 0
    applied = metric(port, 'activestream_labels_total{outcome="applied"}') or 0
    return _scored(port) >= n and requested == len(annotator.answered) == applied


class Feeder:
    """Records arrive through the faults at ``chunk`` per ``pace_s``, at most ``ahead`` beyond what the
    service has scored, so the source waits while the service is down, however slow its restarts."""

    def __init__(self, bootstrap: str, topic: str, records: list, scored: Callable[[], float], chunk: int,
                 pace_s: float, ahead: int) -> None:
        self.stop = threading.Event()
        self.fed = 0

        def feed() -> None:
            for start in range(0, len(records), chunk):
                while scored() < start - ahead:
                    if self.stop.is_set():
                        return
                    time.sleep(0.05)  # polling another process's metrics endpoint, or another thread's count
                produce_features(bootstrap, topic, records[start: start + chunk])
                self.fed = min(len(records), start + chunk)
                time.sleep(pace_s)  # the pace of the source, not a wait for a condition

        self.thread = threading.Thread(target=feed, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


# -- 1. SIGKILL ----------------------------------------------------------------------------------------------


def sigkill(*, records: int = 200_000, kills: int = 50, seed: int = 7, workdir: Path,
            bootstrap: str | None = None) -> Outcome:
    """SIGKILL the service ``kills`` times, each when it has scored a random number of the records
    (the numbers drawn uniformly over the stream), restarting it each time; labels flow throughout."""
    rng = random.Random(seed)
    with Broker() if bootstrap is None else _Nothing() as broker:
        bootstrap = bootstrap or broker.bootstrap
        topics = unique_topics(bootstrap, partitions=2)
        data, truth = stream(records, seed=3)
        port = free_port()
        checkpoint_dir = workdir / "ckpt"
        env = _service_env(bootstrap, topics, checkpoint_dir, port)
        annotator = DedupAnnotator(bootstrap, topics, truth).start()
        log = workdir / "service.log"
        feeder = Feeder(bootstrap, topics["features"], data, lambda: _scored(port),
                        chunk=max(100, records // 200), pace_s=0.1, ahead=max(300, records // 40))
        targets = sorted(rng.randrange(1, records) for _ in range(kills))
        at_kill: list[float] = []
        exits: list[int] = []  # a process that ended before it was killed (a crash loop would show here)
        proc = None
        try:
            for target in targets:
                proc = start_service(env, log)
                before = at_kill[-1] if at_kill else 0.0
                deadline = time.monotonic() + 120
                while _scored(port) < max(target, before + 1) and proc.poll() is None:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"no progress past {before} ({log.read_text()[-2000:]})")
                    time.sleep(0.02)  # polling another process's metrics endpoint
                if proc.poll() is not None:
                    exits.append(proc.returncode)
                    continue
                at_kill.append(_scored(port))
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            proc = start_service(env, log)
            deadline = time.monotonic() + 300
            settled = False
            while time.monotonic() < deadline:
                if _settled(port, records, annotator):
                    settled = True
                    break
                if proc.poll() is not None:
                    exits.append(proc.returncode)
                    proc = start_service(env, log)
                time.sleep(0.2)  # polling another process's metrics endpoint
            proc.send_signal(signal.SIGTERM)
            final_exit = proc.wait(60)
        finally:
            feeder.close()
            if proc is not None and proc.poll() is None:
                proc.kill()
            annotator.close()
        outputs = count_outputs(bootstrap, topics, set(truth))
        labels = count_labels(checkpoint_dir, len(annotator.answered))
    unanswered = len(outputs["requested"] - set(annotator.answered))
    notes = []
    if not settled:
        notes.append("the last run did not settle within 300 s (scored, requested, answered, applied differ)")
    if exits:
        notes.append(f"{len(exits)} runs ended on their own (exit codes {exits})")
    if unanswered:
        notes.append(f"{unanswered} requested labels never reached the annotator")
    return Outcome("sigkill", "SIGKILL at random moments, restarted each time", "", records,
                   len(annotator.answered), f"{len(at_kill)} SIGKILLs", outputs["missing"], outputs["changed"],
                   labels["lost"], labels["doubled"], "; ".join(notes),
                   {"records_scored_at_each_kill": at_kill, "predictions": outputs["predictions"],
                    "re_emitted": outputs["re_emitted"], "labels_in_model": labels["in_model"],
                    "labels_duplicate_dropped": labels.get("duplicate"), "final_exit": final_exit,
                    "requests_unanswered": unanswered, "self_exits": exits})


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


# -- in-process scenarios: the service's loop turned here, as the integration tests do ------------------------


def _in_process(bootstrap: str, topics: dict[str, str], checkpoint_dir: Path, **overrides: Any) -> Process:
    settings = settings_for(bootstrap, topics, checkpoint_dir, batch_size=50,
                            checkpoint={"every_s": 0.3, "every_labels": 25}, **overrides)
    return service_for(settings, serve_http=False)


class Supervised:
    """An in-process service restarted as an orchestrator restarts ``consumer run``: when it stops on
    a lost trainer lease (exit code 1), a new one starts from the same checkpoint directory."""

    def __init__(self, service: Process) -> None:
        self.settings = service.settings
        self.restarts = 0
        self.start_failures: list[str] = []  # starts that raised ConfigError: `consumer run` exits 2 on them
        self.service = service
        service.start()

    def _restart(self) -> None:
        self.service.close(final_checkpoint=False)
        self.restarts += 1
        while True:
            self.service = service_for(self.settings, serve_http=False)
            try:
                self.service.start()
                return
            except ConfigError as exc:
                self.start_failures.append(str(exc))
                self.service.close(final_checkpoint=False)
                time.sleep(2.0)  # an orchestrator's back-off before it starts the process again

    def until(self, condition: Callable[[Process], bool], timeout_s: float = 60.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                run_until(self.service, lambda: condition(self.service), timeout_s=deadline - time.monotonic(),
                          what=what)
                return
            except LeaseLost:
                self._restart()

    def settle(self, n: int, annotator: DedupAnnotator, timeout_s: float, labels_before: int = 0) -> bool:
        """Until every record is scored and every requested label answered and learnt; False (the
        counts then say what is missing) if that takes longer than ``timeout_s``."""
        def done(service: Process) -> bool:
            t = service.totals
            return (t.get("records_scored") >= n
                    and t.get("label_requests") - labels_before == len(annotator.answered)
                    == t.get("labels.applied") - labels_before)
        try:
            self.until(done, timeout_s, "settled")
            return True
        except TimeoutError:
            return False

    def stop(self) -> None:
        _stop(self.service)


def _settle(service: Process, n: int, annotator: DedupAnnotator, timeout_s: float) -> bool:
    t = service.totals

    def done() -> bool:
        return (t.get("records_scored") >= n
                and t.get("label_requests") == len(annotator.answered) == t.get("labels.applied"))
    try:
        run_until(service, done, timeout_s=timeout_s, what="settled")
        return True
    except TimeoutError:
        return False


def _stop(service: Process) -> None:
    service.checkpoint()
    service.request_stop()
    service.shutdown()


def _outcome(name: str, title: str, bootstrap: str, topics: dict[str, str], ids: set[str], checkpoint_dir: Path,
             annotator: DedupAnnotator, injected: str, settled: bool, notes: list[str], **details: Any) -> Outcome:
    outputs = count_outputs(bootstrap, topics, ids)
    labels = count_labels(checkpoint_dir, len(annotator.answered))
    unanswered = len(outputs["requested"] - set(annotator.answered))
    if not settled:
        notes.append("did not settle in time: the counts are what was there when it gave up")
    if unanswered:
        notes.append(f"{unanswered} requested labels never reached the annotator")
    return Outcome(name, title, "", len(ids), len(annotator.answered), injected, outputs["missing"],
                   outputs["changed"], labels["lost"], labels["doubled"], "; ".join(notes),
                   {"predictions": outputs["predictions"], "re_emitted": outputs["re_emitted"],
                    "labels_in_model": labels["in_model"], "label_requests_in_checkpoint": labels.get("label_requests"),
                    "label_totals_in_checkpoint": labels.get("label_totals"),
                    "requests_unanswered": unanswered, **details})


# -- 2. every broker down for a while -------------------------------------------------------------------------


def outage(*, records: int = 6_000, down_s: float = 30.0, workdir: Path) -> Outcome:
    """Half the records scored, every broker of the mock cluster down for ``down_s`` while the loop
    keeps turning, then up again with its data; the other half produced after. A service that finds
    its trainer lease gone (its lease group's session ran out during the outage) stops as
    ``consumer run`` does (exit code 1) and is restarted from its checkpoint."""
    cluster = MockCluster(brokers=3)
    try:
        topics = mock_topics(cluster)
        data, truth = stream(records, seed=5, prefix="o")
        half = records // 2
        produce_features(cluster.bootstraps, topics["features"], data[:half])
        annotator = DedupAnnotator(cluster.bootstraps, topics, truth).start()
        run = Supervised(_in_process(cluster.bootstraps, topics, workdir,
                                     kafka_producer={"message.timeout.ms": "1500", "retry.backoff.ms": "50"}))
        run.until(lambda s: s.totals.get("records_scored") >= half // 2, what="first records")
        for broker in (1, 2, 3):
            cluster.broker_down(broker)
        up = threading.Event()

        def back_up() -> None:
            for broker in (1, 2, 3):
                cluster.broker_up(broker)
            up.set()

        # on its own clock: a restart that cannot start while the brokers are away holds this thread
        timer = threading.Timer(down_s, back_up)
        timer.start()
        run.until(lambda s: up.is_set(), timeout_s=down_s + 120, what="outage")
        live = run.service.health.live()[0]
        produce_features(cluster.bootstraps, topics["features"], data[half:])
        settled = run.settle(records, annotator, 180)
        run.stop()
        annotator.close()
        notes = [f"the service stopped on its lost trainer lease {run.restarts} time(s) (exit code 1 as a process)"
                 " and was restarted from its checkpoint: the lease group's session (2 s, the embedded "
                 "broker's setting) ran out during the outage"] if run.restarts else []
        if run.start_failures:
            notes.append(f"{len(run.start_failures)} restarts during the outage failed to start (`consumer run` "
                         f"exits 2 on this ConfigError, so an orchestrator restarts it in a loop until the brokers "
                         f"are back): {run.start_failures[0]}")
        return _outcome("outage", f"every broker down for {down_s:g} s, back with its data", cluster.bootstraps,
                        topics, set(truth), workdir, annotator, f"3 of 3 brokers down {down_s:g} s", settled, notes,
                        restarts_on_lost_lease=run.restarts, starts_failed_exit_2=len(run.start_failures),
                        live_after_the_outage=live)
    finally:
        cluster.close()


# -- 3. the broker restarted without its data ----------------------------------------------------------------


def data_loss(*, records: int = 2_000, workdir: Path, attempts: int = 3) -> Outcome:
    """The embedded broker (memory-only) stopped after ``records`` old records were scored and their
    labels learnt under static membership (``ACTIVESTREAM_GROUP_INSTANCE_ID``, as the shipped compose
    file and StatefulSet set it), started again on the same port with nothing, and ``records // 2`` new records
    produced to the re-created topics: the service must log and count the reset, read the new logs
    from their start, stop on the lost lease (exit code 1 as ``consumer run``) and, restarted from its
    checkpoint, score every new record once. The counts are of the new broker's records.

    An attempt that the broker itself stalls (a departed member kept as a group's leader, found in
    librdkafka's group debug lines: :func:`tests.kafka_helpers.ghost_leader`) is run again, up to
    ``attempts`` times, and reported: a stall without that signature counts as the service's."""
    stalled: list[str] = []
    for attempt in range(1, attempts + 1):
        where = workdir / f"attempt-{attempt}"
        where.mkdir(parents=True, exist_ok=True)
        with _stderr_into(where / "librdkafka.log"):
            outcome = _data_loss_attempt(records, where)
        leader = ghost_leader((where / "librdkafka.log").read_text(errors="replace"))
        if not (outcome.missing and leader):
            break
        stalled.append(leader)
    outcome.details["attempts_stalled_by_the_broker"] = len(stalled)
    if stalled:
        outcome.note = "; ".join(filter(None, [outcome.note, (
            f"{len(stalled)} of {attempt} attempt(s) stalled in the broker (each earlier one was run again): "
            f"its group coordinator kept a consumer of the stopped process ({', '.join(stalled)}), which left "
            "while its JoinGroup was held, as the group's leader, so the restarted process was never assigned "
            "(a Tansu defect; a Kafka coordinator drops a member that leaves)")]))
    return outcome


@contextlib.contextmanager
def _stderr_into(path: Path) -> Iterator[None]:
    """Send this process's stderr (fd 2, where librdkafka writes its debug lines) to ``path``."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "wb") as out:
        os.dup2(out.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def _data_loss_attempt(records: int, workdir: Path) -> Outcome:
    port = free_port()
    old, old_truth = stream(records, prefix="old-")
    new, new_truth = stream(records // 2, seed=1, prefix="new-")
    checkpoint_dir = workdir / "ckpt"
    errors = _Captured(logging.ERROR)
    logging.getLogger("consumer.process").addHandler(errors)
    with Broker(port=port) as broker:
        topics = unique_topics(broker.bootstrap, partitions=2)
        produce_features(broker.bootstrap, topics["features"], old)
        annotator = DedupAnnotator(broker.bootstrap, topics, old_truth).start()
        run = Supervised(_in_process(broker.bootstrap, topics, checkpoint_dir,
                                     kafka={"reconnect.backoff.max.ms": "500", "debug": "cgrp"},
                                     group_instance_id="activestream-0"))  # as compose and the StatefulSet run it
        old_settled = run.settle(records, annotator, 120)
        run.service.checkpoint()
        annotator.close()
    old_answered = len(annotator.answered)
    first = run.service
    with Broker(port=port) as broker:
        create_topics(broker.bootstrap, list(topics.values()), 2)
        produce_features(broker.bootstrap, topics["features"], new)
        annotator = DedupAnnotator(broker.bootstrap, topics, new_truth).start()
        settled = run.settle(records + len(new), annotator, 120, labels_before=old_answered)
        resets_first = _resets(first.metrics.offset_resets, topics["features"])
        resets_last = _resets(run.service.metrics.offset_resets, topics["features"])
        run.stop()
        annotator.close()
        outputs = count_outputs(broker.bootstrap, topics, set(new_truth))
    logging.getLogger("consumer.process").removeHandler(errors)
    labels = count_labels(checkpoint_dir, old_answered + len(annotator.answered))
    notes = [] if settled and old_settled else ["did not settle in time: the counts are what was there"]
    if not run.restarts:
        notes.append("the service did not find its lease gone")
    unanswered = len(outputs["requested"] - set(annotator.answered))
    return Outcome("data_loss", "the broker restarted on its port without its data", "", len(new),
                   len(annotator.answered), "broker restart, all data and groups gone", outputs["missing"],
                   outputs["changed"], labels["lost"], labels["doubled"], "; ".join(notes),
                   {"old_records": records, "old_labels": old_answered, "new_records": len(new),
                    "predictions_on_new_broker": outputs["predictions"], "re_emitted": outputs["re_emitted"],
                    "unexpected_ids_on_new_broker": outputs["unexpected"], "restarts_on_lost_lease": run.restarts,
                    "errors_logged_position_not_in_the_log": sum(
                        topics["features"] in m and "is not in the log" in m for m in errors.messages),
                    "offset_resets_counted_before_the_restart": resets_first,
                    "offset_resets_counted_after_the_restart": resets_last,
                    "labels_in_model": labels["in_model"], "labels_applied_total": labels.get("applied"),
                    "label_requests_total": run.service.totals.get("label_requests"),
                    "labels_unknown": labels.get("unknown"), "labels_duplicate_dropped": labels.get("duplicate"),
                    "requests_unanswered": unanswered})


class _Captured(logging.Handler):
    """The messages logged at ``level`` or above."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _resets(counter: Any, topic: str) -> float:
    return float(counter.labels(topic=topic)._value.get())


# -- 4. produce errors and request timeouts ------------------------------------------------------------------

ERRORS = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.REQUEST_TIMED_OUT, KafkaError.NOT_ENOUGH_REPLICAS,
          KafkaError.LEADER_NOT_AVAILABLE)


def request_errors(*, records: int = 6_000, rounds: int = 20, workdir: Path) -> Outcome:
    """Rounds of failing requests while records and labels flow: each round, the next produce requests
    (predictions, label requests, dead letters, the annotator's labels: every topic) fail with
    ERRORS, and the next fetch and offset-commit requests time out; the brokers slowed to 20 ms."""
    cluster = MockCluster(brokers=3)
    try:
        topics = mock_topics(cluster)
        data, truth = stream(records, seed=6, prefix="e")
        annotator = DedupAnnotator(cluster.bootstraps, topics, truth).start()
        service = _in_process(cluster.bootstraps, topics, workdir,
                              kafka_producer={"retry.backoff.ms": "20", "linger.ms": "1"})
        service.start()
        cluster.set_rtt(20)
        per_round = records // rounds
        injected = 0
        for k in range(rounds):
            cluster.push_request_errors(ApiKey.Produce, *ERRORS)
            cluster.push_request_errors(ApiKey.Fetch, KafkaError.REQUEST_TIMED_OUT)
            cluster.push_request_errors(ApiKey.OffsetCommit, KafkaError.REQUEST_TIMED_OUT)
            injected += len(ERRORS) + 2
            produce_features(cluster.bootstraps, topics["features"], data[k * per_round: (k + 1) * per_round])
            run_until(service, lambda k=k: service.totals.get("records_scored") >= (k + 1) * per_round,
                      timeout_s=60, what=f"round {k}")
        settled = _settle(service, rounds * per_round, annotator, 120)
        reg = service.metrics.registry
        failures = {t: reg.get_sample_value("activestream_produce_errors_total", {"topic": topics[t]}) or 0
                    for t in ("predictions", "label_requests")}
        _stop(service)
        annotator.close()
        ids = {rid for rid, _ in data[: rounds * per_round]}
        return _outcome("request_errors", "produce errors and request timeouts on every topic", cluster.bootstraps,
                        topics, ids, workdir, annotator, f"{injected} failed requests in {rounds} rounds", settled,
                        [], delivery_failures_counted=failures)
    finally:
        cluster.close()


# -- 5. revocations mid-batch and mid-checkpoint --------------------------------------------------------------


def revocation(*, records: int = 20_000, joins: int = 10, hold_s: float = 3.0, write_s: float = 6.0,
               workdir: Path) -> Outcome:
    """A second consumer joins the service's group on ``features`` ``joins`` times while records flow,
    holds its partition ``hold_s`` without committing, and leaves. Every other join is timed into a
    checkpoint: the checkpoint writer is slowed by ``write_s`` and the second consumer joins once the
    write has begun, so the revocation waits on a checkpoint that is half done."""
    with Broker() as broker:
        topics = unique_topics(broker.bootstrap, partitions=2)
        data, truth = stream(records, seed=8, prefix="v")
        annotator = DedupAnnotator(broker.bootstrap, topics, truth).start()
        service = _in_process(broker.bootstrap, topics, workdir)
        seen: list[dict[str, bool]] = []
        revoke, write, take = service.rebalance.revoked, service.store.write, service.features_read.take
        writing, slow = threading.Event(), threading.Event()
        reading_ahead = [False]

        def take_features(wait_s: float) -> Any:
            # the loop reads the next batch ahead (no wait) while it decides the one in hand: a
            # revocation served by that poll arrives in the middle of a batch
            reading_ahead[0] = wait_s == 0 and service.emit.batch is None
            try:
                return take(wait_s)
            finally:
                reading_ahead[0] = False

        def on_revoke(consumer: Any, partitions: list) -> None:
            if consumer is service.io.features and partitions:
                writing = service.checkpoints.writing
                seen.append({"batch_in_hand": reading_ahead[0] or service.emit.batch is not None
                             or service.features_read.ahead is not None,
                             "checkpoint_being_written": writing})
            revoke(consumer, partitions)

        def slowed_write(state: Any, parts: Any = ()) -> Path:
            if slow.is_set():
                slow.clear()
                writing.set()
                time.sleep(write_s)  # the disk is slow: the revocation arrives while this write is under way
            return write(state, parts)

        # instance attributes: the subscription and the writer look these up when the service starts
        service.rebalance.revoked, service.store.write = on_revoke, slowed_write
        service.features_read.take = take_features
        service.start()
        t = service.totals
        share = records // (joins + 1)
        # a steady trickle, and at each join a burst: the group rebalances while batches are in hand
        feeder = Feeder(broker.bootstrap, topics["features"], data[: joins * share // 2],
                        lambda: t.get("records_scored"), chunk=max(20, records // 1000), pace_s=0.05, ahead=2_000)
        burst = data[joins * share // 2:]
        try:
            for k in range(joins):
                run_until(service, lambda k=k: service.health.assigned
                          and t.get("records_scored") >= min((k + 1) * share // 2, feeder.fed), timeout_s=120,
                          what=f"join {k}")
                produce_features(broker.bootstrap, topics["features"], burst[k * share // 2: (k + 1) * share // 2])
                mid_checkpoint = k % 2 == 1
                if mid_checkpoint:
                    writing.clear()
                    slow.set()
                intruder = threading.Thread(target=_intrude, daemon=True,
                                            args=(broker.bootstrap, service.settings.group_id, topics["features"],
                                                  hold_s, writing if mid_checkpoint else None))
                intruder.start()
                run_until(service, lambda i=intruder: not i.is_alive() and service.health.assigned, timeout_s=120,
                          what="the second consumer gone and the partitions back")
            feeder.thread.join()
            produce_features(broker.bootstrap, topics["features"], burst[joins * share // 2:])
            settled = _settle(service, records, annotator, 180)
        finally:
            feeder.close()
        _stop(service)
        annotator.close()
        revocations = service.features_read.revocations
        return _outcome("revocation", "a second consumer joins the group mid-batch and mid-checkpoint",
                        broker.bootstrap, topics, set(truth), workdir, annotator,
                        f"{joins} joins ({revocations} revocations)", settled, [],
                        revocations_with_a_batch_in_hand=sum(r["batch_in_hand"] for r in seen),
                        revocations_during_a_checkpoint_write=sum(r["checkpoint_being_written"] for r in seen),
                        revocations_seen=len(seen))


def _intrude(bootstrap: str, group: str, topic: str, hold_s: float, after: threading.Event | None) -> None:
    """Join ``group`` on ``topic`` (after ``after`` is set), hold the partitions it gets without
    committing anything, leave."""
    if after is not None:
        after.wait(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": "false",
                  **CLIENT_SETTINGS})
    c.subscribe([topic])
    until = time.monotonic() + hold_s
    while time.monotonic() < until:
        c.poll(0.1)
    c.close()


# -- 6. the checkpoint directory unwritable for a while ----------------------------------------------------


def unwritable(*, records: int = 20_000, fail_s: float = 10.0, workdir: Path) -> Outcome:
    """Every checkpoint write fails for ``fail_s`` (as the store fails on a full or read-only
    directory: CheckpointError naming the errno) while records and labels flow. The committed
    offsets of the features group are sampled throughout and compared with the newest durable
    checkpoint's; then the directory is writable again."""
    with Broker() as broker:
        topics = unique_topics(broker.bootstrap, partitions=2)
        data, truth = stream(records, seed=9, prefix="w")
        annotator = DedupAnnotator(broker.bootstrap, topics, truth).start()
        checkpoint_dir = workdir / "ckpt"
        service = _in_process(broker.bootstrap, topics, checkpoint_dir)
        write = service.store.write
        failing = threading.Event()

        def full_disk(state: Any, parts: Any = ()) -> Path:
            if failing.is_set():
                raise CheckpointError(f"cannot write {checkpoint_dir}: [Errno {errno.ENOSPC}] "
                                      f"{os.strerror(errno.ENOSPC)}")
            return write(state, parts)

        service.store.write = full_disk  # an instance attribute: the loop and the writer look it up here
        service.start()
        t = service.totals
        feeder = Feeder(broker.bootstrap, topics["features"], data, lambda: t.get("records_scored"),
                        chunk=max(50, records // 400), pace_s=0.05, ahead=2_000)
        watcher = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": service.settings.group_id,
                            **CLIENT_SETTINGS})
        partitions = [TopicPartition(topics["features"], p) for p in (0, 1)]
        try:
            run_until(service, lambda: t.get("records_scored") >= records // 4, timeout_s=120, what="first quarter")
            failures_before = service.metrics.checkpoint_failures._value.get()
            newest_before = service.store.paths()[0].name
            scored_before = t.get("records_scored")
            failing.set()
            ends = time.monotonic() + fail_s
            samples, past = 0, 0
            while time.monotonic() < ends:
                turn_for = time.monotonic() + 0.5
                run_until(service, lambda u=turn_for: time.monotonic() >= u, what="serving")
                durable = unpack_offsets(part_of(CheckpointStore(checkpoint_dir, keep=1).latest()[1], "offsets"))
                for tp in watcher.committed(partitions, timeout=10):
                    samples += 1
                    if tp.offset >= 0 and tp.offset > durable.get((tp.topic, tp.partition), 0):
                        past += 1
            failing.clear()
            failures = service.metrics.checkpoint_failures._value.get() - failures_before
            scored_while_failing = t.get("records_scored") - scored_before
            newest_during = service.store.paths()[0].name
            run_until(service, lambda: service.store.paths()[0].name != newest_during, timeout_s=30,
                      what="a checkpoint written again")
            settled = _settle(service, records, annotator, 180)
        finally:  # a scenario that fails still stops its service: its clients would keep the process alive
            feeder.close()
            watcher.close()
            _stop(service)
            annotator.close()
        notes = [] if newest_during == newest_before else ["a checkpoint was written while writes failed"]
        if past:
            notes.append(f"{past} samples found an offset committed past the durable checkpoint")
        return _outcome("unwritable", f"checkpoint writes fail for {fail_s:g} s (full or read-only directory)",
                        broker.bootstrap, topics, set(truth), checkpoint_dir, annotator,
                        f"{fail_s:g} s of failing checkpoint writes", settled, notes,
                        checkpoint_failures_counted=failures, scored_while_failing=scored_while_failing,
                        committed_offset_samples=samples, commits_past_durable_checkpoint=past,
                        recovered=True)


# -- 7. the newest checkpoint truncated or corrupted --------------------------------------------------------


def corrupt(*, records: int = 20_000, workdir: Path) -> Outcome:
    """The service (a process) SIGKILLed at a third of the stream and its newest checkpoint truncated
    to half; restarted, SIGKILLed again at two thirds and its newest checkpoint's payload flipped
    in the middle; restarted each time: it must fall back to the previous file."""
    with Broker() as broker:
        bootstrap = broker.bootstrap
        topics = unique_topics(bootstrap, partitions=2)
        data, truth = stream(records, seed=10, prefix="c")
        port = free_port()
        checkpoint_dir = workdir / "ckpt"
        env = _service_env(bootstrap, topics, checkpoint_dir, port)
        annotator = DedupAnnotator(bootstrap, topics, truth).start()
        log = workdir / "service.log"
        feeder = Feeder(bootstrap, topics["features"], data, lambda: _scored(port), chunk=max(100, records // 200),
                        pace_s=0.1, ahead=max(300, records // 40))
        damaged: list[str] = []
        proc = None
        try:
            for k, damage in enumerate((_truncate, _flip)):
                proc = start_service(env, log)
                target = (k + 1) * records // 3
                deadline = time.monotonic() + 180
                while _scored(port) < target:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"the service stopped or stalled: {log.read_text()[-2000:]}")
                    time.sleep(0.05)  # polling another process's metrics endpoint
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                newest = CheckpointStore(checkpoint_dir, keep=1).paths()[0]
                damage(newest)
                damaged.append(f"{newest.name} ({damage.__name__.strip('_')})")
            proc = start_service(env, log)
            deadline = time.monotonic() + 300
            settled = False
            while time.monotonic() < deadline and proc.poll() is None:
                if _settled(port, records, annotator):
                    settled = True
                    break
                time.sleep(0.2)  # polling another process's metrics endpoint
            proc.send_signal(signal.SIGTERM)
            final_exit = proc.wait(60)
        finally:
            feeder.close()
            if proc is not None and proc.poll() is None:
                proc.kill()
            annotator.close()
        skipped = sum("skipping checkpoint" in line for line in log.read_text().splitlines())
        return _outcome("corrupt", "the newest checkpoint truncated, then corrupted, each before a restart",
                        bootstrap, topics, set(truth), checkpoint_dir, annotator,
                        "2 SIGKILLs, 1 truncated + 1 corrupted newest checkpoint", settled,
                        [] if final_exit == 0 else [f"the last run exited {final_exit}"],
                        damaged=damaged, skipped_warnings_logged=skipped, final_exit=final_exit)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


# -- 8. skewed producer clocks ------------------------------------------------------------------------------

DAY = 86_400.0
YEARS_50 = 50 * 365.25 * DAY


def clock_skew(*, records: int = 6_000, workdir: Path) -> Outcome:
    """Records from producers whose clocks are a day behind and a day ahead, stamped in the Kafka
    timestamp (half) or in the record's own ``ts`` (half); then one record stamped 50 years ahead
    and one 50 years back (both ways). Labels answered as they are asked."""
    with Broker() as broker:
        topics = unique_topics(broker.bootstrap, partitions=2)
        data, truth = stream(records, seed=11, prefix="k")
        annotator = DedupAnnotator(broker.bootstrap, topics, truth).start()
        checkpoint_dir = workdir / "ckpt"
        service = _in_process(broker.bootstrap, topics, checkpoint_dir)
        service.start()
        t = service.totals
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        now = time.time()
        skews = [-DAY, DAY] * (len(data) // 2 - 2) + [YEARS_50, -YEARS_50, YEARS_50, -YEARS_50]
        for i, ((rid, x), skew) in enumerate(zip(data, skews, strict=False)):
            at = now + skew
            record: dict[str, Any] = {"id": rid, "features": x}
            if i % 2:  # the record's own time; the other half carry only the Kafka timestamp
                record["ts"] = round(at, 3)
            producer.produce(topics["features"], key=rid.encode(), value=orjson.dumps(record),
                             timestamp=max(0, int(at * 1000)))
            if i % 500 == 499:
                producer.flush(30)
                run_until(service, lambda i=i: t.get("records_scored") >= i - 1000, timeout_s=60, what="pace")
        producer.flush(30)
        settled = _settle(service, records, annotator, 180)
        dead = service.totals.get(f"dead_letters.{topics['features']}.bad_timestamp")
        expired = service.totals.get("labels.expired")
        _stop(service)
        annotator.close()
        return _outcome("clock_skew", "producer clocks a day off both ways; records stamped 50 years off",
                        broker.bootstrap, topics, set(truth), checkpoint_dir, annotator,
                        f"{len(data) - 4:,} records ±1 day, 4 records ±50 years", settled, [],
                        bad_timestamp_dead_letters=dead, labels_expired=expired)


# -- the property tests, with the long Hypothesis profile ---------------------------------------------------

PROPERTY_TESTS = ("tests/unit/consumer/test_decoder_properties.py", "tests/unit/consumer/model_topic/")


def properties(*, profile: str = "long", files: tuple[str, ...] = PROPERTY_TESTS, workdir: Path) -> Outcome:
    """The property tests through pytest in a subprocess with ``ACTIVESTREAM_HYPOTHESIS_PROFILE``
    (tests/conftest.py: "long" is 20,000 examples a test); pass/fail and the examples each ran."""
    env = {**os.environ, "ACTIVESTREAM_HYPOTHESIS_PROFILE": profile,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics",
            *files]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    out = done.stdout
    examples: dict[str, int] = {}
    current, phase = None, ""
    for line in out.splitlines():
        if line.strip().startswith("tests/") and "::" in line and line.rstrip().endswith(":"):
            current = line.strip().rstrip(":").split("::", 1)[1]
        elif m := re.search(r"during (\w+) phase", line):
            phase = m.group(1)
        elif current and phase == "generate" and (m := re.search(r"(\d+) passing, (\d+) failing", line)):
            examples[current] = examples.get(current, 0) + int(m.group(1)) + int(m.group(2))
    summary = next((line for line in reversed(out.splitlines()) if " passed" in line or " failed" in line), "")
    failed = int(m.group(1)) if (m := re.search(r"(\d+) failed", summary)) else 0
    passed = int(m.group(1)) if (m := re.search(r"(\d+) passed", summary)) else 0
    (workdir / "pytest.out").write_text(out + done.stderr)
    note = (f"pytest exit {done.returncode}: {summary.strip('= ')}; the four counts do not apply to property "
            "tests (n/a): a failure is a falsified property")
    return Outcome("properties", f"property tests, Hypothesis profile {profile!r}", "", sum(examples.values()), 0,
                   f"{len(examples)} property tests", None, None, None, None, note,
                   {"passed": passed, "failed": failed, "exit": done.returncode, "examples_per_test": examples,
                    "command": f"ACTIVESTREAM_HYPOTHESIS_PROFILE={profile} python " + " ".join(argv[1:])})


# -- the registry, the table, the files ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scenario:
    run: Callable[..., Outcome]
    full: dict[str, Any]
    quick: dict[str, Any]


SCENARIOS: dict[str, Scenario] = {
    "sigkill": Scenario(sigkill, {"records": 200_000, "kills": 50}, {"records": 20_000, "kills": 5}),
    "outage": Scenario(outage, {"records": 20_000, "down_s": 30.0}, {"records": 4_000, "down_s": 30.0}),
    "data_loss": Scenario(data_loss, {"records": 10_000}, {"records": 2_000}),
    "request_errors": Scenario(request_errors, {"records": 20_000, "rounds": 50}, {"records": 4_000, "rounds": 10}),
    "revocation": Scenario(revocation, {"records": 20_000, "joins": 10}, {"records": 4_000, "joins": 2}),
    "unwritable": Scenario(unwritable, {"records": 20_000, "fail_s": 10.0}, {"records": 4_000, "fail_s": 5.0}),
    "corrupt": Scenario(corrupt, {"records": 20_000}, {"records": 4_000}),
    "clock_skew": Scenario(clock_skew, {"records": 20_000}, {"records": 4_000}),
    # not run unless named (--properties or --only properties): the long profile takes its own time
    "properties": Scenario(properties, {"profile": "long"}, {"profile": "long", "files": PROPERTY_TESTS[:1]}),
}


def run_scenarios(names: list[str], *, quick: bool, workdir: Path, command: str,
                  sizes: dict[str, dict[str, Any]] | None = None) -> list[Outcome]:
    """Run the named scenarios at their full or quick sizes (or ``sizes[name]``, for a test)."""
    outcomes = []
    for name in names:
        scenario = SCENARIOS[name]
        kwargs = (sizes or {}).get(name) or (scenario.quick if quick else scenario.full)
        where = workdir / name
        where.mkdir(parents=True, exist_ok=True)
        print(f"== {name} {kwargs}", flush=True)
        started = time.perf_counter()
        try:
            outcome = scenario.run(workdir=where, **kwargs)
        except Exception as exc:  # a scenario that could not finish is reported, not counted as 0
            log = "".join(traceback.format_exception_only(exc)).strip()
            outcome = Outcome(name, scenario.run.__doc__.split(".")[0].strip() if scenario.run.__doc__ else name,
                              "", 0, 0, "see the note", None, None, None, None,
                              f"the scenario did not finish: {log[:600]}")
        outcome.seconds = round(time.perf_counter() - started, 1)
        outcome.size = "quick" if quick else "full"
        outcome.command = command
        outcome.made = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        outcome.details["settings"] = kwargs
        print(row(outcome), outcome.note, outcome.details, sep="\n", flush=True)
        outcomes.append(outcome)
    return outcomes


HEADER = ("| scenario | size | records | labels | injected | missing | changed | lost | twice | s |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def _n(count: int | None) -> str:
    return "n/a" if count is None else f"{count:,}"


def row(o: Outcome) -> str:
    if o.name == "properties":  # examples, not records; no labels
        return (f"| {o.name} | {o.size} | {o.records:,} examples | n/a | {o.injected} | n/a | n/a | n/a | n/a | "
                f"{o.seconds:.0f} |")
    return (f"| {o.name} | {o.size} | {o.records:,} | {o.labels:,} | {o.injected} | {_n(o.missing)} | "
            f"{_n(o.changed)} | {_n(o.lost)} | {_n(o.doubled)} | {o.seconds:.0f} |")


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return head.stdout.strip() or "unknown"


def write(outcomes: list[Outcome], results: Path = RESULTS) -> None:
    """Merge these outcomes into chaos.json (replacing the same scenarios' entries) and render chaos.md."""
    path = results / "chaos.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    # one entry per scenario and size: a quick run does not replace a full one's figures
    entries = {f"{v['name']}/{v['size']}": v for v in saved.get("scenarios", {}).values()}
    for o in outcomes:
        entries[f"{o.name}/{o.size}"] = {**asdict(o), "commit": commit()}
    order = [f"{name}/{size}" for name in SCENARIOS for size in ("full", "quick", "tiny")]
    ordered = {k: entries[k] for k in [*order, *entries] if k in entries}
    # the newest run's facts, as benchmarks.reproduce reads them; each scenario keeps its own
    provenance = ({"made": outcomes[-1].made, "commit": commit(), "command": outcomes[-1].command,
                   "note": "the latest run; each scenario's entry holds its own command and commit"}
                  if outcomes else saved.get("provenance", {}))
    payload = {"provenance": provenance, "scenarios": ordered}
    path.write_text(json.dumps(payload, indent=1, default=str) + "\n")
    (results / "chaos.md").write_text(render(ordered))


def render(entries: dict[str, dict]) -> str:
    outcomes = [Outcome(**{k: v for k, v in e.items() if k in Outcome.__slots__}) for e in entries.values()]
    sizes = {size: ", ".join(o.name for o in outcomes if o.size == size) for size in ("full", "quick")}
    lines = ["# Chaos: fault scenarios against the single-process service", "",
             "Each scenario injects its faults into `ACTIVESTREAM_ROLE=all` (the default) and counts, from the "
             "outputs read back from the broker and the newest checkpoint's counters: predictions **missing**, "
             "decisions **changed** (a record predicted twice with different decisions), labels **lost** "
             "(answered but not in the model) and labels applied **twice**. The target is 0 in each; `n/a` "
             "means the scenario could not count it (its note says why). The annotator answers each record "
             "once, however often it is asked. Regenerate with `python -m benchmarks.chaos --properties` (full "
             "sizes) or `--quick`; the command of each row is in its section.", "",
             f"Ran at full size: {sizes['full'] or 'none'}. Ran at quick size: {sizes['quick'] or 'none'}.", "",
             HEADER, *(row(o) for o in outcomes), ""]
    counted = [o for o in outcomes if o.name != "properties"]
    off = [f"{o.name} ({o.size})" for o in counted if not o.clean]
    lines += [f"Not at 0 in every count: {', '.join(off)}; its section says why and what 0 would take." if off
              else "Every count of every row is 0.", "", "## Each scenario", ""]
    for o, e in zip(outcomes, entries.values(), strict=True):
        lines += [f"### {o.name} ({o.size}): {o.title}", "",
                  f"Made {o.made} at commit `{e.get('commit', '?')}` by `{o.command}` ({o.seconds:.0f} s). "
                  f"Settings: {json.dumps(o.details.get('settings', {}))}. Injected: {o.injected}.", ""]
        if o.note:
            lines += [f"Note: {o.note}", ""]
        shown = {k: v for k, v in o.details.items() if k != "settings"}
        lines += ["Details: " + ", ".join(f"{k} = {json.dumps(v, default=str)}" for k, v in shown.items()), ""]
        if o.name in OBSERVED and o.size in ("full", "quick"):
            lines += [f"Also observed: {OBSERVED[o.name]}", ""]
    return "\n".join(lines)


# What other runs of a scenario measured (at this branch's commits, with the same script), when it
# differs from the run in the table: an intermittent fault is reported, not averaged away.
OBSERVED: dict[str, str] = {
    "data_loss": (
        "before the runs above, at the earlier commits, the scenario mostly stalled: in 5 of 7 runs the restarted "
        "process was assigned no partition of `features` for 180 s, and in others it scored about half of the "
        "new records, or none. Three causes, found in librdkafka's group and fetch debug lines. (1) The broker: the "
        "stopped process's consumers rejoined the new broker's groups, and one that left while its JoinGroup was "
        "held stayed the group's leader for good, so nobody else was ever assigned (a Tansu defect, reproduced "
        "with dynamic membership in 3 of 3 attempts of one run; static membership, as the shipped deployments "
        "run, replaces the old member when the process comes back). (2) The service: when several partitions "
        "of one consumer were found beyond their logs in the same round, each was assigned again in turn, and a "
        "partition could keep the position librdkafka still reported for it (the lost one), so it was never "
        "read again. (3) The service: a partition assigned again starts fetching at once, and what it fetched "
        "before its records were forwarded to the batch reader went to the consumer's own queue, which nothing "
        "reads (0 of 5,000 new records scored in one full run). A lost partition is now moved with a seek, "
        "which keeps its records going to the reader; one librdkafka will not seek is assigned again paused "
        "until forwarded, and keeps its start until it is read (`tests/unit/consumer/test_service.py`)."),
    "corrupt": (
        "a first run at quick size (4,000 records) measured 13 labels lost: 986 answered, 973 in the newest "
        "checkpoint's model, with the truncated and the flipped checkpoint each skipped (2 warnings logged). "
        "Three later runs (quick twice, full once) measured 0 in each count."),
    "outage": (
        "in one run at quick size the restart after the lost lease came while the brokers were still down "
        "and `Service.start` raised ConfigError (`ACTIVESTREAM_TOPICS__LEASE: cannot reach the brokers to check "
        "'trainer-lease'`), on which `consumer run` exits 2: an orchestrator restarts it in a loop until the "
        "brokers are back (this script retries every 2 s, as such a back-off would). Nothing was lost."),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=list(SCENARIOS), help="these scenarios")
    parser.add_argument("--quick", action="store_true", help="reduced sizes")
    parser.add_argument("--properties", action="store_true", help="also run the property tests (long profile)")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave the results files")
    args = parser.parse_args(argv)
    names = list(args.only or [n for n in SCENARIOS if n != "properties" or args.properties])
    if args.properties and "properties" in SCENARIOS and "properties" not in names:
        names.append("properties")
    command = "python -m benchmarks.chaos " + " ".join(sys.argv[1:] if argv is None else argv)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        outcomes = run_scenarios(names, quick=args.quick, workdir=Path(tmp), command=command.strip())
    print(HEADER)
    for o in outcomes:
        print(row(o))
    if not args.no_write:
        write(outcomes)
    return 0 if all(o.clean for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
