"""The Kubernetes manifests: valid against the API schemas (kubernetes-validate, strict: no unknown
field), and wired as the service needs (probes, static membership, volume, grace period, scraping)."""

from __future__ import annotations

import shutil
import subprocess

import kubernetes_validate
import pytest
import yaml

from consumer import service
from consumer.config import Settings
from tests.deploy.conftest import DEPLOY, kustomization_documents, load_yaml

K8S = DEPLOY / "k8s"
KUBERNETES_VERSION = "1.30"
OPERATOR_KINDS = {"ServiceMonitor", "PrometheusRule"}  # CRDs: no schema in kubernetes-validate
KUSTOMIZATIONS = (K8S, K8S / "common", K8S / "scale-out")


def documents() -> list[dict]:
    return kustomization_documents(K8S)


def one(kind: str, name: str = "activestream") -> dict:
    found = [d for d in documents() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name)
    return found[0]


def container() -> dict:
    return one("StatefulSet")["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda d: d.name)
def test_every_file_is_listed_in_its_kustomization(directory):
    listed = {r for r in load_yaml(directory / "kustomization.yaml")["resources"] if r.endswith(".yaml")}
    not_resources = {"kustomization.yaml", "prometheus-adapter-values.yaml"}  # the adapter's own settings
    assert listed == {p.name for p in directory.glob("*.yaml")} - not_resources


def test_kubectl_kustomize_renders_both_topologies_as_the_tests_read_them():
    """The tests read the kustomizations themselves (resources and ConfigMap patches); kubectl's
    kustomize must make the same objects of them."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    for directory in (K8S, K8S / "scale-out"):
        out = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        rendered = [d for d in yaml.safe_load_all(out.stdout) if d]
        assert sorted((d["kind"], d["metadata"]["name"]) for d in rendered) == \
            sorted((d["kind"], d["metadata"]["name"]) for d in kustomization_documents(directory))
        config = next(d for d in rendered if d["kind"] == "ConfigMap")
        assert config["data"] == next(d for d in kustomization_documents(directory) if d["kind"] == "ConfigMap")["data"]
        for doc in rendered:
            assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "activestream"


@pytest.mark.parametrize("doc", [d for d in documents() + kustomization_documents(K8S / "scale-out")
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
    assert service._FLUSH_TIMEOUT_S + 5 < pod["terminationGracePeriodSeconds"] <= 30
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
    secret = one("Secret", "activestream-kafka")["stringData"]
    assert secret["ACTIVESTREAM_KAFKA__SECURITY_PROTOCOL"] == "SASL_SSL"


def test_settings_in_the_manifests_are_accepted_by_the_service(monkeypatch):
    for key, value in {**one("ConfigMap")["data"], **one("Secret", "activestream-kafka")["stringData"]}.items():
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
    for doc in documents() + kustomization_documents(K8S / "scale-out"):
        assert not pinned & set(doc.get("data", {})), doc["metadata"]["name"]
        for each in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            assert not pinned & {e["name"] for e in each.get("env", [])}, doc["metadata"]["name"]


def test_the_pod_disruption_budget_and_servicemonitor_select_the_pods():
    labels = one("StatefulSet")["spec"]["template"]["metadata"]["labels"]
    assert one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].items() <= labels.items()
    monitor = one("ServiceMonitor")["spec"]
    metrics_service = one("Service", "activestream")
    assert monitor["selector"]["matchLabels"].items() <= metrics_service["metadata"]["labels"].items()
    headless = one("Service", "activestream-headless")
    assert not monitor["selector"]["matchLabels"].items() <= headless["metadata"]["labels"].items()
    assert monitor["endpoints"][0]["port"] == "metrics"
    relabel = monitor["endpoints"][0]["relabelings"][0]
    assert relabel == {"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "instance"}
