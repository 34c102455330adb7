"""An in-memory Label Studio: the calls the connector makes, with a switch to make them fail; and
a connector on it and on an in-memory Kafka (:class:`Rig`)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from consumer.annotate.client import LabelStudioError
from consumer.annotate.config import load_annotate_settings
from consumer.annotate.label_studio import Connector
from consumer.annotate.metrics import AnnotateMetrics
from tests.fakes import FakeConsumer, FakeProducer, LocalBroker


class FakeLabelStudio:
    def __init__(self) -> None:
        self.projects_: list[dict[str, Any]] = []
        self.tasks_: dict[int, dict[str, Any]] = {}
        self.annotations_: dict[int, dict[str, Any]] = {}
        self.webhooks_: list[dict[str, Any]] = []
        self.down = False  # every call fails as if Label Studio were unreachable
        self.fail_creates_after: int | None = None  # the n+1-th task creation fails
        self.calls: list[str] = []
        self._ids = 0

    def _next(self) -> int:
        self._ids += 1
        return self._ids

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if self.down:
            raise LabelStudioError(f"{name}: connection refused")

    def projects(self):
        self._call("projects")
        return iter(copy.deepcopy(self.projects_))

    def create_project(self, title: str, label_config: str) -> dict[str, Any]:
        self._call("create_project")
        project = {"id": self._next(), "title": title, "label_config": label_config}
        self.projects_.append(project)
        return project

    def tasks(self, project: int):
        self._call("tasks")
        out = []
        for task in list(self.tasks_.values()):  # snapshots: another thread may annotate meanwhile
            if task["project"] == project:
                task = copy.deepcopy(task)
                task["annotations"] = [copy.deepcopy(a) for a in list(self.annotations_.values())
                                       if a["task"] == task["id"]]
                out.append(task)
        return iter(out)

    def task(self, task_id: int) -> dict[str, Any]:
        self._call("task")
        return copy.deepcopy(self.tasks_[task_id])

    def create_task(self, project: int, data: dict[str, Any]) -> dict[str, Any]:
        self._call("create_task")
        if self.fail_creates_after is not None:
            if self.fail_creates_after == 0:
                raise LabelStudioError("create_task: HTTP 502", 502)
            self.fail_creates_after -= 1
        task = {"id": self._next(), "project": project, "data": copy.deepcopy(data), "meta": {}}
        self.tasks_[task["id"]] = task
        return copy.deepcopy(task)

    def delete_task(self, task_id: int) -> None:
        self._call("delete_task")
        self.tasks_.pop(task_id, None)

    def set_task_meta(self, task_id: int, meta: dict[str, Any]) -> None:
        self._call("set_task_meta")
        self.tasks_[task_id]["meta"] = copy.deepcopy(meta)

    def annotation(self, annotation_id: int) -> dict[str, Any]:
        self._call("annotation")
        return copy.deepcopy(self.annotations_[annotation_id])

    def webhooks(self, project: int) -> list[dict[str, Any]]:
        self._call("webhooks")
        return [h for h in self.webhooks_ if h["project"] == project]

    def create_webhook(self, project: int, url: str, actions: list[str]) -> dict[str, Any]:
        self._call("create_webhook")
        hook = {"id": self._next(), "project": project, "url": url, "actions": actions}
        self.webhooks_.append(hook)
        return hook

    # -- what an annotator does

    def annotate(self, task_id: int, choice: str, lead_time: float = 3.0, cancelled: bool = False) -> int:
        aid = self._next()
        self.annotations_[aid] = {"id": aid, "task": task_id, "was_cancelled": cancelled, "lead_time": lead_time,
                                  "result": [] if cancelled else _choice(choice), "updated_at": self._stamp()}
        return aid

    def edit(self, annotation_id: int, choice: str) -> None:
        self.annotations_[annotation_id].update(result=_choice(choice), updated_at=self._stamp())

    def _stamp(self) -> str:
        """An ``updated_at`` as Label Studio writes it, later with every change."""
        at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(milliseconds=self._next())
        return at.isoformat().replace("+00:00", "Z")

    def task_of(self, record_id: str) -> dict[str, Any]:
        [task] = [t for t in list(self.tasks_.values()) if t["data"]["activestream_id"] == record_id]
        return task


def _choice(choice: str) -> list[dict[str, Any]]:
    return [{"from_name": "label", "to_name": "summary", "type": "choices", "value": {"choices": [choice]}}]


NOW = 1_700_000_000.0


class Rig:
    """A connector on fakes; ``restart()`` makes a new one over the same Label Studio and broker."""

    def __init__(self, **annotate) -> None:
        self.ls, self.broker, self.now = FakeLabelStudio(), LocalBroker(), NOW
        for topic in ("label-requests", "labels"):
            self.broker.create(topic)
        self.settings = load_annotate_settings(annotate={"token": "t", "port": 0, "poll_interval_s": 3600,
                                                         **annotate})
        self.producer: FakeProducer | None = None
        self.connector = self._new()

    def _new(self) -> Connector:
        def producer(_conf):
            self.producer = FakeProducer(self.broker)
            return self.producer

        return Connector(self.settings, AnnotateMetrics(), now=lambda: self.now, ls=self.ls,
                         make_consumer=lambda conf: FakeConsumer(self.broker, conf["group.id"]),
                         make_producer=producer).start()

    def restart(self, crash: bool = False) -> None:
        """A clean stop and a new start; ``crash``: nothing of the old one runs (no final save)."""
        if not crash:
            self.connector.close()
        self.connector = self._new()

    def request(self, rid: str, expires_in: float = 3600.0) -> None:
        self.broker.append("label-requests", orjson.dumps({
            "v": 1, "id": rid, "features": [0.5, 1.0], "prediction": 1, "uncertainty": 0.6,
            "requested_at": self.now, "expires_at": self.now + expires_in}), rid.encode())

    def tombstone(self, rid: str) -> None:
        self.broker.append("label-requests", None, rid.encode())

    def labels(self) -> list[dict]:
        return [orjson.loads(v) for v in self.broker.values("labels")]

    def committed(self) -> int:
        return self.broker.committed.get((self.settings.annotate.group_id, "label-requests", 0), 0)

    def metric(self, name: str, labels: dict | None = None) -> float:
        return self.connector.metrics.registry.get_sample_value("activestream_annotate_" + name, labels or {}) or 0.0
