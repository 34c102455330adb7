"""docs/tutorial.md ("your own Kafka") run as a reader runs it, against the test broker.

The page's fenced blocks are its steps, taken in page order:

* ```` ```python ```` blocks run in one namespace, as pasted into one Python session;
* ```` ```bash ```` blocks run in a shell in one working directory; the block ending in
  ``activestream run`` is the service, started in the background in a process group of its own
  (the first terminal), and the section headed "Stop it" is its Ctrl-C: SIGINT to that group;
* ```` ```sh ```` blocks are shown only (Apache Kafka's ``kafka-topics.sh`` is not installed here):
  their topic names are checked against the Python step's.

``HOST:PORT`` becomes the ``kafka_bootstrap`` fixture's address and ``localhost:9108`` a free port
(given to the service as ``ACTIVESTREAM_METRICS_PORT``; the page's 9108 is checked to be the
default). With the embedded broker (no ``$KAFKA_BOOTSTRAP``) every consumer, the page's and the
service's, also gets the group timings of :data:`consumer.demo.broker.CLIENT_SETTINGS`: that broker
answers a group join only after half the session timeout (22 s with librdkafka's default). Nothing
else is added: a snippet that names a wrong topic, field or setting fails here.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient
from pydantic import BaseModel

from consumer.config import Settings, Topics
from consumer.demo.broker import CLIENT_SETTINGS, free_port
from tests.kafka_helpers import read_all

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.S | re.M)
HEADING = re.compile(r"^## (.*)$", re.M)
GROUP_TIMINGS = {k: CLIENT_SETTINGS[k] for k in ("session.timeout.ms", "heartbeat.interval.ms", "fetch.wait.max.ms",
                                                 "topic.metadata.refresh.interval.ms")}
FIVE = ("features", "predictions", "label_requests", "labels", "dead_letters")
STEP_S = 180.0  # the longest one step may take (the service's first start compiles the learner's kernels)


def steps(text: str) -> list[tuple[str, str]]:
    """("heading", title) and (language, code) in page order."""
    found = [(m.start(), "heading", m.group(1).strip()) for m in HEADING.finditer(text)]
    found += [(m.start(), m.group(1), m.group(2)) for m in FENCE.finditer(text)]
    return [(kind, body) for _, kind, body in sorted(found)]


@contextlib.contextmanager
def deadline(seconds: float, what: str):
    """Raise TimeoutError in this (the main) thread if the block runs longer than ``seconds``."""
    def expire(signum, frame):
        raise TimeoutError(f"{what}: still running after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def setting_exists(variable: str) -> bool:
    """Whether ``ACTIVESTREAM_A__B`` names a setting (unknown variables are ignored by the service)."""
    model: object = Settings
    for part in variable.removeprefix("ACTIVESTREAM_").lower().split("__"):
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return True  # a key of a mapping (client properties, learner parameters)
        field = model.model_fields.get(part)
        if field is None:
            return False
        model = field.annotation
    return True


def applied_labels(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    found = re.search(r'^activestream_labels_total\{outcome="applied"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_the_tutorial_runs_against_a_kafka(kafka_bootstrap, tmp_path, monkeypatch):
    text = PAGE.read_text(encoding="utf-8")
    page = steps(text)
    run = [(kind, body) for kind, body in page if kind in ("python", "bash")]
    assert run and all("HOST:PORT" not in body for kind, body in page if kind not in ("python", "bash", "sh"))
    assert sum("HOST:PORT" in body for _, body in run) >= 2, "the page's address placeholder is HOST:PORT"
    assert Settings.model_fields["metrics_port"].default == 9108
    embedded = "KAFKA_BOOTSTRAP" not in os.environ

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    taken = set(admin.list_topics(timeout=10).topics) & {Topics().model_dump()[k] for k in FIVE}
    if taken and not embedded:
        pytest.skip(f"the tutorial's topics {sorted(taken)} already exist on $KAFKA_BOOTSTRAP: it needs a fresh one")

    if embedded:  # timings only: the page's own properties win
        class Consumer(confluent_kafka.Consumer):
            def __init__(self, conf, **kwargs):
                super().__init__({**GROUP_TIMINGS, **conf}, **kwargs)

        monkeypatch.setattr(confluent_kafka, "Consumer", Consumer)

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVESTREAM_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               ACTIVESTREAM_METRICS_PORT=str(port))
    if embedded:
        env["ACTIVESTREAM_KAFKA_CONSUMER"] = json.dumps(GROUP_TIMINGS)

    def here(code: str) -> str:
        return code.replace("HOST:PORT", kafka_bootstrap).replace("localhost:9108", f"localhost:{port}")

    namespace: dict = {"__name__": "__tutorial__"}
    service: subprocess.Popen | None = None
    log = tmp_path / "service.log"
    outputs: list[tuple[str, str]] = []

    def service_log() -> str:
        return log.read_text(errors="replace")[-3000:] if log.exists() else ""

    try:
        for number, (kind, body) in enumerate(page, 1):
            what = f"tutorial.md step {number} ({kind})"
            if kind == "heading" and body.endswith("Stop it"):
                assert service is not None, "the page stops a service it did not start"
                os.killpg(service.pid, signal.SIGINT)  # Ctrl-C in the service's terminal
                try:
                    assert service.wait(60) == 0, service_log()
                except subprocess.TimeoutExpired:
                    pytest.fail(f"the service did not stop within 60 s of Ctrl-C\n{service_log()}")
            elif kind == "python":
                with deadline(STEP_S, what):
                    exec(compile(here(body), what, "exec"), namespace)
            elif kind == "bash":
                for variable in re.findall(r"\b(ACTIVESTREAM_\w+)=", body):
                    assert setting_exists(variable), f"{what}: {variable} is no setting"
                lines = [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]
                if lines[-1].strip() == "activestream run":
                    assert service is None, "the page starts the service twice"
                    with log.open("wb") as sink:
                        service = subprocess.Popen(["bash", "-euo", "pipefail", "-c", here(body)], cwd=tmp_path,
                                                   env=env, stdout=sink, stderr=subprocess.STDOUT,
                                                   start_new_session=True)
                    continue
                if "/metrics" in body:  # the labels answered reach the model before the page looks
                    expected = len(namespace["requests"])
                    end = time.monotonic() + 60
                    while (applied := applied_labels(port)) < expected:
                        if time.monotonic() > end:
                            pytest.fail(f"{applied:.0f} of the {expected} labels answered applied after 60 s\n"
                                        f"{service_log()}")
                        time.sleep(0.2)  # the service runs in its own process: nothing to wait on but its metrics
                try:
                    done = subprocess.run(["bash", "-euo", "pipefail", "-c", here(body)], cwd=tmp_path, env=env,
                                          capture_output=True, text=True, timeout=STEP_S)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"{what} still running after {STEP_S:.0f} s\n{service_log()}")
                assert done.returncode == 0, f"{what}: {done.stderr[-2000:]}\n{service_log()}"
                outputs.append((body, done.stdout))
            if service is not None and service.poll() not in (None, 0):
                pytest.fail(f"the service exited with {service.returncode} after {what}\n{service_log()}")
    finally:
        if service is not None and service.poll() is None:
            os.killpg(service.pid, signal.SIGKILL)
            service.wait()

    # 1. the five topics, named as the service's defaults, in both the Python and the shell version
    assert namespace["TOPICS"] == [Topics().model_dump()[k] for k in FIVE]
    shown = [body for kind, body in page if kind == "sh"]
    assert len(shown) == 1 and re.search(r"for topic in ([\w -]+); do", shown[0]).group(1).split() == \
        namespace["TOPICS"]
    listed = admin.list_topics(timeout=10).topics
    assert all(len(listed[name].partitions) == 3 for name in namespace["TOPICS"])
    assert Topics().lease == "trainer-lease" and "trainer-lease" in listed  # "... and creates it at start"
    # 2. a prediction for every record sent, some asked about, and the requests read are those
    ids = {f"order-{i}" for i in range(100)}
    predictions = namespace["predictions"]
    assert {p["id"] for p in predictions} == ids and len(predictions) == 100
    asked = namespace["asked"]
    assert asked and {r["id"] for r in namespace["requests"]} == set(asked)
    assert read_all(kafka_bootstrap, "dead-letters") == []  # every record and label the page sends is valid
    # 3. the metrics the page shows, its labels applied; and the checkpoint of the clean stop holds them
    (metrics,) = [out for body, out in outputs if "/metrics" in body]
    assert re.search(r"^activestream_records_scored_total 100\.0$", metrics, re.M), metrics
    assert re.search(rf'^activestream_labels_total\{{outcome="applied"\}} {len(asked)}\.0$', metrics, re.M), metrics
    assert re.search(r"^activestream_query_rate_target 0\.1$", metrics, re.M), metrics
    # "It reads 1 for now": each record labelled was predicted before the first label, without a class
    assert re.search(r"^activestream_estimated_error_rate 1\.0$", metrics, re.M), metrics
    (inspect,) = [out for body, out in outputs if "checkpoint inspect" in body]
    checkpoint = json.loads(inspect)
    assert checkpoint["counters"]["labels"] == len(asked), checkpoint["counters"]
    namespace.clear()  # the page's clients, closed while the broker is still there
