"""Learn: joined labels learnt in one call, and what they tell counted (cost, mistakes, 1/p weights)."""

import numpy as np
import pytest

from consumer.budget import CostModel
from consumer.metrics import Metrics
from consumer.pending import Entry
from consumer.records import Label
from consumer.steps.learn import Learn
from consumer.totals import Totals
from learners import make
from learners.inputs import Rows


def test_a_batch_of_joined_labels_is_learnt_and_counted_with_its_importance_weights():
    learner, totals, counted, audited = make("paa-1", n_features=2), Totals(Metrics()), [], []
    learn = Learn(learner, 2, CostModel(1.0, {"-1": 3.0}), totals, Metrics(), scored=True, learnt=counted.append,
                  audit=lambda outcome, joined: audited.append((outcome, len(joined))))
    rows = Rows.stack([(np.array([0]), np.array([1.0])), (np.array([1]), np.array([1.0]))], 2)
    joined = [(Entry(rows, 0, 1, 0.5, 0.3, 0.0, 60.0, 1.0), Label("a", 1, None, 1.0)),  # predicted right
              (Entry(rows, 1, 1, 0.25, 0.1, 0.0, 60.0, 1.0), Label("b", -1, 2.0, 1.0))]  # wrong, its own cost
    learn(joined, now=10.0, outcome="applied")
    assert learner.labels_ == 2 and counted == [2] and audited == [("applied", 2)]
    assert totals.get("labels.applied") == 2 and totals.get("labelled_mistakes") == 1
    assert totals.get("labelling_cost") == pytest.approx(1.0 + 2.0)  # the class's cost, then the label's own
    assert totals.get("importance_weighted_labels") == pytest.approx(2 + 4)
    assert totals.get("importance_weighted_mistakes") == pytest.approx(4)
    assert totals.get(Totals.labelled_key(-1, 1)) == 1 and totals.get(Totals.labelled_key(1, 1)) == 1
