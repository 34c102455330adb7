"""The trainer's audit log (``ACTIVESTREAM_AUDIT_LOG``): each batch of labels learnt and each
checkpoint, as JSON lines, so that a model can be rebuilt by an offline replay."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from consumer.pending import Entry
from consumer.records import Label

__all__ = ["AuditLog"]


class AuditLog:
    """``path``: the file lines are appended to (None: no log kept); ``epoch()``: the trainer's epoch."""

    def __init__(self, path: Path | None, epoch: Callable[[], int]) -> None:
        self.path, self.epoch = path, epoch

    def __call__(self, line: dict[str, Any]) -> None:
        if self.path is not None:
            with open(self.path, "ab") as f:
                f.write(orjson.dumps({"epoch": self.epoch(), **line}) + b"\n")

    def learnt(self, outcome: str, joined: list[tuple[Entry, Label]]) -> None:
        """A batch the learn step learnt, in order."""
        self({"outcome": outcome, "ids": [lab.id for _, lab in joined], "labels": [lab.label for _, lab in joined]})
