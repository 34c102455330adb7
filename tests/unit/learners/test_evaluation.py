"""Prequential metrics against hand-computed confusion counts."""

import numpy as np
import pytest

from learners.evaluation import binary_metrics, multiclass_metrics


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
