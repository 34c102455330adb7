"""The service loop reading features and labels in the schema registry's wire format (ACTIVESTREAM_FORMAT
json-schema and avro), against an in-memory broker and confluent-kafka's in-memory registry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryError

from consumer.roles import service_for
from tests.registry_helpers import FORMATS, Writer, mock_registry, with_schema_id
from tests.unit.consumer.conftest import Harness
from tests.unit.consumer.test_registry_formats import Unreachable

X = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.5], [0.3, 0.0, 0.0, 1.0]]


class Framed:
    """A harness whose service reads framed records through ``registry``."""

    def __init__(self, tmp_path, fmt: str, registry) -> None:
        self.h = Harness(tmp_path, format=fmt, schema_registry={"url": "http://registry.invalid:8081"})
        self.writer = Writer(registry, fmt)
        self.service = service_for(self.h.settings, clock=self.h.clock, clients=self.h.clients, serve_http=False,
                               registry=registry)

    def feature(self, rid: str, x: list[float]) -> bytes:
        value = self.writer.feature({"id": rid, "features": x})
        self.h.broker.append("features", value, rid.encode())
        return value

    def label(self, rid: str, label: int) -> bytes:
        value = self.writer.label({"id": rid, "label": label})
        self.h.broker.append("labels", value, rid.encode())
        return value

    def reasons(self) -> list[tuple[str, str]]:
        self.h.deliver()
        return [(m.key().decode(), dict(m.headers())["activestream.dlq.reason"].decode())
                for m in self.h.broker.messages("dead-letters")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_framed_features_are_scored_labels_applied_and_bad_ones_dead_lettered(tmp_path, fmt):
    f = Framed(tmp_path, fmt, mock_registry())
    f.service.start()
    for i in range(40):
        f.feature(f"r{i}", X[i % 4])
    bad_id = with_schema_id(f.writer.feature({"id": "u", "features": X[0]}), 777)
    f.h.broker.append("features", bad_id, b"unknown")
    f.h.broker.append("features", b'{"id": "p", "features": [1, 0, 0, 0]}', b"plain")
    f.service.run_once()
    predictions = f.h.out("predictions")
    assert [p["id"] for p in predictions] == [f"r{i}" for i in range(40)]
    assert f.reasons() == [("unknown", "unknown_schema"), ("plain", "not_framed")]
    assert f.h.broker.messages("dead-letters")[0].value() == bad_id  # the record as it was read
    assert f.service.totals.get("dead_letters.features.unknown_schema") == 1
    assert f.service.offsets.next[("features", 0)] == 42
    requested = f.h.requested_ids()
    assert requested
    for rid in requested:
        f.label(rid, 1 if X[int(rid[1:]) % 4][0] > 0 else -1)
    f.h.broker.append("labels", with_schema_id(f.writer.label({"id": requested[0], "label": 1}), 778), b"bad-label")
    f.service.run_once()
    assert f.service.totals.get("labels.applied") == len(requested)
    assert f.service.learner.labels_ == len(requested)
    assert f.reasons()[-1] == ("bad-label", "unknown_schema")
    assert f.service.metrics.dead_letters.labels(reason="schema_mismatch", topic="features")._value.get() == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_registry_outage_holds_the_records_back_and_loses_none(tmp_path, fmt):
    registry = Unreachable(mock_registry(), SchemaRegistryError(503, 50301, "Service unavailable"))
    f = Framed(tmp_path, fmt, registry)
    registry.down = False
    for i in range(30):
        f.feature(f"r{i}", X[i % 4])  # registers the schemas while the registry answers
    registry.down = True
    f.service.start()
    f.service.run_once()
    assert f.h.out("predictions") == [] and f.reasons() == []
    assert ("features", 0) not in f.service.offsets.next
    assert f.service.metrics.registry_holds.labels(topic="features")._value.get() == 1
    f.service.run_once()  # within the backoff: the topic is not read at all
    assert f.service.metrics.registry_holds.labels(topic="features")._value.get() == 1
    f.h.clock.advance(1.0)
    f.service.run_once()  # read again, and the registry still down: a longer wait
    assert f.service.metrics.registry_holds.labels(topic="features")._value.get() == 2
    assert not f.service.held.may_read("features")
    f.h.clock.advance(1.5)
    assert not f.service.held.may_read("features")
    registry.down = False
    f.h.clock.advance(0.5)
    f.service.run_once()
    assert [p["id"] for p in f.h.out("predictions")] == [f"r{i}" for i in range(30)]  # each once, in order
    assert f.reasons() == []
    assert f.service.offsets.next[("features", 0)] == 30
    # labels wait for the registry the same way, and are applied once it answers
    requested = f.h.requested_ids()
    for rid in requested:
        f.label(rid, 1)
    registry.down = True
    f.service.run_once()
    assert f.service.totals.get("labels.applied") == 0 and f.reasons() == []
    assert f.service.metrics.registry_holds.labels(topic="labels")._value.get() == 1
    registry.down = False
    f.h.clock.advance(1.0)
    f.service.run_once()
    assert f.service.totals.get("labels.applied") == len(requested) > 0
    assert f.service.offsets.next[("labels", 0)] == len(requested)


def test_plain_json_service_loads_no_registry_module(tmp_path):
    code = ("import sys; from consumer.cli import main; from consumer.roles import service_for; "
            "from tests.unit.consumer.conftest import Harness; h = Harness(__import__('pathlib').Path(sys.argv[1])); "
            "assert h.service.features_read.unframe is None and h.service.held.may_read('features'); "
            "print(sorted(m for m in sys.modules if 'schema_registry' in m or m.endswith(('registry_formats', "
            "'output_formats'))))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[3])
    assert out.stdout.strip() == "[]"
