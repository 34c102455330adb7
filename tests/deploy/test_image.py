"""The service image, built and run for real with podman.

``deploy/image/build.sh`` builds the Dockerfile on a base made from Debian's packages (no image
registry is reachable here); the containers then run against the test broker on the host's network
(``--network host``), read-only, with their checkpoints on a host folder as the volume. They check
what the image promises: it scores a stream and applies labels, stops on SIGTERM with exit 0 and a
checkpoint well inside Kubernetes' 30 s grace period, a new container resumes from that checkpoint
without predicting a record twice, it runs as uid 10001 on a read-only root file system, its
HEALTHCHECK answers, and a configuration error exits 2 naming the variable, as outside a container.

Without podman these tests skip, unless ACTIVESTREAM_REQUIRE_IMAGE is set (CI): then they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer

from consumer.demo.broker import CLIENT_SETTINGS, Broker, free_port
from consumer.demo.feed import drifting_stream
from tests.deploy.conftest import ROOT
from tests.kafka_helpers import Annotator, read_all, unique_topics

TAG = "localhost/activestream:test"
BUILD = ROOT / "deploy" / "image" / "build.sh"
CONF = ROOT / "deploy" / "image" / "containers.conf"
SERVICE_UID = 10001
VOLUME = "/var/lib/activestream"  # the image's VOLUME and ACTIVESTREAM_CHECKPOINT_DIR
KUBERNETES_GRACE_S = 30  # terminationGracePeriodSeconds' default

if shutil.which("podman") is None and not os.environ.get("ACTIVESTREAM_REQUIRE_IMAGE"):
    pytest.skip("podman is not installed (deploy/image/build.sh installs it; CI sets ACTIVESTREAM_REQUIRE_IMAGE)",
                allow_module_level=True)


def podman(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "CONTAINERS_CONF": str(CONF)}
    out = subprocess.run(["podman", "--runtime", "runc", *args], env=env, capture_output=True, text=True,
                         timeout=timeout)
    if check:
        assert out.returncode == 0, (args, out.returncode, out.stdout[-2000:], out.stderr[-2000:])
    return out


@pytest.fixture(scope="session")
def image() -> str:
    """The image, built (or found up to date in podman's cache) by deploy/image/build.sh."""
    if os.geteuid() != 0:  # required (CI): a failure, not a skip
        why = "podman's build here needs root (debootstrap, the cgroupfs manager)"
        pytest.fail(why) if os.environ.get("ACTIVESTREAM_REQUIRE_IMAGE") else pytest.skip(why)
    started = time.monotonic()
    out = subprocess.run(["bash", str(BUILD), TAG], capture_output=True, text=True, timeout=1500)
    assert out.returncode == 0, f"build.sh failed:\n{out.stdout[-3000:]}\n{out.stderr[-5000:]}"
    print(f"\nbuild.sh: {time.monotonic() - started:.0f} s")
    return TAG


class Containers:
    """The containers of one test, each with a unique name; removed at the end of the test."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def run(self, image: str, env: dict[str, str], volume: Path | None = None) -> str:
        """Start the image's service (``run``) read-only, on the host's network, as its user."""
        name = f"activestream-test-{uuid.uuid4().hex[:8]}"
        self.names.append(name)
        options = ["--network", "host", "--read-only", "--read-only-tmpfs=false", "--tmpfs", "/tmp"]
        if volume is not None:
            options += ["-v", f"{volume}:{VOLUME}"]
        for key, value in env.items():
            options += ["-e", f"{key}={value}"]
        podman("run", "-d", "--name", name, *options, image)
        return name

    def logs(self, name: str) -> str:
        """The container's log, less librdkafka's lines on the connections it lost."""
        out = podman("logs", name, check=False)
        return "\n".join(line for line in (out.stdout + out.stderr).splitlines() if "Connect to ipv4#" not in line)

    def remove(self) -> None:
        for name in self.names:
            podman("rm", "--force", "--time", "0", name, check=False)


@pytest.fixture
def containers() -> Iterator[Containers]:
    made = Containers()
    try:
        yield made
    finally:
        made.remove()


def service_env(bootstrap: str, topics: dict[str, str], group: str, port: int) -> dict[str, str]:
    return {"ACTIVESTREAM_BOOTSTRAP_SERVERS": bootstrap, "ACTIVESTREAM_GROUP_ID": group,
            "ACTIVESTREAM_METRICS_PORT": str(port), "ACTIVESTREAM_KAFKA_CONSUMER": json.dumps(CLIENT_SETTINGS),
            "ACTIVESTREAM_CHECKPOINT__EVERY_S": "2",
            **{f"ACTIVESTREAM_TOPICS__{k.upper()}": v for k, v in topics.items()}}


def metric(port: int, name: str, labels: str = "") -> float:
    """A counter of the service's /metrics (0 until it answers)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return 0.0
    match = re.search(rf"^activestream_{name}_total{re.escape(labels)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def running(name: str) -> bool:
    return podman("inspect", "--format", "{{.State.Running}}", name).stdout.strip() == "true"


def wait_until(condition, timeout_s: float, what: str, containers: Containers, name: str) -> float:
    """Poll ``condition`` (another process's state: nothing to wait on but it) until it holds; fail
    with the container's log after ``timeout_s``, or as soon as the container has exited."""
    started = time.monotonic()
    while not condition():
        assert running(name), f"{name} exited while waiting for {what}:\n{containers.logs(name)}"
        assert time.monotonic() - started < timeout_s, f"{what}: not within {timeout_s} s\n{containers.logs(name)}"
        time.sleep(0.2)
    return time.monotonic() - started


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0


def sigterm(name: str) -> tuple[int, float]:
    """SIGTERM the container's PID 1 (the image's STOPSIGNAL); its exit code and how long it took."""
    started = time.monotonic()
    podman("kill", "--signal", "SIGTERM", name)
    code = podman("wait", name, timeout=KUBERNETES_GRACE_S).stdout.strip()
    return int(code), time.monotonic() - started


def test_run_scores_labels_stops_on_sigterm_and_a_new_container_resumes_without_predicting_twice(
        image, kafka_bootstrap, containers, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    volume = tmp_path / "volume"
    volume.mkdir()
    os.chown(volume, SERVICE_UID, SERVICE_UID)
    port = free_port()
    env = service_env(kafka_bootstrap, topics, f"image-{uuid.uuid4().hex[:8]}", port)
    first, second = drifting_stream(300, seed=5, id_prefix="a"), drifting_stream(300, seed=6, id_prefix="b")
    annotator = Annotator(kafka_bootstrap, topics, {**first.truth, **second.truth}).start()
    try:
        one = containers.run(image, env, volume)
        wait_until(lambda: ready(port), 90, "/readyz", containers, one)
        # uid 10001 on a read-only root: the volume and /tmp are the only places it can write
        assert podman("exec", one, "id", "-u").stdout.strip() == str(SERVICE_UID)
        assert podman("inspect", "--format", "{{.HostConfig.ReadonlyRootfs}}", one).stdout.strip() == "true"
        denied = podman("exec", one, "touch", "/opt/activestream/written", check=False)
        assert denied.returncode != 0 and "Read-only file system" in denied.stderr, denied

        produce(kafka_bootstrap, topics["features"], first.values)
        wait_until(lambda: metric(port, "records_scored") == len(first.values), 60, "the first 300 scored",
                   containers, one)
        wait_until(lambda: metric(port, "labels", '{outcome="applied"}') > 0, 60, "labels applied", containers, one)
        assert annotator.answered, "the service asked for no label"

        code, took = sigterm(one)
        assert code == 0, containers.logs(one)
        assert took < KUBERNETES_GRACE_S / 2, f"stopped in {took:.1f} s"
        checkpoints = sorted(volume.glob("checkpoint-*.ckpt"))
        assert checkpoints, f"no checkpoint on the volume: {sorted(p.name for p in volume.iterdir())}"
        assert all(p.stat().st_uid == SERVICE_UID for p in checkpoints)
        inspect = subprocess.run([sys.executable, "-m", "consumer", "checkpoint", "inspect", str(volume)],
                                 capture_output=True, text=True, timeout=60)
        offsets = json.loads(inspect.stdout)["offsets"]
        assert [o["next_offset"] for o in offsets if o["topic"] == topics["features"]] == [len(first.values)]

        # A new container on the same volume: it restores the checkpoint and scores only what is new.
        produce(kafka_bootstrap, topics["features"], second.values)
        two = containers.run(image, env, volume)
        # its totals carry on from the checkpoint's
        wait_until(lambda: metric(port, "records_scored") == len(first.values) + len(second.values), 90,
                   "the next 300 scored", containers, two)
        code, _ = sigterm(two)
        log = containers.logs(two)
        assert code == 0, log
        assert f"restored {VOLUME}/{checkpoints[-1].name}" in log, log
    finally:
        annotator.close()
    # The first 600 predictions: the second container, had it started over, would have repeated the
    # first 300 before any new one.
    every = set(first.truth) | set(second.truth)
    predicted = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["predictions"], len(every))]
    twice = sorted({rid for rid in predicted if predicted.count(rid) > 1})
    assert not twice, f"predicted twice: {twice[:10]}"
    assert set(predicted) == every


def test_healthcheck_is_healthy_and_a_broker_outage_shows_in_readiness_and_the_exit_code(image, containers):
    """Liveness (the HEALTHCHECK, /healthz) never checks the broker: restarting does not cure an
    outage (consumer/health.py). Without the broker the trainer's lease expires and the service
    exits 1; restarted, it waits for the broker alive but not ready."""
    with Broker() as broker:
        topics = unique_topics(broker.bootstrap)
        port = free_port()
        name = containers.run(image, service_env(broker.bootstrap, topics, "health", port))
        wait_until(lambda: ready(port), 90, "/readyz", containers, name)
        checked = podman("healthcheck", "run", name, check=False)
        assert checked.returncode == 0 and checked.stdout.strip() in ("", "healthy"), checked
        assert podman("inspect", "--format", "{{.State.Health.Status}}", name).stdout.strip() == "healthy"
    # The broker is gone: the lease's session times out (2 s here), the service stops with exit 1.
    code = int(podman("wait", name, timeout=60).stdout.strip())
    log = containers.logs(name)
    assert code == 1 and re.search(r"lease \S+ lost", log), log
    # What a restart policy does: the same container again, still without a broker.
    podman("start", name)
    wait_until(lambda: podman("healthcheck", "run", name, check=False).returncode == 0, 60, "healthy", containers,
               name)
    unready = podman("exec", name, "activestream", "healthcheck", "--ready", check=False)
    assert unready.returncode == 1 and "/readyz: 503" in unready.stderr, unready
    assert not ready(port)


@pytest.mark.parametrize("variable, value", [("ACTIVESTREAM_QUERY_SEED", "-1"),
                                             ("ACTIVESTREAM_CHECKPOINT__EVRY_S", "5")])
def test_a_configuration_error_exits_2_naming_the_variable_as_outside_a_container(image, containers, variable,
                                                                                  value):
    name = containers.run(image, {variable: value})
    code = int(podman("wait", name, timeout=60).stdout.strip())
    inside = containers.logs(name)
    outside = subprocess.run([sys.executable, "-m", "consumer", "run"], capture_output=True, text=True, timeout=60,
                             env={**{k: v for k, v in os.environ.items() if not k.startswith("ACTIVESTREAM_")},
                                  variable: value})
    assert code == outside.returncode == 2, (inside, outside.stderr)
    assert variable in inside and "Traceback" not in inside, inside
    assert inside.strip() == outside.stderr.strip()
