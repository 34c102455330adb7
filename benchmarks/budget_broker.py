"""The label budget against the embedded broker: a 5 % target held at full speed, across a SIGKILL.

    python -m benchmarks.budget_broker              # a8a, all 32,561 rows once (its train and test parts)
    python -m benchmarks.budget_broker --quick      # the first 20,000 rows, written to the temporary directory

The embedded broker (``consumer.demo.broker.Broker``) gets a8a's rows as JSON feature records
(``{indices, values}``, 123 dimensions; the staged ``a8a.xz`` holds LIBSVM's train and test parts,
22,696 + 9,865 rows, in one file) on a one-partition features topic, produced as fast as the
producer goes, before the service starts: a backlog. The service is ``python -m consumer run``
(``ACTIVESTREAM_ROLE=all``, the default learner, ``ACTIVESTREAM_QUERY_RATE_TARGET=0.05``); an
annotator answers each label request with the ground truth as soon as it reads it (each id once).

Once the service has scored at least half the records, and its /metrics show more than its newest
checkpoint (made mid-stream) covers, it is stopped (SIGSTOP) and, if the decisions in the predictions
topic outnumber what that checkpoint covers (else a checkpoint landed in between: it goes on, and is
stopped again at the next such moment), killed with SIGKILL:
a real process, so what it had not made durable is lost as in a crash (a service closed in-process
would still flush its producer). It is started again on the same checkpoint directory and drains the
rest. The decisions are read back from the predictions topic, in the order of the features topic:

- the realised query rate overall, of the records decided before the kill and of those decided
  after the restart (a record's first prediction, by its Kafka timestamp against the moment of the
  kill; a decision made after the checkpoint and kept on recovery counts as before);
- the largest query ratio over consecutive windows of 1,000 records after the first
  (``learners.budget.max_window_query_ratio``), the window across the restart included;
- records/s of each process (its predictions over the span of their timestamps) and of the whole
  run, the restart included.

Writes ``benchmarks/results/budget_broker.md`` and ``.json`` with the commit, the command and the
settings (``--quick``: into the temporary directory, so the committed files stay as they are).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from benchmarks.reproduce import commit
from benchmarks.scale_out import dataset, make_records, preload
from consumer.checkpoint import CheckpointStore
from consumer.demo.broker import CLIENT_SETTINGS, Broker, free_port
from learners.budget import max_window_query_ratio
from learners.defaults import default_learner
from tests.kafka_helpers import read_all, unique_topics
from tests.reliability.test_crash_recovery import DedupAnnotator, metric, start_service

__all__ = ["main", "measure", "run"]

RESULTS = Path(__file__).parent / "results"
TARGET = 0.05
WINDOW = 1_000  # records per window, as the budget's goal counts them
# a checkpoint at least this often: at full speed the service drains the whole backlog in well under
# a second, and the kill must find a checkpoint made mid-stream to restart from (with the default,
# 30 s, the restart would start from nothing)
CHECKPOINT_EVERY_S = 0.05
# the embedded broker's client settings, with a longer session: on a busy 2-core machine the broker
# can leave a heartbeat unanswered for over 2 s, and a lost trainer lease stops the service (the
# restart waits about this long for the killed process's session to end)
CLIENTS = {**CLIENT_SETTINGS, "session.timeout.ms": "4000", "heartbeat.interval.ms": "400"}
POLL_S = 0.002  # between two reads of the service's /metrics while waiting for the moment to kill


def service_env(bootstrap: str, topics: dict[str, str], checkpoint_dir: Path, port: int, n_features: int,
                target: float) -> dict[str, str]:
    """``consumer run``'s settings: the defaults, but for the budget, the checkpoint interval and the
    embedded broker's client settings."""
    return {**os.environ, "ACTIVESTREAM_ROLE": "all", "ACTIVESTREAM_BOOTSTRAP_SERVERS": bootstrap,
            "ACTIVESTREAM_CHECKPOINT_DIR": str(checkpoint_dir), "ACTIVESTREAM_METRICS_PORT": str(port),
            "ACTIVESTREAM_GROUP_ID": f"budget-{uuid.uuid4().hex[:8]}", "ACTIVESTREAM_N_FEATURES": str(n_features),
            "ACTIVESTREAM_CLASSES": "[-1, 1]", "ACTIVESTREAM_QUERY_RATE_TARGET": str(target),
            "ACTIVESTREAM_CHECKPOINT__EVERY_S": str(CHECKPOINT_EVERY_S),
            "ACTIVESTREAM_TOPICS": orjson.dumps(topics).decode(),
            "ACTIVESTREAM_KAFKA_CONSUMER": orjson.dumps(CLIENTS).decode(),
            "ACTIVESTREAM_LOG_LEVEL": "WARNING"}


def _wait(condition: Any, proc: subprocess.Popen, timeout_s: float, what: str, log: Path) -> None:
    """Until ``condition()`` holds; fails if the service exits first or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None:
            raise RuntimeError(f"the service exited ({proc.returncode}) before {what}: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:.0f} s ({log.read_text()[-2000:]})")
        time.sleep(POLL_S)  # polling another process's metrics endpoint


def measure(ids: list[str], predictions: list[tuple[str, bool, int]], killed_at_ms: int) -> dict[str, Any]:
    """The figures from the predictions read back: (id, label requested, Kafka timestamp in ms) each,
    ``ids`` in the order of the features topic."""
    first: dict[str, tuple[int, bool]] = {}
    decisions: dict[str, set[bool]] = {}
    for rid, requested, ts in predictions:
        decisions.setdefault(rid, set()).add(requested)
        if rid not in first or ts < first[rid][0]:
            first[rid] = (ts, requested)
    missing = [rid for rid in ids if rid not in first]
    queried = np.array([first[rid][1] for rid in ids if rid in first], dtype=bool)
    stamps = np.array([first[rid][0] for rid in ids if rid in first], dtype=np.int64)
    before = stamps <= killed_at_ms
    after = ~before

    def speed(mask: np.ndarray) -> float:
        span = (stamps[mask].max() - stamps[mask].min()) / 1000 if mask.sum() > 1 else 0.0
        return float(mask.sum() / span) if span > 0 else float("nan")

    return {
        "records": len(ids), "predicted": int(queried.size), "missing": len(missing),
        "decisions_changed": sum(len(d) > 1 for d in decisions.values()),
        "requests": int(queried.sum()), "rate": float(queried.mean()),
        "records_before": int(before.sum()), "rate_before": float(queried[before].mean()),
        "records_after": int(after.sum()), "rate_after": float(queried[after].mean()),
        "max_window": max_window_query_ratio(queried, WINDOW),
        "windows": [round(float(w), 4) for w in
                    queried[: queried.size // WINDOW * WINDOW].reshape(-1, WINDOW).mean(axis=1)],
        "records_per_s_before": speed(before), "records_per_s_after": speed(after),
        "records_per_s_overall": float(queried.size / ((stamps.max() - stamps.min()) / 1000)),
        "restart_s": float((stamps[after].min() - killed_at_ms) / 1000) if after.any() else float("nan"),
    }


def run(records: int | None = None, *, target: float = TARGET, kill_at: float = 0.5, workdir: Path,
        datasets: Path | None = None) -> dict[str, Any]:
    """One run on the first ``records`` rows of a8a (all of them by default; from ``datasets``, else
    the shared datasets, else a synthetic stream of its shape); the figures and the facts."""
    data = dataset(datasets)
    n = min(records or data.n, data.n)
    values, truth = make_records(data, n)
    ids = [orjson.loads(v)["id"] for v in values]
    port = free_port()
    checkpoint_dir = workdir / "ckpt"
    log = workdir / "service.log"
    with Broker() as broker:
        topics = unique_topics(broker.bootstrap, partitions=1)
        started = time.perf_counter()
        preload(broker.bootstrap, topics["features"], values)
        produced_s = time.perf_counter() - started
        annotator = DedupAnnotator(broker.bootstrap, topics, truth).start()
        env = service_env(broker.bootstrap, topics, checkpoint_dir, port, data.rows.n_features, target)
        proc = start_service(env, log)
        try:
            def scored() -> float:
                return metric(port, "activestream_records_scored_total") or 0.0

            def past_checkpoint() -> bool:
                """Whether the stopped service has a checkpoint made mid-stream and has produced
                decisions it does not cover: those, read back and kept by the restart, are what the
                kill tests."""
                decided = len(read_all(broker.bootstrap, topics["predictions"], timeout_s=60))
                return 0 < (_last_scored(checkpoint_dir) or 0) < decided

            # the kill must come past a checkpoint made mid-stream. With one every CHECKPOINT_EVERY_S, a
            # read of /metrics and the kill race the next one: the service is stopped (SIGSTOP: nothing
            # it holds is written, no checkpoint made) as soon as /metrics shows more scored than the
            # newest checkpoint covers, the decisions in the topic are compared with that checkpoint,
            # and the service is let go and stopped again if a checkpoint landed in between
            seen = [0.0]  # records scored at the last read of /metrics

            def past_metrics() -> bool:
                seen[0] = done = scored()
                if done >= n:
                    raise RuntimeError("the service drained the stream before a kill past a checkpoint")
                return done >= kill_at * n and 0 < (_last_scored(checkpoint_dir) or 0) < done

            while True:
                _wait(past_metrics, proc, 300, "half scored, past a checkpoint made mid-stream", log)
                scored_at_kill = seen[0]
                _stop(proc, log)
                killed_at = time.time()
                if past_checkpoint():
                    break
                proc.send_signal(signal.SIGCONT)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            resumed_from = _last_scored(checkpoint_dir)
            proc = start_service(env, log)
            _wait(lambda: scored() >= n and (metric(port, "activestream_label_requests_total") or 0)
                  == len(annotator.answered) == (metric(port, 'activestream_labels_total{outcome="applied"}') or 0),
                  proc, 300, "every record scored and every label learnt", log)
            proc.send_signal(signal.SIGTERM)
            exit_code = proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
            annotator.close()
        predictions = [(p["id"], bool(p["label_requested"]), m.timestamp()[1])
                       for m in read_all(broker.bootstrap, topics["predictions"], timeout_s=120)
                       for p in [orjson.loads(m.value())]]
        requested = {orjson.loads(m.value())["id"] for m in read_all(broker.bootstrap, topics["label_requests"],
                                                                      timeout_s=120)}
    figures = measure(ids, predictions, int(killed_at * 1000))
    asked = {rid for rid, req, _ in predictions if req}
    return {**figures, "target": target, "learner": default_learner(2, data.rows.n_features),
            "source": "a8a" if data.name != "synthetic" else "a synthetic stream",
            "rows": data.n, "produced_per_s": n / produced_s,
            "checkpoint_records_at_kill": resumed_from, "scored_seen_at_kill": scored_at_kill,
            "requests_topic_agrees": requested == asked, "labels_answered": len(annotator.answered),
            "exit_code": exit_code}


def _stop(proc: subprocess.Popen, log: Path) -> None:
    """SIGSTOP, and wait until the kernel shows the process stopped (every thread of it)."""
    proc.send_signal(signal.SIGSTOP)
    stat = Path(f"/proc/{proc.pid}/stat")
    _wait(lambda: stat.read_text().rpartition(")")[2].split()[0] == "T", proc, 30, "the service stopped", log)


def _last_scored(checkpoint_dir: Path) -> int | None:
    """Records scored according to the newest checkpoint: where the restart resumes."""
    latest = CheckpointStore(checkpoint_dir, keep=1).latest()
    if latest is None:
        return None
    return int(orjson.loads(str(latest[1]["totals.counts"])).get("records_scored", 0))


def render(r: dict[str, Any]) -> str:
    s = r["settings"]
    return "\n".join([
        "# The label budget against the embedded broker: a 5 % target across a SIGKILL", "",
        f"Made {r['made']} at commit `{r['commit']}` by `{r['command']}` ({r['seconds']:.0f} s). "
        f"Settings: {json.dumps(s)}.", "",
        f"{r['source']} ({s['records']:,} of its {r['rows']:,} rows: a8a's train and test parts in one file, once, "
        f"in file order) as a backlog of JSON feature records on a one-partition topic of the embedded broker "
        f"(produced at {r['produced_per_s']:,.0f} records/s before the service started). The service is "
        f"`python -m consumer run` with the {s['learner']} learner, `ACTIVESTREAM_QUERY_RATE_TARGET={s['target']}` "
        f"and a checkpoint at least every {s['checkpoint_every_s']} s; an annotator answers each label request with "
        "the ground truth as soon as it reads it. Once at least half the records were scored and its /metrics "
        f"({r['scored_seen_at_kill']:,.0f} scored) showed more than its newest checkpoint covered, the service was "
        f"stopped (SIGSTOP); that checkpoint covered {r['checkpoint_records_at_kill']:,} records, fewer than the "
        "decisions in the predictions topic, so it was killed with SIGKILL and started again on its checkpoint "
        "directory (had a checkpoint landed in between and covered every decision, it would have been let go "
        "and stopped again at the next such moment). "
        "Figures from the predictions read back, in the order of the features topic; a record is *before* the "
        "kill if its first prediction was stamped before it.", "",
        "| | records | label requests / records | target ± 10 % |",
        "|---|---|---|---|",
        f"| overall | {r['predicted']:,} | {r['rate']:.2%} | {_within(r['rate'], r['target'])} |",
        f"| decided before the kill | {r['records_before']:,} | {r['rate_before']:.2%} | "
        f"{_within(r['rate_before'], r['target'])} |",
        f"| decided after the restart | {r['records_after']:,} | {r['rate_after']:.2%} | "
        f"{_within(r['rate_after'], r['target'])} |", "",
        f"Largest query ratio over consecutive windows of {WINDOW:,} records after the first (the window across "
        f"the restart included): {r['max_window']:.2%} ({r['max_window'] / r['target']:.2f} × the target).", "",
        f"Records/s: {r['records_per_s_before']:,.0f} before the kill, {r['records_per_s_after']:,.0f} after the "
        f"restart (each process, from its first prediction to its last), {r['records_per_s_overall']:,.0f} over the "
        f"whole run with the restart ({r['restart_s']:.1f} s from the kill to the first new prediction). The "
        "machine (2 cores) is shared with the broker, the annotator and other work.", "",
        f"Checks: records without a prediction {r['missing']}, records whose decision changed across the restart "
        f"{r['decisions_changed']}, the label-requests topic holds exactly the records whose prediction asked for "
        f"a label: {'yes' if r['requests_topic_agrees'] else 'no'}; labels answered {r['labels_answered']:,}; "
        f"the restarted service stopped on SIGTERM with exit code {r['exit_code']}.", "",
    ])


def _within(rate: float, target: float) -> str:
    return "yes" if abs(rate - target) <= 0.1 * target else "no"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.budget_broker", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, help="the first N rows of a8a (default: all)")
    parser.add_argument("--quick", action="store_true", help="20,000 rows, written to the temporary directory")
    parser.add_argument("--out", type=Path, help="directory of budget_broker.md and .json")
    args = parser.parse_args(argv)
    records = 20_000 if args.quick and args.records is None else args.records
    out = args.out or (Path(tempfile.gettempdir()) if args.quick else RESULTS)
    command = ("python -m benchmarks.budget_broker " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="budget-broker-") as tmp:
        result = run(records, workdir=Path(tmp))
    learner = result.pop("learner")  # said once, in the settings
    result.update({"made": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit(),
                   "command": command, "seconds": time.perf_counter() - started,
                   "settings": {"records": result["predicted"] + result["missing"], "target": TARGET,
                                "kill_at": 0.5, "checkpoint_every_s": CHECKPOINT_EVERY_S, "partitions": 1,
                                "learner": f"default ({learner})", "client_settings": CLIENTS}})
    (out / "budget_broker.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "budget_broker.md").write_text(render(result))
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
