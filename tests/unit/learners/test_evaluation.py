"""Prequential metrics against hand-computed confusion counts."""

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from learners.evaluation import (
    auc_roc,
    binary_counts,
    binary_counts_and_scores,
    binary_metrics,
    multiclass_metrics,
    sort_scores,
)


def test_binary_metrics_from_a_hand_counted_stream():
    y = np.array([1, 1, 1, -1, -1, -1, -1, 1])
    p = np.array([1, -1, 1, -1, 1, -1, -1, -1])
    q = np.array([1, 0, 0, 1, 1, 0, 0, 0], dtype=bool)
    m = binary_metrics(y, p, q, eta_p=0.7, eta_n=0.3, c_p=0.9, c_n=0.1)
    assert (m.tp, m.fn, m.fp, m.tn) == (2, 2, 1, 3)
    assert m.mistakes == 3 and m.accuracy == 5 / 8 and m.mistake_rate == 3 / 8
    assert m.precision == 2 / 3 and m.recall == m.sensitivity == 0.5 and m.specificity == 0.75
    assert m.f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    assert m.weighted_sum == pytest.approx(0.7 * 0.5 + 0.3 * 0.75)
    assert m.cost == pytest.approx(0.9 * 2 + 0.1 * 1)
    assert m.query_ratio == 3 / 8 and m.queries == 3


def test_f1_is_zero_when_nothing_is_predicted_positive():
    m = binary_metrics(np.array([1, -1]), np.array([-1, -1]), np.zeros(2, bool))
    assert m.f1 == 0.0 and m.precision == 0.0


def test_multiclass_metrics():
    m = multiclass_metrics(np.array([0, 1, 2, 2]), np.array([0, 2, 2, 2]), np.array([1, 1, 0, 0], bool), 3)
    assert m.mistakes == 1 and m.accuracy == 0.75 and m.query_ratio == 0.5
    assert m.f1 == pytest.approx((1.0 + 0.0 + 0.8) / 3)


def test_cost_sensitive_metrics_with_the_papers_weights_from_hand_counts():
    # 2 positives, 8 negatives: c_p = T_n/T = 0.8, c_n = T_p/T = 0.2 (Sect. 6.3.2), η_p = η_n = 1/2
    y = np.array([1, 1, -1, -1, -1, -1, -1, -1, -1, -1])
    p = np.array([1, -1, 1, 1, -1, -1, -1, -1, -1, -1])
    m = binary_metrics(y, p, np.zeros(10, bool), eta_p=0.5, eta_n=0.5, c_p=0.8, c_n=0.2)
    assert (m.tp, m.fn, m.fp, m.tn) == (1, 1, 2, 6)  # M_p = 1, M_n = 2
    assert m.sensitivity == 0.5 and m.specificity == 0.75
    assert m.weighted_sum == pytest.approx(0.625)  # Eq. (6)
    assert m.cost == pytest.approx(0.8 * 1 + 0.2 * 2)  # Eq. (7)
    assert m.accuracy == 0.7


def test_auc_roc_by_hand_with_ties():
    y = np.array([1, -1, 1, -1, -1])
    s = np.array([0.9, 0.1, 0.4, 0.4, -2.0])
    # positive pairs: (0.9 beats all 3) + (0.4 beats 0.1 and -2, ties 0.4) = 3 + 2.5 out of 6
    assert auc_roc(y, s) == pytest.approx(5.5 / 6)
    assert auc_roc(y, -s) == pytest.approx(0.5 / 6)
    assert auc_roc(y, np.zeros(5)) == 0.5
    assert np.isnan(auc_roc(np.ones(3), np.arange(3.0)))


def test_binary_metrics_carry_auc_only_with_scores():
    y, p = np.array([1, -1]), np.array([1, -1])
    assert np.isnan(binary_metrics(y, p, np.ones(2, bool)).auc_roc)
    assert binary_metrics(y, p, np.ones(2, bool), scores=np.array([0.3, -0.1])).auc_roc == 1.0


def test_auc_roc_equals_the_mid_rank_statistic_exactly():
    """The counted U (one merge of the sorted classes) against the Mann-Whitney rank sum with
    mid-ranks (scipy's rankdata), bit for bit, scores with many ties."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(3)
    y = np.where(rng.random(5_000) < 0.3, 1, -1)
    s = np.round(rng.normal(size=5_000) + 0.4 * y, 1)  # rounded: ties within and across the classes
    n_p = int((y > 0).sum())
    reference = (rankdata(s)[y > 0].sum() - n_p * (n_p + 1) / 2.0) / (n_p * (y.size - n_p))
    assert auc_roc(y, s) == reference


def _twice_u_by_lookup(positive: np.ndarray, negative: np.ndarray) -> int:
    """2U as numpy's binary search counts it: the negatives sorting before each positive, twice,
    plus those sorting equal to it (NaN the largest, -0.0 equal to 0.0, as numpy orders them)."""
    negative = np.sort(negative)
    return int(np.searchsorted(negative, positive, "left").sum() + np.searchsorted(negative, positive, "right").sum())


@pytest.mark.parametrize("seed", range(6))
def test_the_merged_count_equals_numpys_lookups_with_ties_infinities_and_nan(seed):
    from learners.evaluation import _twice_u
    from learners.kernels import ready

    rng = np.random.default_rng(seed)
    pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, 2.0])
    scores = np.where(rng.random(400) < 0.5, rng.choice(pool, 400), np.round(rng.normal(size=400), 1))
    positive, negative = np.sort(scores[:150]), np.sort(scores[150:])
    assert ready(_twice_u)(positive, negative) == _twice_u_by_lookup(positive, negative)
    assert ready(_twice_u)(positive[:0], negative) == 0


def test_auc_of_sorted_parts_equals_the_auc_of_the_whole():
    from learners.evaluation import auc_of_sorted

    rng = np.random.default_rng(5)
    y = np.where(rng.random(3_000) < 0.4, 1, -1)
    s = np.round(rng.normal(size=3_000) + 0.5 * y, 1)
    whole = auc_roc(y, s)
    cuts = [0, 1, 700, 701, 2_000, 3_000]
    parts = [(s[a:b][y[a:b] > 0], s[a:b][y[a:b] < 0]) for a, b in itertools.pairwise(cuts)]
    positive = [np.sort(p) for p, _ in parts]
    negative = [np.sort(n) for _, n in parts]
    assert auc_of_sorted(positive, negative) == whole
    with ThreadPoolExecutor(max_workers=2) as pool:  # the merges side by side: the same exact count
        assert auc_of_sorted(positive, negative, each=pool.map) == whole
    assert np.isnan(auc_of_sorted([], negative)) and np.isnan(auc_of_sorted(positive, [np.empty(0)]))


SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 1.7976931348623157e308,
           -1.7976931348623157e308, 2.0**-1022, 1.0 + 2.0**-52]


def test_sort_scores_sorts_in_place_with_nan_last_as_the_merge_of_the_auc_needs():
    values = np.array(SPECIAL * 3 + [2.0, -1.0])
    got = values.copy()
    sort_scores(got)
    finite = got[~np.isnan(got)]
    assert np.all(finite[1:] >= finite[:-1])
    assert np.isnan(got[finite.size:]).all() and np.isnan(got).sum() == np.isnan(values).sum()


def test_auc_roc_over_sorted_margins_counts_what_every_pair_counts():
    rng = np.random.default_rng(3)
    y = np.where(rng.random(4_000) < 0.3, 1, -1)
    scores = np.round(rng.standard_normal(4_000) + 0.5 * y, 2)  # ties across the classes
    pos, neg = scores[y > 0][:, None], scores[y < 0][None, :]
    assert auc_roc(y, scores.copy()) == pytest.approx(float(np.mean(pos > neg) + 0.5 * np.mean(pos == neg)), abs=1e-12)


@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_counts_and_scores_by_class_in_one_pass_are_those_of_masks(share):
    rng = np.random.default_rng(7)
    for n in (0, 1, 9, 1000):
        y = np.where(rng.random(n) < share, 1, -1)
        yhat = np.where(rng.random(n) < 0.5, 1, -1)
        scores = rng.standard_normal(n)
        scores[::7] = np.nan
        positive, negative = np.full(n + 3, 99.0), np.full(n + 3, 99.0)  # longer: the tail left alone
        counts, positives = binary_counts_and_scores(y, yhat, scores, positive, negative)
        np.testing.assert_array_equal(counts, binary_counts(y, yhat))
        assert positives == np.count_nonzero(y > 0)
        np.testing.assert_array_equal(positive[:positives], scores[y > 0])
        np.testing.assert_array_equal(negative[: n - positives], scores[y < 0])
        assert (positive[n + 1 :] == 99.0).all() and (negative[n + 1 :] == 99.0).all()


def test_counts_and_scores_refuse_outputs_they_could_write_past():
    y, scores = np.array([1, -1, 1]), np.zeros(3)
    for positive in (np.zeros(2), np.zeros(3, dtype=np.float32), np.zeros(6)[::2]):
        with pytest.raises(ValueError, match="as long as the scores"):
            binary_counts_and_scores(y, y, scores, positive, np.zeros(3))
    with pytest.raises(ValueError, match="differ in length"):
        binary_counts_and_scores(y, y[:2], scores, np.zeros(3), np.zeros(3))
