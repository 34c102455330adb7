"""An in-memory Label Studio: the calls the connector makes, with a switch to make them fail."""

from __future__ import annotations

import copy
from typing import Any

from consumer.annotate.client import LabelStudioError


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
        for task in self.tasks_.values():
            if task["project"] == project:
                task = copy.deepcopy(task)
                task["annotations"] = [copy.deepcopy(a) for a in self.annotations_.values() if a["task"] == task["id"]]
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
                                  "result": [] if cancelled else _choice(choice)}
        return aid

    def edit(self, annotation_id: int, choice: str) -> None:
        self.annotations_[annotation_id]["result"] = _choice(choice)

    def task_of(self, record_id: str) -> dict[str, Any]:
        [task] = [t for t in self.tasks_.values() if t["data"]["activestream_id"] == record_id]
        return task


def _choice(choice: str) -> list[dict[str, Any]]:
    return [{"from_name": "label", "to_name": "summary", "type": "choices", "value": {"choices": [choice]}}]
