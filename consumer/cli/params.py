"""``--param KEY=VALUE``: a learner's hyper-parameters on the command line."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_params", "parse_value"]


def parse_value(text: str) -> Any:
    """A --param value: JSON (numbers, true/false, lists) or else the plain string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_params(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--param takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = parse_value(text.strip())
    return out

