"""CSR rows made canonical by the compiled kernels, as SciPy makes them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from consumer.records.feature_batch import _canonical


@pytest.mark.parametrize("seed", range(6))
def test_rows_are_made_canonical_as_scipy_makes_them(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, 50)
    indices = rng.integers(0, 8 if seed % 2 else 10**6, lengths.sum())  # small range: duplicates
    if seed < 2:  # sorted and unique rows: the compiled path alone
        indices = np.concatenate([np.sort(rng.choice(10**6, n, replace=False)) for n in lengths])
    data = rng.choice([0.0, -0.0, 1.5, -2.0, 0.25], lengths.sum())
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    want = sp.csr_matrix((data.copy(), indices.astype(np.int32), indptr), shape=(50, 10**6))
    want.eliminate_zeros()
    want.sum_duplicates()
    want.eliminate_zeros()  # a repeated index whose values sum to zero is dropped too
    got, overflow = _canonical(indices.copy(), data.copy(), lengths, 10**6)
    assert overflow is None
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)
    assert got.indices.dtype == np.int32
