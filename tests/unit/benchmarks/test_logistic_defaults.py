"""The logistic learners' defaults benchmark: the grid per set, the ranks, the page and its check."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from benchmarks import leaderboard as lb
from benchmarks import logistic_defaults as ld
from benchmarks import reproduce
from benchmarks.reproduce import records
from learners.datasets import Dataset
from learners.inputs import as_rows
from tests.unit.benchmarks.test_leaderboard import gaussian

N = 2000


def cell(dataset: str, eta: float, normalize: bool, mean: float, budget: float = 0.1, damping: float = 0.0) -> ld.Cell:
    return ld.Cell(dataset, "lr-ada-entropy", eta, normalize, budget, mean, budget, damping)


def test_mean_ranks_average_over_cells_and_share_ties():
    cells = [cell("a", 1.0, False, 0.9), cell("a", 2.0, False, 0.8), cell("a", 1.0, True, 0.8),
             cell("b", 1.0, False, 0.5), cell("b", 2.0, False, 0.7), cell("b", 1.0, True, 0.6)]
    ranks = ld.mean_ranks(cells)
    assert ranks == {(1.0, False, 0.0): (1 + 3) / 2, (2.0, False, 0.0): (2.5 + 1) / 2, (1.0, True, 0.0): (2.5 + 2) / 2}
    assert ld.best(cells) == (2.0, False, 0.0)


def test_damping_is_part_of_the_setting():
    cells = [cell("a", 1.0, False, 0.9), cell("a", 1.0, False, 0.95, damping=0.3),
             cell("b", 1.0, False, 0.5), cell("b", 1.0, False, 0.55, damping=0.3)]
    assert ld.mean_ranks(cells) == {(1.0, False, 0.0): 2.0, (1.0, False, 0.3): 1.0}
    assert ld.chosen(cells, (1.0, False, 0.0)) == (1.0, False, 0.3)


def test_a_setting_that_costs_a_cell_more_than_harm_is_not_chosen_whatever_its_rank():
    current = (1.0, False, 0.0)
    cells = [cell("a", 1.0, False, 0.90), cell("a", 1.0, True, 0.95), cell("a", 2.0, False, 0.91),
             cell("b", 1.0, False, 0.90), cell("b", 1.0, True, 0.90 - 2 * ld.HARM), cell("b", 2.0, False, 0.905),
             cell("c", 1.0, False, 0.50), cell("c", 1.0, True, 0.60), cell("c", 2.0, False, 0.51)]
    assert ld.best(cells) == (1.0, True, 0.0)  # best on a and c, worst on b
    assert set(ld.harmless(cells, current)) == {(1.0, False, 0.0), (2.0, False, 0.0)}
    assert ld.chosen(cells, current) == (2.0, False, 0.0)
    assert ld.chosen([c for c in cells if c.setting == current], current) == current


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("logistic")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(lb.DATASETS, "tiny", lb.BoardData("tiny", False, lambda: gaussian(N), 1))
        mp.setattr(ld, "ETAS", (0.25, 0.5))  # the registered setting among them: what the others are held to
        mp.setattr(ld, "DAMPINGS", (0.0, 0.1))
        ld.main(["--datasets", "tiny", "--permutations", "1", "--out", str(out)])
    return out, json.loads((out / "logistic_defaults.json").read_text())


def test_every_setting_runs_at_each_budget_near_its_ratio(made):
    _, payload = made
    cells = {(c["eta"], c["normalize"], c["damping"], c["budget"]): c for c in records(payload["cells"])}
    assert set(cells) == {(e, n, d, b) for e in (0.25, 0.5) for n in (False, True) for d in (0.0, 0.1)
                          for b in ld.BUDGETS}
    for (*_, budget), c in cells.items():
        assert c["learner"] == "lr-ada-entropy" and abs(c["query"] - budget) <= 0.1 * budget
        assert 0.5 < c["mean"] <= 1.0  # a separable stream: far above a coin


def test_the_page_names_the_best_setting_and_the_registered_one(made):
    out, payload = made
    md = (out / "logistic_defaults.md").read_text()
    cells = [ld.Cell(**c) for c in records(payload["cells"])]
    current = ld.registered("lr-ada-entropy")
    pick, top = ld.chosen(cells, current), ld.best(cells)
    assert f"To register: **{ld._label(pick)}**" in md
    assert f"Best mean rank: {ld._label(top)}" in md
    assert f"registered: {ld._label(current)}" in md and current == (0.5, False, 0.1)
    rows = [line for line in md.splitlines() if line.startswith(("| 0.25", "| 0.5", "| *0.25*", "| *0.5*"))]
    assert len(rows) == 8 and sum("(registered)" in r for r in rows) == 1


def test_reproduce_rechecks_a_cell(made, monkeypatch):
    out, _ = made
    monkeypatch.setitem(lb.DATASETS, "tiny", lb.BoardData("tiny", False, lambda: gaussian(N), 1))
    monkeypatch.setattr(reproduce, "RESULTS_DIR", out)
    checked = reproduce._check_logistic_defaults()
    assert checked.label.startswith("tiny lr-ada-entropy") and checked.holds


def three_blobs(n: int = 1500, seed: int = 1) -> Dataset:
    """Three Gaussian classes in 4 dimensions, centred on the first three axes."""
    rng = np.random.default_rng(seed)
    y = rng.integers(3, size=n)
    X = rng.normal(size=(n, 4)) + 3.0 * np.eye(4)[y]
    return Dataset(as_rows(sp.csr_matrix(X)), y, "blobs")


def test_a_multiclass_set_runs_the_grid_of_each_multiclass_learner_and_the_page_has_a_section_each(tmp_path):
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(lb.DATASETS, "blobs", lb.BoardData("blobs", True, three_blobs))
        mp.setattr(ld, "ETAS", (0.5,))
        mp.setattr(ld, "DAMPINGS", (0.0,))
        ld.main(["--datasets", "blobs", "--permutations", "1", "--out", str(tmp_path)])
    cells = records(json.loads((tmp_path / "logistic_defaults.json").read_text())["cells"])
    assert {c["learner"] for c in cells} == set(ld.LEARNERS[True]) == {"mlr-ada-entropy", "mlr-factored-entropy"}
    assert len(cells) == 2 * 2 * len(ld.BUDGETS)  # the two learners × normalize off / on × the budgets
    assert all(c["mean"] > 0.5 for c in cells)  # three separated classes: far above a coin (⅓)
    md = (tmp_path / "logistic_defaults.md").read_text()
    assert "## `mlr-ada-entropy`" in md and "## `mlr-factored-entropy`" in md
