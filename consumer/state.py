"""What a checkpoint holds, part by part, and how an older checkpoint is read.

A checkpoint is one flat mapping of arrays. Each part of a process's state (the learner, the
pending store, the offsets, the outputs' ends, the decisions being recovered, the totals, the parked
labels) implements :class:`Stateful`: it names its *namespace*, and gives and takes the arrays under
it (``<namespace>.<key>``), so that no part sees another's keys. ``service.meta`` records the
checkpoint's layout (``format_version``) and each part's own format version.

:func:`upgrade` is the one place that knows the layouts written before: a checkpoint of an older
layout is rewritten into the current one before any part reads it.

- Layout 1 (every release up to the parts' namespaces): the recovery, the totals and a trainer's
  parked labels under ``service.`` (``service.recovery``, ``service.totals``, ``service.parked``),
  and the first-come-first-served label cap's state (``budget.window``, ``budget.used``), retired
  since the learner's budget controller holds every budget.
- Layout 2: one namespace per part, as :data:`PARTS` lists them; role ``all`` kept the labels that
  came, after a restart, before their request was made again inside its recovery part.
- Layout 3: every role keeps the labels waiting for their requests in the ``parked`` part.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import numpy as np
import orjson

from consumer.errors import IncompatibleCheckpoint
from consumer.pending import pack_strings, unpack_strings

__all__ = ["FORMAT_VERSION", "PARTS", "Stateful", "gather", "meta_of", "pack_offsets", "part_of", "scatter",
           "unpack_offsets", "upgrade"]

FORMAT_VERSION = 3  # of the checkpoint's layout (``service.meta``'s format_version)
META = "service.meta"
# the namespaces, in the order a checkpoint lists them
PARTS = ("learner", "pending", "offsets", "outputs", "recovery", "totals", "parked")
_RENAMED_IN_2 = {"service.recovery": "recovery.decisions", "service.totals": "totals.counts",
                 "service.parked": "parked.labels"}


class Stateful(Protocol):
    """A part of a process's state that a checkpoint holds."""

    namespace: str  # its arrays are ``<namespace>.<key>`` in a checkpoint
    format_version: int  # of what state_dict gives; load_state_dict reads every version up to it

    def state_dict(self) -> dict[str, np.ndarray]: ...

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None: ...


def gather(parts: Iterable[Stateful], meta: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """One checkpoint's arrays: each part's under its namespace, and ``service.meta`` (``meta`` with
    the layout's and each part's format version)."""
    state: dict[str, np.ndarray] = {}
    formats = {}
    for part in parts:
        state.update({f"{part.namespace}.{k}": v for k, v in part.state_dict().items()})
        formats[part.namespace] = part.format_version
    state[META] = np.array(json.dumps({**meta, "format_version": FORMAT_VERSION, "formats": formats}, sort_keys=True))
    return state


def part_of(state: Mapping[str, np.ndarray], namespace: str) -> dict[str, np.ndarray]:
    """The arrays of one part of a checkpoint, by their own names."""
    prefix = f"{namespace}."
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def meta_of(state: Mapping[str, np.ndarray]) -> dict[str, Any]:
    return json.loads(str(state[META]))


def upgrade(state: Mapping[str, np.ndarray], where: str) -> dict[str, np.ndarray]:
    """``state`` in the current layout; :class:`IncompatibleCheckpoint` if it was written by a
    newer build (``where``: where it came from, for the message)."""
    meta = meta_of(state)
    version = meta.get("format_version")
    if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise IncompatibleCheckpoint(f"{where}: checkpoint format version {version}, this build reads 1 to "
                                     f"{FORMAT_VERSION}")
    out = dict(state)
    if version < 2:  # the retired label cap's state is dropped, the service's own arrays move to their parts
        out = {_RENAMED_IN_2.get(k, k): v for k, v in out.items() if not k.startswith("budget.")}
    if version < 3 and "recovery.decisions" in out:  # role all's waiting labels move to the parked part
        decisions = orjson.loads(out["recovery.decisions"].tobytes())
        waiting = orjson.loads(out["parked.labels"].tobytes()) if "parked.labels" in out else []
        at = float(meta.get("created_at", 0.0))
        waiting += [[rid, [rid, lab["label"], lab["cost"], lab["ts"]], at]
                    for rid, labels in decisions.pop("parked", {}).items() for lab in labels[:1]]
        out["recovery.decisions"] = np.frombuffer(orjson.dumps(decisions), dtype=np.uint8)
        out["parked.labels"] = np.frombuffer(orjson.dumps(waiting), dtype=np.uint8)
    out[META] = np.array(json.dumps({**meta, "format_version": FORMAT_VERSION}, sort_keys=True))
    return out


def scatter(state: Mapping[str, np.ndarray], parts: Iterable[Stateful], where: str) -> None:
    """Give each part its arrays of ``state`` (the current layout: see :func:`upgrade`). A part whose
    arrays a newer build wrote is refused, naming it, before any part is changed."""
    formats = meta_of(state).get("formats", {})
    parts = list(parts)
    for part in parts:
        written = formats.get(part.namespace, 1)
        if written > part.format_version:
            raise IncompatibleCheckpoint(f"{where}: its {part.namespace} is of format version {written}, this build "
                                         f"reads 1 to {part.format_version}")
    for part in parts:
        try:
            part.load_state_dict(part_of(state, part.namespace))
        except (KeyError, ValueError) as exc:
            raise IncompatibleCheckpoint(f"{where}: {exc}") from None


def pack_offsets(offsets: Mapping[tuple[str, int], int]) -> dict[str, np.ndarray]:
    """A position per (topic, partition) as arrays: topics (packed strings), partitions, next."""
    keys = sorted(offsets)
    topics, topics_offsets = pack_strings([t for t, _ in keys])
    return {"topics": topics, "topics_offsets": topics_offsets,
            "partitions": np.array([p for _, p in keys], dtype=np.int64),
            "next": np.array([offsets[k] for k in keys], dtype=np.int64)}


def unpack_offsets(state: Mapping[str, np.ndarray]) -> dict[tuple[str, int], int]:
    topics = unpack_strings(state["topics"], state["topics_offsets"])
    return {(t, int(p)): int(o) for t, p, o in zip(topics, state["partitions"], state["next"], strict=True)}
