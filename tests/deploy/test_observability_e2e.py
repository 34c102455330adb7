"""The dashboard and the alerts against a real Prometheus scraping running services.

Two scenarios, each set up once, in turn, each with its own Prometheus that scrapes every second and
evaluates ``deploy/prometheus/alerts.yml`` every second.

``scenario``: one process (role ``all``) on the test broker, a drifting stream fed at 100 records/s
with some undecodable records among them, an annotator that answers three requests in four within
0.2 s and the fourth after the request expired, and a label budget smaller than the queries (paced
over windows of 10 s, so that the target is far above what the budget allows).

``scale_scenario``: a trainer and a scorer (roles ``trainer`` and ``scorer``) on topics of their own,
features and its outputs in two partitions, the same feed, an annotator that answers three requests
in four within 0.2 s and never the fourth, no label budget, and a model published every 0.25 s: the
trainer publishes versions, the scorer swaps them in.

Then every dashboard target and every operand of every alert expression is evaluated through the
HTTP API and must return data of the right shape: a renamed metric or label breaks this test. What
reads a series only the split exports data for (tests/deploy/pinned.py: model publications, swap
delays, model age and version, the lease, the role) is read on the scale scenario, with ``$instance``
matching both processes; everything else on the single process. Each is checked once.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer, Producer

from consumer.config import load_settings
from consumer.demo.broker import CLIENT_SETTINGS, create_topics, free_port
from consumer.demo.feed import Feeder, drifting_stream
from consumer.process import Process
from consumer.roles import service_for
from tests.deploy.conftest import DEPLOY, alert_rules
from tests.deploy.pinned import PINNED, sample_names
from tests.deploy.promql import metric_names, signals
from tests.kafka_helpers import wait_for
from tests.unit.consumer.conftest import Harness

# The feed outlasts the labelling (the budget is spent within seconds) so that every panel is read
# while records still flow, as on a live service; the test stops it when done.
RECORDS, BAD_RECORDS, RATE = 18000, 40, 100.0
# A late label lands between the request's expiry and the end of the time the service remembers it
# (one TTL more), so that it is counted as expired; a second of slack on either side.
TTL_S, FAST_S, LATE_S = 2.0, 0.2, 3.0
BUDGET, BUDGET_WINDOW_S, QUERY_RATE_TARGET = 150, 10.0, 0.9
# What the scenario makes true (pending: their `for` is longer than the test) and nothing else. The
# budget controller holds the rate it aims at (the budget paced over its window, far below the
# target), so the off-target alert stays quiet.
EXPECTED_ACTIVE = {"ActivestreamLabelBudgetNearlySpent", "ActivestreamDeadLetters", "ActivestreamLabelsExpiring"}
# The scale scenario: a model every 0.25 s (while labels come), so that the scorer swaps in a few
# versions a second. Of the alerts it makes true only the job-wide share of expired requests (the
# scorer counts the requests, the trainer the expiries: a quarter of them, never answered, so that
# no late label can outlive the trainer's memory of its request and count as unknown on a slow
# machine): no budget controller (the budget and query-rate alerts are quiet without one), no bad
# record, the trainer holds the lease and publishes, the scorer's model is fresh. A trainer
# checkpoint every 2 s: the checkpoint-age alert (3 intervals) allows a stall of 6 s.
PUBLISH_EVERY_S = 0.25
PUBLISHED, SWAPPED = 8, 4  # model versions the trainer published and the scorer swapped in, at least
EXPECTED_ACTIVE_SCALE = {"ActivestreamLabelsExpiring"}
SCALE_TOPICS = ("features", "predictions", "label_requests", "labels", "dead_letters", "model", "lease")
PARTITIONED = ("features", "predictions", "label_requests", "labels")  # the others have one partition
# The series only a scorer or a trainer exports data for: what reads them is checked on the scale scenario.
SCALE_OUT = sample_names(PINNED)
ANNOTATE_JOB = "activestream-annotate"  # the connector's job, as deploy/prometheus/prometheus.yml names it
LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")
TEMPLATE_LABEL = re.compile(r"\$labels\.(\w+)")


class LateAnnotator(threading.Thread):
    """Answers every fourth label request ``late_s`` after it read it (never if None), the others at once."""

    def __init__(self, bootstrap: str, requests_topic: str, labels_topic: str, truth: dict,
                 late_s: float | None = LATE_S) -> None:
        super().__init__(name="e2e-annotator", daemon=True)
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"e2e-{uuid.uuid4().hex[:8]}",
                                   **CLIENT_SETTINGS})
        self._consumer.subscribe([requests_topic])
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
        self._labels_topic, self._truth, self._late_s = labels_topic, truth, late_s
        self._due: list[tuple[float, str]] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            for msg in self._consumer.consume(500, 0.05):
                if msg.error() is None and msg.value() is not None:
                    rid = orjson.loads(msg.value())["id"]
                    if int(rid[1:]) % 4 != 0:
                        self._due.append((time.monotonic() + FAST_S, rid))
                    elif self._late_s is not None:
                        self._due.append((time.monotonic() + self._late_s, rid))
            now = time.monotonic()
            for due in [d for d in self._due if d[0] <= now]:
                self._due.remove(due)
                rid = due[1]
                self._producer.produce(self._labels_topic, key=rid.encode(),
                                       value=orjson.dumps({"id": rid, "label": self._truth[rid]}))
            self._producer.poll(0)
        self._producer.flush(10)
        self._consumer.close()

    def stop(self) -> None:
        self._stop_event.set()


class PrometheusServer:
    """A Prometheus process scraping ``targets`` every second with the project's alert rules."""

    def __init__(self, binary: str, directory: Path, targets: list[str], job: str = "activestream") -> None:
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(DEPLOY / "prometheus" / "alerts.yml")],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}],
        }
        (directory / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        self.url = f"http://127.0.0.1:{free_port()}"
        self._log = open(directory / "prometheus.log", "wb")  # noqa: SIM115 (closed in stop)
        self._proc = subprocess.Popen(
            [binary, f"--config.file={directory / 'prometheus.yml'}", f"--storage.tsdb.path={directory / 'data'}",
             f"--web.listen-address={self.url.removeprefix('http://')}"],
            stdout=self._log, stderr=subprocess.STDOUT)
        wait_for(lambda: self._ready(), 30, "Prometheus did not become ready")
        # every target scraped twice
        wait_for(lambda: len(self.instant("count_over_time(up[1m]) >= 2")["result"]) == len(targets), 30, "no scrape")

    def _ready(self) -> bool:
        if self._proc.poll() is not None:
            raise RuntimeError(f"Prometheus exited with {self._proc.returncode}")
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def api(self, path: str, **params: object) -> dict:
        url = f"{self.url}/api/v1/{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = json.load(r)
        except urllib.error.HTTPError as err:  # a query Prometheus refuses: show its reason
            raise AssertionError(f"{params}: {err.read().decode()}") from None
        assert body["status"] == "success", body
        return body["data"]

    def instant(self, expr: str) -> dict:
        return self.api("query", query=expr)

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait(15)
        self._log.close()


def fill(expr: str, instance: str, window: str) -> str:
    """The dashboard's template variables as Grafana fills them."""
    for name, value in (("$__rate_interval", "5s"), ("$window", window), ("$job", "activestream"),
                        ("$instance", instance), ("$annotate_job", ANNOTATE_JOB)):
        expr = expr.replace(name, value)
    left = [v for v in re.findall(r"\$\{?(\w+)", expr) if not v.isdigit()]  # $1 is label_replace's
    assert not left, f"unknown template variables {left} in {expr}"
    return expr


class Scenario:
    def __init__(self, services: list[Process], prometheus: PrometheusServer, since: float) -> None:
        self.services, self.prometheus = services, prometheus
        self.instances = {f"127.0.0.1:{s.http.port}" for s in services}
        self.since = since  # when the records started to flow

    @property
    def service(self) -> Process:
        (only,) = self.services
        return only

    def substitute(self, expr: str) -> str:
        """The dashboard's template variables as Grafana fills them with every replica of this
        scenario selected, with a window that spans the whole scenario (however long a loaded machine
        made it)."""
        return fill(expr, "|".join(sorted(self.instances)), f"{round(time.time() - self.since) + 10}s")


class Running(threading.Thread):
    """``service.run()`` in a thread; ``code`` is what it returned (None while it runs)."""

    def __init__(self, service: Process, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.service, self.code = service, None

    def run(self) -> None:
        self.code = self.service.run()

    def serving(self) -> bool:
        """Its metrics port is open (from early in its start)."""
        assert self.code is None, f"{self.name} stopped with {self.code} before it was ready"
        return self.service.http is not None

    def ready(self) -> bool:
        return self.serving() and self.service.health.ready()[0]


def warm_up(directory: Path) -> None:
    """Compile the service's kernels in this process first (an in-memory service, the same learner):
    a first compile inside the timed scenario would let every label request expire before its label.
    The records are the stream's own: their hashed indices need sorting, a kernel of its own
    (``fastjson.sum_duplicates``) that the service's warm-up does not compile."""
    h = Harness(directory, learner_params={})
    h.service.start()
    for i, value in enumerate(drifting_stream(20, seed=0).values):
        h.feature(f"w{i}", orjson.loads(value)["features"])
    h.service.run_once()
    for rid in h.requested_ids():
        h.label(rid, 1)
    h.service.run_once()
    assert h.service.totals.get("labels.applied") > 0


@pytest.fixture(scope="module")
def scenario(kafka_bootstrap, prometheus_binary, tmp_path_factory) -> Iterator[Scenario]:
    tmp = tmp_path_factory.mktemp("e2e")
    warm_up(tmp / "warm-up")
    suffix = uuid.uuid4().hex[:8]
    topics = {k: f"e2e-{suffix}-{k}" for k in ("features", "predictions", "label_requests", "labels",
                                               "dead_letters")}
    create_topics(kafka_bootstrap, list(topics.values()))
    stream = drifting_stream(RECORDS, seed=3)
    settings = load_settings(
        bootstrap_servers=kafka_bootstrap, group_id=f"e2e-{suffix}", topics=topics, checkpoint_dir=tmp / "ckpt",
        n_features=stream.n_features, classes=stream.classes, kafka_consumer=CLIENT_SETTINGS, metrics_port=0,
        checkpoint={"every_s": 1.0}, query_rate_target=QUERY_RATE_TARGET,
        labels={"ttl_s": TTL_S, "budget": BUDGET, "budget_window_s": BUDGET_WINDOW_S,
                "clock_tolerance_s": BUDGET_WINDOW_S},
    )
    service = service_for(settings)
    runner = Running(service, "e2e-service")
    runner.start()
    annotator = LateAnnotator(kafka_bootstrap, topics["label_requests"], topics["labels"], stream.truth)
    feeder = Feeder(kafka_bootstrap, topics["features"], stream, RATE)
    prometheus = None
    try:
        wait_for(runner.serving, 60, "the service did not open its metrics port")
        prometheus = PrometheusServer(prometheus_binary, tmp, [f"127.0.0.1:{service.http.port}"])
        wait_for(runner.ready, 60, "the service is not ready")
        annotator.start()
        since = time.time()
        feeder.start()
        bad = Producer({"bootstrap.servers": kafka_bootstrap})
        for i in range(BAD_RECORDS):
            bad.produce(topics["features"], key=f"bad{i}".encode(), value=b"{not json")
        bad.flush(10)
        t = service.totals
        answered = ("labels.applied", "labels.expired", "labels.unknown")
        wait_for(lambda: t.get("label_requests") >= BUDGET and t.get("dead_letters." + topics["features"]
                                                                      + ".malformed_json") >= BAD_RECORDS
                 and sum(t.get(k) for k in answered) >= BUDGET and t.get("labels.expired") > 0, 90,
                 "the scenario did not play out", lambda: dict(t.values))
        wait_for(lambda: prometheus.instant("count_over_time(activestream_records_scored_total[1m]) >= 10")["result"],
                 30, "Prometheus has too few samples")
        time.sleep(2.0)  # two more scrapes and rule evaluations of the final state
        assert feeder.is_alive(), "the feed ended before the checks: they would read an idle service"
        yield Scenario([service], prometheus, since)
    finally:
        feeder.stop()
        annotator.stop()
        service.request_stop()
        runner.join(60)
        annotator.join(15)
        if prometheus is not None:
            prometheus.stop()


def sample(service: Process, name: str, **labels: str) -> float:
    """The value of one series of ``service``'s metrics, as its /metrics shows it (0 if absent)."""
    return service.metrics.registry.get_sample_value(name, labels) or 0.0


@pytest.fixture(scope="module")
def scale_scenario(kafka_bootstrap, prometheus_binary, tmp_path_factory) -> Iterator[Scenario]:
    tmp = tmp_path_factory.mktemp("e2e-scale")
    warm_up(tmp / "warm-up")  # compiled already if the other scenario ran first
    suffix = uuid.uuid4().hex[:8]
    topics = {k: f"e2e-scale-{suffix}-{k}" for k in SCALE_TOPICS}
    create_topics(kafka_bootstrap, [topics[k] for k in PARTITIONED], 2)
    create_topics(kafka_bootstrap, [topics[k] for k in SCALE_TOPICS if k not in PARTITIONED], 1)
    stream = drifting_stream(RECORDS, seed=5)

    def settings(role: str):
        return load_settings(
            role=role, bootstrap_servers=kafka_bootstrap, group_id=f"e2e-scale-{suffix}", topics=topics,
            checkpoint_dir=tmp / role, n_features=stream.n_features, classes=stream.classes,
            kafka_consumer=CLIENT_SETTINGS, metrics_port=0, checkpoint={"every_s": 2.0}, labels={"ttl_s": TTL_S},
            model={"publish_every_s": PUBLISH_EVERY_S})

    trainer, scorer = service_for(settings("trainer")), service_for(settings("scorer"))
    runners = [Running(trainer, "e2e-trainer"), Running(scorer, "e2e-scorer")]
    for runner in runners:
        runner.start()
    annotator = LateAnnotator(kafka_bootstrap, topics["label_requests"], topics["labels"], stream.truth, late_s=None)
    feeder = Feeder(kafka_bootstrap, topics["features"], stream, RATE)
    prometheus = None
    try:
        wait_for(lambda: all(r.serving() for r in runners), 60, "the trainer and the scorer opened no metrics port")
        prometheus = PrometheusServer(prometheus_binary, tmp, [f"127.0.0.1:{s.http.port}" for s in (trainer, scorer)])
        wait_for(lambda: all(r.ready() for r in runners), 60, "the trainer and the scorer are not ready",
                 lambda: {r.name: r.service.health.ready()[1] for r in runners})
        assert sample(trainer, "activestream_trainer_active") == 1.0
        annotator.start()
        since = time.time()
        feeder.start()

        def played_out() -> dict[str, float]:
            return {
                "published": sum(sample(trainer, "activestream_model_publications_total", kind=kind)
                                 for kind in ("full", "delta")),
                "swapped": sample(scorer, "activestream_model_swap_delay_seconds_count"),
                "requested": sample(scorer, "activestream_label_requests_total"),
                "expired": sample(trainer, "activestream_label_requests_expired_total"),
            }

        # the expired requests well over the 5 % ActivestreamLabelsExpiring needs (a quarter expire in the end)
        wait_for(lambda: (p := played_out())["published"] >= PUBLISHED and p["swapped"] >= SWAPPED
                 and p["expired"] >= 0.1 * p["requested"] > 0, 90, "the scenario did not play out", played_out)
        for expr in ("count_over_time(activestream_records_scored_total[1m]) >= 10",
                     "rate(activestream_model_published_bytes_count[5s]) > 0",
                     "rate(activestream_model_swap_delay_seconds_count[5s]) > 0"):
            wait_for(lambda e=expr: prometheus.instant(e)["result"], 30, f"Prometheus has too few samples: {expr}")
        time.sleep(2.0)  # two more scrapes and rule evaluations of the final state
        assert feeder.is_alive(), "the feed ended before the checks: they would read an idle service"
        yield Scenario([trainer, scorer], prometheus, since)
    finally:
        feeder.stop()
        annotator.stop()
        for runner in runners:
            runner.service.request_stop()
        for runner in runners:
            runner.join(60)
        annotator.join(15)
        if prometheus is not None:
            prometheus.stop()


def reads_scale_out(expr: str) -> bool:
    """Whether ``expr`` (a dashboard target or an alert operand) reads a series only the split exports."""
    return bool(metric_names(fill(expr, ".*", "1m")) & SCALE_OUT)


def dashboard_targets() -> list[tuple[str, str, dict]]:
    board = json.loads((DEPLOY / "grafana" / "dashboards" / "activestream.json").read_text())
    return [(p["title"], p["type"], t) for p in board["panels"] if p["type"] != "row" for t in p["targets"]]


def alert_operands() -> list[tuple[dict, int, str]]:
    """(rule, position, operand) for every operand of every alert: the first is the value it reports."""
    return [(rule, k, operand) for rule in alert_rules() for k, operand in enumerate(signals(rule["expr"]))]


def reads_annotate(expr: str) -> bool:
    """Whether ``expr`` reads the Label Studio connector (test_observability_annotate.py checks those)."""
    return 'job="$annotate_job"' in expr


TARGETS = [t for t in dashboard_targets() if not reads_scale_out(t[2]["expr"]) and not reads_annotate(t[2]["expr"])]
SCALE_TARGETS = [t for t in dashboard_targets() if reads_scale_out(t[2]["expr"]) and not reads_annotate(t[2]["expr"])]
OPERANDS = [o for o in alert_operands() if not reads_scale_out(o[2])]
SCALE_OPERANDS = [o for o in alert_operands() if reads_scale_out(o[2])]


def target_ids(targets: list[tuple[str, str, dict]]) -> list[str]:
    return [f"{title}-{target['refId']}" for title, _, target in targets]


def operand_ids(operands: list[tuple[dict, int, str]]) -> list[str]:
    return [f"{rule['alert']}-{k}" for rule, k, _ in operands]


def finite(values: list) -> bool:
    return any(math.isfinite(float(v)) for _, v in values)


def check_target(scenario: Scenario, title: str, kind: str, target: dict) -> None:
    expr = scenario.substitute(target["expr"])
    prometheus = scenario.prometheus
    if kind == "stat":
        data = prometheus.instant(expr)
        assert data["resultType"] == "vector" and data["result"], f"{title}: no data for {expr}"
        assert any(math.isfinite(float(s["value"][1])) for s in data["result"]), f"{title}: only NaN"
        return
    data = prometheus.api("query_range", query=expr, start=scenario.since, end=time.time(), step=1)
    assert data["resultType"] == "matrix" and data["result"], f"{title} / {target['legendFormat']}: no data for {expr}"
    for series in data["result"]:
        missing = set(LEGEND_LABEL.findall(target["legendFormat"])) - set(series["metric"])
        assert not missing, f"{title}: series {series['metric']} lack {missing} used by the legend"
    assert any(finite(s["values"]) for s in data["result"]), f"{title} / {target['legendFormat']}: only NaN"


def check_operand(scenario: Scenario, rule: dict, k: int, operand: str) -> None:
    result = scenario.prometheus.instant(operand)["result"]
    assert result, f"{rule['alert']}: no data for {operand}"
    assert any(math.isfinite(float(s["value"][1])) for s in result), f"{rule['alert']}: only NaN in {operand}"
    if k == 0:  # the value the alert reports: its series carry the labels the annotations print
        used = set(TEMPLATE_LABEL.findall(json.dumps(rule.get("annotations", {}))))
        for series in result:
            assert used <= set(series["metric"]), f"{rule['alert']}: {series['metric']} lack {used}"
            # a job-wide alert (ActivestreamNoActiveTrainer) aggregates the instance away
            instance = series["metric"].get("instance")
            assert instance is None or instance in scenario.instances, series


def active_alerts(scenario: Scenario) -> set[str]:
    """The alerts pending or firing, once Prometheus has evaluated every rule without error."""
    rules = [r for g in scenario.prometheus.api("rules")["groups"] for r in g["rules"]]
    assert {r["name"] for r in rules} == {r["alert"] for r in alert_rules()}
    for rule in rules:
        assert rule["health"] == "ok" and not rule.get("lastError"), rule
    return {a["labels"]["alertname"] for a in scenario.prometheus.api("alerts")["alerts"]}


def test_every_alert_has_operands_and_the_scale_scenario_reads_every_series_of_the_split():
    """Each target and operand is checked on one scenario (by construction): an alert without an
    operand would go unchecked, and a family of the split that nothing routed to the scale scenario
    reads would go unexercised."""
    for rule in alert_rules():
        assert signals(rule["expr"]), f"{rule['alert']}: no operand found in {rule['expr']}"
    read = set().union(*(metric_names(fill(t[2]["expr"], ".*", "1m")) for t in SCALE_TARGETS),
                       *(metric_names(o[2]) for o in SCALE_OPERANDS))
    for family, spec in PINNED.items():
        assert sample_names({family: spec}) & read, f"nothing checked on the scale scenario reads {family}"


# The single process first: its checks read it while its feed runs; the last one stops it.
@pytest.mark.parametrize("title, kind, target", TARGETS, ids=target_ids(TARGETS))
def test_every_dashboard_target_returns_data_with_its_legend_labels(scenario, title, kind, target):
    check_target(scenario, title, kind, target)


@pytest.mark.parametrize("rule, k, operand", OPERANDS, ids=operand_ids(OPERANDS))
def test_every_alert_operand_returns_data_with_the_labels_its_annotations_use(scenario, rule, k, operand):
    check_operand(scenario, rule, k, operand)


def test_prometheus_evaluates_every_rule_and_exactly_the_expected_alerts_are_active(scenario):
    # the budget is paced at nine tenths of its window, so the share left hovers about the nearly-spent
    # alert's tenth and crosses it with the coins: wait for an evaluation that has it below
    wait_for(lambda: active_alerts(scenario) == EXPECTED_ACTIVE, 30, "the expected alerts were never the active ones",
             lambda: active_alerts(scenario))


def test_a_stopped_service_makes_the_down_alert_pending(scenario):
    scenario.service.request_stop()
    down = 'ALERTS{alertname="ActivestreamDown", alertstate="pending"}'
    wait_for(lambda: scenario.prometheus.instant(down)["result"], 30, "ActivestreamDown did not become pending")
    assert scenario.prometheus.instant('up{job="activestream"}')["result"][0]["value"][1] == "0"


@pytest.mark.parametrize("title, kind, target", SCALE_TARGETS, ids=target_ids(SCALE_TARGETS))
def test_every_scale_out_dashboard_target_returns_data_with_its_legend_labels(scale_scenario, title, kind, target):
    check_target(scale_scenario, title, kind, target)


@pytest.mark.parametrize("rule, k, operand", SCALE_OPERANDS, ids=operand_ids(SCALE_OPERANDS))
def test_every_scale_out_alert_operand_returns_data_with_the_labels_its_annotations_use(scale_scenario, rule, k,
                                                                                       operand):
    check_operand(scale_scenario, rule, k, operand)


def test_prometheus_evaluates_every_rule_and_exactly_the_expected_alerts_are_active_on_the_split(scale_scenario):
    # no budget controller here: the query-rate gauges are NaN and ActivestreamQueryRateOffTarget is quiet
    assert active_alerts(scale_scenario) == EXPECTED_ACTIVE_SCALE


