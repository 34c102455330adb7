"""The compose demo: a valid Compose file (docker-compose's own schema check, no engine needed) whose
parts point at each other and at the repository's files as they must."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from consumer.cli import build_parser
from consumer.config import load_settings
from tests.deploy.conftest import DEPLOY, ROOT, load_yaml

COMPOSE = DEPLOY / "compose" / "compose.yaml"


def services() -> dict:
    return load_yaml(COMPOSE)["services"]


def test_docker_compose_accepts_the_file():
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.fail("docker-compose is not on PATH: apt-get install docker-compose (what .ci/run does)")
    out = subprocess.run([binary, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_service_is_built_from_the_repository_and_runs_with_settings_it_accepts(monkeypatch, tmp_path):
    service = services()["activestream"]
    assert (COMPOSE.parent / service["build"]["context"]).resolve() == ROOT
    assert service["command"] == ["run"]
    for key, value in service["environment"].items():
        monkeypatch.setenv(key, str(value))
    monkeypatch.setenv("ACTIVESTREAM_CHECKPOINT_DIR", str(tmp_path))
    settings = load_settings()
    assert settings.bootstrap_servers == "kafka:9092" and settings.query_rate_target == 0.3
    assert "activestream-data:/var/lib/activestream" in service["volumes"]


def test_the_topics_created_are_the_services_defaults():
    created = re.search(r"for topic in ([^;]+);", services()["topics"]["command"][0]).group(1).split()
    assert set(created) == set(load_settings().topics.model_dump().values())


def test_traffic_feeds_the_running_service_with_a_command_the_cli_has():
    traffic = services()["traffic"]
    args = build_parser().parse_args(traffic["command"])
    assert args.service == "http://activestream:9108" and args.bootstrap == "kafka:9092"
    assert traffic["depends_on"]["activestream"]["condition"] == "service_healthy"


def test_prometheus_scrapes_the_service_and_grafana_provisions_the_dashboard():
    prometheus = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")
    targets = prometheus["scrape_configs"][0]["static_configs"][0]["targets"]
    assert targets == ["activestream:9108"] and prometheus["scrape_configs"][0]["job_name"] == "activestream"
    assert "../prometheus:/etc/prometheus:ro" in services()["prometheus"]["volumes"]
    grafana = services()["grafana"]
    provider = load_yaml(DEPLOY / "grafana" / "provisioning" / "dashboards" / "activestream.yml")["providers"][0]
    assert f"../grafana/dashboards:{provider['options']['path']}:ro" in grafana["volumes"]
    assert "../grafana/provisioning:/etc/grafana/provisioning:ro" in grafana["volumes"]
    datasource = load_yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090"
    assert grafana["image"].startswith("grafana/grafana:11.6")  # the SDK build the dashboard is typed against


def test_label_studio_profile_runs_the_connector_with_settings_it_accepts(monkeypatch):
    from consumer.annotate.config import load_annotate_settings

    annotate = services()["annotate"]
    assert annotate["profiles"] == ["label-studio"] == services()["label-studio"]["profiles"]
    assert build_parser().parse_args(annotate["command"]).tool == "label-studio"
    for key, value in annotate["environment"].items():
        monkeypatch.setenv(key, "a-token" if key.endswith("TOKEN") else str(value))
    settings = load_annotate_settings()
    assert settings.annotate.url == "http://label-studio:8080" and settings.bootstrap_servers == "kafka:9092"
