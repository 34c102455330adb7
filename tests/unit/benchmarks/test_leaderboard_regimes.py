"""The four regimes combined: each learner as registered, ranked per regime and over the regimes, the
default learners against River's best and VW."""

from __future__ import annotations

import json

import pytest

from benchmarks import leaderboard_regimes as lbr
from learners.defaults import DEFAULT_LEARNERS

BINARY = DEFAULT_LEARNERS["binary"]


def row(dataset, budget, entry, mode, mean, *, query=None, regime="", params=None, landed=True):
    return {"regime": regime, "dataset": dataset, "metric": "f1", "budget": budget, "entry": entry, "mode": mode,
            "mean": mean, "std": 0.0, "query": budget if query is None else query, "query_std": 0.0, "seconds": 0.1,
            "permutations": 3, "params": params or {}, "knob": None, "knob_value": None, "landed": landed,
            "flag": "", "rank": None}


def board(regime, dataset, scores, peers, *, budgets=(0.05, 0.1)):
    """A board's rows: ours online (``scores``: entry → F1), their variants, and the peers."""
    rows = []
    for b in budgets:
        rows += [row(dataset, b, e, "online", m, regime=regime) for e, m in scores.items()]
        rows += [row(dataset, b, e, "offline", 1.0, regime=regime) for e in scores]  # look-ahead: not counted
        rows += [row(dataset, b, f"{e}+rms", "online", 1.0, regime=regime, params={"scale": "rms"}) for e in scores]
        rows += [row(dataset, b, e, "peer", m, regime=regime) for e, m in peers.items()]
    return rows


def as_table(rows):
    """Rows as the leaderboard's json holds them: columns once, then the values of each row."""
    return {"columns": list(rows[0]), "values": [list(r.values()) for r in rows]}


@pytest.fixture
def results(tmp_path):
    ours = {BINARY: 0.90, "paa-1": 0.80}
    peers = {"river-entropy(lr)": 0.85, "river-entropy(scaler+lr)": 0.88, "vw-active": 0.92}
    (tmp_path / "leaderboard.json").write_text(json.dumps(
        {"commit": "aaa", "rows": as_table(board("defaults", "a8a", ours, peers)
                                           + board("tuned", "a8a", {"paa-1": 1.0}, {}))}))
    (tmp_path / "leaderboard_scaling.json").write_text(json.dumps(
        {"commit": "bbb", "rows": board("raw", "spambase", {BINARY: 0.87, "paa-1": 0.5}, peers)}))
    (tmp_path / "leaderboard_named.json").write_text(json.dumps(
        {"commit": "ccc", "rows": board("named", "table-mixed", {BINARY: 0.93, "paa-1": 0.7}, peers)}))
    drift = [{"stream": "synthetic-shift", "entry": e, "accuracy": a, "query": q, "landed": abs(q - 0.1) <= 0.01}
             for e, a, q in ((BINARY, 0.60, 0.1), ("paa-1", 0.58, 0.1), ("river-entropy(lr)", 0.55, 0.1),
                             ("vw-active", 0.70, 0.2))]  # VW missed the budget: not ranked, not compared
    (tmp_path / "leaderboard_drift.json").write_text(json.dumps({"commit": "ddd", "target": 0.1, "rows": drift}))
    return tmp_path


def test_each_regime_counts_the_learners_as_registered_online_and_the_peers(results):
    payload = json.loads((results / "leaderboard.json").read_text())
    table = lbr.cells("prepared", payload)
    assert {(c.entry, c.peer) for c in table} == {(BINARY, False), ("paa-1", False), ("river-entropy(lr)", True),
                                                  ("river-entropy(scaler+lr)", True), ("vw-active", True)}
    assert all(c.mean < 1.0 for c in table)  # no offline bisection, no +rms variant, no tuned regime


def test_the_ranking_is_the_mean_of_the_regime_ranks(results, tmp_path):
    out = tmp_path / "out"
    assert lbr.main(["--results", str(results), "--out", str(out)]) == 0
    made = json.loads((out / "leaderboard_regimes.json").read_text())
    ranking = {t["entry"]: t for t in made["binary"]["ranking"]}
    # prepared: VW 0.92 > ours 0.90 > River 0.88 > 0.85 > paa-1; raw: VW, River 0.88, ours 0.87; named: ours
    # first; drift: ours first, VW unranked
    assert ranking[BINARY]["regimes"] == {"prepared": 2.0, "raw": 3.0, "drift": 1.0, "named": 1.0}
    assert ranking[BINARY]["mean_rank"] == pytest.approx(1.75)
    assert not ranking["vw-active"]["complete"]  # missing the drift regime
    assert made["binary"]["ranking"][0]["entry"] == BINARY


def test_the_default_is_set_against_rivers_best_and_vw_per_regime(results, tmp_path):
    out = tmp_path / "out"
    lbr.main(["--results", str(results), "--out", str(out)])
    made = json.loads((out / "leaderboard_regimes.json").read_text())
    versus = made["binary"]["versus"][BINARY]
    assert versus["prepared"]["river"]["won"] == 2 and versus["prepared"]["river"]["cells"] == 2
    assert versus["raw"]["river"]["worst"]["diff"] == pytest.approx(0.87 - 0.88)
    assert versus["raw"]["river"]["worst"]["peer"] == "river-entropy(scaler+lr)"  # River's best in the cell
    assert versus["prepared"]["vw"]["won"] == 0 and versus["prepared"]["vw"]["worst"]["diff"] == pytest.approx(-0.02)
    assert versus["drift"]["vw"]["cells"] == 0  # VW did not land it
    md = (out / "leaderboard_regimes.md").read_text()
    assert f"**{BINARY}**" in md and "| raw | 0 of 2 |" in md


def test_a_missing_board_is_named(results, tmp_path):
    (results / "leaderboard_named.json").unlink()
    with pytest.raises(SystemExit):
        lbr.main(["--results", str(results), "--out", str(tmp_path / "out")])


def test_the_defaults_board_replaces_the_full_boards_rows_of_the_default_learners(results, tmp_path):
    (results / "leaderboard_defaults").mkdir()
    (results / "leaderboard_defaults" / "leaderboard.json").write_text(json.dumps(
        {"commit": "eee", "rows": as_table(board("defaults", "a8a", {BINARY: 0.95}, {"vw-active": 0.92}))}))
    out = tmp_path / "out"
    lbr.main(["--results", str(results), "--out", str(out)])
    made = json.loads((out / "leaderboard_regimes.json").read_text())
    assert {t["entry"]: t for t in made["binary"]["ranking"]}[BINARY]["regimes"]["prepared"] == 1.0
    assert made["sources"]["prepared"] == f"aaa; {BINARY} at eee"
    prepared = [c for c in made["cells"] if c["regime"] == "prepared" and c["entry"] == BINARY]
    assert sorted(c["mean"] for c in prepared) == [0.95, 0.95]  # one row per cell: the newer one
