"""The Kafka clients of a service process, built from its settings (tests pass fakes with the same
methods)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from consumer import rdkafka
from consumer.batch_reader import BatchReader
from consumer.config import Settings
from consumer.errors import ConfigError
from consumer.kafka import Emitter, consumer_config, producer_config
from consumer.lease import ensure_lease_topic
from consumer.logs import kafka_logger
from consumer.preflight import check_security
from consumer.rdkafka import BatchProducer

__all__ = ["KafkaClients", "Opened"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Opened:
    """The clients a process opened at start, where its steps reach them (None before, or where the
    role has none): the emitter of its outputs, and the consumers of what it reads, with their
    batch readers."""

    emitter: Emitter | None = None
    features: Any = None
    labels: Any = None
    requests: Any = None  # a trainer's label requests
    reader: BatchReader | None = None  # the features, read as columns (consumer.batch_reader)
    label_reader: BatchReader | None = None
    partitions_seen: dict[str, list[int]] = field(default_factory=dict)  # the last list of each topic's

    @property
    def producer(self) -> Any:
        """The outputs' producer: also asked for topics' partitions."""
        return self.emitter.producer

    def partitions(self, topic: str, required: bool = False, timeout: float = 10.0) -> list[int]:
        """The topic's partitions; the last known list when the broker does not answer within
        ``timeout`` seconds (unless ``required``, where the error is raised)."""
        try:
            metadata = self.producer.list_topics(topic, timeout=timeout)
        except KafkaException:
            if required or topic not in self.partitions_seen:
                raise
            return self.partitions_seen[topic]
        info = metadata.topics.get(topic)
        found = [] if info is None or info.error is not None else sorted(info.partitions)
        self.partitions_seen[topic] = found
        return found


class KafkaClients:
    """Builds the real confluent-kafka clients (tests pass fakes with the same methods).

    ``on_stats(client, json)``, if given, receives each client's librdkafka statistics (every
    ``statistics.interval.ms``, a property of ``ACTIVESTREAM_KAFKA``); ``client`` names it:
    "features", "labels", "producer", "predictions"."""

    def __init__(self, settings: Settings, on_stats: Callable[[str, str | bytes], None] | None = None) -> None:
        self.settings = settings
        self._on_stats = on_stats

    def _stats(self, client: str) -> dict[str, Any]:
        return {} if self._on_stats is None else {"stats_cb": functools.partial(self._on_stats, client)}

    @staticmethod
    def _on_error(err: KafkaError) -> None:
        log.warning("kafka: %s", err.str())

    def consumer(self, role: str) -> Consumer:
        return Consumer({**consumer_config(self.settings, role), "error_cb": self._on_error, **self._stats(role),
                         "logger": kafka_logger()})

    def producer(self, on_delivery: Callable[[KafkaError | None, Any], None]) -> Producer:
        """The producer; ``on_delivery`` is called for every failed delivery (one callback for all
        messages costs less per message than one passed with each)."""
        return Producer({**producer_config(self.settings), "error_cb": self._on_error, "on_delivery": on_delivery,
                         **self._stats("producer"), "logger": kafka_logger()})

    def batch_producer(self, on_failed: Callable[..., None], on_error: Callable[..., None]) -> BatchProducer | None:
        """A second producer for predictions and label requests, fed a batch per librdkafka call
        (None where no librdkafka can be loaded: they then go through :meth:`producer`)."""
        lib = rdkafka.load()
        if lib is None:
            log.info("librdkafka not loadable through ctypes: predictions are produced one by one")
            return None
        conf = {**producer_config(self.settings), "client.id": "activestream-predictions"}
        try:
            on_stats = None if self._on_stats is None else functools.partial(self._on_stats, "predictions")
            return BatchProducer(lib, conf, on_failed, on_error, on_stats, logger=kafka_logger())
        except ValueError as exc:
            raise ConfigError(f"ACTIVESTREAM_KAFKA_PRODUCER: {exc}") from None

    def preflight(self) -> None:
        """Fail now, naming the setting, if the brokers refuse the clients' TLS or SASL settings."""
        check_security(self.settings)

    def model_producer(self) -> Producer:
        """The trainer's producer for the model topic: every delivery is reported, with its offset."""
        # one transactional id for every trainer of the deployment: a trainer taking over fences the last
        conf = {**producer_config(self.settings), "client.id": "activestream-model", "error_cb": self._on_error,
                "delivery.report.only.error": False, "enable.idempotence": True, "linger.ms": "0",
                "transactional.id": f"{self.settings.group_id}-trainer", "logger": kafka_logger()}
        conf.pop("max.in.flight.requests.per.connection", None)
        # librdkafka refuses a transaction that could time out before a message in it
        conf.setdefault("transaction.timeout.ms", str(max(60_000, int(conf.get("message.timeout.ms", 0)))))
        return Producer(conf)

    def ensure_lease_topic(self, topic: str) -> None:
        """Create the one-partition lease topic if it does not exist."""
        conf = {k: v for k, v in producer_config(self.settings).items()
                if k == "bootstrap.servers" or k.startswith(("security.", "ssl.", "sasl."))}
        ensure_lease_topic({**conf, "client.id": "activestream-admin", "logger": kafka_logger()}, topic, timeout_s=5.0)

    def reader(self) -> Consumer:
        """A group-less consumer that reads a topic's tail to its end (recovery)."""
        conf = consumer_config(self.settings, "recovery")
        conf.update({"enable.partition.eof": "true", "error_cb": self._on_error, "logger": kafka_logger()})
        conf.pop("group.instance.id", None)
        return Consumer(conf)
