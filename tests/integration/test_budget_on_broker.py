"""A 5 % query-rate target through the embedded broker at full speed, across a SIGKILL and restart
(``benchmarks.budget_broker`` on the first 20,000 rows of a8a)."""

from __future__ import annotations

from benchmarks.budget_broker import TARGET, run


def test_budget_holds_five_percent_overall_and_after_a_sigkill_mid_stream(datasets_dir, tmp_path):
    r = run(20_000, workdir=tmp_path, datasets=datasets_dir)
    assert r["source"] == "a8a"
    assert r["predicted"] == 20_000 and r["missing"] == 0 and r["decisions_changed"] == 0
    assert r["requests_topic_agrees"] and r["exit_code"] == 0
    # the kill came mid-stream, past a checkpoint: decisions made after it were read back and kept
    assert 0 < r["checkpoint_records_at_kill"] < r["records_before"] < 20_000
    assert r["records_after"] >= 5_000
    for part in ("rate", "rate_before", "rate_after"):
        assert abs(r[part] - TARGET) <= 0.005, (part, r[part])
    assert r["max_window"] <= 1.5 * TARGET
