"""/metrics, /healthz and /readyz over real HTTP."""

import urllib.error
import urllib.request

import pytest

from consumer.clock import ManualClock
from consumer.health import Health, HealthServer
from consumer.metrics import Metrics


@pytest.fixture
def served():
    clock = ManualClock()
    health = Health(clock, max_loop_age_s=30)
    metrics = Metrics()
    server = HealthServer(health, metrics.registry, port=0, host="127.0.0.1").start()
    yield clock, health, metrics, f"http://127.0.0.1:{server.port}"
    server.close()


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_liveness_follows_the_loop(served):
    clock, health, _, base = served
    assert get(base + "/healthz")[0] == 200
    clock.advance(31)
    status, text = get(base + "/healthz")
    assert status == 503 and "idle" in text
    health.beat()
    assert get(base + "/healthz")[0] == 200


def test_readiness_needs_restore_and_assignment(served):
    _, health, _, base = served
    assert get(base + "/readyz") == (503, "restoring checkpoint\n")
    health.restored = True
    assert get(base + "/readyz") == (503, "no partitions assigned\n")
    health.assigned = True
    assert get(base + "/readyz")[0] == 200
    health.stopping = True
    assert get(base + "/readyz")[0] == 503


def test_metrics_endpoint_exposes_every_metric(served):
    _, _, metrics, base = served
    metrics.labels.labels("applied").inc(2)
    status, text = get(base + "/metrics")
    assert status == 200
    for name in ("activestream_records_scored_total", "activestream_labels_total{outcome=\"applied\"} 2.0",
                 "activestream_query_probability_bucket", "activestream_checkpoint_last_success_timestamp_seconds",
                 "activestream_pending_label_requests", "activestream_label_delay_seconds_bucket"):
        assert name in text, name
    assert get(base + "/nope")[0] == 404
