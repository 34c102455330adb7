"""A service without ACTIVESTREAM_CLASSES: the labels define the classes."""

from __future__ import annotations

import numpy as np
import pytest

from consumer.config import load_settings
from consumer.errors import ConfigError
from consumer.roles import service_for
from tests.fakes import FakeClients, LocalBroker
from tests.unit.consumer.conftest import Harness


def _answer(h: Harness, spelling: dict[int, object]) -> int:
    """Every requested record answered with its true class, spelt ``spelling[±1]``; returns how many."""
    n = 0
    for request in h.out("label-requests")[-1000:]:
        x = np.array(request["features"])
        h.label(request["id"], spelling[1 if x[0] + 0.5 * x[1] > 0 else -1])
        n += 1
    return n


def _records(h: Harness, n: int, prefix: str) -> None:
    rng = np.random.default_rng(len(prefix))
    for i in range(n):
        h.feature(f"{prefix}{i}", rng.standard_normal(4).tolist())


def _dead(h: Harness) -> list[str]:
    h.deliver()
    return [dict(m.headers())["activestream.dlq.reason"].decode() for m in h.broker.messages("dead-letters")]


@pytest.fixture
def learning(tmp_path):
    h = Harness(tmp_path, classes=None, learner="lr-ada-entropy", learner_params={})
    h.service.start()
    return h


def test_labels_zero_and_one_become_the_classes_and_nothing_is_dead_lettered(learning):
    h = learning
    assert h.service.learner.learns_classes and h.service.learner.classes == ()
    _records(h, 200, "a")
    h.service.run_once()
    assert {p["label"] for p in h.out("predictions")} == {None}  # no class is known yet
    assert _answer(h, {1: 1, -1: 0}) > 10
    h.service.run_once()
    assert h.service.learner.classes == (0, 1)
    assert _dead(h) == []
    assert h.service.totals.get("labels.applied") > 10
    _records(h, 200, "b")
    h.service.run_once()
    later = [p for p in h.out("predictions") if p["id"].startswith("b")]
    assert {p["label"] for p in later} == {0, 1}


def test_a_third_class_goes_to_the_dead_letters_naming_the_setting(learning):
    h = learning
    _records(h, 100, "a")
    h.service.run_once()
    ids = [r["id"] for r in h.out("label-requests")][:3]
    for rid, label in zip(ids, ["no", "yes", "maybe"], strict=True):
        h.label(rid, label)
    h.service.run_once()
    assert h.service.learner.classes == ("no", "yes")
    assert _dead(h) == ["unknown_class"]
    why = dict(h.broker.messages("dead-letters")[0].headers())["activestream.dlq.detail"].decode()
    assert "ACTIVESTREAM_CLASSES" in why
    assert h.service.totals.get("labels.applied") == 2


def test_learnt_classes_survive_a_restart(learning):
    h = learning
    _records(h, 100, "a")
    h.service.run_once()
    _answer(h, {1: "spam", -1: "ham"})
    h.service.run_once()
    h.service.checkpoint()
    h.service.close(final_checkpoint=False)
    again = h.new_service()
    again.start()
    assert again.learner.classes == ("ham", "spam")


def test_settings_that_name_a_class_need_the_classes(tmp_path):
    settings = load_settings(checkpoint_dir=tmp_path, n_features=4, labels={"on_expiry": "default",
                                                                          "expiry_label": 0})
    with pytest.raises(ConfigError, match="ACTIVESTREAM_LABELS__EXPIRY_LABEL needs ACTIVESTREAM_CLASSES"):
        service_for(settings, clients=FakeClients(LocalBroker()), serve_http=False).start()
