"""The kernel logistic learner's map benchmark: the grid per set, the reference, the page and its check."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from benchmarks import kernel_defaults as kd
from benchmarks import leaderboard as lb
from benchmarks import reproduce
from benchmarks.reproduce import records
from learners.datasets import Dataset
from learners.inputs import as_rows

N = 2000


def ring(n: int = N, seed: int = 0) -> Dataset:
    """Positive inside a ring of two features: no linear model separates it, a Gaussian kernel does."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.1, 1, -1)
    return Dataset(as_rows(sp.csr_matrix(X)), y, "ring")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("kernel")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(lb.DATASETS, "ring", lb.BoardData("ring", False, ring, 1))
        mp.setattr(kd, "COMPONENTS", (64, 512))  # the registered width among them
        mp.setattr(kd, "GAMMAS", (1.0, 4.0))
        kd.main(["--datasets", "ring", "--permutations", "1", "--out", str(out)])
    return out, json.loads((out / "kernel_defaults.json").read_text())


def test_every_map_and_the_learner_without_one_run_at_each_budget(made):
    _, payload = made
    cells = {(c["components"], c["gamma"], c["budget"]): c for c in records(payload["cells"])}
    assert set(cells) == {(0, 0.0, b) for b in kd.BUDGETS} | {(m, g, b) for m in (64, 512) for g in (1.0, 4.0)
                                                               for b in kd.BUDGETS}
    for (*_, budget), c in cells.items():
        assert c["dataset"] == "ring" and abs(c["query"] - budget) <= 0.1 * budget
    for budget in kd.BUDGETS:  # the ring is what the map is for: each map beats the linear model on it
        linear = cells[(0, 0.0, budget)]["mean"]
        assert all(cells[(m, g, budget)]["mean"] > linear + 0.05 for m in (64, 512) for g in (1.0, 4.0))


def test_the_page_names_the_map_to_register_and_the_registered_one(made):
    out, payload = made
    md = (out / "kernel_defaults.md").read_text()
    cells = [kd.Cell(**c) for c in records(payload["cells"])]
    pick = kd.chosen(cells, kd.NO_MAP)
    assert pick != kd.NO_MAP
    assert f"To register: **{kd._label(pick)}**" in md
    assert f"registered: {kd._label(kd.registered())}" in md and kd.registered() == (512, 4.0)
    rows = [line for line in md.splitlines() if line.startswith(("| m = ", "| *m = ", "| no map"))]
    assert len(rows) == 5 and sum("(registered)" in r for r in rows) == 1


def test_without_a_map_the_learner_is_lr_ada_entropy():
    data = ring(300)
    classes = (-1, 1)
    # as the benchmark measures both: the rule as tuned, without the online scale and forgetting
    plain = lb.build("lr-ada-entropy", data, classes, lb.untuned("lr-ada-entropy"))
    bare = lb.build(kd.LEARNER, data, classes, {**kd.params(kd.NO_MAP), **lb.untuned(kd.LEARNER)})
    assert bare.get_params()["rff_components"] == 0
    assert {k: v for k, v in bare.get_params().items() if not k.startswith("rff_")} == \
        {k: v for k, v in plain.get_params().items() if not k.startswith("rff_")}


def test_reproduce_rechecks_a_cell(made, monkeypatch):
    out, _ = made
    monkeypatch.setitem(lb.DATASETS, "ring", lb.BoardData("ring", False, ring, 1))
    monkeypatch.setattr(reproduce, "RESULTS_DIR", out)
    checked = reproduce._check_kernel_defaults()
    assert checked.label.startswith("ring lr-ada-entropy-rff, m = 512, γ = 4") and checked.holds
