"""The demo's own service settings, and how a person's session is stopped."""

import signal
import threading

import pytest

from consumer.demo.broker import CLIENT_SETTINGS, LABEL_LOOP_FETCH
from consumer.demo.feed import drifting_stream
from consumer.demo.run import DemoOptions, _stop_on_sigterm, service_settings
from consumer.kafka import consumer_config
from consumer.service import build_learner


def test_the_label_loop_waits_longer_per_fetch_than_the_features_consumer(tmp_path):
    stream = drifting_stream(10)
    embedded = service_settings(DemoOptions(), stream, "127.0.0.1:9092", tmp_path)
    assert consumer_config(embedded, "features")["fetch.wait.max.ms"] == CLIENT_SETTINGS["fetch.wait.max.ms"]
    assert consumer_config(embedded, "labels")["fetch.wait.max.ms"] == LABEL_LOOP_FETCH["fetch.wait.max.ms"]
    assert int(LABEL_LOOP_FETCH["fetch.wait.max.ms"]) > int(CLIENT_SETTINGS["fetch.wait.max.ms"])
    # a Kafka of the user's: the service's own defaults, and the label loop's wait over them
    own = service_settings(DemoOptions(bootstrap="kafka:9092"), stream, "kafka:9092", tmp_path)
    assert own.kafka_consumer == {}
    assert consumer_config(own, "labels")["fetch.wait.max.ms"] == LABEL_LOOP_FETCH["fetch.wait.max.ms"]


def test_the_demo_service_holds_the_query_rate_target(tmp_path):
    stream = drifting_stream(100)
    settings = service_settings(DemoOptions(query_rate_target=0.1), stream, "127.0.0.1:9092", tmp_path)
    assert settings.query_rate_target == 0.1
    assert build_learner(settings).budget.target == 0.1


def test_while_people_label_sigterm_interrupts_as_ctrl_c_and_the_handler_is_put_back_after():
    before = signal.getsignal(signal.SIGTERM)
    restore = _stop_on_sigterm()
    try:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
    finally:
        restore()
    assert signal.getsignal(signal.SIGTERM) == before


def test_off_the_main_thread_no_sigterm_handler_is_set():
    got = []
    worker = threading.Thread(target=lambda: got.append(_stop_on_sigterm()))
    worker.start()
    worker.join()
    assert got == [None]
