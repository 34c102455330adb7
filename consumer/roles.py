"""The three roles a process may run (``ACTIVESTREAM_ROLE``), by name."""

from __future__ import annotations

from typing import Any

from consumer.config import Settings
from consumer.scorer import Scorer
from consumer.service import Service
from consumer.trainer import Trainer

__all__ = ["ROLES", "service_for"]

ROLES: dict[str, type[Service]] = {"all": Service, "scorer": Scorer, "trainer": Trainer}


def service_for(settings: Settings, **kwargs: Any) -> Service:
    """The process ``ACTIVESTREAM_ROLE`` names: :class:`Service` (all), a scorer or a trainer."""
    return ROLES[settings.role](settings, **kwargs)
