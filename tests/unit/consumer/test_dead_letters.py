"""Dead letters: what they carry, and how one the broker refuses is written truncated."""

import pytest
from confluent_kafka import KafkaError, KafkaException

from consumer.dead_letters import TRUNCATED_KEY_BYTES, TRUNCATED_VALUE_BYTES, dead_letter, is_truncated, truncated
from consumer.errors import InvalidRecord, ProduceFailed
from consumer.kafka import Emitter
from consumer.metrics import Metrics
from tests.fakes import FakeMessage, FakeProducer, LocalBroker

DLQ = "dead-letters"


def emitter_on(broker: LocalBroker) -> tuple[Emitter, FakeProducer]:
    made = []

    def make(on_delivery):
        made.append(FakeProducer(broker, on_delivery))
        return made[0]

    return Emitter(make, Metrics(), max_in_flight=100, dead_letter_topic=DLQ), made[0]


def test_truncated_dead_letter_keeps_prefix_own_headers_and_original_sizes():
    value, key = b"v" * (3 * TRUNCATED_VALUE_BYTES), b"k" * (2 * TRUNCATED_KEY_BYTES)
    headers = [("trace", b"1"), ("activestream.dlq.reason", b"bad_value"), ("activestream.dlq.offset", b"7")]
    k, v, h = truncated(key, value, headers)
    assert k == key[:TRUNCATED_KEY_BYTES] and v == value[:TRUNCATED_VALUE_BYTES]
    assert h == [("activestream.dlq.reason", b"bad_value"), ("activestream.dlq.offset", b"7"),
                 ("activestream.dlq.truncated", b"true"), ("activestream.dlq.original_size", b"%d" % len(value)),
                 ("activestream.dlq.original_key_size", b"%d" % len(key)), ("activestream.dlq.original_headers", b"1")]
    assert is_truncated(h) and not is_truncated(headers)


def test_emitter_dead_letter_refused_by_broker_is_sent_truncated():
    broker = LocalBroker()
    emitter, producer = emitter_on(broker)
    producer.fail = [KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)]
    emitter.send(DLQ, b"key", b"x" * (2 * TRUNCATED_VALUE_BYTES), [("activestream.dlq.reason", b"bad_value")])
    emitter.serve()  # the refusal arrives; the truncated letter is sent
    emitter.serve()
    [msg] = broker.messages(DLQ)
    assert msg.value() == b"x" * TRUNCATED_VALUE_BYTES and is_truncated(msg.headers())


def test_emitter_dead_letter_refused_by_producer_is_sent_truncated():
    broker = LocalBroker()
    emitter, producer = emitter_on(broker)
    real = producer.produce

    def refuse_large(topic, value=None, key=None, headers=None, on_delivery=None):
        if len(value) > TRUNCATED_VALUE_BYTES:
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
        real(topic, value, key, headers, on_delivery)

    producer.produce = refuse_large
    emitter.send_many([(DLQ, b"k", b"y" * (TRUNCATED_VALUE_BYTES + 1), [])])
    emitter.serve()
    [msg] = broker.messages(DLQ)
    assert msg.value() == b"y" * TRUNCATED_VALUE_BYTES and dict(msg.headers())["activestream.dlq.truncated"] == b"true"


def test_emitter_truncated_dead_letter_refused_again_fails():
    broker = LocalBroker()
    emitter, producer = emitter_on(broker)
    producer.fail = [KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)] * 2  # not the record: the topic
    emitter.send(DLQ, b"key", b"v", [])
    emitter.serve()
    with pytest.raises(ProduceFailed):
        emitter.serve()


def test_emitter_other_topic_refusal_still_fails():
    broker = LocalBroker()
    emitter, producer = emitter_on(broker)
    producer.fail = [KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)]
    emitter.send("predictions", b"key", b"v", [])
    with pytest.raises(ProduceFailed):
        emitter.serve()


def test_invalid_record_detail_is_bounded_in_the_dead_letter():
    msg = FakeMessage("features", 0, 3, b"k", b"v", None)
    _, _, headers = dead_letter(msg, InvalidRecord("bad_value", "x" * 5000))
    assert len(dict(headers)["activestream.dlq.detail"]) == 1000


def test_dead_letter_incoming_header_of_own_name_replaced_by_the_service_one():
    forged = [("activestream.dlq.reason", b"forged"), ("trace", b"t"), ("activestream.dlq.offset", b"0"),
              ("activestream.dlq.truncated", b"true")]
    msg = FakeMessage("features", 2, 41, b"k", b"{", forged)
    _, value, headers = dead_letter(msg, InvalidRecord("malformed_json", "unexpected end"))
    assert value == b"{"
    assert headers == [("trace", b"t"), ("activestream.dlq.reason", b"malformed_json"),
                       ("activestream.dlq.detail", b"unexpected end"), ("activestream.dlq.topic", b"features"),
                       ("activestream.dlq.partition", b"2"), ("activestream.dlq.offset", b"41")]
    assert not is_truncated(headers)
