"""``activestream demo --annotator label-studio``: people label in Label Studio instead of the
simulated annotator.

The demo runs the connector of ``activestream annotate label-studio`` against the user's Label
Studio (``ACTIVESTREAM_ANNOTATE__URL`` and ``__TOKEN``, as the connector reads them), on the demo's
topics, and follows the labels topic to report what the people answered beside the ground truth.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

import orjson
from confluent_kafka import Consumer

from consumer.annotate.client import LabelStudioError
from consumer.annotate.config import AnnotateSettings, load_annotate_settings
from consumer.annotate.label_studio import Connector

__all__ = ["DEMO_PROJECT", "LabelStudioAnnotators", "connector_settings"]

log = logging.getLogger(__name__)

DEMO_PROJECT = "activestream demo"  # the project title unless ACTIVESTREAM_ANNOTATE__PROJECT names one
_POLL_S = 2.0  # a person's annotation reaches the service within this, without a webhook


def connector_settings(bootstrap: str, topics: dict[str, str], classes: list, clients: dict) -> AnnotateSettings:
    """The user's connector settings (their Label Studio, token, cost), on the demo's broker and
    topics, with a consumer group, port and poll interval of the demo's own."""
    base = load_annotate_settings()  # ConfigError naming ACTIVESTREAM_ANNOTATE__TOKEN when it is missing
    own = {"group_id": f"activestream-demo-{uuid.uuid4().hex[:8]}", "port": 0,
           "poll_interval_s": min(base.annotate.poll_interval_s, _POLL_S)}
    if "project" not in base.annotate.model_fields_set:
        own["project"] = DEMO_PROJECT
    return base.model_copy(update={
        "bootstrap_servers": bootstrap, "topics": base.topics.model_copy(update=topics), "classes": list(classes),
        "kafka_consumer": {**base.kafka_consumer, **clients}, "annotate": base.annotate.model_copy(update=own)})


class LabelStudioAnnotators(threading.Thread):
    """The connector's loop in a thread, and a reader of the labels topic: ``given`` maps each
    record id to the first label people gave it (and its cost)."""

    def __init__(self, settings: AnnotateSettings, truth: dict, clients: dict, ls: Any = None) -> None:
        super().__init__(name="demo-label-studio", daemon=True)
        self.connector = Connector(settings, ls=ls)
        self._truth = truth
        self._labels = Consumer({"bootstrap.servers": settings.bootstrap_servers,
                                 "group.id": f"demo-labels-{uuid.uuid4().hex[:8]}", **clients})
        self.ready = threading.Event()  # the connector started and the labels reader joined its group
        self._labels.subscribe([settings.topics.labels], on_assign=lambda c, parts: (c.assign(parts),
                                                                                     self.ready.set()))
        self._stop_event = threading.Event()
        self.given: dict[str, tuple[Any, float | None]] = {}
        self.error: BaseException | None = None

    @property
    def url(self) -> str:
        """Where a person labels: the project's data manager."""
        return f"{self.connector.settings.annotate.url}/projects/{self.connector.project}/data"

    def start_connector(self, deadline: float) -> None:
        """Find or make the project and listen, trying again while Label Studio cannot be reached,
        until ``deadline`` (monotonic); a refused token or project raises at once."""
        while True:
            try:
                self.connector.start()
                return
            except LabelStudioError as exc:
                if exc.status in (401, 403) or time.monotonic() > deadline:
                    raise RuntimeError(f"Label Studio at {self.connector.settings.annotate.url}: {exc}") from None
                log.warning("%s; trying again", exc)
                self._stop_event.wait(1.0)

    def run(self) -> None:
        try:
            while not self._stop_event.is_set():
                if not self.connector.turn(0.05):
                    self._stop_event.wait(self.connector.settings.annotate.retry_s)
                self._read_labels()
        except BaseException as exc:  # shown by the demo, which would otherwise wait for nothing
            self.error = exc
        finally:
            self.connector.close()
            self._labels.close()

    def _read_labels(self) -> None:
        for msg in self._labels.consume(1000, 0.0 if self.ready.is_set() else 0.05):
            if msg.error() is None and msg.value() is not None:
                label = orjson.loads(msg.value())
                if label.get("id") in self._truth:  # not another run's record
                    self.given.setdefault(label["id"], (label.get("label"), label.get("cost")))

    def summary(self) -> list[dict[str, Any]]:
        """The labels people gave, in the order they came, beside the truth."""
        return [{"id": rid, "label": label, "truth": self._truth[rid], "cost": cost}
                for rid, (label, cost) in self.given.items()]

    def stop(self) -> None:
        self._stop_event.set()

