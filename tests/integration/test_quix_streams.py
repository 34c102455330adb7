"""Beside Quix Streams: a Quix Streams application reads the service's predictions and label
requests and writes the labels, on the embedded broker, in one environment with both installed.

CI runs this file in an environment made by ``pip install activestream quixstreams`` (.ci/run), with
ACTIVESTREAM_REQUIRE_QUIX=1; elsewhere it is skipped when Quix Streams is not installed."""

from __future__ import annotations

import os
import threading

import pytest

from consumer.demo.broker import CLIENT_SETTINGS
from consumer.roles import service_for
from tests.kafka_helpers import produce_features, read_all, run_until, settings_for, stream, unique_topics

if os.environ.get("ACTIVESTREAM_REQUIRE_QUIX") == "1":
    import quixstreams
else:
    quixstreams = pytest.importorskip("quixstreams")

N = 300


def test_a_quix_streams_application_reads_predictions_and_requests_and_answers_them(kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(N)
    service = service_for(settings_for(kafka_bootstrap, topics, tmp_path, query_rate_target=0.2), serve_http=False)

    app = quixstreams.Application(broker_address=kafka_bootstrap, consumer_group="quix-annotator",
                                  auto_offset_reset="earliest", consumer_extra_config=dict(CLIENT_SETTINGS))
    predictions = app.topic(topics["predictions"], value_deserializer="json")
    requests = app.topic(topics["label_requests"], value_deserializer="json")
    labels = app.topic(topics["labels"], key_serializer="str", value_serializer="json")
    predicted: dict[str, object] = {}
    app.dataframe(predictions).update(lambda p: predicted.__setitem__(p["id"], p["label"]))
    answers = app.dataframe(requests).apply(lambda r: {"id": r["id"], "label": truth[r["id"]]})
    answers.to_topic(labels, key=lambda label: label["id"])
    # Quix runs in the main thread (it sets signal handlers); the service runs beside it
    outcome: dict[str, object] = {}

    def serve() -> None:
        totals = service.totals
        try:
            produce_features(kafka_bootstrap, topics["features"], records)
            run_until(service, lambda: totals.get("records_scored") == N and len(predicted) == N, timeout_s=120,
                      what="every record scored and its prediction read by the Quix application")
            outcome["requested"] = requested = totals.get("label_requests")
            run_until(service, lambda: totals.get("labels.applied") == requested, timeout_s=120,
                      what="every request answered through Quix Streams and its label applied")
            outcome["applied"] = totals.get("labels.applied")
        except BaseException as exc:  # raised again in the test's thread
            outcome["error"] = exc
        finally:
            app.stop()

    service.start()
    beside = threading.Thread(target=serve, daemon=True)
    beside.start()
    try:
        app.run()
    finally:
        beside.join(timeout=300)
        service.request_stop()
        service.shutdown()
    if "error" in outcome:
        raise outcome["error"]
    assert not beside.is_alive()
    assert outcome["requested"] > 0 and outcome["applied"] == outcome["requested"]
    assert set(predicted) == set(truth)
    assert all(label in (-1, 1) for label in predicted.values())
    assert read_all(kafka_bootstrap, topics["dead_letters"]) == []
