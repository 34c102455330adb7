"""``activestream demo --annotator label-studio``: people answer the label requests in Label Studio.

The demo's own loop runs for real (embedded broker, service, connector, report); Label Studio is
the in-memory one of tests/unit/annotate/fakes.py, and "the person" a thread that annotates each
task as it appears, giving a wrong answer to every fifth. (The connector against a real Label
Studio, annotated through its web UI, is tests/integration/test_label_studio.py.)
"""

from __future__ import annotations

import html
import io
import os
import re
import subprocess
import sys
import threading

from consumer.demo.feed import drifting_stream
from consumer.demo.run import DemoOptions, run_demo
from tests.unit.annotate.fakes import FakeLabelStudio


class Person(threading.Thread):
    """Annotates every task of the demo's project as it appears: the truth, but the other class for
    every fifth task."""

    def __init__(self, ls: FakeLabelStudio, truth: dict) -> None:
        super().__init__(name="person", daemon=True)
        self.ls, self.truth, self.gave = ls, truth, {}
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(0.05):
            for task in list(self.ls.tasks_.values()):
                rid = task["data"]["activestream_id"]
                if rid not in self.gave:
                    right = self.truth[rid]
                    self.gave[rid] = right if len(self.gave) % 5 else -right
                    self.ls.annotate(task["id"], str(self.gave[rid]))

    def stop(self) -> None:
        self._stop_event.set()


def test_people_labels_flow_to_the_service_and_the_report_shows_them(monkeypatch, tmp_path):
    monkeypatch.setenv("ACTIVESTREAM_ANNOTATE__TOKEN", "demo-token")
    ls = FakeLabelStudio()
    person = Person(ls, drifting_stream(400, id_prefix="r").truth)  # the demo's own stream: the same seed
    person.start()
    opts = DemoOptions(records=400, rate=0.0, annotator="label-studio", label_studio=ls, timeout_s=120.0,
                       report=str(tmp_path / "report.html"))
    progress = io.StringIO()
    try:
        report = run_demo(opts, progress=progress)
    finally:
        person.stop()
        person.join(5)
    people = report["people"]
    assert report["annotator"] == "label-studio" and "Label the tasks at" in progress.getvalue()
    assert people["project_url"].endswith(f"/projects/{ls.projects_[0]['id']}/data")
    assert ls.projects_[0]["title"] == "activestream demo"
    # every request became one task, every task was annotated, and each annotation one applied label
    assert report["label_requests"] == len(ls.tasks_) == len(person.gave) == len(people["labels"]) > 10
    assert report["labels_applied"] == report["label_requests"] and report["predictions"] == 400
    assert {g["id"]: g["label"] for g in people["labels"]} == person.gave  # what the person gave, not the truth
    wrong = sum(g["label"] != g["truth"] for g in people["labels"])
    assert wrong == (len(person.gave) + 4) // 5
    assert people["agreeing"] == 1 - wrong / len(people["labels"])
    page = (tmp_path / "report.html").read_text()
    table = page[page.index("<table class=labels>"):]
    assert len(re.findall(r"<tr><td>", table)) == len(people["labels"])
    assert html.escape(people["project_url"]) in page


def test_without_a_token_the_demo_stops_at_start_up_naming_the_variable():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVESTREAM_ANNOTATE")}
    done = subprocess.run([sys.executable, "-m", "consumer", "demo", "--annotator", "label-studio", "--records", "50"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2 and "ACTIVESTREAM_ANNOTATE__TOKEN" in done.stderr
