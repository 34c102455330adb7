"""What the deployment tests share: the repository's deploy/ files and the Prometheus binaries.

Prometheus and promtool come from Debian's ``prometheus`` package (``.ci/run`` installs it). A test
that needs them fails when they are missing, unless ``ACTIVESTREAM_SKIP_PROMETHEUS=1`` says to skip.
"""

from __future__ import annotations

import base64
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


K8S = DEPLOY / "k8s"
EXAMPLE_OVERLAY = K8S / "overlays" / "example"
MONITORING = K8S / "components" / "monitoring"
# What kustomization_documents reads; anything else in a kustomization fails it rather than being left out.
KUSTOMIZATION_FIELDS = {"apiVersion", "kind", "resources", "components", "configMapGenerator", "secretGenerator",
                        "images", "labels", "patches"}


def kustomization_documents(directory: Path) -> list[dict]:
    """The objects a kustomization makes, as far as deploy/ uses kustomize: its resources (files, and
    directories with their own kustomization), ConfigMap and Secret generators (from files, env files
    and literals; the names without kustomize's hash suffix), components, labels, images and patches
    that add ConfigMap data, in kustomize's order (resources, generators, components, transformers)."""
    docs: list[dict] = []
    _accumulate(directory, docs, "Kustomization")
    return docs


def component_documents(directory: Path) -> list[dict]:
    """The objects a Component adds, on its own."""
    docs: list[dict] = []
    _accumulate(directory, docs, "Component")
    return docs


def _accumulate(directory: Path, docs: list[dict], kind: str) -> None:
    """Adds what the kustomization (or the Component) in ``directory`` makes to ``docs``, and applies
    its transformers to them all: a Component's apply to what its parent accumulated too."""
    kustomization = load_yaml(directory / "kustomization.yaml")
    assert kustomization["kind"] == kind, (directory, kustomization["kind"])
    assert set(kustomization) <= KUSTOMIZATION_FIELDS, set(kustomization) - KUSTOMIZATION_FIELDS
    for resource in kustomization.get("resources", []):
        path = directory / resource
        docs += kustomization_documents(path) if path.is_dir() else load_yaml_all(path)
    docs += generated(directory, kustomization)
    for component in kustomization.get("components", []):
        _accumulate(directory / component, docs, "Component")
    for entry in kustomization.get("labels", []):
        assert entry.get("includeSelectors") is False and not entry.get("includeTemplates"), entry
        for doc in docs:
            doc["metadata"].setdefault("labels", {}).update(entry["pairs"])
    for entry in kustomization.get("images", []):
        for doc in docs:
            for container in pod_containers(doc):
                name, tag = split_image(container["image"])
                if name == entry["name"]:
                    tag = entry.get("newTag", tag)
                    container["image"] = entry.get("newName", name) + (f":{tag}" if tag else "")
    for entry in kustomization.get("patches", []):
        patch = yaml.safe_load(entry["patch"])
        assert patch["kind"] == "ConfigMap" and set(patch) == {"apiVersion", "kind", "metadata", "data"}, patch
        name = patch["metadata"]["name"]
        target = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name)
        target["data"] = {**target["data"], **patch["data"]}


def generated(directory: Path, kustomization: dict) -> list[dict]:
    """The ConfigMaps and Secrets of a kustomization's generators."""
    docs = []
    for kind, field in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
        for entry in kustomization.get(field, []):
            assert set(entry) <= {"name", "files", "envs", "literals", "options"}, entry
            data = dict(literal.split("=", 1) for literal in entry.get("literals", []))
            for env in entry.get("envs", []):
                lines = (directory / env).read_text().splitlines()
                data |= dict(line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))
            for file in entry.get("files", []):
                assert "=" not in file, f"{file}: a key of its own is not read here"
                data[Path(file).name] = (directory / file).read_text()
            options = entry.get("options", {})
            assert set(options) <= {"labels", "disableNameSuffixHash"}, options
            metadata = {"name": entry["name"], **({"labels": dict(options["labels"])} if "labels" in options else {})}
            doc = {"apiVersion": "v1", "kind": kind, "metadata": metadata}
            if kind == "Secret":
                doc |= {"type": "Opaque", "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}
            else:
                doc["data"] = data
            docs.append(doc)
    return docs


def split_image(image: str) -> tuple[str, str]:
    """(name, tag) of an image reference without a digest; the tag is "" when none is given."""
    name, colon, tag = image.rpartition(":")
    return (image, "") if not colon or "/" in tag else (name, tag)


def pod_containers(doc: dict) -> list[dict]:
    return doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])


def secret_data(doc: dict) -> dict[str, str]:
    """A Secret's values, decoded."""
    return {k: base64.b64decode(v).decode() for k, v in doc.get("data", {}).items()} | doc.get("stringData", {})
