"""What the deployment tests share: the repository's deploy/ files and the Prometheus binaries.

Prometheus and promtool come from Debian's ``prometheus`` package (``.ci/run`` installs it). A test
that needs them fails when they are missing, unless ``ACTIVESTREAM_SKIP_PROMETHEUS=1`` says to skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    if os.environ.get("ACTIVESTREAM_SKIP_PROMETHEUS") == "1":
        pytest.skip(f"{name} not installed and ACTIVESTREAM_SKIP_PROMETHEUS=1")
    pytest.fail(f"{name} is not on PATH: apt-get install prometheus (or set ACTIVESTREAM_SKIP_PROMETHEUS=1 to skip)")


@pytest.fixture(scope="session")
def promtool() -> str:
    return _binary("promtool")


@pytest.fixture(scope="session")
def prometheus_binary() -> str:
    return _binary("prometheus")


def load_yaml(path: Path) -> object:
    return yaml.safe_load(path.read_text())


def load_yaml_all(path: Path) -> list:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def alert_rules() -> list[dict]:
    groups = load_yaml(DEPLOY / "prometheus" / "alerts.yml")["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def kustomization_documents(directory: Path) -> list[dict]:
    """The objects a kustomization makes, as far as deploy/k8s uses kustomize: its resources (files,
    and directories with their own kustomization) and patches that add ConfigMap data."""
    kustomization = load_yaml(directory / "kustomization.yaml")
    docs: list[dict] = []
    for resource in kustomization["resources"]:
        path = directory / resource
        docs += kustomization_documents(path) if path.is_dir() else load_yaml_all(path)
    for entry in kustomization.get("patches", []):
        patch = yaml.safe_load(entry["patch"])
        assert patch["kind"] == "ConfigMap" and set(patch) == {"apiVersion", "kind", "metadata", "data"}, patch
        name = patch["metadata"]["name"]
        target = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name)
        target["data"] = {**target["data"], **patch["data"]}
    return docs
