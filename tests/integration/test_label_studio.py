"""The Label Studio connector end to end: a real Label Studio (SQLite, 127.0.0.1), the embedded
broker, the service and the connector, with annotations made in Label Studio's web UI by headless
system Chromium driven by Playwright.

Label Studio runs from a venv of its own (tests/integration/label_studio_server.py says how to make
it). Without it the tests skip, saying so, unless ``ACTIVESTREAM_REQUIRE_LABEL_STUDIO=1`` (as in CI)
makes that a failure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import NoReturn

import orjson
import pytest
from confluent_kafka import Producer

from consumer.annotate.client import LabelStudio, LabelStudioError
from consumer.annotate.config import load_annotate_settings
from consumer.annotate.label_studio import Connector, ensure_project
from consumer.demo.broker import CLIENT_SETTINGS
from consumer.demo.feed import drifting_stream
from consumer.roles import service_for
from tests.integration.label_studio_server import (
    EMAIL,
    LS_VENV,
    PASSWORD,
    ROOT,
    TOKEN,
    LabelStudioProcess,
    free_port,
    start_from_template,
)
from tests.kafka_helpers import produce_features, read_all, settings_for, stream, unique_topics, wait_for

REQUIREMENTS = Path(__file__).with_name("label-studio-requirements.txt")
UI_DRIVER = Path(__file__).with_name("label_studio_ui.py")
CHROMIUM = os.environ.get("ACTIVESTREAM_CHROMIUM", "/usr/bin/chromium")
N_RECORDS = 200


def _missing(why: str) -> NoReturn:
    if os.environ.get("ACTIVESTREAM_REQUIRE_LABEL_STUDIO") == "1":
        pytest.fail(f"ACTIVESTREAM_REQUIRE_LABEL_STUDIO=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def label_studio(tmp_path_factory):
    install = f"{LS_VENV}/bin/pip install -r {REQUIREMENTS.relative_to(ROOT)}"
    if not (LS_VENV / "bin" / "label-studio").exists():
        _missing(f"no Label Studio venv at {LS_VENV} (python3 -m venv {LS_VENV} && {install}; "
                 "or set ACTIVESTREAM_LABEL_STUDIO_VENV)")
    if subprocess.run([str(LS_VENV / "bin" / "python"), "-c", "import playwright"], capture_output=True).returncode:
        _missing(f"Playwright is not installed in {LS_VENV} ({install})")
    if not Path(CHROMIUM).exists():
        _missing(f"no system Chromium at {CHROMIUM} (apt-get install chromium, or set ACTIVESTREAM_CHROMIUM)")
    server = start_from_template(tmp_path_factory.mktemp("ls"))
    yield server
    server.stop()


class Browser:
    """The web UI driver (label_studio_ui.py) in the Label Studio venv: one headless Chromium, logged
    in once, annotating on request."""

    def __init__(self, server: LabelStudioProcess, log: Path) -> None:
        self.log = log
        with open(log, "wb") as err:
            self.proc = subprocess.Popen([str(LS_VENV / "bin" / "python"), str(UI_DRIVER)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, text=True)
        assert self._ask({"url": server.url, "email": EMAIL, "password": PASSWORD}) == "logged in"

    def _ask(self, job: dict):
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        # Each step of the driver times out on its own (60 s); a line, or the end of its output, comes.
        line = self.proc.stdout.readline()
        assert line, f"the browser driver stopped: {self.log.read_text()[-3000:]}"
        return json.loads(line)

    def annotate(self, project: int, actions: list[tuple[int, str]]) -> list[int]:
        """Pick ``choice`` on each task in the web UI; returns the annotation ids saved."""
        return self._ask({"project": project, "actions": [{"task": t, "choice": c} for t, c in actions]})

    def close(self) -> None:
        self.proc.stdin.close()
        if self.proc.wait(60):
            raise AssertionError(f"the browser driver failed: {self.log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def browser(label_studio, tmp_path_factory):
    driver = Browser(label_studio, tmp_path_factory.mktemp("browser") / "driver.log")
    yield driver
    driver.close()


class Running:
    """A connector turning in a thread, as its own process would."""

    def __init__(self, settings) -> None:
        self.connector = Connector(settings).start()
        self.thread = threading.Thread(target=self.connector.run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.connector.request_stop()
        self.thread.join(60)
        assert not self.thread.is_alive()


def test_label_studio_connector_tasks_labels_edit_expiry_restart(kafka_bootstrap, label_studio, browser, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(N_RECORDS, prefix="ls")
    service = service_for(settings_for(kafka_bootstrap, topics, tmp_path / "ckpt"), serve_http=False)
    service_thread = threading.Thread(target=service.run, daemon=True)
    service_thread.start()
    port = free_port()

    def connector_settings(group: str):
        return load_annotate_settings(
            bootstrap_servers=kafka_bootstrap, topics=topics, kafka_consumer=CLIENT_SETTINGS, classes=[-1, 1],
            annotate={"url": label_studio.url, "token": TOKEN, "project": f"test-{topics['labels'][-8:]}",
                      "group_id": group, "port": port, "webhook_url": f"http://127.0.0.1:{port}",
                      "poll_interval_s": 2, "retry_s": 1})

    ls = LabelStudio(label_studio.url, TOKEN, timeout_s=120)
    applied = lambda: service.totals.get("labels.applied")  # noqa: E731
    duplicate = lambda: service.totals.get("labels.duplicate")  # noqa: E731

    def tasks() -> dict[str, list[int]]:
        by_id: dict[str, list[int]] = {}
        for task in ls.tasks(connector.connector.project):
            by_id.setdefault(task["data"]["activestream_id"], []).append(task["id"])
        return by_id

    def counted(name: str, labels: dict | None = None) -> float:
        """A connector metric (cheap to poll, unlike listing every task)."""
        return connector.connector.metrics.registry.get_sample_value(f"activestream_annotate_{name}", labels or {}) or 0

    connector = Running(connector_settings(f"annotate-{uuid.uuid4().hex[:8]}"))
    project = connector.connector.project
    try:
        # 1. the first half streams in; each label request becomes one task
        produce_features(kafka_bootstrap, topics["features"], records[: N_RECORDS // 2])
        wait_for(lambda: service.totals.get("records_scored") == N_RECORDS // 2, 120, "first half scored")
        first_requests = int(service.totals.get("label_requests"))
        assert first_requests > 10
        wait_for(lambda: counted("tasks_created_total") == first_requests, 120, "a task per request",
                 lambda: f"{counted('tasks_created_total')}")
        by_id = tasks()
        assert len(by_id) == first_requests

        # 2. annotated in the browser: webhooks (and the poller) bring one applied label each
        first = sorted(by_id)[:4]
        browser.annotate(project, [(by_id[rid][0], str(truth[rid])) for rid in first])
        wait_for(lambda: applied() == 4, 60, "4 labels applied", lambda: f"applied {applied()}")
        assert connector.connector.metrics.registry.get_sample_value(
            "activestream_annotate_webhooks_total", {"outcome": "ok"}) >= 1

        # 3. the connector stops (its forwarded marks saved in Label Studio); the second half streams
        # in; annotations are made while it is down
        connector.stop()
        marks = {t["data"]["activestream_id"]: (t.get("meta") or {}).get("activestream_forwarded")
                 for t in ls.tasks(project) if t["data"]["activestream_id"] in first}
        assert all(marks.values()) and len(marks) == 4, marks
        produce_features(kafka_bootstrap, topics["features"], records[N_RECORDS // 2:])
        wait_for(lambda: service.totals.get("records_scored") == N_RECORDS, 120, "second half scored")
        by_id = tasks()
        while_down = sorted(set(by_id) - set(first))[:3]
        browser.annotate(project, [(by_id[rid][0], str(truth[rid])) for rid in while_down])

        # 4. it restarts having lost its offsets: every request is read again, no task made twice,
        # and the poller forwards what no webhook could deliver
        connector = Running(connector_settings(f"annotate-{uuid.uuid4().hex[:8]}"))
        requested = {orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["label_requests"])}
        wait_for(lambda: counted("tasks_created_total") + counted("tasks_existing_total") == len(requested), 120,
                 "every request read again", lambda: f"{counted('tasks_created_total')} created, "
                 f"{counted('tasks_existing_total')} found, {len(requested)} requests")
        assert set(tasks()) == requested
        wait_for(lambda: applied() == 7, 60, "7 labels applied", lambda: f"applied {applied()}")
        metrics = connector.connector.metrics.registry
        assert metrics.get_sample_value("activestream_annotate_tasks_existing_total") >= first_requests

        # 5. an edited annotation is a second label for its id: the service's policy (first) drops it
        edited = first[0]
        browser.annotate(project, [(by_id[edited][0], str(-truth[edited]))])
        wait_for(lambda: duplicate() >= 1, 60, "the edit counted as a duplicate", lambda: f"dup {duplicate()}")

        # 6. a request that expires closes its open task
        p = Producer({"bootstrap.servers": kafka_bootstrap})
        now = time.time()
        p.produce(topics["label_requests"], key=b"ls-expiring", value=orjson.dumps({
            "v": 1, "id": "ls-expiring", "features": [0.0] * 8, "prediction": 1, "uncertainty": 0.9,
            "requested_at": now, "expires_at": now + 10}))
        p.flush(10)
        wait_for(lambda: counted("tasks_closed_total", {"reason": "expired"}) == 1, 90, "the expired task closed",
                 lambda: f"created {counted('tasks_created_total')}")
        assert "ls-expiring" not in tasks()
    finally:
        connector.stop()
        service.request_stop()
        service_thread.join(60)

    by_id = tasks()
    assert all(len(ids) == 1 for ids in by_id.values()), {k: v for k, v in by_id.items() if len(v) > 1}
    assert set(by_id) == requested
    labels = [orjson.loads(m.value()) for m in read_all(kafka_bootstrap, topics["labels"])]
    assert sorted(lab["id"] for lab in labels) == sorted([*first, *while_down, edited]), labels
    assert {lab["id"]: lab["label"] for lab in labels if lab["id"] != edited} == {
        rid: truth[rid] for rid in [*first, *while_down] if rid != edited}
    assert applied() == 7 and duplicate() == 1
    print(f"Label Studio started in {label_studio.start_s:.0f} s; {len(requested)} tasks for {N_RECORDS} records")


def test_label_studio_personal_access_token_is_exchanged_and_renewed(label_studio):
    pat = LabelStudio(label_studio.url, TOKEN).call("POST", "/api/token/", {})["token"]
    client = LabelStudio(label_studio.url, pat)
    project = ensure_project(client, "token-check", [-1, 1])
    client._access = "not-a-valid-access-token"  # as if it had expired: a 401, then a new one
    assert ensure_project(client, "token-check", [-1, 1]) == project
    with pytest.raises(LabelStudioError) as refused:
        list(LabelStudio(label_studio.url, pat[:-4] + "AAAA").projects())
    assert refused.value.status == 401


def test_the_demo_with_people_labelling_in_label_studio_reports_what_they_gave(label_studio, browser, tmp_path):
    """``activestream demo --annotator label-studio`` against this Label Studio: three of its tasks
    annotated in the web UI, one against the truth, then SIGTERM; the report lists exactly those."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "1",
           "ACTIVESTREAM_ANNOTATE__URL": label_studio.url, "ACTIVESTREAM_ANNOTATE__TOKEN": TOKEN,
           "ACTIVESTREAM_ANNOTATE__PROJECT": f"demo-{uuid.uuid4().hex[:8]}"}
    demo = subprocess.Popen([sys.executable, "-m", "consumer", "demo", "--annotator", "label-studio", "--records", "60",
                             "--rate", "0", "--timeout", "300", "--json", "--report", str(tmp_path / "demo.html")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    ls = LabelStudio(label_studio.url, TOKEN, timeout_s=120)
    truth = drifting_stream(60, id_prefix="r").truth  # the demo's own stream: the same seed

    def project() -> int | None:
        return next((p["id"] for p in ls.projects() if p["title"] == env["ACTIVESTREAM_ANNOTATE__PROJECT"]), None)

    try:
        wait_for(lambda: (project() is not None and len(list(ls.tasks(project()))) >= 3) or demo.poll() is not None,
                 120, "the demo made no tasks")
        assert demo.poll() is None, demo.stderr.read()[-2000:]
        chosen = sorted(ls.tasks(project()), key=lambda t: t["id"])[:3]
        gave = {t["data"]["activestream_id"]: truth[t["data"]["activestream_id"]] * (-1 if k == 0 else 1)
                for k, t in enumerate(chosen)}
        browser.annotate(project(), [(t["id"], str(gave[t["data"]["activestream_id"]])) for t in chosen])
        # the connector marks a task once its label is on the labels topic
        wait_for(lambda: all(ls.task(t["id"])["meta"].get("activestream_forwarded") for t in chosen), 60,
                 "the annotations were not forwarded")
        # the person is done: the demo reports. SIGTERM, as a script stops it: a background job (as CI
        # runs these tests) starts its children with SIGINT ignored, so a Ctrl-C would never arrive
        demo.send_signal(signal.SIGTERM)
        try:
            out, err = demo.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            demo.send_signal(signal.SIGABRT)  # faulthandler writes every thread's stack to stderr
            stacks = demo.communicate(timeout=30)[1]
            raise AssertionError(f"the demo did not stop on SIGTERM: {stacks[-6000:]}") from None
    finally:
        if demo.poll() is None:
            demo.kill()
    assert demo.returncode == 0, err[-2000:]
    report = json.loads(out)
    people = report["people"]
    assert {g["id"]: g["label"] for g in people["labels"]} == gave
    assert people["agreeing"] == pytest.approx(2 / 3) and people["project_url"].endswith(f"/projects/{project()}/data")
    assert report["labels_applied"] == 3
    assert all(g["id"] in (tmp_path / "demo.html").read_text() for g in people["labels"])
