"""The drift section of the leaderboard on a short shifting stream: rows, ranks, River's landing, files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import leaderboard_drift as lbd
from learners.synthetic import synthetic_shift

pytest.importorskip("river")


def short(seed: int):
    return synthetic_shift(n=3000, d=5, switch=lbd.SWITCH, seed=seed)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    out = tmp_path_factory.mktemp("drift")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(lbd.STREAMS, "synthetic-shift", lambda: short)
        lbd.main(["--streams", "synthetic-shift", "--learners", "paa-1", "rpa-1", "--repetitions", "2",
                  "--out", str(out)])
    return out, json.loads((out / "leaderboard_drift.json").read_text())


def test_ours_and_rivers_rows_land_near_the_target_and_are_ranked(board):
    _, made = board
    rows = {r["entry"]: r for r in made["rows"]}
    assert set(rows) == {"paa-1", "rpa-1", "river-entropy(pa)", "river-entropy(lr)", "river-entropy(scaler+pa)",
                         "river-entropy(scaler+lr)", "vw-active"}
    for r in rows.values():
        assert 0.5 < r["accuracy"] <= 1.0 and 0 <= r["before"] <= 1 and 0 <= r["after"] <= 1
        if r["landed"]:
            assert abs(r["query"] - lbd.TARGET) <= 0.1 * lbd.TARGET and r["rank"] >= 1
        else:
            assert r["rank"] is None
    assert rows["paa-1"]["landed"] and rows["rpa-1"]["landed"]
    assert abs(rows["river-entropy(pa)"]["query"] - lbd.TARGET) < 0.03  # bisected on the first draw only
    assert abs(rows["vw-active"]["query"] - lbd.TARGET) < 0.03
    ranked = sorted((r for r in rows.values() if r["rank"] is not None), key=lambda r: r["rank"])
    assert [r["accuracy"] for r in ranked] == sorted((r["accuracy"] for r in ranked), reverse=True)


def test_the_files_hold_a_table_row_per_entry_and_a_figure(board):
    out, made = board
    md = (out / "leaderboard_drift.md").read_text()
    table = [line for line in md.splitlines() if line.startswith("| ") and ("target=" in line or "discount=" in line
                                                                               or "mellowness=" in line)]
    assert len(table) == len(made["rows"])
    assert (out / "leaderboard_drift_synthetic-shift.png").stat().st_size > 10_000


def test_ours_replays_each_draw_in_its_order_with_the_online_controller():
    draws = [short(seed) for seed in (0, 1)]
    curve = lbd.ours("paa-1", draws, "s")
    assert curve.correct.shape == (2, 3000) and curve.knob == "target"
    from learners import make
    from learners.budget import BudgetController
    from learners.replay import replay

    learner = make("paa-1", n_features=5)
    learner.budget = BudgetController(target=lbd.TARGET)
    trace = replay(learner, draws[1])
    np.testing.assert_array_equal(curve.correct[1], trace.y_pred == trace.y_true)


def test_the_moving_accuracy_is_the_mean_over_the_last_window_of_rounds():
    rng = np.random.default_rng(3)
    correct = rng.random((3, 700)) < 0.7
    curve = lbd.Curve("s", "x", correct, correct, "target", 0.1, 0.0)
    mean = correct.mean(axis=0)
    want = [mean[max(0, t + 1 - lbd.WINDOW):t + 1].mean() for t in range(700)]
    np.testing.assert_allclose(curve.moving(), want, rtol=1e-12)
