"""The service where librdkafka cannot be reached through ctypes (another build of the client, a
library that lacks a function): it reads through ``Consumer.consume`` and produces each output with
``Producer.produce``, and keeps every guarantee of the fast paths."""

from __future__ import annotations

import orjson
import pytest
from confluent_kafka import Producer

from consumer import rdkafka
from consumer.roles import service_for
from tests.kafka_helpers import Annotator, produce_features, read_all, run_until, settings_for, stream, unique_topics


@pytest.fixture
def no_librdkafka(monkeypatch):
    monkeypatch.setattr(rdkafka, "load", lambda: None)


def test_without_librdkafka_every_record_is_predicted_once_and_every_label_applied_across_a_restart(
        kafka_bootstrap, tmp_path, no_librdkafka):
    topics = unique_topics(kafka_bootstrap, partitions=2)
    records, truth = stream(1200)
    settings = settings_for(kafka_bootstrap, topics, tmp_path, batch_size=200)
    annotator = Annotator(kafka_bootstrap, topics, truth)
    produce_features(kafka_bootstrap, topics["features"], records[:600])
    p = Producer({"bootstrap.servers": kafka_bootstrap})
    p.produce(topics["features"], key=b"bad", value=b'{"id": "bad", "features": [1, 2')  # a dead letter, with headers
    assert p.flush(10) == 0

    first = service_for(settings, serve_http=False)
    first.start()
    assert first.io.reader is None and first.io.label_reader is None  # the paths under test
    assert first.io.emitter.batch is None
    value = first.metrics.registry.get_sample_value
    assert [value("activestream_io_path", {"direction": d, "path": p}) for d, p in
            (("read", "consume"), ("read", "batch-reader"), ("produce", "produce"), ("produce", "batch-producer"))] \
        == [1.0, 0.0, 1.0, 0.0]  # what a dashboard sees of it
    run_until(first, lambda: first.totals.get("records_scored") >= 600, what="first 600 scored")
    annotator.answer(timeout=1.0)
    run_until(first, lambda: first.totals.get("labels.applied") >= len(annotator.answered), what="labels applied")
    first.request_stop()
    first.shutdown()

    second = service_for(settings, serve_http=False)
    second.start()
    assert second.restored_from is not None and second.io.reader is None
    produce_features(kafka_bootstrap, topics["features"], records[600:])
    run_until(second, lambda: second.totals.get("records_scored") >= 1200, what="the remaining 600")  # totals restored
    annotator.answer(timeout=1.0)
    run_until(second, lambda: second.totals.get("labels.applied") >= len(annotator.answered), what="labels applied")
    second.request_stop()
    second.shutdown()
    annotator.close()

    ids = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["predictions"], expect=1200)]
    assert sorted(ids) == sorted(truth)  # each record once, across the restart
    requested = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["label_requests"])]
    assert sorted(requested) == sorted(annotator.answered)
    assert second.totals.get("labels.applied") == len(requested)
    assert second.learner.labels_ == len(requested)
    [dead] = read_all(kafka_bootstrap, topics["dead_letters"], expect=1)
    assert dict(dead.headers())["activestream.dlq.reason"] == b"malformed_json"
