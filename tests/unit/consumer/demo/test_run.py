"""The demo's own service settings, and how a person's session is stopped."""

import math
import signal
import threading
from types import SimpleNamespace

import pytest

from consumer.demo.broker import CLIENT_SETTINGS, LABEL_LOOP_FETCH
from consumer.demo.feed import DemoStream, drifting_stream
from consumer.demo.run import DemoOptions, _report, _stop_on_sigterm, service_settings
from consumer.kafka import consumer_config
from consumer.learner import build_learner


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


def test_the_demo_service_holds_a_tenth_of_the_records_unless_told_otherwise(tmp_path):
    stream = drifting_stream(100)
    settings = service_settings(DemoOptions(), stream, "127.0.0.1:9092", tmp_path)
    assert settings.query_rate_target == 0.1
    assert build_learner(settings).budget.target == 0.1
    assert service_settings(DemoOptions(query_rate_target=0.05), stream, "127.0.0.1:9092", tmp_path) \
        .query_rate_target == 0.05


def test_the_demo_service_without_a_target_has_no_budget_controller(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIVESTREAM_QUERY_RATE_TARGET", "0.3")  # the option wins over the environment
    settings = service_settings(DemoOptions(query_rate_target=None), drifting_stream(100), "127.0.0.1:9092", tmp_path)
    assert settings.query_rate_target is None and build_learner(settings).budget is None


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


@pytest.mark.parametrize("classes", [[-1, 1], ["a", "b", "c"]])
def test_a_prediction_outside_the_streams_classes_is_scored_as_a_mistake(classes):
    """A running service that has not learnt its classes yet predicts None: a mistake, not a crash."""
    truth = {f"r{k}": classes[k % len(classes)] for k in range(4)}
    stream = DemoStream([b"{}"] * 4, truth, classes, 8, "four records")
    board = SimpleNamespace(predicted={"r0": None, "r1": None, "r2": truth["r2"], "r3": truth["r3"]})
    totals = SimpleNamespace(get=lambda key: 0.0, values={}, estimated_error_rate=lambda: math.nan,
                             query_rate_target=None)
    report = _report(DemoOptions(service_url="http://service:9108"), stream, "lr-ada-entropy", totals, board, 1.0)
    assert report["accuracy"] == 0.5 and report["predictions"] == 4 and report["query_rate_target"] is None
