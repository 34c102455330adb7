"""The drift defaults benchmark: its streams, its recovery count, its choice and its change detector."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import drift_defaults as dd
from benchmarks.logistic_defaults import HARM
from learners.synthetic import synthetic_shift


def result(beta: float, lam: float, after: float, board: float, stationary: float) -> dd.Result:
    r = dd.Result("lr-ada-entropy", dd.Candidate(beta, lam).label, beta, lam, None)
    r.changes = [dd.ChangeCell("demo", 0, 0.9, after, after, after, None, 0.1)]
    r.board, r.stationary = {"synthetic-shift": board}, {"a8a": stationary}
    return r


def test_recovered_after_counts_to_the_end_of_the_first_window_back_within_the_margin():
    correct = np.r_[np.ones(1000), np.zeros(700), np.ones(1300)].astype(bool)
    # a window starting s records after the change holds 700 − s mistakes: back (≥ 0.95) from s = 675
    assert dd.recovered_after(correct, 1000) == 675 + dd.WINDOW
    assert dd.recovered_after(np.r_[np.ones(1000), np.zeros(2000)].astype(bool), 1000) is None


def test_a_flipped_stream_moves_every_class_at_two_thirds():
    data = synthetic_shift(n=300, d=3, switch=300, seed=1)
    labels = np.where(np.arange(300) % 3 == 0, 0, np.where(np.arange(300) % 3 == 1, 1, 2))
    base = type(data)(data.rows, labels, "three")
    out, change = dd.flipped(base, seed=4)
    assert change == 200 and out.ordered
    order = np.random.default_rng(4).permutation(300)
    assert (out.labels[:change] == labels[order][:change]).all()
    assert (out.labels[change:] != labels[order][change:]).all()


@pytest.mark.parametrize("hashed, width", [(True, 2**20), (False, 13)])
def test_the_demo_stream_is_the_demo_s_records_as_rows(hashed, width):
    data, change = dd.demo_stream(0, hashed)
    assert data.n == dd.DEMO_RECORDS and change == 2 * dd.DEMO_RECORDS // 3 and data.rows.n_features == width
    assert (np.diff(data.rows.indptr) == 11).all()  # ten numbers and one segment
    assert set(np.unique(data.labels)) == {-1, 1}


def test_the_choice_is_the_best_drift_rank_that_costs_no_stationary_cell_more_than_harm():
    today = result(1.0, 0.0, 0.60, 0.52, 0.64)
    fast = result(0.99, 0.005, 0.85, 0.58, 0.64 - 2 * HARM)  # best on drift, too costly at rest
    kept = result(0.999, 0.003, 0.78, 0.55, 0.64 - HARM / 2)
    assert dd.chosen([today, fast, kept]) is kept
    assert fast.rank == 1.0 and not fast.harmless and kept.harmless and today.rank == 3.0
    assert dd.chosen([today]) is today


def test_the_detector_restarts_the_sums_when_the_labelled_error_rises():
    rules = dd.DetectorRule(eta=0.5, threshold=3.0), dd.DetectorRule(eta=0.5, threshold=1e9)
    one = np.array([0], np.int32)
    for rule in rules:
        rule.allocate(2)
        for _ in range(200):
            rule.update(one, np.array([1.0]), 1)
        assert rule.a_[4] == 0
        for _ in range(30):
            rule.update(one, np.array([1.0]), -1)  # every label now a mistake
    alarmed, silent = rules
    assert alarmed.a_[4] >= 1 and silent.a_[4] == 0
    assert alarmed.G_[0] < silent.G_[0] - 1.0  # the sum since the alarm only
