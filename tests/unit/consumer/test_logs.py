"""ACTIVESTREAM_LOG_FORMAT: the JSON formatter, the set-up of each format, and librdkafka's lines
reaching Python logging from every kind of client the service makes."""

from __future__ import annotations

import logging
import re
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import orjson
import pytest

from consumer import logs
from consumer.clients import KafkaClients
from consumer.config import load_settings
from consumer.errors import ConfigError
from consumer.logs import JsonFormatter, kafka_logger

ROOT = Path(__file__).resolve().parents[3]
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _record(msg: str, *args: object, exc_info=None, **extra: object) -> logging.LogRecord:
    logger = logging.getLogger("consumer.test")
    return logger.makeRecord(logger.name, logging.WARNING, __file__, 1, msg, args, exc_info, extra=extra)


def test_a_record_is_one_json_object_time_level_logger_message_first_then_its_extra_fields():
    record = _record("lag %d on %s\nsecond line", 5, "features", partition=3, where=Path("/x"), ids={1: "a"})
    line = JsonFormatter().format(record)
    assert "\n" not in line
    obj = orjson.loads(line)
    assert list(obj)[:4] == ["time", "level", "logger", "message"]
    assert ISO_UTC.fullmatch(obj["time"])
    assert abs(datetime.fromisoformat(obj["time"].replace("Z", "+00:00")).timestamp() - record.created) < 0.001
    assert (obj["level"], obj["logger"]) == ("WARNING", "consumer.test")
    assert obj["message"] == "lag 5 on features\nsecond line"
    assert (obj["partition"], obj["where"], obj["ids"]) == (3, "/x", {"1": "a"})  # str() of what JSON cannot hold
    assert "exception" not in obj and "args" not in obj and "lineno" not in obj  # no LogRecord internals


def test_an_exception_is_its_traceback_text():
    try:
        raise ValueError("bad value")
    except ValueError:
        record = _record("failed", exc_info=sys.exc_info())
    obj = orjson.loads(JsonFormatter().format(record))
    assert obj["message"] == "failed"
    assert obj["exception"].startswith("Traceback") and obj["exception"].endswith("ValueError: bad value")


def test_an_extra_field_does_not_replace_a_field_and_a_value_orjson_refuses_is_still_written():
    obj = orjson.loads(JsonFormatter().format(_record("m", level="not this", big=2**70)))
    assert obj["level"] == "WARNING"
    assert obj["big"] == str(2**70)


def _configured(fmt: str) -> str:
    """stderr of a process that configures logging as the CLI does and logs one line (and one
    below the level)."""
    code = (f"import logging; from consumer import logs; logs.configure('INFO', {fmt!r}); "
            "log = logging.getLogger('consumer.x'); log.info('hello %s', 'there'); log.debug('hidden')")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          check=True).stderr


def test_text_is_the_format_of_before():
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO consumer\.x: hello there\n", _configured("text"))


def test_json_writes_one_object_per_line():
    [line] = _configured("json").splitlines()
    obj = orjson.loads(line)
    assert (obj["level"], obj["logger"], obj["message"]) == ("INFO", "consumer.x", "hello there")


def test_a_bad_format_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_LOG_FORMAT", "xml")
    with pytest.raises(ConfigError, match="ACTIVESTREAM_LOG_FORMAT: Input should be 'text' or 'json'"):
        load_settings()
    assert logs.requested_format() == "text"  # the refusal itself is then written as text


def test_a_refusal_is_one_json_object_when_json_was_asked_for(monkeypatch, capsys):
    monkeypatch.setenv("ACTIVESTREAM_LOG_FORMAT", "json")
    logs.print_error("activestream run: invalid configuration:\n  ACTIVESTREAM_N_FEATURES: ...",
                     logs.requested_format())
    obj = orjson.loads(capsys.readouterr().err)
    assert obj["level"] == "ERROR" and obj["message"].startswith("activestream run: invalid configuration")


# -- librdkafka's own lines ------------------------------------------------------------------------

class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kafka_lines():
    handler = _Collect()
    kafka_logger().addHandler(handler)
    yield handler.records
    kafka_logger().removeHandler(handler)


@pytest.fixture
def clients(tmp_path):
    """The service's clients, pointed at a port where nothing listens (bound, never listening:
    every connection is refused, which librdkafka logs at level 3 whatever its debug setting)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        settings = load_settings(bootstrap_servers=f"127.0.0.1:{sock.getsockname()[1]}",
                                 checkpoint_dir=tmp_path, metrics_port=0)
        yield KafkaClients(settings)


def _served(poll, lines: list, client: str, timeout_s: float = 30.0) -> logging.LogRecord:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        poll()
        for record in lines:
            if getattr(record, "client", "").startswith(client + "#"):
                return record
    raise AssertionError(f"no librdkafka line from {client} within {timeout_s} s: {[r.getMessage() for r in lines]}")


def _check(record: logging.LogRecord, client: str) -> None:
    obj = orjson.loads(JsonFormatter().format(record))
    assert obj["logger"] == "librdkafka" and obj["level"] == "ERROR" and obj["facility"] == "FAIL"
    assert obj["client"].startswith(client + "#")
    assert obj["message"].startswith(f"FAIL [{obj['client']}] ") and "Connection refused" in obj["message"]


def test_the_producers_and_consumers_log_through_python(clients, kafka_lines):
    producer = clients.producer(lambda err, msg: None)
    _check(_served(lambda: producer.poll(0.1), kafka_lines, "activestream-producer"), "activestream-producer")
    consumer = clients.consumer("features")
    try:
        _check(_served(lambda: consumer.poll(0.1), kafka_lines, "activestream-features"), "activestream-features")
    finally:
        consumer.close()
    reader = clients.reader()
    try:
        _check(_served(lambda: reader.poll(0.1), kafka_lines, "activestream-recovery"), "activestream-recovery")
    finally:
        reader.close()
    model = clients.model_producer()
    _check(_served(lambda: model.poll(0.1), kafka_lines, "activestream-model"), "activestream-model")


def test_the_batch_producer_logs_through_python(clients, kafka_lines):
    batch = clients.batch_producer(lambda *a: None, lambda *a: None)
    if batch is None:
        pytest.skip("librdkafka cannot be loaded through ctypes here")
    try:
        _check(_served(lambda: batch.poll(0.1), kafka_lines, "activestream-predictions"), "activestream-predictions")
    finally:
        batch.close()
