"""The Kubernetes manifests: two bases (base/: the single process; scale-out/), the monitoring
Component and the example overlay. Valid against the API schemas (kubernetes-validate, strict: no
unknown field), laid out as kustomize users expect (no Secret in a base, the Secrets generated in the
overlay, monitoring a Component, the image set by an images: entry, the dashboard a ConfigMap for
Grafana's sidecar), and wired as the service needs (probes, static membership, volume, grace period,
scraping). kubectl's kustomize, where installed, must render what the tests read."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from consumer import checkpointing
from consumer.config import Settings
from tests.deploy.conftest import (
    DEPLOY,
    EXAMPLE_OVERLAY,
    K8S,
    MONITORING,
    ROOT,
    component_documents,
    kustomization_documents,
    load_yaml,
    load_yaml_all,
    pod_containers,
    secret_data,
)
from tests.deploy.test_prometheus_rules import OTHER_BASE, OTHER_SELECTOR, rules_generator

KUBERNETES_VERSION = "1.30"
OPERATOR_KINDS = {"ServiceMonitor", "PrometheusRule"}  # CRDs: no schema in kubernetes-validate
BASE, SCALE_OUT, COMMON = K8S / "base", K8S / "scale-out", K8S / "common"
BASES = (BASE, SCALE_OUT)
KUSTOMIZATIONS = (BASE, COMMON, SCALE_OUT, MONITORING, EXAMPLE_OVERLAY)
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "activestream.json"
HASHED = re.compile(r"-[a-z0-9]{10}$")  # the suffix kustomize gives a generated object's name


def documents() -> list[dict]:
    """The single process's base."""
    return kustomization_documents(BASE)


def overlay() -> list[dict]:
    """The example overlay: the base, the monitoring Component, the Kafka Secrets."""
    return kustomization_documents(EXAMPLE_OVERLAY)


def one(kind: str, name: str = "activestream", docs: list[dict] | None = None) -> dict:
    found = [d for d in (documents() if docs is None else docs) if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name)
    return found[0]


def container() -> dict:
    return one("StatefulSet")["spec"]["template"]["spec"]["containers"][0]


def project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def referenced_files(kustomization: dict) -> set[str]:
    """The files of its own directory a kustomization reads: resources, and its generators' files."""
    listed = [r for r in kustomization.get("resources", []) if "/" not in r]
    for field in ("configMapGenerator", "secretGenerator"):
        for entry in kustomization.get(field, []):
            listed += entry.get("files", []) + entry.get("envs", [])
    return {name for name in listed if "/" not in name}


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda d: d.relative_to(K8S).as_posix())
def test_every_file_is_listed_in_its_kustomization(directory):
    not_read = {"kustomization.yaml", "prometheus-adapter-values.yaml"}  # the adapter's own settings
    files = {p.name for p in directory.iterdir() if p.is_file()} - not_read
    assert referenced_files(load_yaml(directory / "kustomization.yaml")) == files


def test_no_base_ships_a_secret_and_the_example_overlay_generates_both():
    """Applying a base never replaces the Secret that an overlay or the cluster's tooling made."""
    made = [kustomization_documents(d) for d in (*BASES, COMMON)] + [component_documents(MONITORING)]
    assert "Secret" not in {d["kind"] for docs in made for d in docs}
    for directory in (*BASES, COMMON, MONITORING):
        for path in directory.glob("*.yaml"):
            assert "Secret" not in {d.get("kind") for d in load_yaml_all(path)}, path
    generators = load_yaml(EXAMPLE_OVERLAY / "kustomization.yaml")["secretGenerator"]
    assert {g["name"] for g in generators} == {"activestream-kafka", "activestream-kafka-ca"}
    assert "ca.crt" in secret_data(one("Secret", "activestream-kafka-ca", overlay()))
    # the names the pods read are the generated ones (kustomize rewrites them with the hash suffix)
    pod = one("StatefulSet")["spec"]["template"]["spec"]
    assert {s["secretRef"]["name"] for s in pod["containers"][0]["envFrom"] if "secretRef" in s} == {
        "activestream-kafka"}
    assert {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v} == {"activestream-kafka-ca"}


def test_monitoring_is_a_component_the_example_overlay_includes():
    component = load_yaml(MONITORING / "kustomization.yaml")
    assert (component["apiVersion"], component["kind"]) == ("kustomize.config.k8s.io/v1alpha1", "Component")
    for directory in BASES:
        assert not OPERATOR_KINDS & {d["kind"] for d in kustomization_documents(directory)}, directory
        assert "components" not in load_yaml(directory / "kustomization.yaml")
    example = load_yaml(EXAMPLE_OVERLAY / "kustomization.yaml")
    assert [(EXAMPLE_OVERLAY / c).resolve() for c in example["components"]] == [MONITORING]
    assert [(EXAMPLE_OVERLAY / r).resolve() for r in example["resources"]] == [BASE]
    made = {(d["kind"], d["metadata"]["name"]) for d in overlay()}
    assert made == {(d["kind"], d["metadata"]["name"]) for d in documents()} | {
        ("ServiceMonitor", "activestream"), ("PrometheusRule", "activestream"), ("ConfigMap", "activestream-dashboard"),
        ("Secret", "activestream-kafka"), ("Secret", "activestream-kafka-ca")}


def test_the_image_is_set_by_an_images_entry_at_the_projects_version():
    for directory in (*BASES, EXAMPLE_OVERLAY):
        (entry,) = load_yaml(directory / "kustomization.yaml")["images"]
        assert entry["name"] == "activestream" and entry["newTag"] == project_version(), directory
    for directory in BASES:  # the workloads name the image only: its tag is the images entry's
        for path in directory.glob("*.yaml"):
            for doc in load_yaml_all(path):
                for each in pod_containers(doc):
                    assert each["image"] == "activestream", path
    for docs in (documents(), kustomization_documents(SCALE_OUT), overlay()):
        images = {c["image"] for d in docs for c in pod_containers(d)}
        assert images == {f"activestream:{project_version()}"}


def test_the_dashboard_is_a_configmap_for_grafanas_sidecar():
    dashboard = one("ConfigMap", "activestream-dashboard", overlay())
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["data"] == {"activestream.json": DASHBOARD.read_text()}
    assert [p.name for p in DASHBOARD.parent.iterdir()] == [DASHBOARD.name]  # the one dashboard there is
    (generator,) = load_yaml(DEPLOY / "grafana" / "kustomization.yaml")["configMapGenerator"]
    assert generator["options"]["disableNameSuffixHash"] is True  # one ConfigMap, not one per change


def kubectl_kustomize(directory: Path) -> list[dict]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    out = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def unhashed(doc: dict) -> str:
    """A rendered object's name without the hash suffix kustomize gives the Secrets it generates."""
    name = doc["metadata"]["name"]
    return HASHED.sub("", name) if doc["kind"] == "Secret" else name


@pytest.mark.parametrize("directory", [*BASES, EXAMPLE_OVERLAY], ids=lambda d: d.relative_to(K8S).as_posix())
def test_kubectl_kustomize_renders_what_the_tests_read(directory):
    """The tests read the kustomizations themselves (kustomization_documents); kubectl's kustomize
    must make the same objects of them, with the same settings, Secrets, images and labels."""
    rendered, read = kubectl_kustomize(directory), kustomization_documents(directory)
    assert sorted((d["kind"], unhashed(d)) for d in rendered) == \
        sorted((d["kind"], d["metadata"]["name"]) for d in read)
    for doc in rendered:
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "activestream"
        mine = one(doc["kind"], unhashed(doc), read)
        assert doc["metadata"]["labels"] == mine["metadata"]["labels"]
        if doc["kind"] == "ConfigMap":
            assert doc["data"] == mine["data"]
        if doc["kind"] == "Secret":  # a hash of the content in the name: new credentials roll the pods
            assert secret_data(doc) == secret_data(mine) and HASHED.search(doc["metadata"]["name"])
        assert [c["image"] for c in pod_containers(doc)] == [c["image"] for c in pod_containers(mine)]


def test_kubectl_kustomize_points_the_pods_at_the_generated_secrets():
    rendered = kubectl_kustomize(EXAMPLE_OVERLAY)
    secrets = {unhashed(d): d["metadata"]["name"] for d in rendered if d["kind"] == "Secret"}
    pod = next(d for d in rendered if d["kind"] == "StatefulSet")["spec"]["template"]["spec"]
    assert [s["secretRef"]["name"] for s in pod["containers"][0]["envFrom"] if "secretRef" in s] == [
        secrets["activestream-kafka"]]
    assert [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v] == [secrets["activestream-kafka-ca"]]


def test_an_overlay_of_the_scale_out_base_with_the_component_builds(tmp_path):
    """The example with `resources: - ../../scale-out`: the Component fits either base."""
    shutil.copytree(K8S, tmp_path / "k8s")
    shutil.copytree(DEPLOY / "grafana", tmp_path / "grafana")
    example = tmp_path / "k8s" / "overlays" / "example" / "kustomization.yaml"
    kustomization = load_yaml(example)
    kustomization["resources"] = ["../../scale-out"]
    example.write_text(yaml.safe_dump(kustomization))
    rendered = kubectl_kustomize(example.parent)
    kinds = {(d["kind"], unhashed(d)) for d in rendered}
    assert {("Deployment", "activestream-scorer"), ("StatefulSet", "activestream-trainer"),
            ("ServiceMonitor", "activestream"), ("PrometheusRule", "activestream"),
            ("ConfigMap", "activestream-dashboard"), ("Secret", "activestream-kafka")} <= kinds
    assert ("StatefulSet", "activestream") not in kinds


def test_an_overlay_replaces_the_components_rules_with_rules_for_another_selector(tmp_path):
    """docs/deploying.md's way to change the job selector or the runbook base on Kubernetes: the
    PrometheusRule rules.py writes for them, as a patch in the overlay (its groups replace the
    Component's)."""
    shutil.copytree(K8S, tmp_path / "k8s")
    shutil.copytree(DEPLOY / "grafana", tmp_path / "grafana")
    example = tmp_path / "k8s" / "overlays" / "example"
    (example / "prometheusrule.yaml").write_text(rules_generator().prometheus_rule(OTHER_SELECTOR, OTHER_BASE))
    kustomization = load_yaml(example / "kustomization.yaml")
    kustomization["patches"].append({"path": "prometheusrule.yaml"})
    (example / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    (rule,) = [d for d in kubectl_kustomize(example) if d["kind"] == "PrometheusRule"]
    rules = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert len(rules) == len((MONITORING / "prometheusrule.yaml").read_text().split("- alert: ")) - 1
    for each in rules:
        assert OTHER_SELECTOR in each["expr"] and 'job="activestream"' not in each["expr"], each["alert"]
        assert each["annotations"]["runbook_url"] == f"{OTHER_BASE}docs/metrics.md#{each['alert'].lower()}"


@pytest.mark.parametrize("doc", [d for d in documents() + kustomization_documents(SCALE_OUT) + overlay()
                                 if d["kind"] not in OPERATOR_KINDS],
                         ids=lambda d: f"{d['kind']}-{d['metadata']['name']}")
def test_manifest_is_valid_against_the_kubernetes_schema(doc):
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_statefulset_keeps_checkpoints_on_a_claim_per_replica_at_the_image_volume():
    spec = one("StatefulSet")["spec"]
    claim = spec["volumeClaimTemplates"][0]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    mounts = {m["name"]: m["mountPath"] for m in container()["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == str(Settings.model_fields["checkpoint_dir"].default)
    env = {e["name"]: e for e in container()["env"]}
    assert env["ACTIVESTREAM_CHECKPOINT_DIR"]["value"] == mounts["data"]
    assert spec["serviceName"] == "activestream-headless"
    assert one("Service", "activestream-headless")["spec"]["clusterIP"] == "None"


def test_group_instance_id_is_the_pod_name():
    env = {e["name"]: e for e in container()["env"]}
    assert env["ACTIVESTREAM_GROUP_INSTANCE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_probes_liveness_is_the_loop_and_readiness_is_restored_and_assigned():
    c = container()
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
    # the startup budget covers the recovery read (up to 120 s) with room to spare
    assert c["startupProbe"]["periodSeconds"] * c["startupProbe"]["failureThreshold"] >= 240
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports["metrics"] == Settings.model_fields["metrics_port"].default


def test_shutdown_fits_the_grace_period_and_the_pod_runs_as_the_image_user():
    pod = one("StatefulSet")["spec"]["template"]["spec"]
    assert checkpointing.FLUSH_TIMEOUT_S + 5 < pod["terminationGracePeriodSeconds"] <= 30
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] == 10001
    security = container()["securityContext"]
    assert security["readOnlyRootFilesystem"] and not security["allowPrivilegeEscalation"]
    requests = container()["resources"]["requests"]
    assert requests["cpu"] and requests["memory"]


def test_settings_and_secrets_are_activestream_variables():
    sources = container()["envFrom"]
    assert {s.get("configMapRef", s.get("secretRef"))["name"] for s in sources} == {"activestream",
                                                                                     "activestream-kafka"}
    for key in one("ConfigMap")["data"]:
        assert key.startswith("ACTIVESTREAM_")
    secret = secret_data(one("Secret", "activestream-kafka", overlay()))
    assert all(key.startswith("ACTIVESTREAM_KAFKA__") for key in secret)
    assert secret["ACTIVESTREAM_KAFKA__SECURITY_PROTOCOL"] == "SASL_SSL"


def test_settings_in_the_manifests_are_accepted_by_the_service(monkeypatch):
    settings_and_secret = {**one("ConfigMap", docs=overlay())["data"],
                           **secret_data(one("Secret", "activestream-kafka", overlay()))}
    for key, value in settings_and_secret.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ACTIVESTREAM_GROUP_INSTANCE_ID", "activestream-0")
    from consumer.config import load_settings
    from consumer.kafka import consumer_config

    settings = load_settings()
    conf = consumer_config(settings, "features")
    assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.username"] == "activestream"
    assert conf["group.instance.id"] == "activestream-0-features" and conf["session.timeout.ms"] == "60000"


def test_no_manifest_pins_a_learner_so_the_service_runs_the_registrys_default():
    pinned = {"ACTIVESTREAM_LEARNER", "ACTIVESTREAM_LEARNER_PARAMS"}
    for doc in documents() + kustomization_documents(SCALE_OUT) + overlay():
        assert not pinned & set(doc.get("data", {})), doc["metadata"]["name"]
        for each in pod_containers(doc):
            assert not pinned & {e["name"] for e in each.get("env", [])}, doc["metadata"]["name"]


def test_the_pod_disruption_budget_and_servicemonitor_select_the_pods():
    labels = one("StatefulSet")["spec"]["template"]["metadata"]["labels"]
    assert one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    monitor = one("ServiceMonitor", docs=overlay())["spec"]
    metrics_service = one("Service", "activestream")
    assert monitor["selector"]["matchLabels"].items() <= metrics_service["metadata"]["labels"].items()
    headless = one("Service", "activestream-headless")
    assert not monitor["selector"]["matchLabels"].items() <= headless["metadata"]["labels"].items()
    assert monitor["endpoints"][0]["port"] == "metrics"
    relabel = monitor["endpoints"][0]["relabelings"][0]
    assert relabel == {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "instance"}
    # the job label is the Service's app.kubernetes.io/name (not its name, which an overlay may
    # prefix): the job the alerts select
    assert metrics_service["metadata"]["labels"][monitor["jobLabel"]] == "activestream"
