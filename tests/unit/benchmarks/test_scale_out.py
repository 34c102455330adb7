import math

import pytest

from benchmarks.scale_out import add_histograms, histogram, metric, quantile, summarise

EXPOSITION = """\
# HELP activestream_model_swap_delay_seconds From a model version's publication to this scorer scoring with it
# TYPE activestream_model_swap_delay_seconds histogram
activestream_model_swap_delay_seconds_bucket{le="0.01"} 0.0
activestream_model_swap_delay_seconds_bucket{le="0.025"} 2.0
activestream_model_swap_delay_seconds_bucket{le="0.05"} 6.0
activestream_model_swap_delay_seconds_bucket{le="0.1"} 9.0
activestream_model_swap_delay_seconds_bucket{le="+Inf"} 10.0
activestream_model_swap_delay_seconds_count 10.0
activestream_model_swap_delay_seconds_sum 0.6
activestream_labels_total{outcome="applied"} 42.0
activestream_labels_total{outcome="unknown"} 1.0
activestream_ready 1.0
activestream_ready_since 5.0
"""


def test_a_sample_is_found_by_its_name_and_labels_and_no_longer_name_is_taken_for_it():
    assert metric(EXPOSITION, 'activestream_labels_total{outcome="applied"}') == 42.0
    assert metric(EXPOSITION, "activestream_ready") == 1.0
    assert metric(EXPOSITION, "activestream_labels_total") == 42.0  # the first labelled sample
    assert metric(EXPOSITION, "activestream_missing") is None
    assert metric("", "activestream_ready") is None


def test_buckets_are_read_in_order_with_inf_last():
    buckets = histogram(EXPOSITION, "activestream_model_swap_delay_seconds")
    assert buckets == [(0.01, 0.0), (0.025, 2.0), (0.05, 6.0), (0.1, 9.0), (math.inf, 10.0)]
    assert histogram(EXPOSITION, "activestream_other") == []


def test_quantiles_interpolate_inside_the_bucket_holding_them():
    buckets = histogram(EXPOSITION, "activestream_model_swap_delay_seconds")
    # rank 5 of 10 falls in (0.025, 0.05], 3 of its 4 observations in: 0.025 + 0.025 * 3/4
    assert quantile(buckets, 0.5) == pytest.approx(0.04375)
    # rank 1 in the first non-empty bucket (0.01, 0.025]: halfway
    assert quantile(buckets, 0.1) == pytest.approx(0.0175)
    # rank 9.9 lies in +Inf: the highest finite bound
    assert quantile(buckets, 0.99) == 0.1
    assert quantile([(1.0, 0.0), (math.inf, 0.0)], 0.5) is None
    assert quantile([], 0.5) is None


def test_the_first_bucket_starts_at_zero():
    assert quantile([(0.01, 4.0), (math.inf, 4.0)], 0.5) == pytest.approx(0.005)


def test_histograms_of_several_scorers_add_up_bucket_by_bucket():
    a = [(0.1, 1.0), (1.0, 3.0), (math.inf, 3.0)]
    b = [(0.1, 0.0), (1.0, 2.0), (math.inf, 4.0)]
    assert add_histograms([a, b]) == [(0.1, 1.0), (1.0, 5.0), (math.inf, 7.0)]


def test_the_summary_takes_medians_per_scorer_count_and_sums_the_swap_histograms():
    def run(k, rate, swaps):
        return {"scorers": k, "records_per_s": rate, "window_s": 2.0, "records": 1000, "predicted_before_ready": 100,
                "label_requests": 100, "cpu_s_per_1000": {"scorers": 0.01, "trainer": 0.002, "broker": 0.004,
                                                          "annotator": 0.001},
                "machine_busy_share": 0.9, "rest_cpu_s_per_1000": 0.001,
                "swap_delay_buckets": [(0.1, swaps), (math.inf, swaps)], "publications": 5}

    rows = summarise([run(2, 30.0, 1.0), run(1, 10.0, 2.0), run(1, 20.0, 4.0), run(1, 60.0, 0.0)])
    assert [r["scorers"] for r in rows] == [1, 2]
    one = rows[0]
    assert one["runs"] == 3 and one["records_per_s"] == 20.0 and one["records_per_s_each"] == [10.0, 20.0, 60.0]
    assert one["swaps"] == 6.0 and one["swap_le_2s_share"] is None  # no 2 s bucket in these
    assert one["before_ready_share"] == pytest.approx(0.1) and one["query_ratio"] == pytest.approx(0.1)
