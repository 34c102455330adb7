"""The LIBSVM reader: exact values, errors naming the line, the staged datasets' shapes."""

import lzma

import numpy as np
import pytest

from learners.data_spec import resolve
from learners.datasets import concat, read_libsvm
from learners.synthetic import synthetic_sparse


def reference(text: str):
    """A plain Python LIBSVM reader to compare against."""
    labels, rows = [], []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        label, *features = line.split()
        labels.append(float(label))
        rows.append([(int(f.split(":")[0]) - 1, float(f.split(":")[1])) for f in features if not f.startswith("qid")])
    return labels, rows


TEXT = """+1 1:0.5 3:-1.25e-3 10:7
-1 2:1 4:123456789.123456789
# a comment line

0 qid:3 5:1e300 6:0.1 7:2.2250738585072014e-308
2 1:.5 2:-0. 3:1E5 8:0.30000000000000004   # trailing comment
1
"""


def test_reader_matches_python_float_on_every_value():
    data = read_libsvm(TEXT.encode())
    labels, rows = reference(TEXT)
    assert data.labels.tolist() == labels
    X = data.rows
    for i, row in enumerate(rows):
        idx, val = X.row(i)
        assert list(zip(idx.tolist(), val.tolist(), strict=True)) == row
    assert data.rows.n_features == 10


def test_reader_is_exact_on_many_random_numbers():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000),
                             rng.integers(-10**6, 10**6, 500).astype(float)])
    values = values.tolist()
    text = "".join(f"1 1:{v!r}\n" for v in values) + "".join(f"1 1:{v:.6g}\n" for v in values)
    got = read_libsvm(text.encode()).rows.data
    want = [float(repr(v)) for v in values] + [float(f"{v:.6g}") for v in values]
    np.testing.assert_array_equal(got, want)


def test_reader_reads_short_decimals_in_every_position_a_row_puts_them():
    # lengths of the integer part and of the fraction around a word of 8 bytes, signs, exponents, and
    # what follows the value: the next feature, a qid, a tab, a comment, a line end, the end of the text
    rng = np.random.default_rng(1)
    tokens = [f"{sign}{rng.integers(10**a) if a else ''}.{str(rng.integers(10**b)).zfill(b) if b else ''}{exp}"
              for a in range(8) for b in range(9) if a + b for sign in ("", "-", "+") for exp in ("", "e2", "E-1")]
    tokens += ["7", "-3", "0.0755", "1234567.1", ".5", "5."]
    for after in (" 9:1", " qid:2 9:1", "\t9:0.25", " # note", "\r", ""):
        text = "".join(f"1 3:{t}{after}\n" for t in tokens) + f"-1 2:0.5 4:{tokens[-3]}{after}"
        labels, rows = reference(text)
        data = read_libsvm(text.encode())
        assert data.labels.tolist() == labels
        assert [list(zip(*map(np.ndarray.tolist, data.rows.row(i)), strict=True)) for i in range(data.n)] == rows


@pytest.mark.parametrize("value", ["1.2.3", ".", "-.", "1.5x", "0.25:", "12.3456-"])
def test_reader_refuses_a_malformed_decimal(value):
    with pytest.raises(ValueError, match="line 2: a feature value"):
        read_libsvm(f"1 1:0.5\n1 2:{value} 3:1\n".encode())


@pytest.mark.parametrize("text, message", [
    (b"1 1:0.5\nx 2:1\n", "line 2: a label that is not a number"),
    (b"1 1:0.5\n1 2:1 3:abc\n", "line 2: a feature value"),
    (b"1 a:1\n", "line 1: a feature index"),
    (b"1 3 4:1\n", "line 1: a feature without ':'"),
    (b"1 0:1\n", "line 1: feature index 0"),
    (b"1 1:1e999\n", "line 1: a number that overflows float64 at '1e999'"),
    (b"1 1:1\n-1e999 2:1\n", "line 2: a number that overflows float64 at '-1e999 2:1'"),
])
def test_reader_names_the_bad_line(text, message):
    with pytest.raises(ValueError, match=message):
        read_libsvm(text)


def test_reader_accepts_zero_based_files():
    assert read_libsvm(b"1 0:2\n", zero_based=True).rows.indices.tolist() == [0]


def test_reader_reads_xz(tmp_path):
    path = tmp_path / "tiny.xz"
    path.write_bytes(lzma.compress(TEXT.encode()))
    assert read_libsvm(path).n == 5


def test_binary_classes_name_the_positive_label():
    data = read_libsvm(b"0 1:1\n1 1:2\n")
    assert data.binary_classes() == (0, 1)
    assert read_libsvm(b"2 1:1\n1 1:2\n").binary_classes() == (2, 1)
    with pytest.raises(ValueError, match="positive class"):
        read_libsvm(b"3 1:1\n4 1:2\n").binary_classes()
    assert read_libsvm(b"3 1:1\n4 1:2\n").binary_classes(positive=4) == (3, 4)


def test_concat_keeps_order_and_widest_space():
    a, b = read_libsvm(b"1 1:1\n"), read_libsvm(b"-1 5:2\n")
    both = concat([a, b])
    assert both.labels.tolist() == [1, -1] and both.rows.n_features == 5
    assert both.rows.to_csr().toarray().tolist() == [[1, 0, 0, 0, 0], [0, 0, 0, 0, 2]]


def test_synthetic_sparse_is_seeded_and_unit_norm():
    a, b = synthetic_sparse(n=500, d=1000, seed=4), resolve("synthetic:sparse?n=500&d=1000&seed=4")
    np.testing.assert_array_equal(a.rows.data, b.rows.data)
    norms = np.sqrt(np.asarray(a.rows.to_csr().multiply(a.rows.to_csr()).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0)
    assert set(a.classes()) == {-1, 1}


MANIFEST_SHAPES = {  # file: (rows, largest feature index, class counts) from MANIFEST.md
    "a8a.xz": (32561, 123, {-1: 24720, 1: 7841}),
    "w8a.xz": (49749, 300, {-1: 48270, 1: 1479}),
    "w8a.t.xz": (14951, 300, {-1: 14497, 1: 454}),
    "mushrooms.xz": (8124, 112, {1: 3916, 2: 4208}),
    "svmguide1.xz": (3089, 4, {0: 1089, 1: 2000}),
    "spambase.xz": (4601, 57, {-1: 2788, 1: 1813}),
    "splice_scale.xz": (1000, 60, {-1: 483, 1: 517}),
}


@pytest.mark.parametrize("name", sorted(MANIFEST_SHAPES))
def test_staged_datasets_read_as_the_manifest_says(datasets_dir, name):
    rows, width, counts = MANIFEST_SHAPES[name]
    data = read_libsvm(datasets_dir / name)
    assert data.n == rows and data.rows.n_features == width
    labels, n = np.unique(data.labels, return_counts=True)
    assert dict(zip(labels.tolist(), n.tolist(), strict=True)) == counts


def _mixed_text(n: int = 300, seed: int = 5) -> str:
    """Rows with comments, blank lines, qid tokens and values the fast path must hand back (fixes)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        feats = sorted(rng.choice(50, size=rng.integers(0, 6), replace=False) + 1)
        vals = [repr(float(v)) for v in rng.standard_normal(len(feats)) * 10.0 ** rng.integers(-25, 25, len(feats))]
        label = rng.choice(["1", "-1", "0.30000000000000004"])
        extra = " qid:7" if i % 17 == 0 else ""
        out.append(f"{label}{extra} " + " ".join(f"{f}:{v}" for f, v in zip(feats, vals, strict=True)))
        if i % 23 == 0:
            out.append("# a comment: with a colon")
        if i % 29 == 0:
            out.append("")
    return "\n".join(out)


@pytest.mark.parametrize("threads", [2, 3, 7])
@pytest.mark.parametrize("trailing_newline", [True, False])
def test_reader_in_parallel_chunks_equals_one_thread(threads, trailing_newline):
    text = (_mixed_text() + ("\n" if trailing_newline else "")).encode()
    one, many = read_libsvm(text, threads=1), read_libsvm(text, threads=threads)
    np.testing.assert_array_equal(many.labels, one.labels)
    np.testing.assert_array_equal(many.rows.indptr, one.rows.indptr)
    np.testing.assert_array_equal(many.rows.indices, one.rows.indices)
    np.testing.assert_array_equal(many.rows.data, one.rows.data)
    labels, rows = reference(text.decode())
    assert many.labels.tolist() == labels and many.n == len(rows)


def test_reader_in_parallel_chunks_names_the_bad_line():
    text = _mixed_text() + "\n1 3:0.5 4:oops\n" + _mixed_text(seed=6)
    line = text[: text.index("4:oops")].count("\n") + 1
    for threads in (1, 4):
        with pytest.raises(ValueError, match=rf"line {line}: a feature value"):
            read_libsvm(text.encode(), threads=threads)


@pytest.mark.parametrize("threads", [1, 3])
def test_rows_out_of_order_or_repeating_an_index_are_sorted_and_summed_and_the_width_is_the_largest_index(threads):
    text = b"+1 7:1 3:2 3:0.5\n-1 2:1 4:1\n+1 9:1\n-1 1:1 1:1\n" * 40 + b"+1 2:1 5:1\n" * 40
    data = read_libsvm(text, threads=threads)
    assert data.rows.n_features == 9
    for i in range(0, 160, 4):  # the first three rows of each group of four
        np.testing.assert_array_equal(data.rows.indices[data.rows.indptr[i]:data.rows.indptr[i + 1]], [2, 6])
        np.testing.assert_array_equal(data.rows.data[data.rows.indptr[i]:data.rows.indptr[i + 1]], [2.5, 1.0])
        np.testing.assert_array_equal(data.rows.indices[data.rows.indptr[i + 3]:data.rows.indptr[i + 4]], [0])
        np.testing.assert_array_equal(data.rows.data[data.rows.indptr[i + 3]:data.rows.indptr[i + 4]], [2.0])
    canonical = read_libsvm(b"+1 2:1 5:1\n" * 40, threads=threads)
    assert canonical.rows.n_features == 5 and canonical.rows.nnz == 80
