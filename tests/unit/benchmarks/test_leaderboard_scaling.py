"""The raw-features section of the leaderboard: each learner with scaling off and on, the peers, the files."""

from __future__ import annotations

import json

import pytest

from benchmarks import leaderboard as lb
from benchmarks import leaderboard_scaling as lbs
from benchmarks import reproduce
from tests.unit.benchmarks.test_leaderboard import gaussian

pytest.importorskip("river")


def wide_scales(n: int = 2000, seed: int = 0):
    """The tiny Gaussian stream with its columns multiplied by 10⁻³ … 10⁴: raw features."""
    import numpy as np
    import scipy.sparse as sp

    from learners.datasets import Dataset
    from learners.inputs import as_rows

    data = gaussian(n, seed=seed)
    X = data.rows.to_csr().toarray() * 10.0 ** np.linspace(-3, 4, 5)
    return Dataset(as_rows(sp.csr_matrix(X)), data.labels, "wide")


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    out = tmp_path_factory.mktemp("scaling")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(lbs.SETS, "wide", lb.BoardData("wide", False, wide_scales, 1))
        lbs.main(["--datasets", "wide", "--learners", "paa-1", "kapa-1", "--budgets", "0.1", "--permutations", "2",
                  "--out", str(out)])
    return out, json.loads((out / "leaderboard_scaling.json").read_text())


def test_each_learner_runs_as_registered_and_with_every_scale_and_the_peers_with_and_without_theirs(board):
    _, made = board
    entries = {(r["entry"], r["mode"]) for r in made["rows"]}
    for entry in ("paa-1", "paa-1+rms", "paa-1+standard"):  # its registry defaults, then each scale
        assert {(entry, "online"), (entry, "offline")} <= entries
    assert not {e for e, _ in entries if e.startswith("kapa-1")}  # support vectors: cannot be rescaled
    assert {"river-entropy(pa)", "river-entropy(scaler+pa)", "river-entropy(lr)", "river-entropy(scaler+lr)",
            "vw-active", "vw-supervised", "linear-svc"} <= {e for e, _ in entries}
    rows = {(r["entry"], r["mode"]): r for r in made["rows"]}
    assert rows["paa-1+rms", "online"]["params"] == {"scale": "rms"}
    assert rows["paa-1", "online"]["params"] == {}
    # columns 10⁷ apart: unscaled PA learns the widest column alone; scaled, it learns the stream
    assert rows["paa-1+rms", "online"]["mean"] > rows["paa-1", "online"]["mean"] + 0.05


def test_the_page_ranks_and_plots_like_the_leaderboard(board):
    out, made = board
    md = (out / "leaderboard_scaling.md").read_text()
    assert "## Binary sets" in md and len([line for line in md.splitlines() if line.startswith("| wide |")]) == len(
        made["rows"])
    assert (out / "leaderboard_scaling_wide.png").stat().st_size > 10_000
    assert all(r["rank"] is not None for r in made["rows"] if r["landed"] and r["budget"] is not None)


def test_reproduce_rechecks_a_cell_of_the_page(board, monkeypatch):
    out, _ = board
    monkeypatch.setitem(lbs.SETS, "wide", lb.BoardData("wide", False, wide_scales, 1))
    monkeypatch.setattr(reproduce, "RESULTS_DIR", out)
    cell = reproduce._check_leaderboard_scaling()
    assert cell.label.startswith("wide paa-1+rms online") and cell.holds


def test_reproduce_lists_a_figure_for_every_set():
    [entry] = [e for e in reproduce.RESULTS if e.name == "leaderboard-scaling"]
    assert {f"leaderboard_scaling_{d}.png" for d in lbs.SETS} == {f for f in entry.files if f.endswith(".png")}
