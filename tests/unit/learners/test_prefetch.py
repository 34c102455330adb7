"""The cache hint of the drivers: emitted where they score, and changing nothing."""

from __future__ import annotations

import itertools

import numpy as np

from learners import jit as jit_module
from learners.drivers import plain
from learners.jit import signature
from learners.kernels import kernel, ready
from learners.prefetch import prefetch_row


def _dots_prefetched(S, indptr, indices, data, ahead):
    n = indptr.size - 1
    out = np.empty(n)
    for i in range(n):
        if i + ahead < n:
            prefetch_row(S, indptr, indices, i + ahead)
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += S[0, indices[k]] * data[k]
        out[i] = s
    return out


def test_prefetching_the_rows_ahead_changes_no_value(monkeypatch):
    monkeypatch.setattr(jit_module, "_DEFAULTS", {**jit_module._DEFAULTS, "cache": False})  # cached: no IR to read
    sig = signature("float64[::1]", "float64[:, ::1]", "int64[::1]", "int32[::1]", "float64[::1]", "int64")
    dots = ready(kernel(sig, nrt=True)(_dots_prefetched))  # it allocates its result
    rng = np.random.default_rng(0)
    n, nnz, d = 500, 7, 1 << 12
    indptr = np.arange(0, (n + 1) * nnz, nnz, dtype=np.int64)
    indices = rng.integers(0, d, n * nnz).astype(np.int32)
    data = rng.standard_normal(n * nnz)
    S = rng.standard_normal((6, d))  # more rows than the hint covers: the first ones only are asked for
    want = np.array([S[0, indices[lo:hi]] @ data[lo:hi] for lo, hi in itertools.pairwise(indptr)])
    for ahead in (0, 1, 2, n + 5):
        np.testing.assert_allclose(dots(S, indptr, indices, data, ahead), want, rtol=1e-12)
    assert "llvm.prefetch" in next(iter(dots.inspect_llvm().values()))


def test_the_batch_scoring_driver_asks_for_the_rows_ahead(monkeypatch):
    monkeypatch.setattr(jit_module, "_DEFAULTS", {**jit_module._DEFAULTS, "cache": False})  # cached: no IR to read
    made = plain.score_rows._kernel
    fresh = ready(kernel(made.signature)(made.py_func))
    assert "llvm.prefetch" in "".join(fresh.inspect_llvm().values())
