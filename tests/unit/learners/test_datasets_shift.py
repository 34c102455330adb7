"""The shifting streams of Moroshko & Crammer (AISTATS 2014, Sect. 5): synthetic:shift, usps-shift."""

import lzma

import numpy as np
import pytest
from scipy.optimize import linprog

from learners import make, run
from learners.data_spec import resolve
from learners.synthetic import synthetic_shift, usps_shift


def _separable_through_origin(X, y):
    """Is there a u with y_i x_iᵀu ≥ 1 for all i? (an LP feasibility problem)"""
    A = -(y[:, None] * X)
    res = linprog(np.zeros(X.shape[1]), A_ub=A, b_ub=-np.ones(len(y)), bounds=(None, None), method="highs")
    return res.status == 0


def test_synthetic_shift_has_the_papers_shape_and_defaults():
    data = resolve("synthetic:shift")
    assert (data.n, data.rows.n_features) == (10_000, 50)
    assert set(np.unique(data.labels)) == {-1, 1}
    assert data.ordered
    X = data.rows.to_csr().toarray()
    assert abs(X.mean()) < 0.01 and abs(X.std() - 1.0) < 0.01  # x_t ~ N(0, I)


def test_synthetic_shift_target_is_fixed_within_a_window_and_switches_between_windows():
    data = synthetic_shift(n=2000, d=8, switch=500, seed=1)
    X, y = data.rows.to_csr().toarray(), data.labels
    for start in (0, 500, 1000, 1500):  # each window: labels = sign(xᵀu) for one u
        assert _separable_through_origin(X[start : start + 500], y[start : start + 500])
    assert not _separable_through_origin(X[250:750], y[250:750])  # across a switch: two targets


def test_synthetic_shift_is_a_function_of_its_seed():
    a, b, c = (synthetic_shift(n=600, d=5, switch=100, seed=s) for s in (3, 3, 4))
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.rows.data, b.rows.data)
    assert not np.array_equal(a.rows.data, c.rows.data)


def test_resolve_reads_shift_parameters_and_names_unknown_ones():
    data = resolve("synthetic:shift?d=3&n=700&switch=100&seed=2")
    assert (data.n, data.rows.n_features) == (700, 3)
    assert data.name == "synthetic:shift?d=3&n=700&switch=100&seed=2"
    with pytest.raises(ValueError, match="takes no period"):
        resolve("synthetic:shift?period=3")


@pytest.fixture
def digits_file(tmp_path):
    """A tiny LIBSVM file with 10 'digits' (labels 1..10), 30 rows each, one feature = the row id."""
    lines = [f"{1 + i % 10} 1:{i + 1}" for i in range(300)]
    path = tmp_path / "digits.xz"
    with lzma.open(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    return path


def test_usps_shift_labels_a_random_digit_subset_positive_in_every_window(digits_file):
    data = usps_shift(str(digits_file), switch=50, positives=4, seed=5)
    row_id = data.rows.to_csr().toarray()[:, 0].astype(int) - 1
    digit = row_id % 10
    assert sorted(row_id.tolist()) == list(range(300))  # a permutation of the rows
    assert data.ordered
    subsets = []
    for start in range(0, 300, 50):
        window = slice(start, start + 50)
        positive = set(digit[window][data.labels[window] == 1].tolist())
        negative = set(digit[window][data.labels[window] == -1].tolist())
        assert not positive & negative  # the label is a function of the digit
        assert len(positive) <= 4 and len(negative) <= 6
        subsets.append(frozenset(positive))
    assert len(set(subsets)) > 1  # the partition is re-drawn


def test_usps_shift_is_reproducible_and_checks_its_parameters(digits_file):
    a, b = usps_shift(str(digits_file), seed=1), usps_shift(str(digits_file), seed=1)
    np.testing.assert_array_equal(a.labels, b.labels)
    with pytest.raises(ValueError, match="positives"):
        usps_shift(str(digits_file), positives=10)
    with pytest.raises(ValueError, match="no such dataset file"):
        resolve(f"usps-shift:{digits_file}.missing")


def test_usps_shift_combines_train_and_test_to_9298_rows(datasets_dir):
    data = resolve(f"usps-shift:{datasets_dir}?seed=0")
    assert (data.n, data.rows.n_features) == (9298, 256)
    assert 0.4 < (data.labels == 1).mean() < 0.6


def test_run_never_shuffles_an_ordered_stream():
    data = synthetic_shift(n=1500, d=5, switch=500, seed=0)
    result = run(make("pe", n_features=5, bias=0.0), data, permutations=3)
    assert len({m.mistakes for m in result.metrics}) == 1  # the same stream three times
