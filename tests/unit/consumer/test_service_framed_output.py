"""The service writing its outputs in the schema registry's wire format (ACTIVESTREAM_OUTPUT_FORMAT
json-schema and avro) and reading them back, against an in-memory broker and confluent-kafka's
in-memory registry (one client, shared by the services and the test: the in-memory registry is not
shared between clients)."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from consumer.clock import ManualClock
from consumer.config import load_settings
from consumer.process import Process
from consumer.roles import service_for
from tests.fakes import FakeClients, LocalBroker
from tests.registry_helpers import FORMATS, mock_registry
from tests.unit.consumer.conftest import Harness
from tests.unit.consumer.test_service import feed
from tests.unit.consumer.test_trainer import TOPICS, label

REGISTRY = {"url": "http://registry.invalid:8081"}


class FramedOutputs:
    """A harness whose services write framed outputs through ``registry``."""

    def __init__(self, tmp_path, fmt: str) -> None:
        self.registry = mock_registry()
        self.h = Harness(tmp_path, output_format=fmt, schema_registry=REGISTRY)
        self.h.service = self.new_service()
        self.read = AvroDeserializer(schema_registry_client=self.registry) if fmt == "avro" else \
            JSONDeserializer(None, schema_registry_client=self.registry)  # validates each against its schema

    def new_service(self) -> Process:
        return service_for(self.h.settings, clock=self.h.clock, clients=self.h.clients, serve_http=False,
                       registry=self.registry)

    def out(self, topic: str) -> list[dict]:
        """The topic's records as a consumer using the registry reads them; every one framed."""
        self.h.deliver()
        values = [v for v in self.h.broker.values(topic) if v is not None]
        assert all(v[:1] == b"\x00" for v in values)
        context = SerializationContext(topic, MessageField.VALUE)
        return [self.read(v, context) for v in values]

    def requested_ids(self) -> list[str]:
        return [r["id"] for r in self.out("label-requests")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_crash_after_checkpoint_with_framed_outputs_keeps_decisions_and_applies_each_label_once(tmp_path, fmt):
    f = FramedOutputs(tmp_path, fmt)
    h, first = f.h, f.h.service
    first.start()
    feed(h, 30, prefix="a")
    first.run_once()
    first.checkpoint()
    feed(h, 30, prefix="b")
    first.run_once()  # decided after the checkpoint
    b_requests = [r for r in f.requested_ids() if r.startswith("b")]
    assert b_requests
    for rid in b_requests:
        h.label(rid, 1)
    first.run_once()
    first.io.emitter.serve()
    labels_before_crash = first.learner.labels_
    w_before_crash = first.learner.rule.w_.copy()
    predictions_before = f.out("predictions")
    outputs_before = (len(predictions_before), len(f.out("label-requests")))
    assert [p["id"] for p in predictions_before] == [f"a{i}" for i in range(30)] + [f"b{i}" for i in range(30)]
    # crash: no checkpoint, nothing closed cleanly
    second = f.new_service()
    second.start()
    assert len(second.recovery) == 30  # every decision after the checkpoint, read back from framed outputs
    for _ in range(3):
        second.run_once()
    assert second.learner.labels_ == labels_before_crash
    np.testing.assert_allclose(second.learner.rule.w_, w_before_crash, rtol=1e-12, atol=1e-12)
    assert (len(f.out("predictions")), len(f.out("label-requests"))) == outputs_before  # nothing produced twice
    assert second.totals.get("labels.applied") == labels_before_crash
    assert second.totals.get("labels.unknown") == 0
    assert second.totals.get("label_requests") == len(f.requested_ids())
    assert second.totals.get("records_scored") == 60


def test_outputs_written_plain_before_a_switch_to_framed_are_read_back(tmp_path):
    f = FramedOutputs(tmp_path, "avro")
    h = f.h
    plain = h.new_service(output_format="json")  # the same settings, outputs as plain JSON
    plain.start()
    feed(h, 20, prefix="a")
    plain.run_once()
    plain.checkpoint()
    feed(h, 20, prefix="b")
    plain.run_once()
    h.deliver()
    written = len(h.broker.values("predictions"))
    framed = f.new_service()  # restarted with ACTIVESTREAM_OUTPUT_FORMAT=avro
    framed.start()
    assert len(framed.recovery) == 20
    framed.run_once()
    h.deliver()
    assert len(h.broker.values("predictions")) == written  # the plain ones were recognised: none made again


def test_without_a_registry_framed_outputs_are_skipped_on_read_back_and_decided_again(tmp_path, caplog):
    f = FramedOutputs(tmp_path, "json-schema")
    h, first = f.h, f.h.service
    first.start()
    feed(h, 10, prefix="a")
    first.run_once()
    first.checkpoint()
    feed(h, 10, prefix="b")
    first.run_once()
    h.deliver()
    plain = h.new_service(output_format="json", schema_registry={})  # switched back, the registry URL removed
    assert plain.framing.output_reader is None
    plain.start()
    assert len(plain.recovery) == 0
    assert "skipped: reading them back needs ACTIVESTREAM_SCHEMA_REGISTRY__URL" in caplog.text


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_trainer_reads_framed_label_requests_from_a_scorer(tmp_path, fmt):
    registry, broker, clock = mock_registry(), LocalBroker(), ManualClock()
    for topic in TOPICS:
        broker.create(topic)
    made = []
    for role in ("scorer", "trainer"):
        settings = load_settings(role=role, checkpoint_dir=tmp_path / role, n_features=4, metrics_port=0,
                                 learner="paa-1", classes=[-1, 1], output_format=fmt, schema_registry=REGISTRY)
        made.append(service_for(settings, clock=clock, clients=FakeClients(broker), serve_http=False,
                                registry=registry))
    scorer, trainer = made
    trainer.start()
    scorer.start()
    rng = np.random.default_rng(0)
    rows = {f"a{i}": rng.standard_normal(4) for i in range(40)}
    for rid, x in rows.items():
        broker.append("features", orjson.dumps({"id": rid, "features": x.tolist()}), rid.encode())
    scorer.run_once()
    for producer in scorer.clients.producers:
        producer.poll()
    requests = broker.values("label-requests")
    assert len(requests) == 40 and all(v[:1] == b"\x00" for v in requests)
    for rid, x in rows.items():
        label(broker, rid, 1 if x[0] > 0 else -1)
    trainer.run_once()
    assert trainer.learner.labels_ == 40
    assert trainer.totals.get("labels.applied") == 40
    assert not broker.values("dead-letters")
