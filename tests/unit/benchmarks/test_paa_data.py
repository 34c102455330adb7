"""The PAA paper's datasets: standardisation and the published rows."""

import numpy as np
import pytest

from benchmarks.paa_data import DATASETS, standardize
from benchmarks.paa_tables import paper_rows
from learners.datasets import read_libsvm


def test_standardize_gives_zero_mean_unit_variance_columns():
    data = read_libsvm(b"1 1:10 2:1e4\n-1 1:20 2:3e4\n1 1:60 3:5\n")
    X = standardize(data).rows.to_csr().toarray()
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1.0)


def test_paper_rows_cover_every_dataset_algorithm_and_rate():
    rows = paper_rows()
    if not rows:
        pytest.skip("../shared/papers/tables.json not found")
    for name in DATASETS:
        for algorithm in ("PEA", "SELada", "RPE", "RPA", "RPA-I", "RPA-II", "PAA", "PAA-I", "PAA-II"):
            for rate in (0.1, 0.2):
                assert 0.0 < rows[(name, algorithm, rate)]["f1"] < 1.0


def test_positive_label_is_the_larger_one():
    assert DATASETS["svmguide1"].positive == 1 and DATASETS["mushrooms"].positive == 2
