"""The kernel learner measured as the board measures an entry and ranked among a committed board's rows."""

from __future__ import annotations

import json

import pytest

from benchmarks import kernel_board as kb
from benchmarks import leaderboard as lb
from benchmarks import reproduce
from benchmarks.reproduce import records
from tests.unit.benchmarks.test_kernel_defaults import ring

RING = lb.BoardData("ring", False, ring, 1)


def committed(budget: float, entry: str, mode: str, mean: float) -> lb.Row:
    return lb.Row("defaults", "ring", "f1", budget, entry, mode, mean, 0.01, budget, 0.001, 0.1, 10)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("kernel_board")
    board = out / "board.json"
    rows = [r for b in lb.DEFAULT_BUDGETS for r in (committed(b, "river-entropy(pa)", "peer", 0.4),
                                                      committed(b, "paa-1", "online", 0.45),
                                                      committed(b, "paa-1", "offline", 0.99))]
    rows.append(committed(0.1, "lr-ada-entropy-rff", "online", 0.0))  # an earlier row of its own: replaced
    board.write_text(lb.dump_board({"commit": "c0ffee0"}, rows))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lb, "DATASETS", {"ring": RING})
        kb.main(["--datasets", "ring", "--permutations", "2", "--board", str(board), "--out", str(out)])
    return out, json.loads((out / "kernel_board.json").read_text())


def test_the_learner_runs_online_at_each_budget_near_its_ratio(made):
    _, payload = made
    rows = records(payload["rows"])
    assert [(r["entry"], r["mode"], r["budget"]) for r in rows] == [(kb.LEARNER, "online", b)
                                                                     for b in lb.DEFAULT_BUDGETS]
    for r in rows:
        assert r["permutations"] == 2 and abs(r["query"] - r["budget"]) <= 0.1 * r["budget"]
    assert payload["board_commit"] == "c0ffee0"


def test_the_page_ranks_it_among_the_boards_rows_and_against_river(made):
    out, payload = made
    md = (out / "kernel_board.md").read_text()
    mine = {r["budget"]: r["mean"] for r in records(payload["rows"])}
    # the ring: the kernel above the linear paa-1 (0.45) and River (0.4), below paa-1's offline 0.99
    assert all(0.45 < m < 0.99 for m in mine.values())
    assert f"| 1 | {kb.LEARNER} | 2.00 | 2 |" in md and "| 2 | paa-1 | 3.00 | 2 |" in md
    assert "online (the controller, no look-ahead) 2 of 2" in md
    assert md.count("river-entropy(pa) 0.4000") == 2 and md.count("| won |") == 2


def test_reproduce_rechecks_a_cell(made, monkeypatch):
    out, _ = made
    monkeypatch.setattr(lb, "DATASETS", {"ring": RING})
    monkeypatch.setattr(reproduce, "RESULTS_DIR", out)
    checked = reproduce._check_kernel_board()
    assert checked.label == f"ring {kb.LEARNER} online at 10 %: f1" and checked.holds
