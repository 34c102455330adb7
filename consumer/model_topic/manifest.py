"""The model topic's record keys and manifests: how a publication names its chunks, and how a reader
checks that the payload they make up is the one published."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["CHECKPOINT", "MODEL", "PART"]

MODEL, CHECKPOINT, PART = "model", "checkpoint", "part"
_KINDS = ("full", "delta", "checkpoint")


def _manifest_key(prefix: str, version: int) -> bytes:
    return f"{prefix}/manifest/{version}".encode()


def _chunk_key(prefix: str, version: int, index: int) -> bytes:
    return f"{prefix}/{version}/{index}".encode()


def _parse_key(key: bytes | None) -> tuple[str, str, int, int] | None:
    """(prefix, "manifest" | "chunk", version, chunk index or -1), or None for a foreign key."""
    if key is None:
        return None
    parts = key.split(b"/")
    if len(parts) != 3 or parts[0] not in (b"model", b"checkpoint", b"part"):
        return None
    try:
        if parts[1] == b"manifest":
            return parts[0].decode(), "manifest", int(parts[2]), -1
        return parts[0].decode(), "chunk", int(parts[1]), int(parts[2])
    except ValueError:
        return None


_MANIFEST_INTS = ("epoch", "version", "snapshot_offset", "first_offset", "last_offset", "chunks", "bytes")


def _parse_manifest(value: bytes) -> dict[str, Any]:
    """A manifest from its JSON; ``ValueError`` if a field is missing or of the wrong type."""
    try:
        manifest = json.loads(value)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"manifest is not JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise ValueError("manifest is not a JSON object")
    for name in _MANIFEST_INTS:
        if type(manifest.get(name)) is not int:
            raise ValueError(f"manifest field {name!r} is missing or not an integer")
    if manifest.get("kind") not in _KINDS or not isinstance(manifest.get("sha256"), str):
        raise ValueError("manifest field 'kind' or 'sha256' is invalid")
    if manifest["kind"] == "delta" and type(manifest.get("base_version")) is not int:
        raise ValueError("delta manifest without an integer 'base_version'")
    return manifest


def _meta(state: Mapping[str, np.ndarray]) -> Any:
    """The learner's meta JSON, parsed; None if the state has none readable."""
    try:
        return json.loads(str(np.asarray(state["meta"])[()]))
    except (KeyError, ValueError, TypeError, IndexError):
        return None


def _assemble(manifest: Mapping[str, Any], chunks: Mapping[int, tuple[int, bytes]]) -> bytes:
    """The payload a manifest names, checked: every chunk present and size and SHA-256 as stated.
    ``ValueError`` otherwise. A chunk before ``first_offset`` is a dead trainer's under the same
    key; one after ``last_offset`` may be a retried send's duplicate, and is as good."""
    first = manifest["first_offset"]
    parts = []
    for i in range(manifest["chunks"]):
        got = chunks.get(i)
        if got is None or got[0] < first:
            raise ValueError(f"chunk {i} of {manifest['chunks']} is missing")
        parts.append(got[1])
    payload = b"".join(parts)
    if len(payload) != manifest["bytes"]:
        raise ValueError(f"payload has {len(payload)} bytes, the manifest says {manifest['bytes']}")
    if hashlib.sha256(payload).hexdigest() != manifest["sha256"]:
        raise ValueError("payload checksum mismatch")
    return payload


def _parts_of(manifest: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A checkpoint manifest's parts; ``ValueError`` if the listing is malformed."""
    parts = manifest.get("parts", {})
    if not isinstance(parts, dict):
        raise ValueError("manifest field 'parts' is not an object")
    for name, where in parts.items():
        if not isinstance(where, dict) or any(type(where.get(k)) is not int for k in
                                              ("version", "first_offset", "last_offset", "chunks", "bytes")) \
                or not isinstance(where.get("sha256"), str):
            raise ValueError(f"part {name!r} is not listed with its version, offsets, chunks, bytes and sha256")
    return parts
