"""Input rows in the kernels' dtypes, their validation, and the learner-level feature transform.

Every input form ends up as :class:`Rows`, a CSR batch with int64 ``indptr``, int32 ``indices``
and float64 ``data``:

* a SciPy sparse matrix or array (any format), a dense 2-D array, or a list of dense rows;
* one record: a dense 1-D sequence, ``{"indices": [...], "values": [...]}``, a mapping of
  integer coordinates to values, or a mapping of names to values (hashed, see
  :mod:`learners.hashing`).

Validation turns NaN/inf values, negative or out-of-range coordinates and ragged dense rows into a
``ValueError`` that names the row and the offending value, before anything touches a model.
Duplicate coordinates within a row (hash collisions, careless producers) are summed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from learners.hashing import hash_features
from learners.jit import signature
from learners.kernels import kernel, ready

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["Rows", "as_row", "as_rows", "transform", "transform_row"]

_MAX_FEATURES = np.iinfo(np.int32).max


@dataclass(frozen=True, slots=True)
class Rows:
    """A batch of sparse rows (CSR arrays) over ``n_features`` coordinates."""

    indptr: np.ndarray  # int64, shape (n + 1,)
    indices: np.ndarray  # int32, shape (nnz,)
    data: np.ndarray  # float64, shape (nnz,)
    n_features: int

    @property
    def n(self) -> int:
        return self.indptr.size - 1

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.indptr[i], self.indptr[i + 1]
        return self.indices[lo:hi], self.data[lo:hi]

    def take(self, rows: np.ndarray) -> Rows:
        """A new batch holding copies of ``rows`` (indices or a mask) in the given order."""
        pick = np.asarray(rows)
        rows = np.arange(self.n)[pick if pick.size else pick.astype(np.int64)]  # any NumPy index, checked
        lengths = self.indptr[rows + 1] - self.indptr[rows]
        indptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        at = np.repeat(self.indptr[rows] - indptr[:-1], lengths) + np.arange(indptr[-1])
        return Rows(indptr, self.indices[at], self.data[at], self.n_features)

    def to_csr(self) -> sp.csr_matrix:
        import scipy.sparse as sp

        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=(self.n, self.n_features))

    @classmethod
    def from_arrays(cls, indptr, indices, data, n_features: int) -> Rows:
        """Wrap CSR arrays, converting dtypes only where needed (no validation)."""
        return cls(
            np.ascontiguousarray(indptr, dtype=np.int64),
            np.ascontiguousarray(indices, dtype=np.int32),
            np.ascontiguousarray(data, dtype=np.float64),
            int(n_features),
        )

    @classmethod
    def stack(cls, rows: Sequence[tuple[np.ndarray, np.ndarray]], n_features: int) -> Rows:
        """A batch from per-record (indices, values) pairs that are already valid."""
        indices, values = zip(*rows, strict=True) if rows else ((), ())
        return cls.concatenate(indices, values, n_features)

    @classmethod
    def gather(cls, blocks: Sequence[Rows], rows: Sequence[int], n_features: int) -> Rows:
        """A batch of row ``rows[j]`` of ``blocks[j]``, for each j in turn. Made for rows drawn from a
        few batches, each shared by many of them: no slice per row."""
        if not blocks:
            return cls.concatenate([], [], n_features)
        keys = list(map(id, blocks))  # a call per row, but no Python frame: many rows, few blocks
        by_key = dict(zip(keys, blocks, strict=True))  # the distinct blocks, in the order they first come
        slot = list(map({key: k for k, key in enumerate(by_key)}.__getitem__, keys))
        distinct = list(by_key.values())
        first = np.cumsum([0] + [b.n for b in distinct])[:-1]  # where each block starts once stacked
        stacked = distinct[0] if len(distinct) == 1 else cls.vstack(distinct)
        picked = stacked.take(first[slot] + np.asarray(rows, dtype=np.int64))
        return cls(picked.indptr, picked.indices, picked.data, n_features)

    @classmethod
    def vstack(cls, batches: Sequence[Rows]) -> Rows:
        """The batches' rows one after the other (over the first batch's coordinates)."""
        starts = np.cumsum([0] + [b.nnz for b in batches[:-1]]).tolist()
        indptr = np.concatenate([[0]] + [b.indptr[1:] + start for b, start in zip(batches, starts, strict=True)])
        return cls(indptr.astype(np.int64), np.concatenate([b.indices[:b.nnz] for b in batches]),
                   np.concatenate([b.data[:b.nnz] for b in batches]), batches[0].n_features)

    @classmethod
    def concatenate(cls, indices: Sequence[np.ndarray], values: Sequence[np.ndarray], n_features: int) -> Rows:
        """A batch from each record's indices and values, already valid."""
        indptr = np.zeros(len(indices) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, indices), dtype=np.int64, count=len(indices)), out=indptr[1:])
        if len(indices):
            return cls(indptr, np.concatenate(indices).astype(np.int32, copy=False),
                       np.concatenate(values).astype(np.float64, copy=False), n_features)
        return cls(indptr, np.empty(0, np.int32), np.empty(0, np.float64), n_features)


def _issparse(x) -> bool:
    """Whether ``x`` is a SciPy sparse matrix or array. SciPy is imported only by callers that use
    it (its import is a large part of a replay's start-up): if nobody has, ``x`` cannot be one."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(x)


def _check_values(data: np.ndarray, indptr: np.ndarray) -> None:
    bad = ~np.isfinite(data)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        row = int(np.searchsorted(indptr, j, side="right") - 1)
        raise ValueError(f"row {row}: value {float(data[j])} is not finite")


def _check_indices(indices: np.ndarray, indptr: np.ndarray, n_features: int) -> None:
    if indices.size == 0:
        return
    lo, hi = int(indices.min()), int(indices.max())
    if lo < 0 or hi >= n_features:
        j = int(np.flatnonzero((indices < 0) | (indices >= n_features))[0])
        row = int(np.searchsorted(indptr, j, side="right") - 1)
        raise ValueError(
            f"row {row}: feature index {int(indices[j])} is outside the model's "
            f"{n_features} features (valid: 0..{n_features - 1})"
        )


def as_rows(X, n_features: int | None = None) -> Rows:
    """Validate a batch (sparse matrix, dense 2-D array, or list of dense rows) as :class:`Rows`.

    ``n_features`` fixes the dimension; without it, the input's own width is used.
    """
    if isinstance(X, Rows):
        if n_features is not None and X.n_features != n_features:
            raise ValueError(f"rows have {X.n_features} features, the model has {n_features}")
        return X
    if _issparse(X):
        import scipy.sparse as sp

        csr = sp.csr_matrix(X)
        if csr.shape[1] > _MAX_FEATURES:
            raise ValueError(f"{csr.shape[1]} features exceed the supported {_MAX_FEATURES}")
        width = csr.shape[1]
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        indptr, indices, data = csr.indptr, csr.indices, csr.data
    else:
        try:
            dense = np.asarray(X, dtype=np.float64)
        except ValueError as exc:
            raise ValueError(f"dense rows must all have the same length and numeric values: {exc}") from None
        if dense.ndim == 1:
            dense = dense[None, :]
        if dense.ndim != 2:
            raise ValueError(f"expected a 2-D batch of rows, got an array of shape {dense.shape}")
        width = dense.shape[1]
        import scipy.sparse as sp

        csr = sp.csr_matrix(dense)
        indptr, indices, data = csr.indptr, csr.indices, csr.data
    if n_features is not None and width > n_features:
        raise ValueError(f"rows have {width} features, the model has {n_features}")
    rows = Rows.from_arrays(indptr, indices, data, width if n_features is None else n_features)
    _check_values(rows.data, rows.indptr)
    _check_indices(rows.indices, rows.indptr, rows.n_features)
    return rows


def as_row(x, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """One record → validated (indices int32, values float64) with duplicates summed.

    Accepts a dense sequence (its length must equal ``n_features``), a SciPy sparse row,
    ``{"indices": [...], "values": [...]}``, or a mapping of integer coordinates or names to values.
    """
    if _issparse(x):
        rows = as_rows(x, n_features)
        if rows.n != 1:
            raise ValueError(f"expected one row, got {rows.n}")
        return rows.row(0)
    if isinstance(x, Mapping):
        if "indices" in x and "values" in x and len(x) == 2:
            idx = np.asarray(x["indices"])
            val = np.asarray(x["values"], dtype=np.float64)
            if idx.shape != val.shape or idx.ndim != 1:
                raise ValueError(
                    f"'indices' and 'values' must be flat lists of the same length, got {idx.shape} and {val.shape}"
                )
            if idx.size and idx.dtype.kind not in "iu":
                raise ValueError("'indices' must be integers")
        elif x and all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in x):
            idx = np.fromiter(x.keys(), dtype=np.int64, count=len(x))
            val = np.asarray([float(v) for v in x.values()], dtype=np.float64)
        else:
            idx, val = hash_features(x, n_features)
        idx = idx.astype(np.int64, copy=False)
        if idx.size and (idx.min() < 0 or idx.max() >= n_features):
            bad = int(idx[(idx < 0) | (idx >= n_features)][0])
            raise ValueError(
                f"feature index {bad} is outside the model's {n_features} features (valid: 0..{n_features - 1})"
            )
        if not np.isfinite(val).all():
            raise ValueError(f"value {float(val[~np.isfinite(val)][0])} is not finite")
        return _canonical(idx, val)
    dense = np.asarray(x, dtype=np.float64)
    if dense.ndim != 1:
        raise ValueError(f"expected one row, got an array of shape {dense.shape}")
    if dense.size != n_features:
        raise ValueError(f"a dense row has {dense.size} values, the model has {n_features} features")
    if not np.isfinite(dense).all():
        raise ValueError(f"value {float(dense[~np.isfinite(dense)][0])} is not finite")
    idx = np.flatnonzero(dense)
    return idx.astype(np.int32), dense[idx]


def _canonical(idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if idx.size > 1 and np.unique(idx).size != idx.size:
        uniq, inv = np.unique(idx, return_inverse=True)
        return uniq.astype(np.int32), np.bincount(inv, weights=val).astype(np.float64)
    return idx.astype(np.int32), val.astype(np.float64, copy=False)


def transform(rows: Rows, *, normalize: bool, bias: float) -> Rows:
    """The learner's view of the rows: optional L2 normalisation, then the intercept coordinate.

    With ``bias != 0`` every row gets one more coordinate, index ``n_features``, holding ``bias``;
    the model's last weight is then the intercept. Zero rows stay zero under normalisation.
    """
    indptr, indices, data = rows.indptr, rows.indices, rows.data
    n = rows.n
    if normalize and data.size:
        lengths = np.diff(indptr)
        sq = np.bincount(np.repeat(np.arange(n), lengths), weights=data * data, minlength=n)
        norms = np.sqrt(sq)
        norms[norms == 0.0] = 1.0
        data = data / np.repeat(norms, lengths)
    if bias == 0.0:
        return Rows(indptr, indices, data, rows.n_features)
    new_indptr = indptr + np.arange(n + 1, dtype=np.int64)
    new_indices = np.empty(data.size + n, dtype=np.int32)
    new_data = np.empty(data.size + n, dtype=np.float64)
    ready(_append_intercept)(indptr, indices, np.ascontiguousarray(data), float(bias), rows.n_features,
                      new_indptr, new_indices, new_data)
    return Rows(new_indptr, new_indices, new_data, rows.n_features + 1)


@kernel(signature("void", "int64[::1]", "int32[::1]", "float64[::1]", "float64", "int64",
                 "int64[::1]", "int32[::1]", "float64[::1]"))
def _append_intercept(indptr, indices, data, bias, column, new_indptr, new_indices, new_data):
    """Copy every row into the new CSR arrays (``new_indptr`` already shifted by the row number),
    followed by the intercept coordinate ``column`` = ``bias``. O(nnz)."""
    for i in range(indptr.size - 1):
        lo, hi, at = indptr[i], indptr[i + 1], new_indptr[i]
        for k in range(lo, hi):
            new_indices[at + k - lo] = indices[k]
            new_data[at + k - lo] = data[k]
        new_indices[at + hi - lo] = column
        new_data[at + hi - lo] = bias


def transform_row(idx: np.ndarray, val: np.ndarray, n_features: int, *, normalize: bool, bias: float):
    """:func:`transform` for one (indices, values) pair, without building a batch."""
    if normalize and val.size:
        norm = float(np.sqrt(val @ val))
        if norm > 0.0:
            val = val / norm
    if bias == 0.0:
        return idx, val
    return (
        np.append(idx, np.int32(n_features)).astype(np.int32, copy=False),
        np.append(val, bias),
    )
