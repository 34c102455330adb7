"""The River scaler benchmark: both scaler sources landed like the leaderboard's peers, the page, its check."""

from __future__ import annotations

import json

import pytest

from benchmarks import leaderboard as lb
from benchmarks import reproduce
from benchmarks import river_scaler as rs
from benchmarks.reproduce import records
from tests.unit.benchmarks.test_leaderboard import gaussian

N = 1500


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("river_scaler")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(lb.DATASETS, "tiny", lb.BoardData("tiny", False, lambda: gaussian(N), 1))
        mp.setattr(rs, "SETS", ("tiny",))
        rs.main(["--datasets", "tiny", "--permutations", "2", "--out", str(out)])
    return out, json.loads((out / "river_scaler.json").read_text())


def test_each_budget_has_both_river_sources_and_the_default(made):
    _, payload = made
    cells = {(c["budget"], c["entry"]): c for c in records(payload["cells"])}
    assert set(cells) == {(b, e) for b in rs.BUDGETS
                          for e in ("river-scaler-labelled", "river-scaler-every", rs.OURS)}
    for (budget, _), c in cells.items():
        assert 0.5 < c["mean"] <= 1.0  # a separable stream
        assert abs(c["query"] - budget) <= 0.1 * budget


def test_the_scaler_source_changes_what_river_learns(made):
    _, payload = made
    by = {(c["budget"], c["entry"]): c for c in records(payload["cells"])}
    # the same sampler, seeds and knob search: any difference is the scaler's statistics
    assert any(by[(b, "river-scaler-labelled")]["mean"] != by[(b, "river-scaler-every")]["mean"] for b in rs.BUDGETS)


def test_the_page_has_a_row_per_set_and_budget(made):
    out, _ = made
    md = (out / "river_scaler.md").read_text()
    assert len([line for line in md.splitlines() if line.startswith("| tiny |")]) == len(rs.BUDGETS)


def test_reproduce_rechecks_a_river_cell(made, monkeypatch):
    out, _ = made
    monkeypatch.setitem(lb.DATASETS, "tiny", lb.BoardData("tiny", False, lambda: gaussian(N), 1))
    monkeypatch.setattr(reproduce, "RESULTS_DIR", out)
    checked = reproduce._check_river_scaler()
    assert checked.label.startswith("tiny River scaler+lr, scaler from every row") and checked.holds
