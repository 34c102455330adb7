"""Time, injectable: the service reads the wall clock and a monotonic clock only through a Clock."""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock time, seconds since the epoch (timestamps in records, expiry)."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds (intervals, durations)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock tests move by hand."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._t = start
        self._m = 0.0

    def now(self) -> float:
        return self._t

    def monotonic(self) -> float:
        return self._m

    def advance(self, seconds: float) -> None:
        self._t += seconds
        self._m += seconds
