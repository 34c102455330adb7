"""Dataset transforms: one-vs-rest labels, svm-scale and max-abs scaling, as resolve() specs."""

import numpy as np
import pytest

from learners.data_spec import resolve
from learners.datasets import read_libsvm
from learners.transforms import maxabs, one_vs_rest, scale

TEXT = b"1 1:2 3:-4\n2 2:10\n3 1:1 2:5 3:4\n1 3:2\n"


def test_one_vs_rest_maps_one_label_to_plus_one():
    data = one_vs_rest(read_libsvm(TEXT), 1)
    assert data.labels.tolist() == [1, -1, -1, 1]
    with pytest.raises(ValueError, match="label 7 is not in"):
        one_vs_rest(read_libsvm(TEXT), 7)


def test_scale_maps_each_feature_onto_minus_one_one_as_svm_scale():
    X = scale(read_libsvm(TEXT)).rows.to_csr().toarray()
    # feature 1 spans [0, 2] (implicit zeros count), feature 2 [0, 10], feature 3 [-4, 4]
    expected = np.array([[1.0, -1.0, -1.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, -1.0, 0.5]])
    np.testing.assert_allclose(X, expected)


def test_maxabs_divides_by_the_largest_magnitude_and_keeps_zeros():
    data = maxabs(read_libsvm(TEXT))
    X = data.rows.to_csr().toarray()
    np.testing.assert_allclose(X, [[1.0, 0, -1.0], [0, 1.0, 0], [0.5, 0.5, 1.0], [0, 0, 0.5]])
    assert data.rows.nnz == 7


def test_specs_compose_left_to_right(tmp_path):
    path = tmp_path / "t.svm"
    path.write_bytes(TEXT)
    data = resolve(f"ovr:3:maxabs:{path}")
    assert data.labels.tolist() == [-1, -1, 1, -1] and data.name == "ovr:3:maxabs:t.svm"
    assert np.abs(data.rows.data).max() == 1.0
    assert resolve(f"scale:{path}").rows.n_features == 3
