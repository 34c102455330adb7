"""The scale-out base (deploy/k8s/scale-out): scorers in a Deployment scaled on the features lag
through prometheus-adapter, two trainers in a StatefulSet, a disruption budget for each, and the
shared objects of deploy/k8s/common; scraped by the monitoring Component's ServiceMonitor. Schema
validation, and the overlay of either base with the Component, are in test_kubernetes.py."""

from __future__ import annotations

import pytest

from consumer import checkpointing
from consumer.config import Settings
from tests.deploy.conftest import (
    DEPLOY,
    EXAMPLE_OVERLAY,
    K8S,
    MONITORING,
    component_documents,
    kustomization_documents,
    load_yaml,
    secret_data,
)
from tests.deploy.promql import metric_names
from tests.deploy.test_prometheus_rules import exported_names

SCALE_OUT = K8S / "scale-out"
ADAPTER = SCALE_OUT / "prometheus-adapter-values.yaml"


def documents() -> list[dict]:
    return kustomization_documents(SCALE_OUT)


def one(kind: str, name: str, docs: list[dict] | None = None) -> dict:
    found = [d for d in (documents() if docs is None else docs) if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name)
    return found[0]


def scorers() -> dict:
    return one("Deployment", "activestream-scorer")


def trainers() -> dict:
    return one("StatefulSet", "activestream-trainer")


def pod_labels(workload: dict) -> dict:
    return workload["spec"]["template"]["metadata"]["labels"]


def container(workload: dict) -> dict:
    return workload["spec"]["template"]["spec"]["containers"][0]


def env(workload: dict) -> dict:
    return {e["name"]: e for e in container(workload)["env"]}


def single_process() -> dict:
    return next(d for d in kustomization_documents(K8S / "base") if d["kind"] == "StatefulSet")


def test_the_single_process_is_not_part_of_the_scale_out():
    kinds = {(d["kind"], d["metadata"]["name"]) for d in documents()}
    assert ("StatefulSet", "activestream") not in kinds and ("PodDisruptionBudget", "activestream") not in kinds
    workloads = [d for d in documents() if d["kind"] in {"Deployment", "StatefulSet"}]
    assert {env(w)["ACTIVESTREAM_ROLE"]["value"] for w in workloads} == {"scorer", "trainer"}


def test_scorers_are_a_stateless_deployment_the_autoscaler_sizes():
    spec = scorers()["spec"]
    assert "replicas" not in spec, "the HorizontalPodAutoscaler owns the count"
    assert env(scorers())["ACTIVESTREAM_ROLE"]["value"] == "scorer"
    assert "ACTIVESTREAM_GROUP_INSTANCE_ID" not in env(scorers()), "a Deployment's pod names do not come back"
    assert "volumeClaimTemplates" not in spec
    mounts = {m["mountPath"] for m in container(scorers())["volumeMounts"]}
    assert str(Settings.model_fields["checkpoint_dir"].default) not in mounts
    assert {v["name"] for v in spec["template"]["spec"]["volumes"]} == {"tmp", "kafka-ca"}
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_scorers_are_ready_on_readyz_and_stop_within_the_single_process_grace_period():
    c = container(scorers())
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == c["startupProbe"]["httpGet"]["path"] == "/healthz"
    pod = scorers()["spec"]["template"]["spec"]
    base = single_process()["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == base["terminationGracePeriodSeconds"]
    assert pod["terminationGracePeriodSeconds"] > checkpointing.FLUSH_TIMEOUT_S + 5
    assert pod["securityContext"] == base["securityContext"]
    assert c["securityContext"] == container(single_process())["securityContext"]
    assert c["envFrom"] == container(single_process())["envFrom"]


def test_the_autoscaler_reads_the_features_lag_from_prometheus_adapter():
    hpa = one("HorizontalPodAutoscaler", "activestream-scorer")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "activestream-scorer"}
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "External"
    assert metric["external"]["target"]["type"] == "AverageValue"
    (rule,) = load_yaml(ADAPTER)["rules"]["external"]
    assert rule["name"]["as"] == metric["external"]["metric"]["name"]
    assert metric["external"]["metric"]["selector"]["matchLabels"] == {"job": "activestream"}
    query = rule["metricsQuery"].replace("<<.GroupBy>>", "namespace").replace("<<.LabelMatchers>>",
                                                                               'namespace="ns"')
    assert metric_names(query) == metric_names(rule["seriesQuery"]) == {"activestream_consumer_lag_records"}
    assert metric_names(query) <= exported_names()
    assert 'topic="features"' in query and rule["resources"]["overrides"]["namespace"]["resource"] == "namespace"


def test_two_trainers_with_static_membership_and_no_shared_volume():
    spec = trainers()["spec"]
    assert spec["replicas"] == 2 and spec["podManagementPolicy"] == "Parallel"
    assert env(trainers())["ACTIVESTREAM_ROLE"]["value"] == "trainer"
    assert env(trainers())["ACTIVESTREAM_GROUP_INSTANCE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert "volumeClaimTemplates" not in spec, "checkpoints travel in the model topic"
    data = next(v for v in spec["template"]["spec"]["volumes"] if v["name"] == "data")
    assert "emptyDir" in data
    mounts = {m["name"]: m["mountPath"] for m in container(trainers())["volumeMounts"]}
    assert env(trainers())["ACTIVESTREAM_CHECKPOINT_DIR"]["value"] == mounts["data"]
    headless = one("Service", spec["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["selector"].items() <= pod_labels(trainers()).items()


def test_a_standby_trainer_does_not_hold_up_rollouts_or_drains():
    """A standby answers 503 on /readyz by design: the trainers' readiness is the loop turning."""
    c = container(trainers())
    assert c["readinessProbe"]["httpGet"]["path"] == "/healthz"
    pod = trainers()["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == single_process()["spec"]["template"]["spec"][
        "terminationGracePeriodSeconds"]
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["podAffinityTerm"]["labelSelector"]["matchLabels"] == trainers()["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize("name, workload", [("activestream-scorer", scorers), ("activestream-trainer", trainers)])
def test_each_workload_has_its_own_disruption_budget_of_one(name, workload):
    budgets = [d for d in documents() if d["kind"] == "PodDisruptionBudget"]
    selecting = [b for b in budgets if b["spec"]["selector"]["matchLabels"].items() <= pod_labels(workload()).items()]
    assert [b["metadata"]["name"] for b in selecting] == [name], "a pod under two budgets cannot be evicted"
    assert selecting[0]["spec"]["maxUnavailable"] == 1
    assert workload()["spec"]["selector"]["matchLabels"] == selecting[0]["spec"]["selector"]["matchLabels"]


def test_every_pod_is_scraped_as_job_activestream():
    monitor = one("ServiceMonitor", "activestream", component_documents(MONITORING))["spec"]
    metrics_service = one("Service", "activestream")
    assert monitor["selector"]["matchLabels"].items() <= metrics_service["metadata"]["labels"].items()
    for workload in (scorers(), trainers()):
        assert metrics_service["spec"]["selector"].items() <= pod_labels(workload).items()
        assert {p["name"] for p in container(workload)["ports"]} == {"metrics"}


def test_the_scale_out_settings_are_the_pinned_ones(monkeypatch, tmp_path):
    data = one("ConfigMap", "activestream")["data"]
    assert data["ACTIVESTREAM_TOPICS__MODEL"] == "model" and data["ACTIVESTREAM_TOPICS__LEASE"] == "trainer-lease"
    assert {k: data[k] for k in data if k.startswith("ACTIVESTREAM_MODEL__")} == {
        "ACTIVESTREAM_MODEL__PUBLISH_EVERY_S": "1.0", "ACTIVESTREAM_MODEL__PUBLISH_EVERY_LABELS": "1000",
        "ACTIVESTREAM_MODEL__CHUNK_BYTES": "900000", "ACTIVESTREAM_MODEL__FULL_EVERY": "50"}
    from consumer.config import load_settings

    for workload in (scorers(), trainers()):
        secret = secret_data(one("Secret", "activestream-kafka", kustomization_documents(EXAMPLE_OVERLAY)))
        for key, value in {**data, **secret}.items():
            monkeypatch.setenv(key, value)
        for key, entry in env(workload).items():
            monkeypatch.setenv(key, entry.get("value", "activestream-trainer-0"))
        monkeypatch.setenv("ACTIVESTREAM_CHECKPOINT_DIR", str(tmp_path))  # the pod's volume, here
        settings = load_settings()
        assert str(getattr(settings.role, "value", settings.role)) == env(workload)["ACTIVESTREAM_ROLE"]["value"]


def test_the_scale_out_page_documents_what_the_manifests_set():
    page = (DEPLOY.parent / "docs" / "scale-out.md").read_text()
    for key in one("ConfigMap", "activestream")["data"]:
        if key.startswith(("ACTIVESTREAM_MODEL__", "ACTIVESTREAM_TOPICS__")):
            assert f"`{key}`" in page, key
    for topic in ("model", "trainer-lease"):
        assert f"| `{topic}` (`ACTIVESTREAM_TOPICS__" in page and "| **1** |" in page, topic
    assert "cleanup.policy=compact" in page
    (rule,) = load_yaml(ADAPTER)["rules"]["external"]
    assert f"`{rule['name']['as']}`" in page and "prometheus-adapter-values.yaml" in page
    for alert in ("ActivestreamNoActiveTrainer", "ActivestreamModelStale", "ActivestreamLabelsUnknown"):
        assert f"metrics.md#{alert.lower()}" in page
    assert "`benchmarks/results/scale_out.md`" in page
