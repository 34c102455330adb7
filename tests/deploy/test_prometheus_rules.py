"""The Prometheus configuration and alert rules: promtool checks them, unit-tests every alert on
synthetic series, and every alert reads only metrics the service exports and links its runbook. The
PrometheusRule of deploy/k8s is what deploy/prometheus/rules.py makes of them, and the rules it makes
for another job selector and runbook base pass the same unit tests."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import yaml

from consumer.metrics import Metrics
from tests.deploy.conftest import DEPLOY, ROOT, alert_rules, load_yaml, load_yaml_all
from tests.deploy.pinned import PINNED, declared
from tests.deploy.promql import metric_names

PROMETHEUS_DIR = DEPLOY / "prometheus"
SCRAPED_BY_PROMETHEUS = {"up"}
PROMETHEUSRULE = DEPLOY / "k8s" / "components" / "monitoring" / "prometheusrule.yaml"


def rules_generator():
    spec = importlib.util.spec_from_file_location("activestream_rules", PROMETHEUS_DIR / "rules.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
        assert rules_generator().SELECTOR in rule["expr"]


def test_every_alert_has_summary_description_and_a_runbook_url_in_the_docs():
    page = (ROOT / "docs" / "metrics.md").read_text()
    base = rules_generator().RUNBOOK_BASE
    assert base.startswith("https://") and base.endswith("/")
    for rule in alert_rules():
        notes = rule["annotations"]
        assert set(notes) == {"summary", "description", "runbook_url"}, rule["alert"]
        assert notes["summary"] and notes["description"], rule["alert"]
        assert notes["runbook_url"] == f"{base}docs/metrics.md#{rule['alert'].lower()}"
        assert f"### {rule['alert']}\n" in page, f"docs/metrics.md has no runbook heading for {rule['alert']}"
        assert rule["labels"]["severity"] in {"warning", "critical"}


def test_the_kubernetes_prometheusrule_is_generated_from_these_rules():
    assert PROMETHEUSRULE.read_text() == rules_generator().prometheus_rule(), \
        "regenerate: python deploy/prometheus/rules.py > deploy/k8s/components/monitoring/prometheusrule.yaml"
    (rule,) = load_yaml_all(PROMETHEUSRULE)
    assert rule["spec"]["groups"] == load_yaml(PROMETHEUS_DIR / "alerts.yml")["groups"]
    assert rules_generator().rule_file() == (PROMETHEUS_DIR / "alerts.yml").read_text()


OTHER_SELECTOR = 'job="prod-activestream"'
OTHER_BASE = "https://wiki.example.org/activestream/"


def generate(*args: str) -> str:
    out = subprocess.run([sys.executable, str(PROMETHEUS_DIR / "rules.py"), *args], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_rules_for_another_selector_and_runbook_base_pass_the_unit_tests(promtool, tmp_path):
    """What rules.py writes for a Prometheus that scrapes the service under another job: every
    selector and every runbook link replaced, and the unit tests pass on the series relabelled."""
    written = generate("--rule-file", "--selector", OTHER_SELECTOR, "--runbook-base", OTHER_BASE)
    assert 'job="activestream"' not in written and rules_generator().RUNBOOK_BASE not in written
    rules = [r for g in yaml.safe_load(written)["groups"] for r in g["rules"]]
    assert [r["alert"] for r in rules] == [r["alert"] for r in alert_rules()]
    for rule in rules:
        assert OTHER_SELECTOR in rule["expr"], rule["alert"]
        assert rule["annotations"]["runbook_url"] == f"{OTHER_BASE}docs/metrics.md#{rule['alert'].lower()}"
    (tmp_path / "alerts.yml").write_text(written)
    tests = (PROMETHEUS_DIR / "alerts.test.yml").read_text().replace('job="activestream"', OTHER_SELECTOR)
    tests = tests.replace("job: activestream", "job: prod-activestream")  # the alerts' labels, and the
    for said in ("(activestream)", "of activestream ", "of job activestream "):  # annotations that print the job
        tests = tests.replace(said, said.replace("activestream", "prod-activestream"))
    (tmp_path / "alerts.test.yml").write_text(tests.replace(rules_generator().RUNBOOK_BASE, OTHER_BASE))
    run = subprocess.run([promtool, "test", "rules", "alerts.test.yml"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    # several matchers: the scrape job of annotation-based discovery, narrowed to the service's pods
    (tmp_path / "alerts.yml").write_text(generate("--rule-file", "--selector",
                                                  'job="kubernetes-pods",app_kubernetes_io_name="activestream"'))
    run = subprocess.run([promtool, "check", "rules", "alerts.yml"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert run.returncode == 0 and f"SUCCESS: {len(alert_rules())} rules found" in run.stdout, run.stdout + run.stderr
