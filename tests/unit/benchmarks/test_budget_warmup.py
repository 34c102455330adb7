"""The warm-up benchmark: every variant per cell at the same realised ratio, the page, its check."""

from __future__ import annotations

import json

import pytest

from benchmarks import budget_warmup as bw
from benchmarks import leaderboard as lb
from benchmarks import reproduce
from learners.budget import backtest_warmup
from tests.unit.benchmarks.test_leaderboard import gaussian

N = 3000


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("warmup")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(lb.DATASETS, "tiny", lb.BoardData("tiny", False, lambda: gaussian(N), 1))
        mp.setattr(bw, "SETS", ("tiny",))
        mp.setitem(bw.LEARNERS, False, ("paa-1",))
        bw.main(["--datasets", "tiny", "--budgets", "0.05", "0.1", "--permutations", "2", "--out", str(out)])
    return out, json.loads((out / "budget_warmup.json").read_text())


def test_each_cell_runs_off_and_every_variant_with_half_the_budget(made):
    _, payload = made
    cells = {(c["budget"], c["variant"]): c for c in reproduce.records(payload["cells"])}
    assert set(cells) == {(b, v) for b in (0.05, 0.1) for v in ("off", *bw.VARIANTS)}
    for (budget, variant), cell in cells.items():
        assert cell["warmup"] == (0 if variant == "off" else backtest_warmup(budget, N))
        assert abs(cell["query"] - budget) <= 0.1 * budget  # the warm-up's excess is repaid within the pass
    assert payload["share"] == 0.5 and payload["permutations"] == 2


def test_the_page_compares_each_variant_with_off(made):
    out, _ = made
    md = (out / "budget_warmup.md").read_text()
    assert "## Against no warm-up" in md and "| boost 4 | " in md
    assert len([line for line in md.splitlines() if line.startswith("| tiny | paa-1 |")]) == 2


def test_reproduce_rechecks_a_boosted_cell(made, monkeypatch):
    out, _ = made
    monkeypatch.setitem(lb.DATASETS, "tiny", lb.BoardData("tiny", False, lambda: gaussian(N), 1))
    monkeypatch.setattr(reproduce, "RESULTS_DIR", out)
    cell = reproduce._check_budget_warmup()
    assert cell.label.startswith("tiny paa-1, budget 10 %, boost 4") and cell.holds
