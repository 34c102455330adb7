"""The service against a real broker over TCP: the full loop, restarts, bad input, TTL, duplicates,
SIGTERM, and labels overtaking a features backlog."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid

import numpy as np
import orjson
from confluent_kafka import Producer
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from consumer.checkpoint import read_checkpoint
from consumer.clock import ManualClock
from consumer.demo.broker import create_topics
from consumer.process import Process
from consumer.records import REASONS
from consumer.roles import service_for
from tests.bad_records import BAD_LABELS, bad_features
from tests.kafka_helpers import (
    Annotator,
    produce_features,
    read_all,
    run_until,
    settings_for,
    stream,
    unique_topics,
)


def test_full_loop_scores_requests_labels_and_learns(kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap, partitions=2)
    records, truth = stream(3000)
    service = service_for(settings_for(kafka_bootstrap, topics, tmp_path, batch_size=200), serve_http=False)
    annotator = Annotator(kafka_bootstrap, topics, truth).start()
    service.start()
    totals = service.totals
    try:
        for start in range(0, 3000, 300):  # records arrive over time; labels come back meanwhile
            produce_features(kafka_bootstrap, topics["features"], records[start : start + 300])
            run_until(service, lambda n=start + 300: totals.get("records_scored") >= n, what="chunk scored")
            run_until(service, lambda: totals.get("labels.applied") >= 0.8 * totals.get("label_requests"),
                      what="most labels back")
        run_until(service, lambda: totals.get("labels.applied") == totals.get("label_requests"),
                  what="every label back")
    finally:
        service.request_stop()
        service.shutdown()
        annotator.close()
    predictions = [orjson.loads(m.value()) for m in read_all(kafka_bootstrap, topics["predictions"], expect=3000)]
    assert sorted(p["id"] for p in predictions) == sorted(truth)
    requested = [p["id"] for p in predictions if p["label_requested"]]
    assert sorted(requested) == sorted(annotator.answered)
    assert 0.05 < len(requested) / 3000 < 0.9
    assert service.learner.labels_ == len(requested)
    # the model learnt: late records are predicted better than early ones
    by_id = {p["id"]: p["label"] for p in predictions}
    late = np.mean([by_id[f"r{i}"] == truth[f"r{i}"] for i in range(2000, 3000)])
    early = np.mean([by_id[f"r{i}"] == truth[f"r{i}"] for i in range(0, 200)])
    assert late > 0.85 and late > early


def test_restart_resumes_at_checkpoint_offsets_with_the_same_model(kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(1000)
    produce_features(kafka_bootstrap, topics["features"], records[:600])
    settings = settings_for(kafka_bootstrap, topics, tmp_path)
    first = service_for(settings, serve_http=False)
    annotator = Annotator(kafka_bootstrap, topics, truth)
    first.start()
    run_until(first, lambda: first.totals.get("records_scored") >= 600, what="first 600 scored")
    annotator.answer(timeout=1.0)
    run_until(first, lambda: first.totals.get("labels.applied") >= len(annotator.answered), what="labels applied")
    first.request_stop()
    first.shutdown()
    weights = first.learner.rule.w_.copy()

    second = service_for(settings, serve_http=False)
    second.start()
    assert second.restored_from is not None
    np.testing.assert_array_equal(second.learner.rule.w_, weights)
    assert second.offsets.next[(topics["features"], 0)] == 600
    produce_features(kafka_bootstrap, topics["features"], records[600:])
    run_until(second, lambda: second.totals.get("records_scored") >= 1000, what="the remaining 400")
    second.request_stop()
    second.shutdown()
    annotator.close()
    ids = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["predictions"], expect=1000)]
    assert sorted(ids) == sorted(truth)  # each record scored once across the restart


def interleave(p: Producer, topic: str, good: list[tuple[bytes, bytes]], bad: dict[str, bytes | None]) -> None:
    """good[0], bad[0], good[1], bad[1], ...: bad record k lands at offset 2k + 1 (keyed by its reason)."""
    bad_items = list(bad.items())
    for k, (key, value) in enumerate(good):
        p.produce(topic, key=key, value=value)
        if k < len(bad_items):
            p.produce(topic, key=bad_items[k][0].encode(), value=bad_items[k][1])
    assert p.flush(10) == 0


def assert_dead_letters(dead: list, topic: str, bad: dict[str, bytes | None]) -> None:
    """Each bad record in the dead-letter topic as it was sent, with its reason and its source."""
    assert [m.key().decode() for m in dead] == list(bad)
    for k, msg in enumerate(dead):
        headers = dict(msg.headers())
        assert msg.value() == bad[msg.key().decode()]
        assert headers["activestream.dlq.reason"].decode() == msg.key().decode()
        assert headers["activestream.dlq.topic"].decode() == topic
        assert headers["activestream.dlq.partition"] == b"0"
        assert headers["activestream.dlq.offset"] == b"%d" % (2 * k + 1)
        assert headers["activestream.dlq.detail"]


def test_bad_records_of_every_kind_reach_the_dead_letter_topic_while_good_ones_flow(kafka_bootstrap, tmp_path):
    assert set(bad_features(8)) | set(BAD_LABELS) == set(REASONS)  # every reason the service can give
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(60)
    p = Producer({"bootstrap.servers": kafka_bootstrap})
    interleave(p, topics["features"], [(rid.encode(), orjson.dumps({"id": rid, "features": x})) for rid, x in records],
               bad_features(8))
    # δ large: most records ask for a label, so there are good labels to interleave with every bad one
    service = service_for(settings_for(kafka_bootstrap, topics, tmp_path, learner_params={"delta": 10.0}),
                      serve_http=False)
    service.start()
    n_features = len(records) + len(bad_features(8))
    run_until(service, lambda: service.offsets.next.get((topics["features"], 0), 0) >= n_features,
              what="features consumed")
    requests = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["label_requests"])]
    assert len(requests) >= len(BAD_LABELS)
    good_labels = [(rid.encode(), orjson.dumps({"id": rid, "label": truth[rid]})) for rid in requests]
    interleave(p, topics["labels"], good_labels, BAD_LABELS)
    n_labels = len(requests) + len(BAD_LABELS)
    run_until(service, lambda: service.offsets.next.get((topics["labels"], 0), 0) >= n_labels, what="labels consumed")
    applied = service.totals.get("labels.applied")
    service.request_stop()
    service.shutdown()

    dead = read_all(kafka_bootstrap, topics["dead_letters"], expect=len(bad_features(8)) + len(BAD_LABELS))
    assert_dead_letters([m for m in dead if dict(m.headers())["activestream.dlq.topic"] == topics["features"].encode()],
                        topics["features"], bad_features(8))
    assert_dead_letters([m for m in dead if dict(m.headers())["activestream.dlq.topic"] == topics["labels"].encode()],
                        topics["labels"], BAD_LABELS)
    predictions = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["predictions"], expect=60)]
    assert predictions == [rid for rid, _ in records]  # the good records flowed, in order
    assert applied == len(requests)  # and every good label was learnt, none lost among the bad


def test_label_ttl_expiry_and_duplicate_labels_are_counted_not_applied(kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(300)
    produce_features(kafka_bootstrap, topics["features"], records)
    clock = ManualClock()
    settings = settings_for(kafka_bootstrap, topics, tmp_path, labels={"ttl_s": 60})
    service = service_for(settings, clock=clock, serve_http=False)
    service.start()
    run_until(service, lambda: service.totals.get("records_scored") >= 300, what="scored")
    requests = [orjson.loads(m.value()) for m in read_all(kafka_bootstrap, topics["label_requests"])]
    answered, late = requests[: len(requests) // 2], requests[len(requests) // 2 :]
    p = Producer({"bootstrap.servers": kafka_bootstrap})
    for r in answered:
        for _ in range(2):  # every label twice
            p.produce(topics["labels"], key=r["id"].encode(),
                      value=orjson.dumps({"id": r["id"], "label": truth[r["id"]]}))
    p.flush(10)
    run_until(service, lambda: service.offsets.next.get((topics["labels"], 0), 0) >= 2 * len(answered),
              what="labels consumed")
    assert service.totals.get("labels.applied") == len(answered)
    assert service.totals.get("labels.duplicate") == len(answered)
    clock.advance(61)
    service.run_once()
    assert service.totals.get("label_requests_expired") == len(late)
    for r in late:
        p.produce(topics["labels"], key=r["id"].encode(), value=orjson.dumps({"id": r["id"], "label": 1}))
    p.flush(10)
    run_until(service, lambda: service.totals.get("labels.expired") >= len(late), what="late labels")
    assert service.learner.labels_ == len(answered)
    service.request_stop()
    service.shutdown()


def test_a_label_does_not_wait_behind_a_features_backlog(kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(40_000)
    produce_features(kafka_bootstrap, topics["features"], records[:200])
    service = service_for(settings_for(kafka_bootstrap, topics, tmp_path, batch_size=500), serve_http=False)
    service.start()
    run_until(service, lambda: service.totals.get("records_scored") >= 200, what="first records")
    rid = orjson.loads(read_all(kafka_bootstrap, topics["label_requests"])[0].value())["id"]
    produce_features(kafka_bootstrap, topics["features"], records[200:])  # a 39,800-record backlog
    labeller = Producer({"bootstrap.servers": kafka_bootstrap})
    labeller.produce(topics["labels"], key=rid.encode(), value=orjson.dumps({"id": rid, "label": truth[rid]}))
    labeller.flush(10)
    sent = time.monotonic()
    turns = run_until(service, lambda: service.totals.get("labels.applied") >= 1, what="the label applied")
    waited = time.monotonic() - sent
    scored = service.totals.get("records_scored")
    service.request_stop()
    service.shutdown()
    # the label was applied while most of the backlog was still unread (behind it, it would wait for all
    # 39,800; locally it waits for 500 - 1,000, and a fresh-clone CI run on a slow machine saw 14,500)
    backlog = len(records) - 200
    assert scored - 200 < backlog / 2, f"the label waited for {scored - 200:.0f} of {backlog} backlog records"
    assert service.learner.labels_ == 1
    print(f"label applied after {waited * 1000:.0f} ms, {turns} loop turns, {scored - 200:.0f} backlog records")


def test_sigusr1_dumps_the_stacks_and_sigterm_writes_a_final_checkpoint_and_exits_zero(kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, _ = stream(500)
    produce_features(kafka_bootstrap, topics["features"], records)
    settings = settings_for(kafka_bootstrap, topics, tmp_path / "ckpt", checkpoint={"every_s": 3600})
    env = {**os.environ, "ACTIVESTREAM_BOOTSTRAP_SERVERS": kafka_bootstrap,
           "ACTIVESTREAM_CHECKPOINT_DIR": str(settings.checkpoint_dir), "ACTIVESTREAM_METRICS_PORT": "0",
           "ACTIVESTREAM_GROUP_ID": settings.group_id, "ACTIVESTREAM_N_FEATURES": "8",
           "ACTIVESTREAM_CHECKPOINT__EVERY_S": "3600",
           "ACTIVESTREAM_TOPICS": orjson.dumps(topics).decode(),
           "ACTIVESTREAM_KAFKA_CONSUMER": orjson.dumps(settings.kafka_consumer).decode()}
    proc = subprocess.Popen([sys.executable, "-m", "consumer", "run"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        read_all(kafka_bootstrap, topics["predictions"], expect=500, timeout_s=60)
        proc.send_signal(signal.SIGUSR1)  # the stacks, and the process runs on
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    checkpoints = sorted(settings.checkpoint_dir.glob("checkpoint-*.ckpt"))
    assert len(checkpoints) == 1  # written at shutdown, not by the (hour-long) timer
    state = read_checkpoint(checkpoints[0])
    assert state["offsets.next"].tolist() == [500]
    err = proc.stderr.read()
    assert "stopping: final checkpoint" in err
    assert "most recent call first" in err and "process.py" in err  # the loop's stack


def test_metrics_and_probes_are_served_over_http(kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, _ = stream(100)
    produce_features(kafka_bootstrap, topics["features"], records)
    service = service_for(settings_for(kafka_bootstrap, topics, tmp_path, metrics_port=0))
    service.start()
    base = f"http://127.0.0.1:{service.http.port}"
    try:
        lag = {"topic": topics["features"], "partition": "0"}
        run_until(service, lambda: service.totals.get("records_scored") >= 100 and
                  service.metrics.registry.get_sample_value("activestream_consumer_lag_records", lag) == 0.0,
                  what="scored, lag observed")
        with urllib.request.urlopen(base + "/readyz", timeout=5) as r:
            assert r.status == 200
        with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
            text = r.read().decode()
        assert "activestream_records_scored_total 100.0" in text
        assert f'activestream_consumer_lag_records{{partition="0",topic="{topics["features"]}"}} 0.0' in text
        assert f'activestream_consumer_offset{{partition="0",topic="{topics["features"]}"}} 100.0' in text
        # what Prometheus asks for: OpenMetrics, compressed
        asked = urllib.request.Request(base + "/metrics", headers={
            "Accept": "application/openmetrics-text; version=1.0.0", "Accept-Encoding": "gzip"})
        with urllib.request.urlopen(asked, timeout=5) as r:
            assert r.headers["Content-Encoding"] == "gzip"
            assert r.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
            families = {f.name: f for f in text_string_to_metric_families(gzip.decompress(r.read()).decode())}
        assert families["activestream_records_scored"].samples[0].value == 100.0
        paths = {(s.labels["direction"], s.labels["path"]): s.value for s in families["activestream_io_path"].samples}
        assert paths == {("read", "batch-reader"): 1.0, ("read", "consume"): 0.0,
                         ("produce", "batch-producer"): 1.0, ("produce", "produce"): 0.0}
    finally:
        service.request_stop()
        service.shutdown()


def two_replicas(bootstrap: str, tmp_path, n: int) -> tuple[dict, dict, Process, Process]:
    """n records on a two-partition features topic; a scorer that has scored 500 of them, and a
    second scorer of the same group that has joined: a partition each. (Two processes in role
    ``all`` never share a group's partitions: the second waits on the trainer lease.)"""
    topics = unique_topics(bootstrap, partitions=2)
    topics["model"] = f"model-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [topics["model"]], 1)
    records, truth = stream(n)
    produce_features(bootstrap, topics["features"], records)
    group = f"g-{uuid.uuid4().hex[:8]}"
    first, second = (service_for(settings_for(bootstrap, topics, tmp_path / name, batch_size=100, group_id=group,
                                              role="scorer"), serve_http=False) for name in ("a", "b"))
    first.start()
    assert first.io.reader is not None  # the features are read as columns, the path under test
    paths = {(d, p): first.metrics.registry.get_sample_value("activestream_io_path", {"direction": d, "path": p})
             for d, p in (("read", "batch-reader"), ("read", "consume"), ("produce", "batch-producer"))}
    assert paths == {("read", "batch-reader"): 1.0, ("read", "consume"): 0.0, ("produce", "batch-producer"): 1.0}
    run_until(first, lambda: first.totals.get("records_scored") >= 500, what="500 scored by the first replica")
    second.start()
    run_until([first, second], lambda: len(second.io.features.assignment()) == 1 == len(first.io.features.assignment()),
              what="a partition each")
    return topics, truth, first, second


def scored(*services: Process) -> float:
    return sum(service.totals.get("records_scored") for service in services)


def assert_each_record_predicted_once(bootstrap: str, topics: dict, truth: dict) -> None:
    predictions = [orjson.loads(m.value()) for m in read_all(bootstrap, topics["predictions"])]
    sources = [p["source"] for p in predictions]
    assert len(sources) == len(set(sources)) == len(truth)  # each record once, across the handovers
    assert sorted(p["id"] for p in predictions) == sorted(truth)


def test_a_second_replica_takes_partitions_over_mid_stream_and_every_record_is_predicted_once(
        kafka_bootstrap, tmp_path):
    topics, truth, first, second = two_replicas(kafka_bootstrap, tmp_path, 2000)
    try:
        run_until([first, second], lambda: scored(first, second) >= 2000, what="every record scored")
    finally:
        for service in (first, second):
            service.request_stop()
            service.shutdown()
    assert second.totals.get("records_scored") > 0
    assert_each_record_predicted_once(kafka_bootstrap, topics, truth)


def test_a_replica_that_stops_mid_stream_hands_its_partition_over_and_every_record_is_predicted_once(
        kafka_bootstrap, tmp_path):
    topics, truth, first, second = two_replicas(kafka_bootstrap, tmp_path, 3000)
    try:
        run_until([first, second], lambda: scored(first, second) >= 1500, what="half scored by both")
        first.request_stop()
        first.shutdown()  # as on SIGTERM: final checkpoint, offsets committed, the group left
        run_until(second, lambda: len(second.io.features.assignment()) == 2, what="both partitions with the second")
        run_until(second, lambda: scored(first, second) >= 3000, what="every record scored")
    finally:
        second.request_stop()
        second.shutdown()
    assert_each_record_predicted_once(kafka_bootstrap, topics, truth)
