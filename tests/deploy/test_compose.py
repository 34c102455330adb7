"""The compose demo: a valid Compose file (docker-compose's own schema check, no engine needed) whose
parts point at each other and at the repository's files as they must."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
import yaml

from consumer.cli import build_parser
from consumer.config import Settings, load_settings
from tests.deploy.conftest import DEPLOY, ROOT, load_yaml

COMPOSE = DEPLOY / "compose" / "compose.yaml"
# The topics of the scorer/trainer split, by their default names, until consumer/config.py has them.
PINNED_TOPICS = {"model": "model", "lease": "trainer-lease"}
DEFAULT = re.compile(r"\$\{(\w+):-([^}]*)\}")


def services() -> dict:
    return load_yaml(COMPOSE)["services"]


def docker_compose(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.fail("docker-compose is not on PATH: apt-get install docker-compose (what .ci/run does)")
    return subprocess.run([binary, "-f", str(COMPOSE), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def set_environment(monkeypatch, environment: dict) -> None:
    """A service's environment as compose passes it (``${VAR:-default}`` unset: the default); the role
    left out while the service's settings have no role yet."""
    for key, value in environment.items():
        if key == "ACTIVESTREAM_ROLE" and "role" not in Settings.model_fields:
            continue
        monkeypatch.setenv(key, DEFAULT.sub(r"\2", str(value)))


def test_docker_compose_accepts_the_file():
    out = docker_compose("config", "-q")
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_service_is_built_from_the_repository_and_runs_with_settings_it_accepts(monkeypatch, tmp_path):
    service = services()["activestream"]
    assert (COMPOSE.parent / service["build"]["context"]).resolve() == ROOT
    assert service["command"] == ["run"]
    set_environment(monkeypatch, service["environment"])
    monkeypatch.setenv("ACTIVESTREAM_CHECKPOINT_DIR", str(tmp_path))
    settings = load_settings()
    assert settings.bootstrap_servers == "kafka:9092" and settings.query_rate_target == 0.3
    assert "activestream-data:/var/lib/activestream" in service["volumes"]


def test_no_service_pins_a_learner_so_each_runs_the_registrys_default(monkeypatch, tmp_path):
    for name, service in services().items():
        environment = service.get("environment", {})
        assert not {"ACTIVESTREAM_LEARNER", "ACTIVESTREAM_LEARNER_PARAMS"} & set(environment), name
    set_environment(monkeypatch, services()["activestream"]["environment"])
    monkeypatch.setenv("ACTIVESTREAM_CHECKPOINT_DIR", str(tmp_path))
    settings = load_settings()
    assert settings.learner is None and settings.learner_params == {}


def roles(config: dict, profiles: set[str]) -> dict[str, str]:
    """The role of every activestream process the configuration starts with these profiles."""
    return {name: s["environment"]["ACTIVESTREAM_ROLE"] for name, s in config["services"].items()
            if "ACTIVESTREAM_ROLE" in s.get("environment", {}) and set(s.get("profiles", [])) <= profiles}


def test_the_default_is_the_single_process_and_the_scale_out_profile_two_scorers_and_a_trainer():
    out = docker_compose("config")
    assert out.returncode == 0, out.stderr
    assert roles(yaml.safe_load(out.stdout), set()) == {"activestream": "all"}
    out = docker_compose("--profile", "scale-out", "config", env={"ACTIVESTREAM_ROLE": "trainer"})
    assert out.returncode == 0, out.stderr
    config = yaml.safe_load(out.stdout)
    assert roles(config, {"scale-out"}) == {"activestream": "trainer", "scorer-1": "scorer", "scorer-2": "scorer"}
    for name in ("scorer-1", "scorer-2"):
        scorer = config["services"][name]
        assert scorer["profiles"] == ["scale-out"] and scorer["command"] == ["run"]
        assert "volumes" not in scorer and "ports" not in scorer and scorer["image"] == "activestream:local"
        assert "ACTIVESTREAM_GROUP_INSTANCE_ID" not in scorer["environment"]
        own = {"ACTIVESTREAM_ROLE", "ACTIVESTREAM_GROUP_INSTANCE_ID", "ACTIVESTREAM_CHECKPOINT__EVERY_S"}
        shared = {k: v for k, v in config["services"]["activestream"]["environment"].items() if k not in own}
        assert {k: v for k, v in scorer["environment"].items() if k != "ACTIVESTREAM_ROLE"} == shared


def test_the_scorers_run_with_settings_the_service_accepts(monkeypatch):
    set_environment(monkeypatch, services()["scorer-1"]["environment"])
    assert load_settings().role == "scorer"


def test_the_topics_created_are_the_services_defaults():
    script = services()["topics"]["command"][0]
    created = re.search(r"for topic in ([^;]+);", script).group(1).split()
    single = re.findall(r"--topic (\S+) --partitions 1 ", script)
    assert single == ["model", "trainer-lease"]
    assert "--topic model --partitions 1 --replication-factor 1 --config cleanup.policy=compact" in script
    defaults = load_settings().topics.model_dump()
    expected = {**PINNED_TOPICS, **defaults}
    assert set(created) | set(single) == set(expected.values())
    assert {expected["model"], expected["lease"]} == set(single)


def test_traffic_feeds_the_running_service_with_a_command_the_cli_has():
    traffic = services()["traffic"]
    args = build_parser().parse_args(traffic["command"])
    assert args.service == "http://activestream:9108" and args.bootstrap == "kafka:9092"
    assert traffic["depends_on"]["activestream"]["condition"] == "service_healthy"


def test_prometheus_scrapes_every_replica_and_grafana_provisions_the_dashboard():
    prometheus = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")
    job, annotate = prometheus["scrape_configs"]
    assert job["static_configs"][0]["targets"] == ["activestream:9108"] and job["job_name"] == "activestream"
    # the connector of the label-studio profile, as the dashboard's last row reads it
    connector = services()["annotate"]
    assert annotate["job_name"] == "activestream-annotate" and "label-studio" in connector["profiles"]
    assert annotate["dns_sd_configs"] == [{"names": ["annotate"], "type": "A", "port": 9109, "refresh_interval": "15s"}]
    assert "9109:9109" in connector["ports"]
    scorers = sorted(name for name, s in services().items() if s.get("environment", {}).get("ACTIVESTREAM_ROLE")
                     == "scorer")
    assert job["dns_sd_configs"] == [{"names": scorers, "type": "A", "port": 9108, "refresh_interval": "15s"}]
    relabel = job["relabel_configs"][0]
    assert relabel["source_labels"] == ["__meta_dns_name"] and relabel["replacement"] == "${1}:9108"
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
