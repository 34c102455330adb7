"""Input validation and the learner's feature transform."""

import numpy as np
import pytest
import scipy.sparse as sp

from learners.inputs import Rows, as_row, as_rows, transform, transform_row


def test_as_rows_accepts_sparse_and_dense_alike():
    dense = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    a, b = as_rows(sp.csr_matrix(dense)), as_rows(dense)
    for x, y in zip((a.indptr, a.indices, a.data), (b.indptr, b.indices, b.data), strict=True):
        np.testing.assert_array_equal(x, y)
    assert a.indices.dtype == np.int32 and a.indptr.dtype == np.int64


def test_as_rows_names_the_row_with_a_nan():
    with pytest.raises(ValueError, match="row 1: value nan"):
        as_rows(np.array([[1.0, 0.0], [np.nan, 0.0]]))


def test_as_rows_refuses_a_wider_batch():
    with pytest.raises(ValueError, match="3 features, the model has 2"):
        as_rows(np.ones((2, 3)), n_features=2)


def test_as_rows_sums_duplicate_coordinates():
    X = sp.csr_matrix((np.array([1.0, 2.0]), np.array([1, 1]), np.array([0, 2])), shape=(1, 3))
    rows = as_rows(X)
    assert rows.indices.tolist() == [1] and rows.data.tolist() == [3.0]


@pytest.mark.parametrize("record", [
    {"indices": [0, 5], "values": [1.0, 2.0]},
    {0: 1.0, 5: 2.0},
    [1.0, 0, 0, 0, 0, 2.0],
])
def test_as_row_accepts_every_record_form(record):
    idx, val = as_row(record, 6)
    assert sorted(zip(idx.tolist(), val.tolist(), strict=True)) == [(0, 1.0), (5, 2.0)]


@pytest.mark.parametrize("record, message", [
    ({"indices": [0, 9], "values": [1.0, 1.0]}, "feature index 9 is outside"),
    ({"indices": [-1], "values": [1.0]}, "feature index -1 is outside"),
    ({"indices": [0, 1], "values": [1.0]}, "same length"),
    ({"indices": [0.5], "values": [1.0]}, "must be integers"),
    ({"a": float("nan")}, "not a finite number"),
    ([1.0, 2.0], "2 values, the model has 6"),
    ([1.0, 0, 0, 0, 0, float("inf")], "not finite"),
])
def test_as_row_refuses_bad_records_with_a_reason(record, message):
    with pytest.raises(ValueError, match=message):
        as_row(record, 6)


def test_named_features_are_hashed_and_strings_become_indicators():
    idx, val = as_row({"country": "FR", "amount": 12.5}, 2**20)
    assert idx.max() < 2**20 and sorted(val.tolist()) == [1.0, 12.5]


def test_transform_appends_intercept_and_normalizes():
    rows = as_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    t = transform(rows, normalize=True, bias=1.0)
    assert t.n_features == 3
    np.testing.assert_allclose(t.to_csr().toarray(), [[0.6, 0.8, 1.0], [0.0, 0.0, 1.0]])
    idx, val = transform_row(*rows.row(0), 2, normalize=True, bias=1.0)
    np.testing.assert_allclose(val, [0.6, 0.8, 1.0])
    assert idx.tolist() == [0, 1, 2]


def test_transform_without_bias_keeps_width():
    rows = as_rows(np.array([[3.0, 4.0]]))
    assert transform(rows, normalize=False, bias=0.0).n_features == 2


def test_transform_intercept_matches_dense_hstack_on_ragged_rows():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 7)) * (rng.random((40, 7)) < 0.4)
    X[3] = 0.0  # an empty row gets the intercept alone
    t = transform(as_rows(X), normalize=False, bias=0.5)
    np.testing.assert_array_equal(t.to_csr().toarray(), np.hstack([X, np.full((40, 1), 0.5)]))
    assert t.row(3)[0].tolist() == [7]


@pytest.mark.parametrize("pick", [[3, 0, 3, 5], [], np.array([True, False, True, False, False, True]), [-1]])
def test_take_copies_rows_in_the_given_order(pick):
    dense = sp.random(6, 20, density=0.3, random_state=1).toarray()
    dense[4] = 0  # an empty row among them
    rows = as_rows(sp.csr_matrix(dense))
    taken = rows.take(pick)
    np.testing.assert_array_equal(taken.to_csr().toarray(), dense[np.asarray(pick, dtype=None if len(pick) else int)])
    assert taken.indices.dtype == np.int32 and taken.indptr.dtype == np.int64
    if taken.indices.size:
        assert not np.shares_memory(taken.indices, rows.indices)


def test_gather_takes_each_row_from_its_own_batch_in_the_given_order():
    dense = sp.random(9, 20, density=0.3, random_state=2).toarray()
    dense[7] = 0  # an empty row among them
    a, b, c = (as_rows(sp.csr_matrix(dense[part])) for part in (slice(0, 4), slice(4, 6), slice(6, 9)))
    picks = [(b, 1), (a, 3), (c, 1), (a, 0), (b, 1), (c, 2)]
    got = Rows.gather([block for block, _ in picks], [k for _, k in picks], 20)
    np.testing.assert_array_equal(got.to_csr().toarray(), dense[[5, 3, 7, 0, 5, 8]])
    assert got.n_features == 20 and got.indices.dtype == np.int32 and got.indptr.dtype == np.int64
    np.testing.assert_array_equal(Rows.gather([a, a], [2, 1], 20).to_csr().toarray(), dense[[2, 1]])
    assert Rows.gather([], [], 20).n == 0


def test_vstack_puts_batches_one_after_the_other():
    dense = sp.random(7, 20, density=0.3, random_state=3).toarray()
    a, b = as_rows(sp.csr_matrix(dense[:3])), as_rows(sp.csr_matrix(dense[3:]))
    np.testing.assert_array_equal(Rows.vstack([a, b.take([2, 0])]).to_csr().toarray(), dense[[0, 1, 2, 5, 3]])


def test_take_refuses_a_row_that_is_not_there():
    with pytest.raises(IndexError):
        as_rows(sp.eye(3, format="csr")).take([3])
