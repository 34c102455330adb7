"""Declarative hyper-parameter constraints, checked when a rule, query or learner is built.

Each class lists ``_constraints = {"C": Interval(0, None, closed="neither"), ...}``; subclasses
extend the table. Checks that involve several parameters live in ``_check_params``.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Interval", "Options", "Parameterized"]


@dataclass(frozen=True, slots=True)
class Interval:
    """A real number in [low, high]; ``closed`` says which ends are included."""

    low: float | None
    high: float | None
    closed: str = "both"  # "both" | "left" | "right" | "neither"
    integer: bool = False

    def check(self, name: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {value!r}")
        if self.integer and float(value) != int(value):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
        lo_ok = self.low is None or (
            value >= self.low if self.closed in ("both", "left") else value > self.low
        )
        hi_ok = self.high is None or (
            value <= self.high if self.closed in ("both", "right") else value < self.high
        )
        if not (lo_ok and hi_ok):
            raise ValueError(f"{name} must be in {self}, got {value!r}")

    def __str__(self) -> str:
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        return f"{left}{lo}, {hi}{right}"


@dataclass(frozen=True, slots=True)
class Options:
    """One of a fixed set of values."""

    values: frozenset

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", frozenset(values))

    def check(self, name: str, value: Any) -> None:
        if value not in self.values:
            allowed = ", ".join(sorted(repr(v) for v in self.values))
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


class Parameterized:
    """Keyword-only constructor arguments stored under their own names, validated on entry.

    ``get_params()``, ``clone()`` and ``repr`` derive from the constructor signature, so the
    signature is the single source of truth for a class's hyper-parameters.
    """

    _constraints: ClassVar[dict[str, Interval | Options]] = {}

    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        sig = inspect.signature(cls.__init__)
        return tuple(p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY)

    def get_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.param_names()}

    def _validate(self) -> None:
        for name, value in self.get_params().items():
            if name in self._constraints:
                self._constraints[name].check(name, value)
        self._check_params()

    def _check_params(self) -> None:
        """Checks across several parameters; override where needed."""

    def clone(self, **overrides: Any):
        """Same hyper-parameters (with ``overrides``), no learned state."""
        return type(self)(**{**self.get_params(), **overrides})

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
