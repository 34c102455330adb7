"""Compile the service's loops and every registry entry's kernels into numba's on-disk cache, off
the tests' critical path.

A fresh clone has no cache: the first service to start compiles the codecs and batch drivers (about
80 s on the 2-core machine), and each learner's first replay its kernels (about 50 s for the whole
registry). `.ci/run` starts this beside the single-threaded checks that precede the tests, so the
tests load the kernels instead of compiling them; it changes no result. The service's loops come
first: those checks replay learners themselves, and compile what they need meanwhile.
"""

from __future__ import annotations

import time

from consumer.config import Settings
from consumer.learner import build_learner, warm_up
from learners import ALGORITHMS, make
from learners.budget import BudgetController
from learners.checks import D, stream
from learners.datasets import Dataset
from learners.inputs import as_rows
from learners.replay import replay


def main() -> None:
    started = time.perf_counter()
    for classes in (None, [0, 1, 2]):  # the default learners, binary and multiclass
        settings = Settings(classes=classes)
        warm_up(build_learner(settings), settings.n_features)
    print(f"the service's loops compiled or loaded in {time.perf_counter() - started:.0f} s")
    data = {}
    for multiclass in (False, True):
        X, y = stream(multiclass, n=60)
        data[multiclass] = Dataset(as_rows(X, D), y, "warm-up")
    for name, spec in sorted(ALGORITHMS.items()):
        params = {"n_features": D, **({"classes": [0, 1, 2]} if spec.rule.multiclass else {})}
        rows = data[spec.rule.multiclass]
        replay(make(name, **params), rows)
        learner = make(name, **params)
        learner.decide(rows.rows)
        if learner.query.budget_param is not None:
            learner.budget = BudgetController(target=0.2)
            replay(learner, rows)
    print(f"kernels of {len(ALGORITHMS)} learners compiled or loaded in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
