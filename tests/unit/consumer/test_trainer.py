"""The trainer role on the in-memory broker: partitions added to its topics while it runs."""

from __future__ import annotations

import numpy as np
import orjson
from confluent_kafka import KafkaError, KafkaException

from consumer.clock import ManualClock
from consumer.config import load_settings
from consumer.process import Process
from consumer.roles import service_for
from consumer.steps.partitions import EVERY_S as _PARTITIONS_EVERY_S
from tests.fakes import FakeClients, LocalBroker

TOPICS = ("features", "predictions", "label-requests", "labels", "dead-letters", "model", "trainer-lease")


def roles(tmp_path, **trainer_settings) -> tuple[LocalBroker, Process, Process]:
    broker, clock = LocalBroker(), ManualClock()
    for topic in TOPICS:
        broker.create(topic)
    made = []
    for role in ("scorer", "trainer"):
        settings = load_settings(role=role, checkpoint_dir=tmp_path / role, n_features=4, metrics_port=0,
                                 learner="paa-1", classes=[-1, 1], **(trainer_settings if role == "trainer" else {}))
        made.append(service_for(settings, clock=clock, clients=FakeClients(broker), serve_http=False))
    scorer, trainer = made
    trainer.start()
    scorer.start()
    return broker, scorer, trainer


def label(broker: LocalBroker, rid: str, value: int) -> None:
    broker.append("labels", orjson.dumps({"id": rid, "label": value}), rid.encode())


def scored(broker: LocalBroker, scorer: Process, n: int, seed: int) -> list[dict]:
    """``n`` records scored by ``scorer``, its outputs delivered; the label requests it made."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        broker.append("features", orjson.dumps({"id": f"a{i}", "features": rng.standard_normal(4).tolist()}),
                      f"a{i}".encode())
    scorer.run_once()
    for producer in scorer.clients.producers:
        producer.poll()
    return [orjson.loads(v) for v in broker.values("label-requests")]


def test_partitions_added_to_requests_and_labels_are_read_and_each_label_applied_once(tmp_path):
    broker, scorer, trainer = roles(tmp_path)
    requests = scored(broker, scorer, 40, seed=0)
    assert len(requests) == 40  # a fresh model asks for every record
    for r in requests:
        label(broker, r["id"], 1 if r["features"][0] > 0 else -1)
    trainer.run_once()
    assert trainer.learner.labels_ == 40

    broker.partitions["label-requests"] = broker.partitions["labels"] = 3  # added while it runs
    template = requests[0]
    added = [f"b{i}" for i in range(60)]
    for rid in added:  # labels first: they wait, parked, for requests in partitions not read yet
        label(broker, rid, 1)
    assert {m.partition() for m in broker.messages("labels")} == {0, 1, 2}
    trainer.run_once()
    listing = trainer.io.producer.list_topics

    def away(*args, **kwargs):
        raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    trainer.io.producer.list_topics = away  # while the broker does not answer, no parked label is given up
    for _ in range(3):
        trainer.clock.advance(_PARTITIONS_EVERY_S)
        trainer.run_once()
    assert trainer.totals.get("labels.unknown") == 0
    trainer.io.producer.list_topics = listing
    for i, rid in enumerate(added):
        broker.append("label-requests", orjson.dumps({**template, "id": rid, "source": f"features:0:{40 + i}"}),
                      rid.encode(), partition=i % 3)
    for _ in range(5):
        trainer.clock.advance(_PARTITIONS_EVERY_S)
        trainer.run_once()

    assert {tp.partition for tp in trainer.io.requests.assignment()} == {0, 1, 2}
    assert {tp.partition for tp in trainer.io.labels.assignment()} == {0, 1, 2}
    assert trainer.learner.labels_ == 100  # every label once: none lost, none twice
    assert trainer.totals.get("labels.unknown") == 0 and trainer.totals.get("labels.duplicate") == 0
    assert trainer.metrics.rebalances.labels(topic="labels")._value.get() == 3  # partition 0, then 1 and 2


def requests_from_the_scorer(broker: LocalBroker, scorer: Process, n: int, prefix: str) -> list[dict]:
    rng = np.random.default_rng(len(prefix))
    for i in range(n):
        rid = f"{prefix}{i}"
        broker.append("features", orjson.dumps({"id": rid, "features": rng.standard_normal(4).tolist()}), rid.encode())
    scorer.run_once()
    for producer in scorer.clients.producers:
        producer.poll()
    return [r for r in map(orjson.loads, broker.values("label-requests")) if r["id"].startswith(prefix)]


def test_a_label_storm_is_counted_by_reason_and_what_waits_is_bounded(tmp_path):
    broker, scorer, trainer = roles(tmp_path, labels={"max_pending": 50})
    requests = requests_from_the_scorer(broker, scorer, 20, "a")
    assert len(requests) == 20
    trainer.run_once()
    # ten labels per record: each request answered ten times, and 800 labels for ids never requested
    for r in requests:
        for _ in range(10):
            label(broker, r["id"], 1)
    for i in range(800):
        label(broker, f"ghost{i}", -1)
    trainer.run_once()
    totals = trainer.totals.get
    assert totals("labels.applied") == 20 and totals("labels.duplicate") == 180
    assert len(trainer.parked) == 50 and totals("labels.overflow") == 750  # the flood waits, bounded
    for _ in range(3):  # the requests topic read past its end: the rest can match nothing
        trainer.clock.advance(_PARTITIONS_EVERY_S)
        trainer.run_once()
    assert totals("labels.unknown") == 50 and not trainer.parked
    assert len(trainer.pending._applied) == 20  # each applied id remembered once


def test_labels_for_expired_requests_are_counted_expired_and_forgotten_after_a_ttl(tmp_path):
    broker, scorer, trainer = roles(tmp_path)
    requests = requests_from_the_scorer(broker, scorer, 30, "e")
    trainer.run_once()
    ttl = trainer.settings.labels.ttl_s
    trainer.clock.advance(ttl + 1)
    trainer.run_once()  # every request expires unanswered
    for r in requests:
        for _ in range(3):
            label(broker, r["id"], 1)
    trainer.run_once()
    assert trainer.totals.get("labels.expired") == 90 and trainer.totals.get("labels.applied") == 0
    trainer.clock.advance(ttl + 1)
    trainer.run_once()
    assert len(trainer.pending._expired) == 0  # remembered for one TTL, then forgotten


def test_a_trainer_stopping_publishes_the_labels_learnt_since_its_last_publication(tmp_path):
    broker, scorer, trainer = roles(tmp_path, model={"publish_every_s": 3600, "publish_every_labels": 10_000})
    for r in scored(broker, scorer, 20, seed=1):
        label(broker, r["id"], 1 if r["features"][0] > 0 else -1)
    trainer.run_once()
    assert trainer.learner.labels_ == 20
    assert trainer.metrics.model_published_version._value.get() == 1  # the one that opened its epoch
    trainer.shutdown()
    assert trainer.metrics.model_published_version._value.get() == 2
    scorer.run_once()  # follows the model topic between two batches
    assert scorer.learner.labels_ == 20


def test_a_scorers_checkpoint_commits_its_offsets_and_then_the_floors_of_its_output_partitions(tmp_path):
    broker, scorer, _ = roles(tmp_path)
    scored(broker, scorer, 30, seed=2)
    scorer.checkpoint()
    group = scorer.settings.group_id
    assert broker.committed[(group, "features", 0)] == 30
    ends = {topic: len(broker.values(topic)) for topic in ("predictions", "label-requests")}
    assert ends["predictions"] == 30 and ends["label-requests"] > 0
    for topic, end in ends.items():  # where each output partition ended once the outputs were flushed
        assert broker.committed[(f"{group}-outputs", topic, 0)] == end
