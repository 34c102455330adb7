"""The throughput benchmark's inputs (its compiled text writer and its chunked synthetic stream) and
its paired timing."""

from __future__ import annotations

import io

import numpy as np

import benchmarks.throughput as throughput
from benchmarks.throughput import Timed, paired_runs, synthetic_chunks, write_libsvm_and_vw
from learners.datasets import read_libsvm
from learners.inputs import Rows
from learners.synthetic import synthetic_sparse


def test_the_text_written_reads_back_as_the_rows_to_four_decimals():
    data = synthetic_sparse(n=500, d=2**12, seed=3)
    r = data.rows
    rows = Rows(r.indptr, r.indices, r.data * np.where(np.arange(r.nnz) % 3, 1.0, -1234.5), r.n_features)
    svm, vw = io.BytesIO(), io.BytesIO()
    write_libsvm_and_vw(rows, data.labels, svm, vw)
    back = read_libsvm(svm.getvalue())
    assert np.array_equal(back.labels, data.labels)
    assert np.array_equal(back.rows.indptr, rows.indptr) and np.array_equal(back.rows.indices, rows.indices)
    assert np.abs(back.rows.data - rows.data).max() <= 0.5e-4 + 1e-12
    svm_lines, vw_lines = svm.getvalue().splitlines(), vw.getvalue().splitlines()
    assert len(vw_lines) == len(svm_lines) == 500
    for a, b in zip(svm_lines, vw_lines, strict=True):  # VW: the label, its namespace, the same features
        label, _, features = a.partition(b" ")
        assert b == label + b" |f " + features


def test_the_synthetic_chunks_share_one_concept_and_repeat_no_chunk():
    chunks = list(synthetic_chunks(25_000, 2**14, seed=0, chunk=10_000))
    assert [rows.n for rows, _ in chunks] == [10_000, 10_000, 5_000]
    assert not np.array_equal(chunks[0][0].indices[:100], chunks[1][0].indices[:100])
    again = list(synthetic_chunks(25_000, 2**14, seed=0, chunk=10_000))
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(chunks, again, strict=True))
    # one w* labels every chunk (5 % of its labels flipped)
    w = np.random.default_rng(0).standard_normal(2**14)
    for rows, labels in chunks:
        margin = np.add.reduceat(w[rows.indices] * rows.data, rows.indptr[:-1])
        assert np.mean(np.where(margin >= 0, 1, -1) == labels) > 0.9


def test_paired_runs_alternate_the_two_commands_and_keep_each_ones_median(monkeypatch):
    calls = []
    walls = {"ours": iter([3.0, 1.0, 2.0, 9.0, 4.0]), "vw": iter([5.0, 6.0, 7.0, 8.0, 1.0])}

    def fake(cmd):
        calls.append(cmd[0])
        return Timed(next(walls[cmd[0]]), 0.0, 0.0, "")

    monkeypatch.setattr(throughput, "timed", fake)
    (ours, ours_walls), (vw, vw_walls) = paired_runs(["ours"], ["vw"], 5)
    assert calls == ["ours", "vw", "vw", "ours", "ours", "vw", "vw", "ours", "ours", "vw"]
    assert ours_walls == [3.0, 1.0, 2.0, 9.0, 4.0] and ours.wall_s == 3.0
    assert vw_walls == [5.0, 6.0, 7.0, 8.0, 1.0] and vw.wall_s == 6.0
