"""A learner's state as bytes (an ``.npz`` archive of plain arrays), and deltas between two states."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping

import numpy as np

__all__ = ["State", "apply_delta", "decode_state", "delta", "encode_state"]

_NUMERIC = "biufc"  # bool, signed, unsigned, float, complex: arrays a delta may patch element-wise

State = dict[str, np.ndarray]


def _archive(state: Mapping[str, np.ndarray]) -> memoryview:
    """The ``.npz`` archive of ``state``, as a view of its buffer (no copy of the payload)."""
    arrays = {k: np.asarray(v) for k, v in state.items()}
    for name, a in arrays.items():
        if a.dtype.hasobject:  # np.load(allow_pickle=False) would refuse it on the other side
            raise ValueError(f"state array {name!r} has dtype {a.dtype}: only plain arrays can be published")
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getbuffer()


def encode_state(state: Mapping[str, np.ndarray]) -> bytes:
    """``state`` as an ``.npz`` archive."""
    return bytes(_archive(state))


def decode_state(payload: bytes | memoryview) -> State:
    """The arrays of an :func:`encode_state` archive; ``ValueError`` if it is not a readable one."""
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"unreadable state archive: {exc}") from None


# ------------------------------------------------------------------------------------------ deltas

_WHOLE, _INDEX, _VALUE, _REMOVED = "whole.", "index.", "value.", "removed"


def _bits(a: np.ndarray) -> np.ndarray:
    """The elements of ``a`` as unsigned integers of the same width (rows of bytes if no such
    integer), so that equality is bitwise: NaN equals itself, -0.0 differs from 0.0."""
    flat = np.ascontiguousarray(a).reshape(-1)
    size = a.dtype.itemsize
    if size in (1, 2, 4, 8):
        return flat.view(f"u{size}")
    return flat.view(np.uint8).reshape(flat.size, size)


def _changed(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Flat indices where ``new`` differs bitwise from ``old`` (same shape and dtype)."""
    a, b = _bits(old), _bits(new)
    diff = a != b
    return np.flatnonzero(diff if diff.ndim == 1 else diff.any(axis=1))


def delta(base: Mapping[str, np.ndarray], new: Mapping[str, np.ndarray]) -> State:
    """What turns ``base`` into ``new``, as plain arrays (publishable like a state).

    For a numeric array of the same shape and dtype in both: the flat indices that changed
    (``index.<name>``) and their new values (``value.<name>``), compared bitwise; nothing if none
    changed. Arrays that are new, reshaped, retyped, non-numeric and changed, or changed in more
    than half their elements (or where the indices would outweigh the array) are stored whole
    (``whole.<name>``). Names in ``base`` but not ``new`` are listed in ``removed``.
    """
    out: State = {}
    for name, value in new.items():
        b = np.asarray(value)
        a = np.asarray(base[name]) if name in base else None
        if a is None or a.shape != b.shape or a.dtype != b.dtype:
            out[_WHOLE + name] = b
        elif b.dtype.kind not in _NUMERIC:
            if a.tobytes() != b.tobytes():
                out[_WHOLE + name] = b
        else:
            idx = _changed(a, b)
            if idx.size == 0:
                continue
            idx = idx.astype(np.uint32 if b.size <= 2**32 else np.int64)
            if 2 * idx.size > b.size or idx.size * (idx.itemsize + b.itemsize) >= b.nbytes:
                out[_WHOLE + name] = b
            else:
                out[_INDEX + name] = idx
                out[_VALUE + name] = np.ascontiguousarray(b).reshape(-1)[idx]
    out[_REMOVED] = np.array(sorted(set(base) - set(new)), dtype=np.str_)
    return out


def apply_delta(base: Mapping[str, np.ndarray], change: Mapping[str, np.ndarray]) -> State:
    """``new`` from ``base`` and ``delta(base, new)``, bit for bit. ``base`` is not modified;
    unchanged arrays are shared with it. ``ValueError`` if the delta does not fit ``base``."""
    removed = {str(n) for n in np.asarray(change.get(_REMOVED, np.array([], dtype=np.str_))).reshape(-1)}
    out: State = {name: np.asarray(a) for name, a in base.items() if name not in removed}
    for key, value in change.items():
        if key.startswith(_WHOLE):
            out[key[len(_WHOLE):]] = np.asarray(value)
        elif key.startswith(_INDEX):
            name = key[len(_INDEX):]
            if name not in out or _VALUE + name not in change:
                raise ValueError(f"delta patches {name!r}, which the base does not hold")
            patched = np.array(out[name], copy=True, order="C")
            idx, val = np.asarray(value), np.asarray(change[_VALUE + name])
            if idx.shape != val.shape or val.dtype != patched.dtype or idx.dtype.kind not in "ui" \
                    or (idx.size and idx.min() < 0):  # a negative index would wrap around silently
                raise ValueError(f"delta for {name!r} does not fit the base's array")
            try:
                patched.reshape(-1)[idx] = val
            except IndexError as exc:
                raise ValueError(f"delta for {name!r}: {exc}") from None
            out[name] = patched
        elif not key.startswith(_VALUE) and key != _REMOVED:
            raise ValueError(f"unknown delta entry {key!r}")
    return out
