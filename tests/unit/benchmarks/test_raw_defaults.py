"""The defaults with no flags, scale auto against none, on raw and prepared sets."""

from __future__ import annotations

import json

import pytest

from benchmarks import leaderboard as lb
from benchmarks import raw_defaults
from tests.unit.benchmarks.test_leaderboard import gaussian
from tests.unit.benchmarks.test_leaderboard_scaling import wide_scales


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    out = tmp_path_factory.mktemp("raw_defaults")
    sets = [("raw", lb.BoardData("wide", False, wide_scales, 1)),
            ("prepared", lb.BoardData("svmguide1", False, lambda: gaussian(2000), 1))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(raw_defaults, "board_sets", lambda: sets)
        raw_defaults.main(["--quick", "--permutations", "2", "--out", str(out)])
    return out, json.loads((out / "raw_defaults.json").read_text())


def test_each_set_runs_the_default_with_and_without_its_scale(board):
    _, made = board
    cells = [dict(zip(made["cells"]["columns"], v, strict=True)) for v in made["cells"]["values"]]
    got = {(c["dataset"], c["scale"]): c for c in cells}
    assert set(got) == {("wide", "auto"), ("wide", "none"), ("svmguide1", "auto"), ("svmguide1", "none")}
    assert {c["learner"] for c in cells} == {"lr-ada-entropy-rff"}
    assert got["wide", "auto"]["mode"] == "standard" and got["wide", "none"]["mode"] == "none"
    # columns 10⁷ apart: the scale is what lets the kernel learner see the concept
    assert got["wide", "auto"]["mean"] > got["wide", "none"]["mean"] + 0.05
    assert all(abs(c["query"] - 0.1) < 0.02 for c in cells)


def test_the_page_shows_each_regime_and_rivers_best_beside_the_prepared_sets(board):
    out, made = board
    page = (out / "raw_defaults.md").read_text()
    assert f"commit `{made['commit']}`" in page
    raw, prepared = page.split("## Prepared")
    assert "| wide | lr-ada-entropy-rff | 10% | standard |" in raw and "River" not in raw
    river = raw_defaults.river_best("svmguide1", 0.1)  # the committed board's, not our run's
    assert river is not None and f"| {river:.4f} |" in prepared
