"""The named-table regime: records hashed as the service hashes them, every learner as registered."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import leaderboard as lb
from benchmarks import leaderboard_named as lbn
from learners.hashing import DEFAULT_DIMENSION, hash_features

pytest.importorskip("river")


def test_a_record_is_hashed_as_the_service_hashes_it():
    records = [{"amount": 12.5, "country": "FR", "rate": 0.0}, {"amount": 3.0, "country": "DE", "rate": 0.2}]
    data = lbn.named(records, [0, 1], "t")
    assert data.rows.n_features == DEFAULT_DIMENSION and data.n == 2
    for i, record in enumerate(records):
        idx, val = hash_features(record, DEFAULT_DIMENSION)
        lo, hi = data.rows.indptr[i], data.rows.indptr[i + 1]
        assert data.rows.indices[lo:hi].tolist() == idx.tolist() and data.rows.data[lo:hi].tolist() == val.tolist()


def test_the_mixed_table_has_columns_on_their_own_scales_and_categories():
    records, y = lbn.mixed_table(n=500)
    assert set(np.unique(y)) == {0, 1} and 0.3 < y.mean() < 0.7
    amounts = np.array([[r[f"num{j}"] for j in range(12)] for r in records])
    spread = amounts.std(axis=0)
    assert spread.max() > 100 * spread.min()  # columns far apart: a raw table
    assert {type(r["country"]) for r in records} == {str}


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    out = tmp_path_factory.mktemp("named")
    small = lb.BoardData("small", False, lambda: lbn.named(*lbn.mixed_table(n=1500), "small"), 1, "a small table")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(lbn.SETS, "small", small)
        lbn.main(["--datasets", "small", "--learners", "lr-ada-entropy", "kapa-1", "--budgets", "0.1",
                  "--permutations", "2", "--out", str(out)])
    return out, json.loads((out / "leaderboard_named.json").read_text())


def test_each_learner_runs_as_registered_online_beside_the_peers_and_a_learner_too_large_is_named(board):
    out, made = board
    entries = {(r["entry"], r["mode"]) for r in made["rows"]}
    assert ("lr-ada-entropy", "online") in entries and ("lr-ada-entropy", "offline") not in entries
    assert {"river-entropy(scaler+lr)", "vw-active"} <= {e for e, _ in entries}
    assert [r["params"] for r in made["rows"] if r["entry"] == "lr-ada-entropy"] == [{}]
    assert "kapa-1" in made["skipped"] and "GB" in made["skipped"]["kapa-1"]
    assert "Not run: `kapa-1`" in (out / "leaderboard_named.md").read_text()
