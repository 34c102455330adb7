"""Durable checkpoints: model, pending store, counters and offsets in one file, written atomically.

A checkpoint file is ``MAGIC`` + the SHA-256 of the payload + the payload, an ``.npz`` archive of
plain arrays (loaded with ``allow_pickle=False``). It is written to a temporary file in the same
directory, fsynced, renamed into place and the directory fsynced, so a crash leaves either the old
set of checkpoints or the new one, never a torn file. The newest ``keep`` files are kept.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from consumer.errors import CheckpointError

__all__ = ["CheckpointPolicy", "CheckpointStore", "read_checkpoint"]

log = logging.getLogger(__name__)

MAGIC = b"ACTIVESTREAM-CHECKPOINT-1\n"
_NAME = re.compile(r"^checkpoint-(\d{12})\.ckpt$")


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


def read_checkpoint(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a checkpoint file; ``CheckpointError`` if it is torn, corrupt or not one."""
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
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError) as exc:
        raise CheckpointError(f"{path}: unreadable archive ({exc})") from None


class CheckpointStore:
    """Numbered checkpoint files in one directory."""

    def __init__(self, directory: Path, keep: int) -> None:
        self.directory = Path(directory)
        self.keep = keep

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

    def write(self, state: Mapping[str, np.ndarray]) -> Path:
        """Write a new checkpoint durably and prune old ones; returns its path."""
        header, payload = _serialize(state)
        existing = self.paths()
        seq = int(_NAME.match(existing[0].name).group(1)) + 1 if existing else 1
        final = self.directory / f"checkpoint-{seq:012d}.ckpt"
        temp = self.directory / f".{final.name}.tmp"
        try:
            with open(temp, "wb") as f:
                f.write(header)
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, final)
            dir_fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            raise CheckpointError(f"cannot write {final}: {exc}") from None
        for old in self.paths()[self.keep :]:
            old.unlink(missing_ok=True)
        return final

    def latest(self) -> tuple[Path, dict[str, np.ndarray]] | None:
        """The newest readable checkpoint; corrupt ones are skipped with a warning."""
        for path in self.paths():
            try:
                return path, read_checkpoint(path)
            except CheckpointError as exc:
                log.warning("skipping checkpoint: %s", exc)
        return None
