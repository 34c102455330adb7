"""Before the loop starts: do the brokers accept the clients' TLS and SASL settings?

librdkafka treats a refused certificate or password like a broker that is down: it logs, retries
for ever, and the service would sit unready with nothing in its own log but "all brokers down". A
wrong CA or a wrong password is a configuration error, so :func:`check_security` asks each distinct
security configuration for the cluster's metadata once, and turns the errors that only a setting
can cause into a :class:`consumer.errors.ConfigError` naming it (the process exits 2). A broker
that is simply not there yet is not a configuration error: the service starts and waits for it.

The messages name the settings, never their values; librdkafka's own text, quoted after them,
carries no secret either.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from consumer.config import ENV_PREFIX, Settings
from consumer.errors import ConfigError
from consumer.logs import kafka_logger

__all__ = ["check_security", "security_sources"]

log = logging.getLogger(__name__)

_SECURITY = ("security.protocol", "ssl.", "sasl.")
_SECTIONS = ("kafka", "kafka_consumer", "kafka_labels_consumer", "kafka_producer")


def _is_security(prop: str) -> bool:
    return prop == _SECURITY[0] or prop.startswith(_SECURITY[1:])


def _env(section: str, prop: str) -> str:
    return f"{ENV_PREFIX}{section.upper()}__{prop.upper().replace('.', '_')}"


def security_sources(settings: Settings) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Each distinct security configuration of the service's clients: (properties, where each
    property was set, as its environment variable). The later section wins, as in the clients."""
    producer = ("kafka", "kafka_producer")
    consumers = [("kafka", "kafka_consumer"), ("kafka", "kafka_consumer", "kafka_labels_consumer")]
    seen, out = set(), []
    for sections in (producer, *consumers):
        props: dict[str, Any] = {}
        where: dict[str, str] = {}
        for section in sections:
            for prop, value in getattr(settings, section).items():
                if _is_security(prop):
                    props[prop], where[prop] = value, _env(section, prop)
        key = tuple(sorted((k, str(v)) for k, v in props.items()))
        if key not in seen:
            seen.add(key)
            out.append((props, where))
    return out


def _named(where: Mapping[str, str], props: Iterable[str]) -> str:
    names = [where.get(p, f"{_env('kafka', p)} (not set)") for p in props]
    return ", ".join(names)


def _verdict(errors: list[KafkaError], where: Mapping[str, str]) -> str | None:
    """The settings to blame for ``errors``, with librdkafka's reason; None if none is to blame."""
    for err in errors:
        text = err.str()
        if err.code() == KafkaError._SSL:
            if "certificate verify failed" in text:
                return f"{_named(where, ['ssl.ca.location'])}: the broker's certificate was not accepted ({text})"
            return f"{_named(where, ['ssl.certificate.location', 'ssl.key.location', 'ssl.ca.location'])}: " \
                   f"the TLS handshake failed ({text})"
        if err.code() == KafkaError._AUTHENTICATION:
            if "mechanism" in text.lower():
                return f"{_named(where, ['sasl.mechanism'])}: the broker refused the SASL mechanism ({text})"
            return f"{_named(where, ['sasl.username', 'sasl.password'])}: the broker refused the credentials ({text})"
    return None


def check_security(settings: Settings, timeout_s: float = 10.0) -> None:
    """Raise :class:`ConfigError` when the brokers refuse a client's TLS or SASL settings.

    Without any security property there is nothing to check. Each distinct configuration asks for
    metadata until it gets it, a refusal only a setting can cause arrives, or ``timeout_s`` passes
    (then the brokers are taken to be unreachable for now, which the service survives)."""
    for props, where in security_sources(settings):
        if not props:
            continue
        errors: list[KafkaError] = []
        try:
            probe = Producer({"bootstrap.servers": settings.bootstrap_servers, **props, "log_level": 0,
                              "error_cb": errors.append, "client.id": "activestream-preflight",
                              "logger": kafka_logger()})
        except KafkaException as exc:  # a file that cannot be read, a value librdkafka refuses
            named = [prop for prop in props if prop in str(exc)] or list(props)
            raise ConfigError(f"{_named(where, named)}: {exc.args[0].str() if exc.args else exc}") from None
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                try:
                    probe.list_topics(timeout=min(1.0, max(deadline - time.monotonic(), 0.01)))
                    break  # the brokers took these settings
                except KafkaException:
                    probe.poll(0)
                if (verdict := _verdict(errors, where)) is not None:
                    raise ConfigError(verdict)
                if time.monotonic() >= deadline:
                    log.warning("the brokers did not answer within %.0f s: starting anyway", timeout_s)
                    break
        finally:
            probe.flush(0)
