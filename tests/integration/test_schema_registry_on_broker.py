"""Records in the schema registry's wire format, end to end on a real broker and a registry over
HTTP: written by confluent-kafka's own serializers, scored, queried and learnt from by the service;
a record with an unknown schema id on the dead-letter topic; a registry outage that loses nothing;
outputs written framed, read by confluent-kafka's own deserializers and by the service after a crash."""

from __future__ import annotations

import orjson
import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from consumer.roles import service_for
from tests.kafka_helpers import read_all, run_until, settings_for, stream, unique_topics
from tests.registry_helpers import FORMATS, RegistryStub, Writer, with_schema_id


@pytest.fixture
def registry():
    stub = RegistryStub()
    yield stub
    stub.close()


def produce(bootstrap: str, topic: str, items: list[tuple[str, bytes]]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value in items:
        p.produce(topic, key=key.encode(), value=value)
    assert p.flush(30) == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_framed_records_are_scored_queried_and_learnt_and_an_outage_pauses(kafka_bootstrap, tmp_path, registry, fmt):
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(350)
    writer = Writer(SchemaRegistryClient({"url": registry.url}), fmt, topics["features"], topics["labels"])
    framed = [(rid, writer.feature({"id": rid, "features": x})) for rid, x in records]
    bad = with_schema_id(framed[0][1], 4711)
    produce(kafka_bootstrap, topics["features"], [*framed[:150], ("bad", bad), *framed[150:300]])
    service = service_for(settings_for(kafka_bootstrap, topics, tmp_path, format=fmt,
                                   schema_registry={"url": registry.url}), serve_http=False)
    service.start()
    totals = service.totals
    try:
        run_until(service, lambda: service.offsets.next.get((topics["features"], 0), 0) >= 301,
                  what="features consumed")
        requested = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["label_requests"])]
        assert requested
        produce(kafka_bootstrap, topics["labels"],
                [(rid, writer.label({"id": rid, "label": truth[rid]})) for rid in requested])
        run_until(service, lambda: totals.get("labels.applied") == len(requested), what="labels applied")
        assert service.learner.labels_ == len(requested)

        # the registry goes down, and records come with a schema the service has not read yet: they wait
        # for the registry, none is refused
        revised = Writer(SchemaRegistryClient({"url": registry.url}), fmt, topics["features"], revised=True)
        later = [(rid, revised.feature({"id": rid, "features": x})) for rid, x in records[300:]]
        assert later[0][1][:5] != framed[0][1][:5]
        registry.down = True
        produce(kafka_bootstrap, topics["features"], later)
        holds = service.metrics.registry_holds.labels(topic=topics["features"])
        run_until(service, lambda: holds._value.get() >= 2, what="records held back twice")
        assert totals.get("records_scored") == 300
        registry.down = False
        run_until(service, lambda: totals.get("records_scored") == 350, what="records scored after the outage")
    finally:
        service.request_stop()
        service.shutdown()
    predictions = [orjson.loads(m.value()) for m in read_all(kafka_bootstrap, topics["predictions"], expect=350)]
    assert sorted(p["id"] for p in predictions) == sorted(truth)  # each once, the outage's too
    dead = read_all(kafka_bootstrap, topics["dead_letters"], expect=1)
    assert len(dead) == 1 and dead[0].value() == bad and dead[0].key() == b"bad"
    headers = dict(dead[0].headers())
    assert headers["activestream.dlq.reason"] == b"unknown_schema"
    assert headers["activestream.dlq.topic"].decode() == topics["features"]
    assert headers["activestream.dlq.offset"] == b"150"
    assert service.metrics.dead_letters.labels(reason="unknown_schema", topic=topics["features"])._value.get() == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_framed_outputs_are_read_by_registry_consumers_and_by_the_service_after_a_crash(kafka_bootstrap, tmp_path,
                                                                                      registry, fmt):
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(200)
    produce(kafka_bootstrap, topics["features"], [(rid, orjson.dumps({"id": rid, "features": x}))
                                                  for rid, x in records[:100]])
    settings = settings_for(kafka_bootstrap, topics, tmp_path, output_format=fmt, schema_registry={"url": registry.url})
    first = service_for(settings, serve_http=False)
    first.start()
    assert registry.subjects == {f"{topics['predictions']}-value": [1], f"{topics['label_requests']}-value": [2]}
    client = SchemaRegistryClient({"url": registry.url})
    read = AvroDeserializer(schema_registry_client=client) if fmt == "avro" else \
        JSONDeserializer(None, schema_registry_client=client)  # validates each record against its schema

    def outputs(kind: str, expect: int) -> list[dict]:
        context = SerializationContext(topics[kind], MessageField.VALUE)
        return [read(m.value(), context) for m in read_all(kafka_bootstrap, topics[kind], expect=expect)]

    run_until(first, lambda: first.totals.get("records_scored") == 100, what="features scored")
    first.checkpoint()
    produce(kafka_bootstrap, topics["features"], [(rid, orjson.dumps({"id": rid, "features": x}))
                                                  for rid, x in records[100:]])
    run_until(first, lambda: first.totals.get("records_scored") == 200, what="features scored after the checkpoint")
    assert first.io.emitter.flush(30)
    predictions = outputs("predictions", 200)
    assert [p["id"] for p in predictions] == [rid for rid, _ in records]
    requests = outputs("label_requests", first.totals.get("label_requests"))
    assert requests and {r["id"] for r in requests} == {p["id"] for p in predictions if p["label_requested"]}
    assert all(r["source"].startswith(f"{topics['features']}:0:") for r in requests)
    labels = [(r["id"], orjson.dumps({"id": r["id"], "label": truth[r["id"]]})) for r in requests]
    produce(kafka_bootstrap, topics["labels"], labels)
    run_until(first, lambda: first.totals.get("labels.applied") == len(labels), what="labels applied")
    applied = first.learner.labels_
    first.close(final_checkpoint=False)  # a crash: the decisions after the checkpoint are only in the outputs

    second = service_for(settings, serve_http=False)
    second.start()
    try:
        assert len(second.recovery) == 100  # read back from the framed outputs
        run_until(second, lambda: second.totals.get("records_scored") == 200 and
                  second.totals.get("labels.applied") == applied, what="replayed records kept, labels applied")
        assert second.learner.labels_ == applied
        assert second.totals.get("labels.unknown") == 0
    finally:
        second.request_stop()
        second.shutdown()
    assert len(read_all(kafka_bootstrap, topics["predictions"])) == 200  # none produced again
