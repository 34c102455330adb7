"""activestream's learners: online active learning rules from the papers, usable on their own.

A learner is an update rule plus a query strategy (see :mod:`learners.base`); the registry names
every algorithm of the papers.

>>> from learners import make
>>> learner = make("paa-1", n_features=3)
>>> prediction, probability, ask = learner.ask([1.0, 0.0, 2.0], record_id="r1")
>>> (prediction, probability, ask)
(-1, 1.0, True)
>>> learner.learn([1.0, 0.0, 2.0], 1)
True
"""

from learners.base import Learner, QueryStrategy, UpdateRule
from learners.datasets import Dataset, read_libsvm
from learners.hashing import hash_features
from learners.registry import ALGORITHMS, PAPER_PROTOCOL, make, paper_protocol
from learners.replay import find_budget, replay, run
from learners.values import Decisions, Scores

__all__ = [
    "ALGORITHMS",
    "PAPER_PROTOCOL",
    "Dataset",
    "Decisions",
    "Learner",
    "QueryStrategy",
    "Scores",
    "UpdateRule",
    "find_budget",
    "hash_features",
    "make",
    "paper_protocol",
    "read_libsvm",
    "replay",
    "run",
]
