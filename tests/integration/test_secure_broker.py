"""The service over TLS with client authentication, configured from the environment: mutual TLS
(``SSL``) and SASL/PLAIN over TLS (``SASL_SSL``) against the embedded broker, with a CA and
certificates made here. A wrong CA or wrong credentials stop it at start-up naming the setting, and
no secret reaches its log or /metrics."""

from __future__ import annotations

import logging
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import orjson
import pytest
import trustme
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from consumer.config import load_settings
from consumer.demo.broker import CLIENT_SETTINGS, Broker
from consumer.errors import ConfigError
from consumer.roles import service_for
from tests.kafka_helpers import run_until, stream

PASSWORD = "pw-" + uuid.uuid4().hex  # a value no log line or metric could hold by chance


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    """A CA, the broker's certificate for 127.0.0.1, a client certificate, and a CA nobody uses."""
    d = tmp_path_factory.mktemp("pki")
    ca, stranger = trustme.CA(), trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("activestream@example.org")
    paths = {"ca": d / "ca.pem", "stranger": d / "stranger.pem", "server": d / "server.pem",
             "server_key": d / "server.key", "client": d / "client.pem", "client_key": d / "client.key"}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    stranger.cert_pem.write_to_path(str(paths["stranger"]))
    server.private_key_pem.write_to_path(str(paths["server_key"]))
    server.cert_chain_pems[0].write_to_path(str(paths["server"]))
    client.private_key_pem.write_to_path(str(paths["client_key"]))
    client.cert_chain_pems[0].write_to_path(str(paths["client"]))
    return paths


@pytest.fixture(scope="module")
def mtls_broker(pki):
    with Broker(cert=pki["server"], key=pki["server_key"], client_ca=pki["ca"]) as broker:
        yield broker


@pytest.fixture(scope="module")
def sasl_broker(pki):
    with Broker(cert=pki["server"], key=pki["server_key"], users={"activestream": PASSWORD}) as broker:
        yield broker


def _mtls(pki) -> dict[str, str]:
    return {"security.protocol": "SSL", "ssl.ca.location": str(pki["ca"]),
            "ssl.certificate.location": str(pki["client"]), "ssl.key.location": str(pki["client_key"])}


def _sasl(pki, password: str = PASSWORD) -> dict[str, str]:
    return {"security.protocol": "SASL_SSL", "ssl.ca.location": str(pki["ca"]), "sasl.mechanism": "PLAIN",
            "sasl.username": "activestream", "sasl.password": password}


def _env(monkeypatch, bootstrap: str, props: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The service's settings as an operator gives them: one variable per client property."""
    env = {f"ACTIVESTREAM_KAFKA__{k.upper().replace('.', '_')}": v for k, v in props.items()}
    env |= {"ACTIVESTREAM_BOOTSTRAP_SERVERS": bootstrap, "ACTIVESTREAM_CHECKPOINT_DIR": str(tmp_path / "ckpt"),
            "ACTIVESTREAM_GROUP_ID": f"g-{uuid.uuid4().hex[:8]}", "ACTIVESTREAM_N_FEATURES": "8",
            "ACTIVESTREAM_METRICS_PORT": "0",
            "ACTIVESTREAM_LEARNER": "paa-1", "ACTIVESTREAM_LEARNER_PARAMS__DELTA": "0.3",
            "ACTIVESTREAM_KAFKA_CONSUMER": orjson.dumps(CLIENT_SETTINGS).decode()}
    tag = uuid.uuid4().hex[:8]
    for name in ("features", "predictions", "label_requests", "labels", "dead_letters"):
        env[f"ACTIVESTREAM_TOPICS__{name.upper()}"] = f"{name}-{tag}"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def _create_topics(bootstrap: str, props: dict[str, str], names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **props})
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(15)


def _run_the_loop(bootstrap: str, props: dict[str, str], caplog) -> str:
    """100 records in, every label answered, through the service built from the environment; its /metrics."""
    settings = load_settings()
    topics = settings.topics
    _create_topics(bootstrap, props, [topics.features, topics.predictions, topics.label_requests, topics.labels,
                                      topics.dead_letters])
    records, truth = stream(100)
    producer = Producer({"bootstrap.servers": bootstrap, **props})
    for rid, x in records:
        producer.produce(topics.features, key=rid.encode(), value=orjson.dumps({"id": rid, "features": x}))
    assert producer.flush(30) == 0
    requests = Consumer({"bootstrap.servers": bootstrap, **props, **CLIENT_SETTINGS,
                         "group.id": f"ann-{uuid.uuid4().hex[:8]}"})
    requests.subscribe([topics.label_requests])
    answered: list[str] = []

    def answer() -> bool:
        for m in requests.consume(500, 0.05):
            if m.error() is None and m.value() is not None:
                rid = orjson.loads(m.value())["id"]
                producer.produce(topics.labels, key=rid.encode(), value=orjson.dumps({"id": rid, "label": truth[rid]}))
                answered.append(rid)
        producer.flush(10)
        return True

    service = service_for(settings)
    with caplog.at_level(logging.DEBUG):
        service.start()
        try:
            run_until(service, lambda: service.totals.get("records_scored") >= 100, what="every record scored")
            requested = service.totals.get("label_requests")
            assert requested > 0
            run_until(service, lambda: answer() and service.totals.get("labels.applied") >= requested,
                      what="every requested label applied")
            with urllib.request.urlopen(f"http://127.0.0.1:{service.http.port}/metrics", timeout=5) as r:
                metrics = r.read().decode()
        finally:
            service.request_stop()
            service.shutdown()
            requests.close()
    assert sorted(answered) == sorted(set(answered)) and len(answered) == requested
    assert service.learner.labels_ == requested
    return metrics


def test_the_service_runs_over_mutual_tls_configured_from_the_environment(mtls_broker, pki, monkeypatch, tmp_path,
                                                                           caplog):
    _env(monkeypatch, mtls_broker.bootstrap, _mtls(pki), tmp_path)
    _run_the_loop(mtls_broker.bootstrap, _mtls(pki), caplog)


def test_the_service_runs_over_sasl_ssl_configured_from_the_environment(sasl_broker, pki, monkeypatch, tmp_path,
                                                                          caplog):
    _env(monkeypatch, sasl_broker.bootstrap, _sasl(pki), tmp_path)
    metrics = _run_the_loop(sasl_broker.bootstrap, _sasl(pki), caplog)
    assert PASSWORD not in metrics
    assert caplog.records and not [r for r in caplog.records if PASSWORD in r.getMessage()]


def test_a_broker_certificate_from_another_ca_stops_the_start_naming_the_ca_setting(mtls_broker, pki, monkeypatch,
                                                                                    tmp_path):
    _env(monkeypatch, mtls_broker.bootstrap, {**_mtls(pki), "ssl.ca.location": str(pki["stranger"])}, tmp_path)
    service = service_for(load_settings(), serve_http=False)
    with pytest.raises(ConfigError, match="ACTIVESTREAM_KAFKA__SSL_CA_LOCATION: the broker's certificate"):
        service.start()
    service.close(final_checkpoint=False)


def test_a_client_certificate_file_that_cannot_be_read_stops_the_start_naming_it(mtls_broker, pki, monkeypatch,
                                                                                 tmp_path):
    _env(monkeypatch, mtls_broker.bootstrap, {**_mtls(pki), "ssl.certificate.location": str(tmp_path / "gone.pem")},
         tmp_path)
    service = service_for(load_settings(), serve_http=False)
    with pytest.raises(ConfigError, match="ACTIVESTREAM_KAFKA__SSL_CERTIFICATE_LOCATION"):
        service.start()
    service.close(final_checkpoint=False)


def test_a_wrong_password_exits_2_at_start_up_naming_the_credentials_and_never_the_password(sasl_broker, pki,
                                                                                            monkeypatch, tmp_path):
    wrong = "wrong-" + uuid.uuid4().hex
    _env(monkeypatch, sasl_broker.bootstrap, _sasl(pki, password=wrong), tmp_path)
    proc = subprocess.run([sys.executable, "-m", "consumer", "run"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "ACTIVESTREAM_KAFKA__SASL_USERNAME, ACTIVESTREAM_KAFKA__SASL_PASSWORD: the broker refused the credentials" \
        in proc.stderr
    assert wrong not in proc.stderr and wrong not in proc.stdout
