"""The trainer role against a real broker: labels that come before their requests, labels that
match none, bad requests, and a second trainer restoring the first one's checkpoint from the model
topic with its pending requests and parked labels."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest
from confluent_kafka import Producer

from consumer.demo.broker import create_topics
from consumer.errors import LeaseLost
from consumer.process import Process
from consumer.roles import service_for
from consumer.roles.trainer import Trainer
from tests.kafka_helpers import read_all, run_until, settings_for, unique_topics


def topics_for(bootstrap: str) -> dict[str, str]:
    topics = unique_topics(bootstrap, partitions=2)
    tag = uuid.uuid4().hex[:8]
    topics.update(model=f"model-{tag}", lease=f"lease-{tag}")
    create_topics(bootstrap, [topics["model"], topics["lease"]], 1)
    return topics


def request(rid: str, x: list[float], prediction: int = 1) -> bytes:
    now = time.time()
    return orjson.dumps({"v": 1, "id": rid, "features": x, "prediction": prediction, "score": 0.1,
                         "probability": 0.5, "uncertainty": 0.9, "cost": 1.0, "requested_at": now,
                         "expires_at": now + 3600, "model_version": 0, "source": "features:0:0"})


def send(bootstrap: str, topic: str, *messages: tuple[str, bytes | None]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for key, value in messages:
        p.produce(topic, key=key.encode(), value=value)
    assert p.flush(10) == 0


def label(rid: str, y: int) -> tuple[str, bytes]:
    return rid, orjson.dumps({"id": rid, "label": y})


def trainer(bootstrap, topics, tmp_path, **settings) -> Process:
    made = service_for(settings_for(bootstrap, topics, tmp_path, role="trainer", model={"publish_every_s": 0.1},
                                    **settings), serve_http=False)
    assert isinstance(made.role, Trainer)
    return made


def test_labels_wait_for_their_requests_and_a_label_without_one_is_counted_unknown(kafka_bootstrap, tmp_path):
    topics = topics_for(kafka_bootstrap)
    send(kafka_bootstrap, topics["labels"], label("a", 1), label("ghost", -1))
    t = trainer(kafka_bootstrap, topics, tmp_path)
    t.start()
    try:
        totals = t.totals
        run_until(t, lambda: "a" in t.parked and "ghost" in t.parked, what="labels parked")
        assert totals.get("labels.unknown") == 0  # the requests consumer has not caught up: nothing is known yet
        send(kafka_bootstrap, topics["label_requests"], ("a", request("a", [1.0] * 8)), ("tomb", None),
             ("bad", b'{"id": "bad", "features": "none"}'))
        run_until(t, lambda: totals.get("labels.applied") == 1, what="the parked label applied")
        assert t.learner.labels_ == 1
        run_until(t, lambda: totals.get("labels.unknown") == 1, timeout_s=30, what="ghost counted unknown")
        assert not t.parked
    finally:
        t.request_stop()
        t.shutdown()
    dead = [m.value() for m in read_all(kafka_bootstrap, topics["dead_letters"], expect=1)]
    assert len(dead) == 1 and b"bad" in dead[0]


def test_a_second_trainer_restores_the_model_pending_requests_and_parked_labels(kafka_bootstrap, tmp_path):
    topics = topics_for(kafka_bootstrap)
    first = trainer(kafka_bootstrap, topics, tmp_path)
    first.start()
    send(kafka_bootstrap, topics["label_requests"], ("a", request("a", [1.0] * 8)), ("b", request("b", [-1.0] * 8)))
    run_until(first, lambda: len(first.pending) == 2, what="requests pending")
    send(kafka_bootstrap, topics["labels"], label("a", 1), label("c", -1))
    run_until(first, lambda: first.totals.get("labels.applied") == 1 and "c" in first.parked, what="a applied")
    first.request_stop()
    first.shutdown()  # the final checkpoint goes to the model topic, then the lease is released

    second = trainer(kafka_bootstrap, topics, tmp_path)
    second.start()
    try:
        assert second.role.restored_version is not None and second.role.epoch == first.role.epoch + 1
        assert second.learner.labels_ == 1 and list(second.pending.ids()) == ["b"]
        assert list(second.parked.waiting) == ["c"]
        send(kafka_bootstrap, topics["labels"], label("b", -1))
        send(kafka_bootstrap, topics["label_requests"], ("c", request("c", [0.5] * 8, prediction=-1)))
        run_until(second, lambda: second.totals.get("labels.applied") == 3, what="b and c applied")
        assert second.learner.labels_ == 3 and second.totals.get("labels.duplicate") == 0
        # a was applied before the takeover: its id came back in a part of the checkpoint
        checkpoint = [m for m in manifests(kafka_bootstrap, topics["model"]) if m["kind"] == "checkpoint"][-1]
        assert any(name.startswith("pending.applied.") for name in checkpoint["parts"])
        send(kafka_bootstrap, topics["label_requests"], ("a", request("a", [1.0] * 8)))  # asked again: ignored
        send(kafka_bootstrap, topics["labels"], label("a", 1))
        run_until(second, lambda: second.totals.get("labels.duplicate") == 1, what="a again, a duplicate")
        assert second.learner.labels_ == 3 and "a" not in second.pending
    finally:
        second.request_stop()
        second.shutdown()


def manifests(bootstrap: str, topic: str) -> list[dict]:
    return [orjson.loads(m.value()) for m in read_all(bootstrap, topic)
            if m.value() is not None and b"/manifest/" in m.key()]


def test_a_trainer_that_lost_its_lease_is_fenced_and_writes_nothing_more(kafka_bootstrap, tmp_path):
    topics = topics_for(kafka_bootstrap)
    group = f"g-{uuid.uuid4().hex[:8]}"  # one deployment: one lease, one transactional id
    zombie = trainer(kafka_bootstrap, topics, tmp_path / "zombie", group_id=group)
    zombie.start()
    send(kafka_bootstrap, topics["label_requests"], ("a", request("a", [1.0] * 8)), ("b", request("b", [-1.0] * 8)))
    send(kafka_bootstrap, topics["labels"], label("a", 1))
    run_until(zombie, lambda: zombie.totals.get("labels.applied") == 1, what="a applied")
    zombie.checkpoint()  # the successor restores a, applied
    # Paused, it would not look at its lease while the group gives it away: it leaves the group
    # without knowing, as a process paused past the session timeout is dropped from it.
    zombie.check_lease = lambda: None
    zombie.lease.close()
    successor = trainer(kafka_bootstrap, topics, tmp_path / "successor", group_id=group)
    successor.start()  # takes the lease, restores the newest checkpoint, fences the zombie's producer
    try:
        assert successor.role.epoch > zombie.role.epoch
        written = len(manifests(kafka_bootstrap, topics["model"]))
        send(kafka_bootstrap, topics["labels"], label("b", -1))
        with pytest.raises(LeaseLost, match="fenced"):  # resumed, it learns b and publishes
            run_until(zombie, lambda: False, timeout_s=30, what="a publication")
        with pytest.raises(LeaseLost, match="fenced"):
            zombie.checkpoint()
        run_until(successor, lambda: successor.learner.labels_ == 2, what="b applied by the successor")
        successor.checkpoint()
    finally:
        successor.request_stop()
        successor.shutdown()
    after = manifests(kafka_bootstrap, topics["model"])[written:]
    assert after and {m["epoch"] for m in after} == {successor.role.epoch}  # nothing from the zombie
