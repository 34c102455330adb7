"""Every checkpoint layout the project has written still loads: real files from older builds
(``checkpoints/``, made by ``checkpoints/make.py`` at the commits its README names)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from consumer.clock import ManualClock
from consumer.config import load_settings
from consumer.model_topic import ModelPublisher
from consumer.roles import service_for
from consumer.state import FORMAT_VERSION, meta_of
from tests.fakes import FakeClients, LocalBroker
from tests.unit.consumer.conftest import Harness

FIXTURES = Path(__file__).parent / "checkpoints"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
TRAINER_TOPICS = ("features", "predictions", "label-requests", "labels", "dead-letters", "model", "trainer-lease")


def settings_for(facts: dict) -> dict:
    """The settings the fixture's service ran with, as this build names them."""
    meta = facts["learner_meta"]
    learner = {"learner": meta["learner"], "learner_params": {}}
    if meta["params"]["classes"]:
        learner["classes"] = meta["params"]["classes"]
    else:
        learner["classes"] = None  # learnt from the labels
    # a default saved before it was paired loads with the pair's new settings
    allow = meta["rule"] == "LogisticRule" and meta["learner"] == "lr-ada-entropy-rff"
    return {"n_features": facts["settings"]["n_features"], "query_rate_target": facts["settings"]["query_rate_target"],
            "labels": {"ttl_s": facts["settings"]["labels.ttl_s"]}, "checkpoint": {"allow_param_change": allow},
            **learner}


def assert_restored(service, facts: dict, outputs: dict | None = None) -> None:
    learner = service.learner
    assert (learner.labels_, learner.updates_) == (facts["labels_"], facts["updates_"])
    assert learner.rounds_ == facts["rounds_"]
    assert sorted(service.pending.ids()) == sorted(facts["pending_ids"])
    assert set(service.pending.statuses(facts["applied_ids"])) == {"applied"}
    assert set(service.pending.statuses(facts["expired_ids"])) == {"expired"}
    assert set(service.pending.statuses(facts["forgotten_examples"])) == {"unknown"}  # a TTL ago: forgotten
    assert {k: service.totals.get(k) for k in facts["totals"]} == facts["totals"]
    assert service.offsets.next == {(t, p): o for t, p, o in facts["offsets"]}
    assert service.output_ends.floor == (outputs or {(t, p): o for t, p, o in facts["outputs"]})
    assert learner.budget is not None
    # the controller's state, whatever its format: records seen where this role decides on them
    assert (learner.budget.records > 0) == (service.settings.role == "all")


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if n.startswith("all-")))
def test_a_checkpoint_file_an_older_build_wrote_restores_every_part(name, tmp_path, caplog):
    facts = EXPECTED[name]
    shutil.copytree(FIXTURES / name, tmp_path / "ckpt")
    h = Harness(tmp_path, **settings_for(facts))
    h.service.start()
    assert "holds no budget controller state" not in caplog.text
    assert_restored(h.service, facts)

    path = h.service.checkpoint()  # written again in this build's layout, and read back the same
    again = h.new_service()
    again.start()
    assert meta_of(again.store.latest()[1])["format_version"] == FORMAT_VERSION and path.exists()
    assert_restored(again, facts, outputs=h.service.output_ends.floor)  # where this broker's outputs end


def test_a_trainer_checkpoint_an_older_build_published_restores_its_parked_labels(tmp_path):
    facts = EXPECTED["trainer-a9a0382"]
    with np.load(FIXTURES / "trainer-a9a0382.npz", allow_pickle=False) as archive:
        state = {k: archive[k] for k in archive.files}
    broker = LocalBroker()
    for topic in TRAINER_TOPICS:
        broker.create(topic)
    clients = FakeClients(broker)
    parts = sorted({k.rsplit(".", 2)[0] for k in state if k.startswith(("pending.applied.", "pending.expired."))})
    published = ModelPublisher(clients.model_producer(), "model", transactional=True)
    published.start(1, 0)
    published.publish_checkpoint(state, epoch=1, parts=parts)
    settings = load_settings(role="trainer", checkpoint_dir=tmp_path, metrics_port=0, **settings_for(facts))
    trainer = service_for(settings, clock=ManualClock(facts["created_at"]), clients=clients, serve_http=False)
    trainer.start()
    assert_restored(trainer, facts)
    assert sorted(trainer.parked.waiting) == facts["parked_ids"]
