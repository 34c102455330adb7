"""/metrics as prometheus-client exposes it: text or OpenMetrics as the scraper's Accept asks,
gzip when its Accept-Encoding allows, name[] filters; and activestream_io_path."""

from __future__ import annotations

import gzip
import urllib.error
import urllib.request

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from consumer.clock import ManualClock
from consumer.health import Health, HealthServer
from consumer.metrics import Metrics

OPENMETRICS = "application/openmetrics-text; version=1.0.0"
# what Prometheus itself sends
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


@pytest.fixture
def served():
    metrics = Metrics()
    metrics.labels.labels("applied").inc(2)
    metrics.label_delay.observe_many([3.0, 40.0])
    metrics.io_path.labels(direction="read", path="batch-reader").set(1)
    server = HealthServer(Health(ManualClock(), max_loop_age_s=30), metrics.registry, port=0, host="127.0.0.1").start()
    yield metrics, f"http://127.0.0.1:{server.port}"
    server.close()


def fetch(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={k.replace("_", "-"): v for k, v in headers.items()})
    with urllib.request.urlopen(request, timeout=5) as r:
        return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()


def families(text: str, parse=text_string_to_metric_families) -> dict:
    return {family.name: family for family in parse(text)}


def test_without_accept_it_is_the_prometheus_text_format(served):
    _, base = served
    status, headers, body = fetch(base + "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "content-encoding" not in headers
    found = families(body.decode())
    [applied] = [s for s in found["activestream_labels"].samples if s.labels == {"outcome": "applied"}]
    assert applied.value == 2.0
    assert found["activestream_label_delay_seconds"].type == "histogram"


@pytest.mark.parametrize("accept", [OPENMETRICS, PROMETHEUS_ACCEPT])
def test_openmetrics_when_asked(served, accept):
    _, base = served
    status, headers, body = fetch(base + "/metrics", Accept=accept)
    assert status == 200 and headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    text = body.decode()
    assert text.endswith("# EOF\n")
    found = families(text, openmetrics_families)  # the OpenMetrics parser is strict: it raises on any flaw
    assert found["activestream_labels"].type == "counter"
    assert found["activestream_io_path"].type == "gauge"


@pytest.mark.parametrize("accept", [None, OPENMETRICS])
def test_gzip_when_the_scraper_accepts_it(served, accept):
    _, base = served
    extra = {"Accept": accept} if accept else {}
    status, headers, body = fetch(base + "/metrics", Accept_Encoding="gzip", **extra)
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert int(headers["content-length"]) == len(body)
    text = gzip.decompress(body).decode()
    parse = openmetrics_families if accept else text_string_to_metric_families
    assert "activestream_records_scored" in families(text, parse)


def test_name_filters_as_prometheus_client_does(served):
    _, base = served
    _, _, body = fetch(base + "/metrics?name[]=activestream_io_path&name[]=activestream_label_delay_seconds_count")
    found = families(body.decode())
    assert set(found) == {"activestream_io_path", "activestream_label_delay_seconds"}  # a bulk histogram too
    assert [s.value for s in found["activestream_label_delay_seconds"].samples] == [2.0]


def test_the_probes_are_as_before(served):
    _, base = served
    status, headers, body = fetch(base + "/healthz", Accept_Encoding="gzip")
    assert (status, headers["content-type"], "content-encoding" in headers) == (200, "text/plain; charset=utf-8",
                                                                                  False)
    assert body.startswith(b"ok: last loop iteration")


def test_a_collector_that_fails_is_a_500_and_a_log_line(served, caplog):
    metrics, base = served

    class Broken:
        def collect(self):
            raise RuntimeError("no sample")

    metrics.registry.register(Broken())
    with pytest.raises(urllib.error.HTTPError) as err:
        fetch(base + "/metrics")
    assert err.value.code == 500
    assert "/metrics could not be rendered" in caplog.text and "no sample" in caplog.text
    assert fetch(base + "/healthz")[0] == 200  # the server goes on


# -- activestream_io_path --------------------------------------------------------------------------

def io_paths(metrics: Metrics) -> dict[tuple[str, str], float]:
    return {(s.labels["direction"], s.labels["path"]): s.value
            for family in metrics.registry.collect() if family.name == "activestream_io_path"
            for s in family.samples}


def test_the_service_says_which_paths_it_reads_and_produces_by(harness):
    harness.service.start()
    # the fakes are no confluent-kafka consumers (no batch reader), and give a batch producer
    assert io_paths(harness.service.metrics) == {("read", "batch-reader"): 0.0, ("read", "consume"): 1.0,
                                                 ("produce", "batch-producer"): 1.0, ("produce", "produce"): 0.0}


def test_without_a_batch_producer_the_outputs_are_produced_one_by_one(harness, monkeypatch):
    monkeypatch.setattr(harness.clients, "batch_producer", None, raising=False)
    service = harness.new_service()
    service.start()
    assert service.io.emitter.batch is None
    assert io_paths(service.metrics)[("produce", "produce")] == 1.0
    assert io_paths(service.metrics)[("produce", "batch-producer")] == 0.0
