"""A small Label Studio REST client over the standard library (``urllib``).

The connector needs a dozen endpoints (projects, tasks, annotations, webhooks); plain HTTP keeps the
connector free of a client library whose API changes across Label Studio's major versions.
Authentication takes either kind of token: a legacy token (``Authorization: Token ...``) or a
personal access token (a JWT refresh token exchanged at ``/api/token/refresh`` for short-lived
access tokens, renewed on a 401).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

__all__ = ["LabelStudio", "LabelStudioError"]

_PAGE = 100  # tasks per listing page


class LabelStudioError(Exception):
    """Label Studio did not answer, or answered with an error; ``status`` is 0 without an answer."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class LabelStudio:
    """The endpoints the connector calls. Thread-safe (webhooks and the loop share one)."""

    def __init__(self, url: str, token: str, timeout_s: float = 10.0) -> None:
        self.url, self._token, self._timeout_s = url.rstrip("/"), token, timeout_s
        # a personal access token is a JWT: three base64 parts joined by dots
        self._is_jwt = token.count(".") == 2
        self._access: str | None = None
        self._lock = threading.Lock()

    # -- transport

    def _auth(self, renew: bool = False) -> str:
        if not self._is_jwt:
            return f"Token {self._token}"
        with self._lock:
            if self._access is None or renew:
                got = self._send("POST", "/api/token/refresh/", {"refresh": self._token}, auth=None)
                self._access = got["access"]
            return f"Bearer {self._access}"

    def _send(self, method: str, path: str, body: Any = None, auth: str | None = "") -> Any:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if auth:
            headers["Authorization"] = auth
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise LabelStudioError(f"{method} {path}: HTTP {exc.code} {detail}", exc.code) from None
        except (urllib.error.URLError, OSError) as exc:
            raise LabelStudioError(f"{method} {path}: {getattr(exc, 'reason', exc)}") from None
        return json.loads(raw) if raw else None

    def call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            return self._send(method, path, body, auth=self._auth())
        except LabelStudioError as exc:
            if exc.status != 401 or not self._is_jwt:
                raise
            return self._send(method, path, body, auth=self._auth(renew=True))

    # -- projects

    def projects(self) -> Iterator[dict[str, Any]]:
        page = 1
        while True:
            got = self.call("GET", f"/api/projects/?page={page}&page_size={_PAGE}")
            results = got["results"] if isinstance(got, dict) else got
            yield from results
            if not isinstance(got, dict) or not got.get("next"):
                return
            page += 1

    def create_project(self, title: str, label_config: str) -> dict[str, Any]:
        return self.call("POST", "/api/projects/", {"title": title, "label_config": label_config})

    # -- tasks and annotations

    def tasks(self, project: int) -> Iterator[dict[str, Any]]:
        """Every task of a project, with its annotations, page by page."""
        page = 1
        while True:
            try:
                got = self.call("GET", f"/api/tasks/?project={project}&page={page}&page_size={_PAGE}&fields=all")
            except LabelStudioError as exc:
                if exc.status == 404:  # past the last page
                    return
                raise
            yield from got["tasks"]
            if len(got["tasks"]) < _PAGE:
                return
            page += 1

    def task(self, task_id: int) -> dict[str, Any]:
        return self.call("GET", f"/api/tasks/{task_id}/")

    def create_task(self, project: int, data: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", "/api/tasks/", {"project": project, "data": data})

    def delete_task(self, task_id: int) -> None:
        try:
            self.call("DELETE", f"/api/tasks/{task_id}/")
        except LabelStudioError as exc:
            if exc.status != 404:  # already gone is what was asked
                raise

    def set_task_meta(self, task_id: int, meta: dict[str, Any]) -> None:
        self.call("PATCH", f"/api/tasks/{task_id}/", {"meta": meta})

    def annotation(self, annotation_id: int) -> dict[str, Any]:
        return self.call("GET", f"/api/annotations/{annotation_id}/")

    # -- webhooks

    def webhooks(self, project: int) -> list[dict[str, Any]]:
        return self.call("GET", f"/api/webhooks/?project={project}")

    def create_webhook(self, project: int, url: str, actions: list[str]) -> dict[str, Any]:
        return self.call("POST", "/api/webhooks/", {"project": project, "url": url, "send_payload": True,
                                                    "send_for_all_actions": False, "actions": actions,
                                                    "is_active": True})
