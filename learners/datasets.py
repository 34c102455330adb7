"""Datasets as streams: LIBSVM/SVMlight files (plain, .xz, .gz, .bz2).

The LIBSVM reader is a compiled two-pass parser over the file's bytes (count, then fill CSR
arrays). Short runs of digits are read a word at a time (:mod:`learners.digits`). Numbers take a
correctly rounded fast path (Clinger: at most 19 significant digits and |exponent| ≤ 22, exact in
float64); any other number is re-read with Python's ``float`` so every value is exactly what
``strtod`` gives.

Labels are kept as the file has them (±1, 0/1, 1/2, 1..k); :meth:`Dataset.binary_classes` maps a
two-label file onto (negative, positive) explicitly.

Seeded synthetic streams are made in :mod:`learners.synthetic`; a data spec (a path, a named
synthetic stream, transforms) is read by :func:`learners.data_spec.resolve`.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import lzma
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from learners.digits import digit_run, digits_value, word_at
from learners.inputs import Rows
from learners.jit import jit, signature
from learners.kernels import kernel, ready

__all__ = ["STREAM_BYTES", "Dataset", "LibsvmStream", "StreamSummary", "concat", "iter_libsvm",
           "read_libsvm", "scan_libsvm"]

_POW10 = np.array([10.0**k for k in range(23)])
_MAX_FAST_MANTISSA = 2**53
_POW10_INT = np.array([10**k for k in range(8)], dtype=np.uint64)
_LOW_BYTE = np.uint64(0xFF)
_NL, _CR, _SP, _TAB, _HASH, _COLON = 10, 13, 32, 9, 35, 58


@jit(inline="always")
def _number_bytes(buf, i, n):
    """Parse a decimal number at buf[i:], byte by byte. Returns (value, end, status): 0 exact,
    1 re-read, -1 bad."""
    neg = False
    if i < n and (buf[i] == 45 or buf[i] == 43):  # '-' '+'
        neg = buf[i] == 45
        i += 1
    mant = np.uint64(0)
    digits = 0
    exp10 = 0
    seen = False
    exact = True
    while i < n and 48 <= buf[i] <= 57:
        seen = True
        if digits < 19:
            mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
            if mant != 0:
                digits += 1
        else:
            exp10 += 1
            exact = False
        i += 1
    if i < n and buf[i] == 46:  # '.'
        i += 1
        while i < n and 48 <= buf[i] <= 57:
            seen = True
            if digits < 19:
                mant = mant * np.uint64(10) + np.uint64(buf[i] - 48)
                if mant != 0:
                    digits += 1
                exp10 -= 1
            else:
                exact = False
            i += 1
    if not seen:
        return 0.0, i, -1
    if i < n and (buf[i] == 101 or buf[i] == 69):  # 'e' 'E'
        i += 1
        eneg = False
        if i < n and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        if not (i < n and 48 <= buf[i] <= 57):
            return 0.0, i, -1
        e = 0
        while i < n and 48 <= buf[i] <= 57:
            if e < 100000:
                e = e * 10 + (buf[i] - 48)
            i += 1
        exp10 += -e if eneg else e
    status = 0
    if mant == 0:
        value = 0.0
    elif exact and mant <= _MAX_FAST_MANTISSA and -22 <= exp10 <= 22:
        value = float(mant) * _POW10[exp10] if exp10 >= 0 else float(mant) / _POW10[-exp10]
    else:
        value = float(mant) * 10.0**exp10
        status = 1
    return (-value if neg else value), i, status


@jit(inline="always")
def _parse_number(buf, i, n):
    """:func:`_number_bytes`, a word at a time for ``[±]D[.F]`` with at most seven digits D and seven F
    (:mod:`learners.digits`): the same value, exact, as every fraction here has ≤ 14 digits."""
    begin = i
    neg = False
    if i < n and (buf[i] == 45 or buf[i] == 43):  # '-' '+'
        neg = buf[i] == 45
        i += 1
    if i + 8 <= n:
        word = word_at(buf, i)
        k = digit_run(word)
        if k < 7 and (word >> np.uint64(8 * k)) & _LOW_BYTE == 46:  # '.' inside the word
            # the usual short decimal (0.2036) in this one word: its fraction's digits moved down over
            # the '.' join the integer part's, and digits_value reads them at once
            shift = np.uint64(8 * k)
            rest = word >> (shift + np.uint64(8))  # zeros come in at the top: not digits
            f = digit_run(rest)
            after = (rest >> np.uint64(8 * f)) & _LOW_BYTE
            if k + f > 0 and k + 1 + f < 8 and after != 101 and after != 69:  # ends in the word, not 'e' 'E'
                joined = (word & ((np.uint64(1) << shift) - np.uint64(1))) | (rest << shift)
                value = float(digits_value(joined, k + f)) / _POW10[f]
                return (-value if neg else value), i + k + 1 + f, 0
        if k < 8:
            mant = digits_value(word, k) if k else np.uint64(0)
            i += k
            if buf[i] == 46 and i + 9 <= n:  # '.'
                word = word_at(buf, i + 1)
                f = digit_run(word)
                if f < 8 and k + f > 0 and buf[i + 1 + f] != 101 and buf[i + 1 + f] != 69:  # not 'e' 'E'
                    if f:
                        mant = mant * _POW10_INT[f] + digits_value(word, f)
                    value = float(mant) / _POW10[f] if f else float(mant)
                    return (-value if neg else value), i + 1 + f, 0
            elif k and buf[i] != 46 and buf[i] != 101 and buf[i] != 69:
                value = float(mant)
                return (-value if neg else value), i, 0
    return _number_bytes(buf, begin, n)


_BYTES = "Array(uint8, 1, 'C', readonly=True)"  # np.frombuffer of the file: read-only
_I64 = "int64[::1]"


# Fixed signatures, compiled (loaded from the cache) before the first parse, so threads parsing
# chunks never race to compile.
@kernel(signature("UniTuple(int64, 2)", _BYTES))
def _count(buf):
    """Upper bounds for the arrays: (lines, colons)."""
    lines = 1
    colons = 0
    for c in buf:  # sums of comparisons, not branches: the loop vectorizes (three times as fast)
        lines += c == _NL
        colons += c == _COLON
    return lines, colons


# The steps of a walk over LIBSVM text, shared by the parse and the scan (inlined: no call cost).
@jit(inline="always")
def _row_start(buf, i, n):
    """The first byte of the next row at or after ``i`` (blank and comment lines stepped over); n at
    the end of the text."""
    while i < n:
        c = buf[i]
        if c == _NL or c == _CR or c == _SP or c == _TAB:  # noqa: SIM109 (compiled: no tuple scan)
            i += 1
        elif c == _HASH:
            while i < n and buf[i] != _NL:
                i += 1
        else:
            return i
    return n


@jit(inline="always")
def _ends_token(buf, i, n):
    return i >= n or buf[i] == _SP or buf[i] == _TAB or buf[i] == _NL or buf[i] == _CR


@jit(inline="always")
def _number_token(buf, i, n):
    """:func:`_parse_number` of a whole token (a label, a value): status −1 also when it does not end
    at a blank."""
    value, i, status = _parse_number(buf, i, n)
    if status >= 0 and not _ends_token(buf, i, n):
        status = -1
    return value, i, status


@jit(inline="always")
def _feature_start(buf, i, n):
    """(the first byte of the row's next feature, True), or (where the row ends, False); ``qid:``
    tokens and a trailing comment are stepped over."""
    while True:
        while i < n and (buf[i] == _SP or buf[i] == _TAB or buf[i] == _CR):
            i += 1
        if i >= n or buf[i] == _NL:
            return i, False
        if buf[i] == _HASH:
            while i < n and buf[i] != _NL:
                i += 1
            return i, False
        if buf[i] != 113:  # 'q': a qid:N token, not a feature
            return i, True
        while i < n and buf[i] != _SP and buf[i] != _TAB and buf[i] != _NL:
            i += 1


@jit(inline="always")
def _index_bytes(buf, i, n, one_based):
    """A feature's ``index:`` at ``i``, byte by byte: (0-based index, the byte after ':', error code
    or 0)."""
    start = i
    index = 0
    while i < n and 48 <= buf[i] <= 57:
        index = index * 10 + (buf[i] - 48)
        if index > 2147483647:
            return 0, i, 2
        i += 1
    if i == start:
        return 0, i, 2
    if i >= n or buf[i] != _COLON:
        return 0, i, 3
    index -= one_based
    if index < 0:
        return 0, i, 5
    return index, i + 1, 0


@jit(inline="always")
def _index(buf, i, n, one_based):
    """:func:`_index_bytes`, a word at a time for an index of at most seven digits."""
    if i + 8 <= n:
        word = word_at(buf, i)
        k = digit_run(word)
        if 0 < k < 8 and buf[i + k] == _COLON:
            index = np.int64(digits_value(word, k)) - one_based
            if index >= 0:
                return index, i + k + 1, 0
    return _index_bytes(buf, i, n, one_based)


@kernel(signature("UniTuple(int64, 7)", _BYTES, "int64", "float64[::1]", _I64, "int32[::1]",
                                     "float64[::1]", _I64, _I64, _I64, _I64))
def _parse(buf, one_based, labels, indptr, indices, data, fix_kind, fix_at, fix_lo, fix_hi):
    """Fill CSR arrays from LIBSVM text. Returns (rows, nnz, fixes, error_code, error_offset, width,
    ordered): width the largest index + 1, ordered 1 if every row's indices strictly increase (the
    rows are canonical: nothing to sort or sum), else 0.

    error codes: 0 ok, 1 bad label, 2 bad index, 3 missing ':', 4 bad value, 5 index below base.
    fix_* record numbers to re-read exactly: kind 0 = data[at], 1 = labels[at], text buf[lo:hi].
    """
    n = buf.size
    row = 0
    k = 0
    fixes = 0
    width = 0
    ordered = 1
    i = _row_start(buf, 0, n)
    while i < n:
        start = i
        value, i, status = _number_token(buf, i, n)
        if status < 0:
            return row, k, fixes, 1, start, width, ordered
        if status == 1:
            fix_kind[fixes], fix_at[fixes], fix_lo[fixes], fix_hi[fixes] = 1, row, start, i
            fixes += 1
        labels[row] = value
        indptr[row] = k
        last = -1  # the row's previous index
        i, more = _feature_start(buf, i, n)
        while more:
            start = i
            index, i, err = _index(buf, i, n, one_based)
            if err:
                return row, k, fixes, err, start, width, ordered
            if index <= last:
                ordered = 0
            last = index
            width = max(width, index + 1)
            vstart = i
            value, i, status = _number_token(buf, i, n)
            if status < 0:
                return row, k, fixes, 4, start, width, ordered
            if status == 1:
                fix_kind[fixes], fix_at[fixes], fix_lo[fixes], fix_hi[fixes] = 0, k, vstart, i
                fixes += 1
            indices[k] = index
            data[k] = value
            k += 1
            if i + 1 < n and buf[i] == _SP and 48 <= buf[i + 1] <= 57:  # the usual case: the next feature
                i += 1
            else:
                i, more = _feature_start(buf, i, n)
        row += 1
        i = _row_start(buf, i, n)
    indptr[row] = k
    return row, k, fixes, 0, 0, width, ordered


@kernel(signature("UniTuple(int64, 5)", _BYTES, "int64", "float64[::1]", _I64, _I64, _I64))
def _scan(buf, one_based, labels, fix_at, fix_lo, fix_hi):
    """:func:`_parse`'s walk over LIBSVM text keeping only what a stream must know before its first
    row: the labels and the largest index. Values are stepped over, not read (the replay's parse
    checks them). Returns (rows, width, label fixes, error_code, error_offset), codes as ``_parse``'s
    but for 4, which it never raises."""
    n = buf.size
    row = 0
    width = 0
    fixes = 0
    i = _row_start(buf, 0, n)
    while i < n:
        start = i
        value, i, status = _number_token(buf, i, n)
        if status < 0:
            return row, width, fixes, 1, start
        if status == 1:
            fix_at[fixes], fix_lo[fixes], fix_hi[fixes] = row, start, i
            fixes += 1
        labels[row] = value
        i, more = _feature_start(buf, i, n)
        while more:
            start = i
            index, i, err = _index(buf, i, n, one_based)
            if err:
                return row, width, fixes, err, start
            if index >= width:
                width = index + 1
            while i < n and buf[i] != _SP and buf[i] != _TAB and buf[i] != _NL and buf[i] != _CR:
                i += 1
            i, more = _feature_start(buf, i, n)
        row += 1
        i = _row_start(buf, i, n)
    return row, width, fixes, 0, 0


_ERRORS = {
    1: "a label that is not a number",
    2: "a feature index that is not a non-negative integer below 2**31",
    3: "a feature without ':' between index and value",
    4: "a feature value that is not a finite number",
    5: "feature index 0 in a file read as 1-based (pass zero_based=True)",
    6: "a number that overflows float64",
}


@dataclass(frozen=True, slots=True)
class Dataset:
    """Rows and their labels, in file order. ``ordered``: the order is part of the data (a
    drifting stream), so a replay must not permute it."""

    rows: Rows
    labels: np.ndarray
    name: str = ""
    ordered: bool = False

    @property
    def n(self) -> int:
        return self.rows.n

    def classes(self) -> list:
        """The distinct labels, sorted."""
        return np.unique(self.labels).tolist()

    def binary_classes(self, positive=None) -> tuple:
        """(negative, positive) for a two-label dataset; positive defaults to the label 1."""
        classes = self.classes()
        if len(classes) != 2:
            raise ValueError(
                f"{self.name or 'dataset'} has {len(classes)} labels {classes[:10]}, a binary learner needs 2"
            )
        if positive is None:
            if 1 not in classes:
                raise ValueError(f"cannot tell the positive class of labels {classes}: name it (--positive)")
            positive = 1
        if positive not in classes:
            raise ValueError(f"positive label {positive!r} is not one of {classes}")
        return (classes[1] if classes[0] == positive else classes[0], positive)

    def with_features(self, n_features: int) -> Dataset:
        if n_features < self.rows.n_features:
            raise ValueError(f"{self.name} has {self.rows.n_features} features, more than {n_features}")
        r = self.rows
        return Dataset(Rows(r.indptr, r.indices, r.data, n_features), self.labels, self.name, self.ordered)


def _open(path: str | os.PathLike):
    """The file's bytes as a stream, decompressed as they are read (.xz, .lzma, .gz, .bz2)."""
    p = Path(path)
    opener = {".xz": lzma.open, ".lzma": lzma.open, ".gz": gzip.open, ".bz2": bz2.open}.get(p.suffix, open)
    return opener(p, "rb")


def _read_bytes(path: str | os.PathLike) -> bytes:
    with _open(path) as f:
        return f.read()


def _labels(values: np.ndarray) -> np.ndarray:
    as_int = values.astype(np.int64)
    return as_int if np.array_equal(as_int, values) else values


def _name_of(source: str | os.PathLike | bytes) -> str:
    return "bytes" if isinstance(source, bytes) else Path(source).name.split(".xz")[0]


def read_libsvm(source: str | os.PathLike | bytes, *, zero_based: bool = False,
                n_features: int | None = None, name: str | None = None, threads: int | None = None) -> Dataset:
    """Read a LIBSVM/SVMlight file (or its bytes) into a :class:`Dataset`.

    Indices are 1-based as in LIBSVM unless ``zero_based``. ``n_features`` defaults to the largest
    index + 1. A malformed line raises ``ValueError`` naming the line and what is wrong with it.
    Buffers over 4 MB are split at line ends and parsed by ``threads`` threads at once (default:
    the CPU count, at most 4; the compiled parser releases the GIL).
    """
    raw = source if isinstance(source, bytes) else _read_bytes(source)
    text = np.frombuffer(raw, dtype=np.uint8)
    rows, labels = _parse_text(text, name or _name_of(source), zero_based, n_features, threads, 0)
    return Dataset(rows, _labels(labels), name or _name_of(source))


def _malformed(text: np.ndarray, name: str, err: int, at: int, lines_before: int) -> ValueError:
    """The error of a malformed token at byte ``at`` of ``text``, naming the file's line and the text."""
    line = lines_before + int(np.count_nonzero(text[:at] == _NL)) + 1
    token = text[at : at + 240].tobytes().partition(b"\n")[0][:60].decode(errors="replace")
    return ValueError(f"{name}, line {line}: {_ERRORS[err]} at {token!r}")


def _parse_text(text: np.ndarray, name: str, zero_based: bool, n_features: int | None, threads: int | None,
                lines_before: int, pieces: list[_Piece] | None = None, shared: _SharedWork | None = None,
                ) -> tuple[Rows, np.ndarray]:
    """Rows (over ``n_features``, default the largest index + 1) and float labels of whole lines of
    LIBSVM text (its bytes, read-only); ``lines_before``: lines of the file before ``text``, for the
    error messages; ``pieces``: the parts to parse it in, with their :func:`_count` (by default
    ``threads`` parts, counted here); ``shared``: where another thread may take a part."""
    return _rows_of(_parsed_text(text, name, zero_based, threads, lines_before, pieces, shared), name, n_features)


def _parsed_text(text: np.ndarray, name: str, zero_based: bool, threads: int | None, lines_before: int,
                 pieces: list[_Piece] | None, shared: _SharedWork | None) -> _Parsed:
    """:func:`_parse_text`'s part that reads the text: the parse, its errors, the numbers read again."""
    if pieces is None:
        if threads is None:
            threads = min(os.cpu_count() or 1, 4) if text.size > _PARALLEL_BYTES else 1
        pieces = [(chunk, None) for chunk in _chunks(text, threads)]
    parsed = _parse_chunks(text, pieces, 0 if zero_based else 1, shared)
    if parsed.error:
        raise _malformed(text, name, *parsed.error, lines_before)
    for kind, at_, lo, hi in parsed.fixes:
        # the compiled parse reads exactly only numbers far inside float64; the rest come here
        value = float(text[lo:hi].tobytes())
        if not math.isfinite(value):
            raise _malformed(text, name, 6, lo, lines_before)
        (parsed.labels if kind == 1 else parsed.data)[at_] = value
    return parsed


def _rows_of(parsed: _Parsed, name: str, n_features: int | None) -> tuple[Rows, np.ndarray]:
    """:func:`_parse_text`'s rows and labels of the parsed text, which it no longer reads."""
    labels, indptr, indices, data = parsed.joined()
    width = parsed.width
    if n_features is not None and width > n_features:
        raise ValueError(f"{name} has feature index {width - 1}, beyond n_features={n_features}")
    rows = Rows(indptr, indices, data, n_features or width)
    return (rows if parsed.ordered else _canonical(rows)), labels


# Text parsed at a time when a file is read as a stream: the rows it makes (CSR arrays take two to
# three times the text's bytes) stay a few tens of MB, and a replay's per-chunk cost is negligible.
STREAM_BYTES = 1 << 22


def iter_libsvm(path: str | os.PathLike, *, zero_based: bool = False, n_features: int | None = None,
                integral_labels: bool | None = None, block_bytes: int = STREAM_BYTES,
                name: str | None = None, threads: int | None = None) -> Iterator[Dataset]:
    """The rows of a LIBSVM file as consecutive datasets of about ``block_bytes`` of text each, read
    as a stream (a compressed file is decompressed as it goes): memory follows the block, not the file.

    Rows and errors are those of :func:`read_libsvm`, block by block. ``n_features`` (default: each
    block's largest index + 1) should be the file's, which :func:`scan_libsvm` finds;
    ``integral_labels`` says whether labels are int64 (the whole file's are integers) or float64
    (None: decided per block). ``threads`` parse a block at once (default: as :func:`read_libsvm`).
    """
    return (finish() for finish in _stream_rows(path, zero_based, n_features, integral_labels, block_bytes, name,
                                                threads))


def _stream_rows(path: str | os.PathLike, zero_based: bool, n_features: int | None, integral_labels: bool | None,
                 block_bytes: int, name: str | None, threads: int | None, shared: _SharedWork | None = None,
                 ) -> Iterator[Callable[[], Dataset]]:
    """:func:`iter_libsvm`'s blocks, each parsed and checked against its text, and what makes it a
    dataset without the text (which the next block overwrites): called by whoever takes the block, so
    that a reader thread goes on to the next one meanwhile. With ``shared``, each block is parsed in
    :data:`SHARED_PARTS` parts that another thread may take a share of (:func:`_prefetched`'s caller,
    while it waits for the block)."""
    name = name or _name_of(path)
    parts = SHARED_PARTS if shared is not None else 1
    for text, lines, pieces in _blocks(path, block_bytes, parts):  # text: valid until the next block is read
        # one piece, counted: parsed as is unless threads (or, by default, a block past _PARALLEL_BYTES) split it
        split = shared is None and ((threads or 0) > 1 or (threads is None and text.size > _PARALLEL_BYTES))
        parsed = _parsed_text(text, name, zero_based, threads, lines, None if split else pieces, shared)
        yield functools.partial(_dataset_of, parsed, name, n_features, integral_labels)


def _dataset_of(parsed: _Parsed, name: str, n_features: int | None, integral_labels: bool | None) -> Dataset:
    rows, labels = _rows_of(parsed, name, n_features)
    if integral_labels is None:
        labels = _labels(labels)
    elif integral_labels:
        labels = labels.astype(np.int64)
    return Dataset(rows, labels, name)


_Piece = tuple[tuple[int, int], tuple[int, int] | None]  # a byte range of a block, its _count if known

# Parts of a stream block when the replay's thread may parse some of them: enough that it finds one to
# take when it would wait, few enough that their per-part work (a count, a slice, a join) stays small
SHARED_PARTS = 16


def _blocks(path: str | os.PathLike, block_bytes: int, parts: int = 1) -> Iterator[tuple[np.ndarray, int,
                                                                                          list[_Piece]]]:
    """The file's text in blocks of about ``block_bytes`` ending at a line end (a line longer than a
    block makes a longer one), each with the number of lines before it and its ``parts`` pieces (byte
    ranges ending at a line end) with :func:`_count`'s bounds of their rows and features (their line
    ends + 1, their colons); blank blocks left out.

    A block is a read-only view of the one buffer the file is read into, valid until the next block
    is asked for: a fresh copy of every block costs more than its parse (page faults on new memory).
    """
    count = ready(_count)
    buf = bytearray(block_bytes)
    held = 0  # the start of a line not yet ended, carried at the front of buf
    lines = 0
    with _open(path) as f:
        while True:
            if held == len(buf):  # a line longer than the buffer: read on into a larger one (a new
                buf = buf + bytes(len(buf))  # buffer: the last block handed out may still be viewed)
            got = f.readinto(memoryview(buf)[held:])
            end = held + got
            cut = buf.rfind(b"\n", 0, end) + 1 if got else end
            if got and cut == 0:
                held = end
                continue
            text = np.frombuffer(buf, dtype=np.uint8, count=cut)
            text.flags.writeable = False
            chunks = _chunks(text, parts) if parts > 1 else [(0, cut)]
            # compiled: numpy's text == _NL makes a mask as large
            pieces = [((lo, hi), count(text[lo:hi])) for lo, hi in chunks]
            if cut and not _blank(text):
                yield text, lines, pieces
            lines += sum(int(bounds[0]) - 1 for _, bounds in pieces)
            buf[: end - cut] = memoryview(buf)[cut:end]
            held = end - cut
            if not got:
                return


def _blank(text: np.ndarray) -> bool:
    """Whether ``text`` holds only white space (bytes.isspace), looking at its start first."""
    return text[:64].tobytes().isspace() and text.tobytes().isspace()


@dataclass(frozen=True, slots=True)
class StreamSummary:
    """What a replay must know of LIBSVM files before their first row: rows, the width, the labels."""

    n: int
    n_features: int
    labels: np.ndarray  # the distinct labels, sorted, as :func:`read_libsvm` would type them
    name: str  # as :func:`concat` names the files read and joined

    @property
    def integral_labels(self) -> bool:
        return self.labels.dtype.kind in "iu"

    def as_dataset(self) -> Dataset:
        """A dataset with no rows and these labels, for :meth:`Dataset.classes` and
        :meth:`Dataset.binary_classes`."""
        return Dataset(Rows.concatenate([], [], self.n_features), self.labels, self.name)


def _prefetched(chunks: Iterator[Callable[[], Dataset]], shared: _SharedWork | None = None) -> Iterator[Dataset]:
    """The datasets ``chunks`` make, the next one read, decompressed and parsed in a thread while the
    caller works on the current one: all three release the GIL, as the compiled replay does. The
    caller makes each dataset of its parsed block (:func:`_stream_rows`) while the thread reads the
    next. At most two chunks are held at once; an error in the thread is raised here, in order. With
    ``shared`` (what ``chunks`` parse through), the caller takes parts of the next chunk's parse while
    it is not ready."""
    ready: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def hand_over(item: tuple[str, object]) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for chunk in chunks:
                if not hand_over(("chunk", chunk)):
                    return
            hand_over(("end", None))
        except BaseException as exc:  # re-raised in the caller's thread
            hand_over(("error", exc))

    worker = threading.Thread(target=produce, name="libsvm-reader", daemon=True)
    worker.start()
    try:
        while True:
            try:
                kind, item = ready.get_nowait()
            except queue.Empty:
                if shared is not None and shared.help():
                    continue
                kind, item = ready.get()
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item()
    finally:
        stop.set()
        worker.join()


class LibsvmStream:
    """LIBSVM files read one after the other as one stream of chunks, afresh on every call (a replay
    reads it once per pass); counts the rows of the last pass and the seconds spent reading.

    ``n_features`` and ``integral_labels`` are the whole stream's (:func:`scan_libsvm`).
    """

    def __init__(self, paths: Sequence[str | os.PathLike], *, zero_based: bool = False, n_features: int,
                 integral_labels: bool | None = None, block_bytes: int = STREAM_BYTES) -> None:
        self.paths, self.zero_based, self.n_features = list(paths), zero_based, n_features
        self.integral_labels, self.block_bytes = integral_labels, block_bytes
        self.rows = 0
        self.read_seconds = 0.0

    def __call__(self) -> Iterator[Dataset]:
        self.rows = 0
        for path in self.paths:
            shared = _SharedWork()
            parsed = _stream_rows(path, self.zero_based, self.n_features, self.integral_labels, self.block_bytes,
                                  name=None, threads=None, shared=shared)
            chunks = _prefetched(parsed, shared)
            while True:
                start = time.perf_counter()
                chunk = next(chunks, None)
                self.read_seconds += time.perf_counter() - start
                if chunk is None:
                    break
                self.rows += chunk.n
                yield chunk


def scan_libsvm(paths: Sequence[str | os.PathLike], *, zero_based: bool = False) -> StreamSummary:
    """One streaming pass over LIBSVM files, keeping only their row count, width and label set (the
    files one after the other, as :func:`concat` joins them). Feature values are stepped over, not
    read: a malformed value is reported by the pass that parses the rows."""
    n, width, labels = 0, 0, []
    threads = os.cpu_count() or 1  # nothing else runs meanwhile: every core scans
    for path in paths:
        name = _name_of(path)
        for text, lines, [(_, (most_rows, _))] in _blocks(path, STREAM_BYTES):
            rows, block_width, block_labels = _scan_text(text, name, zero_based, threads, lines, most_rows)
            n += rows
            width = max(width, block_width)
            labels.append(np.unique(block_labels))
    distinct = np.unique(np.concatenate(labels)) if labels else np.empty(0)
    return StreamSummary(n, width, _labels(distinct), "+".join(_name_of(p) for p in paths))


def _scan_text(text: np.ndarray, name: str, zero_based: bool, threads: int, lines_before: int, most_rows: int,
               ) -> tuple[int, int, np.ndarray]:
    """(rows, largest index + 1, float labels) of whole lines of LIBSVM text holding at most
    ``most_rows`` rows, by :func:`_scan` in ``threads`` parts at once; errors as :func:`_parse_text`
    names them."""
    chunks = _chunks(text, threads if text.size > _PARALLEL_BYTES else 1)
    scan = ready(_scan)

    def scan_chunk(lo_hi: tuple[int, int]):
        lo, hi = lo_hi
        labels, fixes = np.empty(most_rows), [np.empty(most_rows, dtype=np.int64) for _ in range(3)]
        rows, width, k, err, at = scan(text[lo:hi], 0 if zero_based else 1, labels, *fixes)
        for j in range(k if not err else 0):
            value = float(text[lo + fixes[1][j] : lo + fixes[2][j]].tobytes())
            if not math.isfinite(value):
                return rows, width, labels, 6, lo + fixes[1][j]
            labels[fixes[0][j]] = value
        return rows, width, labels[:rows], err, lo + at

    with _mapper(len(chunks)) as each:
        results = list(each(scan_chunk, chunks))
    for _, _, _, err, at in results:
        if err:
            raise _malformed(text, name, err, at, lines_before)
    labels = np.concatenate([r[2] for r in results])
    return sum(r[0] for r in results), max(r[1] for r in results), labels


_PARALLEL_BYTES = 1 << 22  # below this, one thread parses the whole buffer


def _chunks(text: np.ndarray, k: int) -> list[tuple[int, int]]:
    """Up to k byte ranges covering ``text``, each ending at a line end (the last at the end)."""
    bounds = [0]
    for j in range(1, k):
        cut = _line_end(text, j * text.size // k)
        if cut < 0:
            break
        if cut + 1 > bounds[-1]:
            bounds.append(cut + 1)
    if bounds[-1] < text.size or len(bounds) == 1:
        bounds.append(text.size)
    return list(pairwise(bounds))


def _line_end(text: np.ndarray, at: int) -> int:
    """The offset of the first line end at or after ``at``; −1 if there is none."""
    window = 4096
    while at < text.size:
        hits = np.flatnonzero(text[at : at + window] == _NL)
        if hits.size:
            return at + int(hits[0])
        at += window
        window *= 2
    return -1


@contextmanager
def _mapper(tasks: int, shared: _SharedWork | None = None) -> Iterator[Callable]:
    """``map`` over threads for several tasks, the builtin for one (no thread per stream block);
    with ``shared``, its :meth:`_SharedWork.map`."""
    if shared is not None:
        yield shared.map
    elif tasks == 1:
        yield map
    else:
        with ThreadPoolExecutor(max_workers=tasks) as pool:
            yield pool.map


class _SharedWork:
    """Tasks that the thread mapping them works through, which one other thread may take a share of
    with :meth:`help` (a task at a time) while it would otherwise wait: the compiled parse lets go of
    the GIL, so both run at once with no third thread competing for two cores."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._job: _Job | None = None
        self._room = np.empty((4, 0), dtype=np.int64)

    def room(self, n: int) -> np.ndarray:
        """Scratch for the numbers a block's parse must read again, (4, ``n``), the same buffer for
        every block: one that only the rare such number touches stays out of memory, where a fresh
        one each block costs the allocator's calls and page faults."""
        if self._room.shape[1] < n:
            self._room = np.empty((4, n + n // 4), dtype=np.int64)
        return self._room[:, :n]

    def map(self, fn: Callable, items) -> list:
        job = _Job(fn, list(items))
        with self._lock:
            self._job = job
        try:
            while job.run_one():
                pass
            return job.results()
        finally:
            with self._lock:
                self._job = None

    def help(self) -> bool:
        """Run one task of the current map that no thread has taken; False if there is none."""
        with self._lock:
            job = self._job
        return job is not None and job.run_one()


class _Job:
    """One :meth:`_SharedWork.map`: its tasks, taken in order by whichever thread asks first."""

    def __init__(self, fn: Callable, items: list) -> None:
        self.fn, self.items = fn, items
        self.out: list = [None] * len(items)
        self.errors: list[BaseException | None] = [None] * len(items)
        self.taken, self.left = 0, len(items)  # tasks handed out, tasks not finished
        self.done = threading.Condition()

    def run_one(self) -> bool:
        with self.done:
            if self.taken == len(self.items):
                return False
            j = self.taken
            self.taken += 1
        try:
            self.out[j] = self.fn(self.items[j])
        except BaseException as exc:  # raised by the mapping thread, in order
            self.errors[j] = exc
        with self.done:
            self.left -= 1
            if not self.left:
                self.done.notify_all()
        return True

    def results(self) -> list:
        """The tasks' results in order, once every one has run (a helper may still be on one)."""
        with self.done:
            self.done.wait_for(lambda: not self.left)
        for exc in self.errors:
            if exc is not None:
                raise exc
        return self.out


@dataclass(frozen=True, slots=True)
class _Parsed:
    """The pieces of a text parsed into their slices of shared arrays, each slice as large as the
    piece's count allows; :meth:`joined` makes them the text's rows, without reading the text."""

    labels: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    row_at: np.ndarray  # where each piece's slice of labels (and indptr) starts, then the end
    nnz_at: np.ndarray  # where each piece's slice of indices and data starts, then the end
    rows: np.ndarray  # the rows each piece holds
    nnz: np.ndarray  # the features each piece holds
    fixes: list[tuple[int, int, int, int]]  # (kind, at, lo, hi): at in the slices' arrays, lo:hi in the text
    error: tuple[int, int] | None  # (code, byte offset) of the first malformed token
    width: int  # the largest index + 1
    ordered: bool  # every row's indices strictly increase

    def joined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Labels and CSR arrays (indptr, indices, data) of the pieces one after the other."""
        rows, nnz, row_at, nnz_at = self.rows, self.nnz, self.row_at, self.nnz_at
        out_nnz = np.concatenate([[0], np.cumsum(nnz)])
        if rows.size == 1:
            labels, indptr = self.labels[: rows[0]], self.indptr[: rows[0] + 1]
            indices, data = self.indices[: nnz[0]], self.data[: nnz[0]]
        else:
            pieces = range(rows.size)
            labels = np.concatenate([self.labels[row_at[j]:row_at[j] + rows[j]] for j in pieces])
            indptr = np.concatenate([self.indptr[row_at[j]:row_at[j] + rows[j]] + out_nnz[j] for j in pieces]
                                    + [out_nnz[-1:]])
            if np.array_equal(nnz[:-1], np.diff(nnz_at)[:-1]):  # the usual case: no gap between the pieces' features
                indices, data = self.indices[: out_nnz[-1]], self.data[: out_nnz[-1]]
            else:
                indices = np.concatenate([self.indices[nnz_at[j]:nnz_at[j] + nnz[j]] for j in pieces])
                data = np.concatenate([self.data[nnz_at[j]:nnz_at[j] + nnz[j]] for j in pieces])
        return _trim_to(labels), _trim_to(indptr), _trim_to(indices), _trim_to(data)


def _parse_chunks(text: np.ndarray, pieces: list[_Piece], one_based: int, shared: _SharedWork | None = None,
                  ) -> _Parsed:
    """Count (the pieces not counted yet), then parse, every piece (in parallel threads when there are
    several, or in this one and whichever takes a share of ``shared``) into slices of shared arrays
    sized by the counts (:meth:`_Parsed.joined` closes the gaps the counts' slack leaves)."""
    chunks = [chunk for chunk, _ in pieces]
    views = [text[lo:hi] for lo, hi in chunks]
    with _mapper(len(chunks), shared) as each:
        count, parse = ready(_count), ready(_parse)
        known = [bounds for _, bounds in pieces]
        counts = known if None not in known else list(each(count, views))
        lines = np.array([c[0] for c in counts], dtype=np.int64)
        colons = np.array([c[1] for c in counts], dtype=np.int64)
        row_at = np.concatenate([[0], np.cumsum(lines)])
        nnz_at = np.concatenate([[0], np.cumsum(colons)])
        labels = np.empty(row_at[-1], dtype=np.float64)
        indptr = np.empty(row_at[-1] + 1, dtype=np.int64)
        indices = np.empty(nnz_at[-1], dtype=np.int32)
        data = np.empty(nnz_at[-1], dtype=np.float64)
        slots = np.concatenate([[0], np.cumsum(lines + colons)])  # each piece's numbers: its fixes' room
        room = shared.room(slots[-1]) if shared is not None else np.empty((4, slots[-1]), dtype=np.int64)
        fix = [[room[r, slots[j]:slots[j + 1]] for r in range(4)] for j in range(len(chunks))]

        def parse_chunk(j: int):
            r0, r1, k0, k1 = row_at[j], row_at[j + 1], nnz_at[j], nnz_at[j + 1]
            # a chunk writes indptr[r0 .. r0 + rows]; rows < lines, so it never reaches the next chunk's slice
            return parse(views[j], one_based, labels[r0:r1], indptr[r0:r1 + 1], indices[k0:k1], data[k0:k1], *fix[j])

        results = list(each(parse_chunk, range(len(chunks))))
    error = next(((err, lo + at) for (lo, _), (_, _, _, err, at, _, _) in zip(chunks, results, strict=True) if err),
                 None)
    rows = np.array([r[0] for r in results], dtype=np.int64)
    nnz = np.array([r[1] for r in results], dtype=np.int64)
    fixes = [(int(kind), int(at + (row_at[j] if kind == 1 else nnz_at[j])), int(lo + chunks[j][0]),
              int(hi + chunks[j][0]))
             for j, r in enumerate(results) for kind, at, lo, hi in zip(*(f[: r[2]] for f in fix[j]), strict=True)]
    return _Parsed(labels, indptr, indices, data, row_at, nnz_at, rows, nnz, [] if error else fixes, error,
                   max(r[5] for r in results), all(r[6] for r in results))


def _trim_to(a: np.ndarray) -> np.ndarray:
    """``a`` itself, or a compact copy that releases the slack when it is a small view of a much
    larger buffer (comments and qid tokens inflate the counts)."""
    base = a.base if a.base is not None else a
    return a if a.size >= 0.9 * base.size else a.copy()


def _is_canonical(rows: Rows) -> bool:
    """Whether every row's indices strictly increase (SciPy's canonical CSR format). O(nnz)."""
    indices = rows.indices[: rows.nnz]
    if indices.size < 2:
        return True
    increasing = indices[1:] > indices[:-1]
    starts = rows.indptr[1:-1]
    starts = starts[(starts > 0) & (starts < indices.size)]
    increasing[starts - 1] = True  # a row's first index need not exceed the previous row's last
    return bool(increasing.all())


def _canonical(rows: Rows) -> Rows:
    """Sum duplicate indices within rows (LIBSVM files normally have none; this checks cheaply)."""
    if _is_canonical(rows):
        return rows
    csr = rows.to_csr()
    csr.sum_duplicates()
    return Rows.from_arrays(csr.indptr, csr.indices, csr.data, rows.n_features)


def concat(parts: list[Dataset]) -> Dataset:
    """Datasets one after the other (w8a + w8a.t), over the widest feature space."""
    if len(parts) == 1:
        return parts[0]
    width = max(p.rows.n_features for p in parts)
    offsets = np.cumsum([0] + [p.rows.nnz for p in parts[:-1]])
    shifted = [p.rows.indptr[1:] + o for p, o in zip(parts, offsets, strict=True)]
    indptr = np.concatenate([parts[0].rows.indptr[:1], *shifted])
    rows = Rows.from_arrays(indptr, np.concatenate([p.rows.indices for p in parts]),
                            np.concatenate([p.rows.data for p in parts]), width)
    labels = np.concatenate([p.labels for p in parts])
    return Dataset(rows, labels, "+".join(p.name for p in parts), any(p.ordered for p in parts))
