"""Seeded synthetic streams, and the shifting streams of Moroshko & Crammer (AISTATS 2014, Sect. 5).

:func:`synthetic_sparse` is a high-dimensional sparse stream; :func:`synthetic_shift` and
:func:`usps_shift` shift their target every ``switch`` rows. A shifting stream is *ordered*: its
order carries the drift, so replays never shuffle it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from learners.datasets import Dataset, concat, read_libsvm
from learners.inputs import Rows

__all__ = ["synthetic_shift", "synthetic_sparse", "usps_shift"]


def synthetic_sparse(n: int = 100_000, d: int = 2**18, nnz: int = 18, noise: float = 0.05,
                     seed: int = 0) -> Dataset:
    """A high-dimensional sparse stream: Zipf-like feature ids, unit-norm rows, labels
    sign(w*·x) with a fraction ``noise`` flipped. Labels are ±1."""
    rng = np.random.default_rng(seed)
    ids = (rng.zipf(1.3, size=n * nnz) - 1) % d
    perm = rng.permutation(d).astype(np.int64)
    indices = perm[ids].reshape(n, nnz)
    indices.sort(axis=1)
    data = rng.random((n, nnz)) + 0.1
    keep = np.ones_like(indices, dtype=bool)
    keep[:, 1:] = indices[:, 1:] != indices[:, :-1]
    data = np.where(keep, data, 0.0)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    w_star = rng.standard_normal(d)
    margin = (w_star[indices] * data).sum(axis=1)
    labels = np.where(margin >= 0, 1, -1)
    labels[rng.random(n) < noise] *= -1
    counts = keep.sum(axis=1)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    rows = Rows.from_arrays(indptr, indices[keep], data[keep], d)
    return Dataset(rows, labels.astype(np.int64), f"synthetic:sparse?n={n}&d={d}&nnz={nnz}&seed={seed}")


def _dense_rows(X: np.ndarray) -> Rows:
    n, d = X.shape
    return Rows.from_arrays(np.arange(n + 1, dtype=np.int64) * d, np.tile(np.arange(d), n), X.ravel(), d)


def synthetic_shift(n: int = 10_000, d: int = 50, switch: int = 500, seed: int = 0) -> Dataset:
    """The synthetic shifting stream of Moroshko & Crammer (AISTATS 2014, Sect. 5).

    x_t ~ N(0, I_d); the target u ~ N(0, I_d) is drawn afresh every ``switch`` rows
    (u_1 = … = u_500, u_501 = … = u_1000, …); y_t = sign(x_tᵀu_t) ∈ {−1, +1}. Dense rows; the
    stream is ordered (its order carries the shifts). The paper: d = 50, n = 10,000, switch = 500.

    >>> data = synthetic_shift(n=1200, d=5, switch=500, seed=3)
    >>> data.n, data.rows.n_features, sorted(set(data.labels.tolist())), data.ordered
    (1200, 5, [-1, 1], True)
    """
    if min(n, d, switch) < 1:
        raise ValueError(f"synthetic:shift needs n, d, switch ≥ 1, got n={n}, d={d}, switch={switch}")
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    targets = rng.standard_normal((-(-n // switch), d))
    margin = np.einsum("ij,ij->i", X, targets[np.arange(n) // switch])
    labels = np.where(margin >= 0.0, 1, -1).astype(np.int64)
    return Dataset(_dense_rows(X), labels, f"synthetic:shift?d={d}&n={n}&switch={switch}&seed={seed}", ordered=True)


def _usps_files(path: str) -> list[Path]:
    p = Path(path)
    if p.is_dir():
        found = [next((q for q in (p / f"{stem}.xz", p / stem) if q.exists()), None) for stem in ("usps", "usps.t")]
        if None in found:
            raise ValueError(f"{path} holds no usps(.xz) and usps.t(.xz) files")
        return found
    files = [Path(f) for f in path.split("+")]
    for f in files:
        if not f.exists():
            raise ValueError(f"no such dataset file: {f}")
    return files


def usps_shift(path: str | Dataset, switch: int = 500, positives: int = 5, seed: int = 0,
               shuffle: int = 1) -> Dataset:
    """USPS as a binary stream whose positive digits are re-drawn every ``switch`` rows.

    Moroshko & Crammer (AISTATS 2014, Sect. 5): the 7,291 training and 2,007 test images are
    combined (9,298 rows, 256 grey levels); every ``switch`` rows a random subset of the digits is
    labelled +1, the others −1. The paper does not say how many digits are positive: we draw
    ``positives`` of the 10 (5 by default, so the classes stay balanced). ``path`` is a directory
    holding ``usps(.xz)`` and ``usps.t(.xz)``, LIBSVM files joined by ``+``, or an already read
    multiclass :class:`Dataset`. With ``shuffle`` (default) the rows are permuted with the same
    seed, so each seed is a new stream.
    """
    data = path if isinstance(path, Dataset) else concat([read_libsvm(f) for f in _usps_files(path)])
    digits = np.unique(data.labels)
    if not 1 <= positives < digits.size:
        raise ValueError(f"positives must be in 1..{digits.size - 1} for {digits.size} digits, got {positives}")
    if switch < 1:
        raise ValueError(f"switch must be ≥ 1, got {switch}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(data.n) if shuffle else np.arange(data.n)
    blocks = -(-data.n // switch)
    subsets = np.stack([np.isin(digits, rng.choice(digits, positives, replace=False)) for _ in range(blocks)])
    digit = np.searchsorted(digits, data.labels[order])
    labels = np.where(subsets[np.arange(data.n) // switch, digit], 1, -1).astype(np.int64)
    rows = data.rows.take(order)
    source = data.name if isinstance(path, Dataset) else path
    name = f"usps-shift:{source}?switch={switch}&positives={positives}&seed={seed}"
    return Dataset(rows, labels, name, ordered=True)
