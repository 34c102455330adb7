"""The Tables 2-3 protocol on a small synthetic stream: C tuned on its own permutation, the rate landed."""

import numpy as np
import pytest

from benchmarks.paa_protocol import C_GRID, TUNING_SEED, evaluate, sweep, tune_c
from learners import make
from learners.replay import find_budget
from learners.synthetic import synthetic_sparse

DATA = synthetic_sparse(n=1500, d=256, seed=3)


def test_tune_c_picks_the_best_f1_on_the_tuning_permutation():
    learner = make("paa-1", n_features=256)
    C, scores = tune_c(learner, DATA, 0.2)
    assert [s[0] for s in scores] == list(C_GRID)
    assert max(scores, key=lambda s: (s[1], -s[0]))[0] == C
    _, again = find_budget(learner.clone(C=C, seed=TUNING_SEED), DATA, 0.2, permutations=1, seed=TUNING_SEED)
    assert again.mean("f1") == pytest.approx(dict((c, f) for c, f, _ in scores)[C])


@pytest.mark.parametrize("algorithm", ["paa-2", "pea", "rpa-1"])
def test_evaluate_lands_the_query_ratio_on_the_evaluation_permutations(algorithm):
    cell = evaluate(algorithm, DATA, (-1, 1), 0.1, config={}, permutations=4)
    assert cell.landed and abs(cell.query - 0.1) <= 0.005
    assert bool(cell.tuning) == (algorithm != "pea")  # only PA-I/PA-II learners tune C
    assert 0.0 < cell.f1 < 1.0 and cell.f1_std >= 0.0


def test_sweep_query_ratio_grows_along_the_delta_grid():
    points = sweep("paa", DATA, (-1, 1), config={"bias": 0.0}, C=None, permutations=2)
    q = np.array([p.query for p in points])
    assert np.all(np.diff(q) >= 0) and q[0] < 0.05 and q[-1] > 0.9
