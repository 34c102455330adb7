"""Durable checkpoints: model, pending store, counters and offsets, written atomically.

A checkpoint file is ``MAGIC`` + the SHA-256 of the payload + the payload, an ``.npz`` archive of
plain arrays (loaded with ``allow_pickle=False``). It is written to a temporary file in the same
directory, fsynced, renamed into place and the directory fsynced, so a crash leaves either the old
set of checkpoints or the new one, never a torn file. The newest ``keep`` files are kept.

*Parts* are groups of arrays that never change once made (the pending store's memory of applied
ids, sealed a piece at a time): each is written once, to a ``part-<name>`` file of the same form,
before the checkpoints that refer to it, which record its name and SHA-256. Reading a checkpoint
reads its parts back into the one state; a part missing or changed makes the checkpoint unreadable
like a torn file. A part is deleted once no kept checkpoint refers to it.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from consumer.errors import CheckpointError

__all__ = ["CheckpointPolicy", "CheckpointStore", "part_paths", "read_checkpoint"]

log = logging.getLogger(__name__)

MAGIC = b"ACTIVESTREAM-CHECKPOINT-1\n"
_NAME = re.compile(r"^checkpoint-(\d{12})\.ckpt$")
_PART = re.compile(r"^part-(.+)\.ckpt$")
_PARTS, _PARTS_SHA = "checkpoint.parts", "checkpoint.parts_sha256"


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """When a checkpoint is due: ``every_s`` seconds after the last, or ``every_labels`` labels."""

    every_s: float
    every_labels: int

    def due(self, since_s: float, labels: int) -> bool:
        return since_s >= self.every_s or labels >= self.every_labels


def _serialize(state: Mapping[str, np.ndarray]) -> tuple[bytes, memoryview]:
    """(header, payload): the payload is a view of the archive's buffer, so an 8 MB model is not
    copied twice more on its way to the file."""
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in state.items()})
    payload = buffer.getbuffer()
    return MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n", payload


def _read_file(path: Path) -> tuple[dict[str, np.ndarray], str]:
    """(arrays, SHA-256) of one checkpoint or part file; ``CheckpointError`` if torn or corrupt."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc})") from None
    if not raw.startswith(MAGIC):
        raise CheckpointError(f"{path}: not an activestream checkpoint")
    digest, payload = raw[len(MAGIC) : len(MAGIC) + 64], raw[len(MAGIC) + 65 :]
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        raise CheckpointError(f"{path}: checksum mismatch (torn or corrupt file)")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}, digest.decode()
    except (ValueError, OSError) as exc:
        raise CheckpointError(f"{path}: unreadable archive ({exc})") from None


def _refers_to(state: Mapping[str, np.ndarray]) -> dict[str, str]:
    """The parts a checkpoint's own file refers to: name → SHA-256."""
    if _PARTS not in state:
        return {}
    return dict(zip(state[_PARTS].tolist(), state[_PARTS_SHA].tolist(), strict=True))


def _part_path(directory: Path, name: str) -> Path:
    return directory / f"part-{name}.ckpt"


def read_checkpoint(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a checkpoint file with those of its parts; ``CheckpointError`` if it or a part
    is torn, corrupt, missing or not the one it was written with."""
    return _read_with_parts(path)[0]


def part_paths(path: Path) -> list[Path]:
    """The part files a checkpoint file refers to."""
    return [_part_path(path.parent, name) for name in _refers_to(_read_file(path)[0])]


def _read_with_parts(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(:func:`read_checkpoint`, the parts it refers to: name → SHA-256)."""
    state, _ = _read_file(path)
    refs = _refers_to(state)
    for name, sha in refs.items():
        arrays, found = _read_file(_part_path(path.parent, name))
        if found != sha:
            raise CheckpointError(f"{path}: part {name} is not the one it was written with")
        state.update({f"{name}.{key}": value for key, value in arrays.items()})
    state.pop(_PARTS, None)
    state.pop(_PARTS_SHA, None)
    return state, refs


def _write_durably(path: Path, state: Mapping[str, np.ndarray]) -> str:
    """Write ``state`` to ``path`` through a fsynced temporary file; returns the payload's SHA-256
    (the caller fsyncs the directory)."""
    header, payload = _serialize(state)
    temp = path.with_name(f".{path.name}.tmp")
    try:
        with open(temp, "wb") as f:
            f.write(header)
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise CheckpointError(f"cannot write {path}: {exc}") from None
    return header[len(MAGIC) : len(MAGIC) + 64].decode()


class CheckpointStore:
    """Numbered checkpoint files in one directory."""

    def __init__(self, directory: Path, keep: int) -> None:
        self.directory = Path(directory)
        self.keep = keep
        self._parts: dict[str, str] = {}  # part name → SHA-256, for the parts on disk as this store knows them
        self._sizes: dict[str, int] = {}  # part name → bytes on disk
        self.written_bytes = self.held_bytes = 0  # by the last write: its file and new parts; its file and all parts
        self._refs: dict[str, set[str]] = {}  # checkpoint file name → the parts it refers to

    def prepare(self) -> None:
        """Create the directory and check it is writable (at start-up, so a bad mount fails early)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            probe = self.directory / ".write-probe"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise CheckpointError(f"checkpoint directory {self.directory} is not writable: {exc}") from None

    def paths(self) -> list[Path]:
        """Checkpoint files, newest first."""
        if not self.directory.is_dir():
            return []
        found = [(int(m.group(1)), p) for p in self.directory.iterdir() if (m := _NAME.match(p.name))]
        return [p for _, p in sorted(found, reverse=True)]

    def write(self, state: Mapping[str, np.ndarray], parts: Iterable[str] = ()) -> Path:
        """Write a new checkpoint durably and prune old ones; returns its path. The arrays named
        ``<part>.<key>`` for each of ``parts`` go to that part's file, written only if this store
        has not written or read it already (a part's content never changes under one name)."""
        parts = sorted(set(parts))
        own = dict(state)
        written = []
        for name in parts:
            prefix = f"{name}."
            arrays = {key[len(prefix):]: own.pop(key) for key in [k for k in own if k.startswith(prefix)]}
            if name not in self._parts:
                path = _part_path(self.directory, name)
                self._parts[name] = _write_durably(path, arrays)
                self._sizes[name] = path.stat().st_size
                written.append(name)
        own[_PARTS] = np.array(parts, dtype=np.str_)
        own[_PARTS_SHA] = np.array([self._parts[name] for name in parts], dtype=np.str_)
        existing = self.paths()
        seq = int(_NAME.match(existing[0].name).group(1)) + 1 if existing else 1
        final = self.directory / f"checkpoint-{seq:012d}.ckpt"
        if written:
            self._sync_directory(final)  # the parts are durable before a checkpoint can refer to them
        _write_durably(final, own)
        self._sync_directory(final)
        own_bytes = final.stat().st_size
        self.written_bytes = own_bytes + sum(self._sizes.get(name, 0) for name in written)
        self.held_bytes = own_bytes + sum(self._sizes.get(name, 0) for name in parts)
        self._refs[final.name] = set(parts)
        for old in self.paths()[self.keep :]:
            old.unlink(missing_ok=True)
            self._refs.pop(old.name, None)
        self._prune_parts()
        return final

    def _sync_directory(self, target: Path) -> None:
        try:
            dir_fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise CheckpointError(f"cannot write {target}: {exc}") from None

    def _prune_parts(self) -> None:
        """Delete the part files no kept checkpoint refers to (an unreadable one refers to none)."""
        kept: set[str] = set()
        for path in self.paths():
            if path.name not in self._refs:
                try:
                    self._refs[path.name] = set(_refers_to(_read_file(path)[0]))
                except CheckpointError:
                    self._refs[path.name] = set()
            kept |= self._refs[path.name]
        for path in self.directory.iterdir():
            if (m := _PART.match(path.name)) and m.group(1) not in kept:
                path.unlink(missing_ok=True)
                self._parts.pop(m.group(1), None)
                self._sizes.pop(m.group(1), None)

    def latest(self) -> tuple[Path, dict[str, np.ndarray]] | None:
        """The newest readable checkpoint; corrupt ones are skipped with a warning."""
        for path in self.paths():
            try:
                state, refs = _read_with_parts(path)
            except CheckpointError as exc:
                log.warning("skipping checkpoint: %s", exc)
                continue
            self._parts.update(refs)  # read and verified: the next checkpoint need not write them again
            self._sizes.update({name: _part_path(self.directory, name).stat().st_size for name in refs})
            self._refs[path.name] = set(refs)
            return path, state
        return None
