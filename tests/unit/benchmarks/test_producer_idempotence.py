import pytest

from benchmarks.producer_idempotence import SETTINGS, messages, produce
from tests.kafka_helpers import read_all


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_every_message_arrives_keyed_in_order_and_the_wake_ups_and_requests_are_counted(kafka_bootstrap, setting):
    data = messages(5_000)
    run = produce(kafka_bootstrap, SETTINGS[setting], data)
    first, *got = read_all(kafka_bootstrap, run.topic, expect=5_001)
    keys, key_bounds, values, bounds = data
    assert (first.key(), first.value()) == (b"k", b"v")  # the one sent before timing starts
    assert [(m.key(), m.value()) for m in got] == [
        (keys[key_bounds[k]:key_bounds[k + 1]], values[bounds[k]:bounds[k + 1]]) for k in range(5_000)]
    assert run.rate > 0 and run.requests >= 1 and run.wakeups >= 1
    assert run.librdkafka_us >= 0 and run.broker_us != run.broker_us  # no broker pid given: not measured (nan)
