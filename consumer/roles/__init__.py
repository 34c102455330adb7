"""The three roles a process may run (``ACTIVESTREAM_ROLE``), by name.

Each role is a short module that lists how it starts, the steps one iteration runs and what it
does when partitions come and go; the parts and steps it works on are the process's
(:class:`consumer.process.Process`). No role builds on another.
"""

from __future__ import annotations

from typing import Any

from consumer.config import Settings
from consumer.process import Process
from consumer.roles.all import All
from consumer.roles.scorer import Scorer
from consumer.roles.trainer import Trainer

__all__ = ["ROLES", "service_for"]

ROLES: dict[str, Any] = {"all": All, "scorer": Scorer, "trainer": Trainer}


def service_for(settings: Settings, **kwargs: Any) -> Process:
    """The process in the role ``ACTIVESTREAM_ROLE`` names (``kwargs``: see :class:`Process`)."""
    return Process(settings, ROLES[settings.role], **kwargs)
