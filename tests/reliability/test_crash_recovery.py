"""Kill -9 the service at random moments while records and labels flow, restart it, and check:
every record is scored, no record gets two different decisions, and every label is applied to the
model exactly once (no loss, no double application)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import orjson

from consumer.checkpoint import CheckpointStore
from consumer.demo.broker import CLIENT_SETTINGS, free_port
from tests.kafka_helpers import Annotator, produce_features, read_all, stream, unique_topics

N = 3000
KILLS = 4


def start_service(env: dict, log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "consumer", "run"], env=env,
                                stdout=subprocess.DEVNULL, stderr=out)


def metric(port: int, name: str) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " ") or line.startswith(name + "{"):
                    return float(line.rsplit(" ", 1)[1])
    except OSError:
        return None
    return 0.0


class DedupAnnotator(Annotator):
    """Answers each id once, however many times it is requested."""

    def answer(self, timeout: float = 0.0) -> int:
        got = 0
        for m in self.consumer.consume(1000, timeout):
            if m.error() is not None or m.value() is None:
                continue
            rid = orjson.loads(m.value())["id"]
            if rid in self.answered:
                continue
            self.producer.produce(self.topics["labels"], key=rid.encode(),
                                  value=orjson.dumps({"id": rid, "label": self.truth[rid]}))
            self.answered.append(rid)
            got += 1
        self.producer.flush(10)
        return got


def test_kill_9_at_random_points_loses_nothing_and_applies_each_label_once(kafka_bootstrap, tmp_path):
    rng = random.Random(7)
    topics = unique_topics(kafka_bootstrap, partitions=2)
    records, truth = stream(N, seed=3)
    port = free_port()
    checkpoint_dir = Path(tmp_path) / "ckpt"
    env = {**os.environ,
           "ACTIVESTREAM_BOOTSTRAP_SERVERS": kafka_bootstrap, "ACTIVESTREAM_CHECKPOINT_DIR": str(checkpoint_dir),
           "ACTIVESTREAM_METRICS_PORT": str(port), "ACTIVESTREAM_GROUP_ID": f"crash-{topics['features']}",
           "ACTIVESTREAM_N_FEATURES": "8", "ACTIVESTREAM_BATCH_SIZE": "50",
           "ACTIVESTREAM_CHECKPOINT__EVERY_S": "0.3", "ACTIVESTREAM_CHECKPOINT__EVERY_LABELS": "25",
           "ACTIVESTREAM_LEARNER": "paa-1", "ACTIVESTREAM_LEARNER_PARAMS": '{"delta": 0.3}',
           "ACTIVESTREAM_TOPICS": orjson.dumps(topics).decode(),
           "ACTIVESTREAM_KAFKA_CONSUMER": orjson.dumps(CLIENT_SETTINGS).decode()}
    annotator = DedupAnnotator(kafka_bootstrap, topics, truth).start()
    log = Path(tmp_path) / "service.log"

    stop_feeding = threading.Event()

    def feed() -> None:
        """Records keep arriving through the crashes: at most 300 ahead of what the service has
        scored, so the source waits while the service is down, however slow its restarts are."""
        for start in range(0, N, 100):
            while (metric(port, "activestream_records_scored_total") or 0) < start - 300:
                if stop_feeding.is_set():
                    return
                time.sleep(0.05)  # polling another process's metrics endpoint
            produce_features(kafka_bootstrap, topics["features"], records[start : start + 100])
            time.sleep(0.6)  # the pace of the source, not a wait for a condition

    feeder = threading.Thread(target=feed)
    feeder.start()
    kills = []
    try:
        for _ in range(KILLS):
            proc = start_service(env, log)
            before = kills[-1] if kills else 0.0
            deadline = time.monotonic() + 60
            # up and scoring again (past where the last kill hit it, or everything once all is fed)
            while (metric(port, "activestream_records_scored_total") or 0) <= min(before, N - 1):
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.05)  # polling another process's metrics endpoint
            time.sleep(rng.uniform(0.0, 1.5))  # a random moment to crash at
            kills.append(metric(port, "activestream_records_scored_total"))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    except BaseException:
        stop_feeding.set()
        raise

    proc = start_service(env, log)  # the last records may still be on their way: the feeder waits for it
    try:
        deadline = time.monotonic() + 120
        while True:
            scored = metric(port, "activestream_records_scored_total") or 0
            requested = metric(port, "activestream_label_requests_total") or 0
            applied = metric(port, 'activestream_labels_total{outcome="applied"}') or 0
            # every record scored, every request answered (by the annotator's own thread), every answer learnt
            if scored >= N and requested == len(annotator.answered) == applied:
                break
            assert time.monotonic() < deadline, (
                f"scored {scored}/{N}, requested {requested}, answered {len(annotator.answered)}, applied {applied}")
            time.sleep(0.2)  # polling another process's metrics endpoint
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        stop_feeding.set()
        feeder.join()
        if proc.poll() is None:
            proc.kill()
        annotator.close()

    predictions = [orjson.loads(m.value()) for m in read_all(kafka_bootstrap, topics["predictions"])]
    by_id: dict[str, list[dict]] = {}
    for p in predictions:
        by_id.setdefault(p["id"], []).append(p)
    assert set(by_id) == set(truth), "every record is scored"
    for rid, seen in by_id.items():
        decisions = {(p["label"], p["probability"], p["label_requested"]) for p in seen}
        assert len(decisions) == 1, f"{rid} got different decisions: {decisions}"
    requested = {rid for rid, seen in by_id.items() if seen[0]["label_requested"]}
    assert requested == set(annotator.answered)

    _, state = CheckpointStore(checkpoint_dir, keep=1).latest()
    totals = orjson.loads(str(state["totals.counts"]))
    labels_in_model = int(state["learner.counters"][1])
    assert labels_in_model == len(annotator.answered), "each label applied to the model exactly once"
    assert totals.get("labels.applied") == len(annotator.answered)
    assert totals.get("labels.unknown", 0) == 0 and totals.get("labels.duplicate", 0) == 0
    assert all(kills) and kills == sorted(kills), f"each kill hit a service that was scoring: {kills}"
    assert sum(k < N for k in kills) >= 2, f"at least two kills while records were still arriving: {kills}"
    duplicates = len(predictions) - len(by_id)
    print(f"{KILLS} kills (records scored at each: {kills}); {len(predictions)} predictions for {N} records "
          f"({duplicates} re-emitted); {labels_in_model} labels applied once each")
