"""A service wired to an in-memory broker and a manual clock."""

from __future__ import annotations

import orjson
import pytest

from consumer.clock import ManualClock
from consumer.config import load_settings
from consumer.process import Process
from consumer.roles import service_for
from tests.fakes import FakeClients, LocalBroker

TOPICS = ("features", "predictions", "label-requests", "labels", "dead-letters")


class Harness:
    """A service under test and the knobs around it."""

    def __init__(self, tmp_path, **overrides) -> None:
        self.broker = LocalBroker()
        for t in TOPICS:
            self.broker.create(t)
        self.clock = ManualClock()
        self.tmp_path = tmp_path
        params = {"checkpoint_dir": tmp_path / "ckpt", "n_features": 4, "metrics_port": 0,
                  "learner": "paa-1", "learner_params": {"delta": 1.0}, "classes": [-1, 1], **overrides}
        self.settings = load_settings(**params)
        self.clients = FakeClients(self.broker)
        self.service = self.new_service()

    def new_service(self, **overrides) -> Process:
        settings = self.settings.model_copy(update=overrides) if overrides else self.settings
        service = service_for(settings, clock=self.clock, clients=self.clients, serve_http=False)
        return service

    def feature(self, rid: str, features, **extra) -> None:
        self.broker.append("features", orjson.dumps({"id": rid, "features": features, **extra}), rid.encode())

    def raw_feature(self, value: bytes | None, key: bytes | None = None) -> None:
        self.broker.append("features", value, key)

    def label(self, rid: str, label, **extra) -> None:
        self.broker.append("labels", orjson.dumps({"id": rid, "label": label, **extra}), rid.encode())

    def deliver(self) -> None:
        """Let the producers' messages reach the broker (their delivery callbacks run)."""
        for producer in self.clients.producers:
            if not producer.closed:  # a closed one delivered what it had when it closed
                producer.poll()

    def hold(self, on: bool) -> None:
        """While on, no producer's message is acknowledged (a slow or absent broker)."""
        for producer in self.clients.producers:
            producer.hold = on

    def out(self, topic: str) -> list[dict]:
        self.deliver()
        return [orjson.loads(v) for v in self.broker.values(topic) if v is not None]

    def requested_ids(self) -> list[str]:
        return [r["id"] for r in self.out("label-requests")]


@pytest.fixture
def harness(tmp_path):
    return Harness(tmp_path)
