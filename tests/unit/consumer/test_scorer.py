"""A scorer swaps in published models between batches: compatible ones entirely (its own budget
controller and record count stay its own), structurally different ones never."""

from __future__ import annotations

import numpy as np
import pytest

from consumer.clock import ManualClock
from consumer.config import load_settings
from consumer.errors import ConfigError
from consumer.learner import build_learner
from consumer.model_topic import Model
from consumer.process import Process
from consumer.roles import service_for
from consumer.roles.scorer import Scorer
from learners.budget import _FILLED
from learners.inputs import Rows
from tests.fakes import FakeClients, LocalBroker


def scorer(tmp_path, **overrides) -> Process:
    settings = load_settings(role="scorer", checkpoint_dir=tmp_path, n_features=4, metrics_port=0,
                             **{"learner": "paa-1", **overrides})
    made = service_for(settings, clock=ManualClock(), clients=FakeClients(LocalBroker()), serve_http=False)
    assert isinstance(made.role, Scorer)
    return made


def published(version: int, at: float, **settings) -> Model:
    """A trainer's model after a few labels."""
    learner = build_learner(load_settings(n_features=settings.pop("n_features", 4), **{"learner": "paa-1", **settings}))
    rows = Rows.stack([(np.array([0, 1]), np.array([1.0, -0.5])), (np.array([2]), np.array([2.0]))], learner.n_features)
    learner.learn_many(rows, np.array([1, -1]))
    return Model(version, 1, learner.state_dict(), {"published_at": at, "version": version}, at)


def test_a_compatible_model_is_scored_with_and_the_scorers_own_counts_stay(tmp_path):
    s = scorer(tmp_path, query_rate_target=0.1)
    s.role.follow.use(published(6, at=s.clock.now()))  # a learnt model already: not the first
    s.role.follow.swapping = True  # a swap while serving, not the catch-up at start
    s.learner.decide(Rows.stack([(np.array([0]), np.array([1.0]))] * 50, 4), ids=[f"r{i}" for i in range(50)])
    rounds, budget = s.learner.rounds_, s.learner.budget.state_dict()
    s.clock.advance(0.3)
    model = published(7, at=s.clock.now() - 0.3, learner_params={"delta": 2.0})  # hyper-parameters: the trainer's
    s.role.follow.use(model)
    assert s.role.follow.model is model and s.learner.labels_ == 2
    np.testing.assert_array_equal(s.learner.state_dict()["rule.w"], model.state["rule.w"])
    assert s.learner.rounds_ == rounds  # records this scorer decided
    for k, v in budget.items():
        np.testing.assert_array_equal(s.learner.budget.state_dict()[k], v)
    assert s.metrics.model_version_in_use._value.get() == 7
    assert s.metrics.model_swap_delay._sum.get() == pytest.approx(0.3)


def test_the_first_learnt_model_empties_the_window_of_the_fresh_models_scores(tmp_path):
    s = scorer(tmp_path, query_rate_target=0.1)
    s.learner.decide(Rows.stack([(np.array([0]), np.array([1.0]))] * 50, 4), ids=[f"r{i}" for i in range(50)])
    filled = lambda: int(s.learner.budget.cs_[_FILLED])  # noqa: E731  (scores in the window)
    assert filled() == 50  # the fresh model's zeros
    s.role.follow.use(published(1, at=0.0))
    assert filled() == 0
    s.learner.decide(Rows.stack([(np.array([1]), np.array([1.0]))] * 20, 4), ids=[f"q{i}" for i in range(20)])
    s.role.follow.use(published(2, at=0.0))  # a later model: the window holds learnt scores and stays
    assert filled() == 20


def test_a_model_of_another_dimension_is_refused_naming_both_and_the_old_one_kept(tmp_path, caplog):
    s = scorer(tmp_path)
    s.role.follow.use(published(3, at=0.0))
    s.role.follow.use(published(4, at=0.0, n_features=16))
    assert s.role.follow.model.version == 3 and s.metrics.model_version_in_use._value.get() == 3
    assert "model version 4 refused" in caplog.text and "16" in caplog.text and "vs this 4" in caplog.text


def test_a_share_of_the_partitions_is_the_share_of_the_caps(tmp_path):
    from confluent_kafka import TopicPartition

    s = scorer(tmp_path, labels={"budget": 100})
    s.io.partitions_seen["features"] = [0, 1, 2, 3]
    s.role.share_budget([TopicPartition("features", 0)])
    assert s.learner.budget.remaining() == 25
    s.role.share_budget([TopicPartition("features", p) for p in range(4)])
    assert s.learner.budget.remaining() == 100


@pytest.mark.parametrize("role", ["scorer", "trainer"])
def test_scales_learnt_from_scored_records_need_role_all(tmp_path, role):
    settings = load_settings(role=role, checkpoint_dir=tmp_path, n_features=4, learner="lr-ada-entropy",
                             learner_params={"scale": "rms", "scale_from": "scored"})
    with pytest.raises(ConfigError, match="ACTIVESTREAM_LEARNER_PARAMS: scale_from=scored"):
        service_for(settings, clients=FakeClients(LocalBroker()), serve_http=False)


@pytest.mark.parametrize(("role", "decides"), [("scorer", True), ("trainer", False)])
def test_split_roles_standardise_from_the_trainers_labelled_rows(tmp_path, role, decides):
    # a trainer never decided on the rows it learns: they update its statistics when learnt, and the
    # scorers follow its model
    settings = load_settings(role=role, checkpoint_dir=tmp_path, n_features=4, learner="lr-ada-entropy",
                             learner_params={"scale": "standard"})
    service = service_for(settings, clients=FakeClients(LocalBroker()), serve_http=False)
    assert service.role.decides is decides
