"""The soak's arithmetic: trend, histogram quantiles, and the plateau verdict."""

import numpy as np
import pytest

from benchmarks.soak import PROFILES, histogram, measure, quantile, rise, since, sizing


def test_rise_is_the_robust_line_over_the_median_and_one_spike_is_not_a_trend():
    t = np.arange(11.0)
    assert rise(t, 100 + 0 * t) == pytest.approx(0.0)
    assert rise(t, 100 + t) == pytest.approx(10 / 105)
    assert rise(t, 100 - 2 * t) == pytest.approx(-20 / 90)
    spiked = 100 + 0 * t
    spiked[7] = 10_000  # a fault's minute
    assert rise(t, spiked) == pytest.approx(0.0)
    assert np.isnan(rise(t[:2], t[:2]))
    assert rise(t, 10 + 0.5 * t, floor=200) == pytest.approx(5 / 200)  # below its noise, a share of the floor


def test_lag_a_few_records_above_a_small_median_is_noise_but_a_backlog_that_builds_is_not(monkeypatch):
    monkeypatch.setattr("benchmarks.soak.isolated_bytes_per_id", lambda n, profile: 24.0)
    quiet = samples(0.0)
    for k, s in enumerate(quiet):
        s["lag"] = 18.0 + 0.2 * k  # +5 records over the window: within one tick of 200
    assert measure(quiet, PROFILES["service-quick"])["figures"]["lag"]["flat"]
    building = samples(0.0)
    for s in building:
        s["lag"] = 18.0 + 20 * s["t_s"]  # a backlog: the service falls behind
    assert not measure(building, PROFILES["service-quick"])["figures"]["lag"]["flat"]


def test_a_histogram_since_a_restart_counts_from_the_restart():
    assert since({1.0: 5.0, 2.0: 9.0}, {1.0: 2.0, 2.0: 3.0}) == {1.0: 3.0, 2.0: 6.0}
    assert since({1.0: 1.0, 2.0: 2.0}, {1.0: 2.0, 2.0: 3.0}) == {1.0: 1.0, 2.0: 2.0}


def test_quantile_reads_the_upper_bound_of_the_bucket_that_holds_it():
    metrics = {'x_bucket{le="0.01"}': 50.0, 'x_bucket{le="0.1"}': 98.0, 'x_bucket{le="+Inf"}': 100.0, "x_count": 100}
    buckets = histogram(metrics, "x")
    assert buckets == {0.01: 50.0, 0.1: 98.0, float("inf"): 100.0}
    assert quantile(buckets, 0.5) == 0.01 and quantile(buckets, 0.98) == 0.1 and quantile(buckets, 0.99) == np.inf
    assert np.isnan(quantile({}, 0.5))


def samples(rss_growth_after_ttl: float) -> list[dict]:
    profile = PROFILES["memory-quick"]
    out = []
    for t in np.arange(5.0, profile.duration_s + 1, profile.sample_s):
        held = 200 * min(t, profile.ttl_s)  # 200 labels/s, each remembered for one TTL
        extra = rss_growth_after_ttl * max(0.0, t - profile.ttl_s)
        out.append({"t_s": float(t), "rss_bytes": 2e8 + 30 * held + extra, "records": 2000 * t,
                    "labels_applied": 200 * t, "remembered_applied": held, "remembered_expired": 0.0,
                    "remembered": held, "checkpoint_written_bytes": 1e4, "checkpoint_file_bytes": 5e4,
                    "parts_bytes": 24 * held, "lag": 10.0, "latency_p50_s": 0.05, "latency_p99_s": 0.1,
                    "checkpoint_duration_s": 0.01 if t % 20 else float("nan")})
    return out


def test_a_run_that_stops_growing_after_a_ttl_plateaus_and_counts_its_bytes_per_id(monkeypatch):
    monkeypatch.setattr("benchmarks.soak.isolated_bytes_per_id", lambda n, profile: 24.0)
    result = measure(samples(0.0), PROFILES["memory-quick"])
    assert result["flat"] and result["rss_per_remembered_bytes"] == pytest.approx(30.0)
    assert result["parts_per_remembered_bytes"] == pytest.approx(24.0)
    assert result["labels_per_s"] == pytest.approx(200.0) and result["query_ratio"] == pytest.approx(0.1)
    table = sizing({**result, "profile": {"checkpoint_every_s": 5}})
    assert "| 1,000 | 1 h | 3,600,000 | 108.0 MB | 86.4 MB |" in "\n".join(table)


def test_a_run_whose_memory_keeps_growing_does_not_plateau(monkeypatch):
    monkeypatch.setattr("benchmarks.soak.isolated_bytes_per_id", lambda n, profile: 24.0)
    result = measure(samples(1e6), PROFILES["memory-quick"])  # 1 MB more every second past the TTL
    assert not result["flat"] and not result["figures"]["rss_bytes"]["flat"]
    assert result["figures"]["remembered"]["flat"]
    assert result["figures"]["checkpoint_duration_s"]["flat"] is None  # shown, not judged, in this profile


def test_the_window_judged_starts_one_ttl_in_and_after_the_faults_settled():
    assert PROFILES["memory"].window_from_s == 600 + 60 and not PROFILES["memory"].faults
    assert PROFILES["service"].window_from_s == 660 + 60 + 3 * 60  # the storm, then three samples
    assert PROFILES["service"].duration_s - PROFILES["service"].window_from_s == 45 * 60
