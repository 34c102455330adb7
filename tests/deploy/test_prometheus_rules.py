"""The Prometheus configuration and alert rules: promtool checks them, unit-tests every alert on
synthetic series, and every alert reads only metrics the service exports."""

from __future__ import annotations

import subprocess

from consumer.metrics import Metrics
from tests.deploy.conftest import DEPLOY, ROOT, alert_rules, load_yaml, load_yaml_all
from tests.deploy.pinned import PINNED, declared
from tests.deploy.promql import metric_names

PROMETHEUS_DIR = DEPLOY / "prometheus"
SCRAPED_BY_PROMETHEUS = {"up"}


def exported_names(registry=None) -> set[str]:
    """Every sample name the service's /metrics (or ``registry``'s) can carry (counters' _total,
    histograms' series)."""
    names = set()
    for family in (registry or Metrics().registry).collect():
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names.update(family.name + suffix for suffix in ("_bucket", "_sum", "_count"))
        else:
            names.add(family.name)
    return names


def test_pinned_metrics_are_declared_as_pinned():
    """The scale-out metrics are declared with the type and labels the alerts and the dashboard were
    written against."""
    found = declared()
    for name, spec in PINNED.items():
        assert found.get(name) == spec, f"{name}: declared as {found.get(name)}, pinned as {spec}"
    assert found["activestream_labels"] == ("counter", ("outcome",))
    assert found["activestream_consumer_lag_records"] == ("gauge", ("topic", "partition"))


def promtool_run(promtool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([promtool, *args], capture_output=True, text=True, cwd=PROMETHEUS_DIR, timeout=120)


def test_promtool_accepts_the_config_and_its_rules(promtool):
    out = promtool_run(promtool, "check", "config", "prometheus.yml")
    assert out.returncode == 0, out.stdout + out.stderr
    out = promtool_run(promtool, "check", "rules", "alerts.yml")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in out.stdout


def test_promtool_unit_tests_pass(promtool):
    out = promtool_run(promtool, "test", "rules", "alerts.test.yml")
    assert out.returncode == 0, out.stdout + out.stderr


def test_promtool_unit_tests_fail_when_an_alert_stops_firing(promtool, tmp_path):
    """The unit tests can fail: with one threshold moved, they do."""
    rules = (PROMETHEUS_DIR / "alerts.yml").read_text().replace("> 100000", "> 1000000")
    (tmp_path / "alerts.yml").write_text(rules)
    (tmp_path / "alerts.test.yml").write_text((PROMETHEUS_DIR / "alerts.test.yml").read_text())
    out = subprocess.run([promtool, "test", "rules", "alerts.test.yml"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode != 0 and "ActivestreamConsumerLagHigh" in out.stdout + out.stderr


def test_every_alert_is_unit_tested_firing_and_quiet():
    cases: dict[str, list[bool]] = {}
    for test in load_yaml(PROMETHEUS_DIR / "alerts.test.yml")["tests"]:
        for case in test.get("alert_rule_test", []):
            cases.setdefault(case["alertname"], []).append(bool(case["exp_alerts"]))
    for rule in alert_rules():
        outcomes = cases.get(rule["alert"], [])
        assert True in outcomes and False in outcomes, f"{rule['alert']}: needs a firing and a quiet case"


def test_every_alert_reads_only_exported_metrics():
    exported = exported_names() | SCRAPED_BY_PROMETHEUS | {"process_start_time_seconds"}
    for rule in alert_rules():
        unknown = metric_names(rule["expr"]) - exported
        assert not unknown, f"{rule['alert']} reads {unknown}, which the service does not export"
        assert 'job="activestream"' in rule["expr"]


def test_every_alert_has_summary_description_and_a_runbook_in_the_docs():
    page = (ROOT / "docs" / "metrics.md").read_text()
    for rule in alert_rules():
        notes = rule["annotations"]
        assert notes["summary"] and notes["description"], rule["alert"]
        assert notes["runbook"] == f"docs/metrics.md#{rule['alert'].lower()}"
        assert f"### {rule['alert']}\n" in page, f"docs/metrics.md has no runbook heading for {rule['alert']}"
        assert rule["labels"]["severity"] in {"warning", "critical"}


def test_the_kubernetes_prometheusrule_holds_exactly_these_rules():
    path = DEPLOY / "k8s" / "common" / "prometheusrule.yaml"
    rule = next(d for d in load_yaml_all(path) if d["kind"] == "PrometheusRule")
    assert rule["spec"]["groups"] == load_yaml(PROMETHEUS_DIR / "alerts.yml")["groups"]
