"""Poison records against a real broker: a record the dead-letter producer cannot write as it is,
an index beyond 64 bits and a nested list each go to the dead-letter topic, and the records
around them are predicted once while the offsets move past them."""

from __future__ import annotations

import orjson
from confluent_kafka import Producer

from consumer.dead_letters import TRUNCATED_VALUE_BYTES
from consumer.roles import service_for
from tests.kafka_helpers import read_all, run_until, settings_for, stream, unique_topics

BIG = 1_500_000  # over librdkafka's default message.max.bytes (1,000,000), which the service keeps
BIG_FEATURE = b'{"id": "big", "features": "' + b"x" * BIG + b'"}'
BIG_LABEL = b'{"id": "big", "label": "' + b"y" * BIG + b'"}'
POISON_FEATURES = [
    (b"big", BIG_FEATURE, "bad_features"),
    (b"index", b'{"id": "i", "features": {"indices": [9223372036854775808], "values": [1]}}', "bad_index"),
    (b"nested", b'{"id": "n", "features": {"indices": [1], "values": [[1]]}}', "bad_features"),
    (b"dense-nested", b'{"id": "d", "features": [[1], [2], [3], [4], [5], [6], [7], [8]]}', "bad_features"),
]


def _producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 4 * BIG, "linger.ms": 5})


def _interleaved(good: list[tuple[bytes, bytes]], bad: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    out = []
    for k, item in enumerate(good):
        out.append(item)
        if k < len(bad):
            out.append(bad[k])
    return out


def _produce(p: Producer, topic: str, messages: list[tuple[bytes, bytes]]) -> None:
    for key, value in messages:
        p.produce(topic, key=key, value=value, headers=[("trace", b"t-1"), ("activestream.dlq.reason", b"forged")])
    assert p.flush(30) == 0


def test_service_poison_records_dead_lettered_truncated_when_too_large_and_good_ones_predicted_once(
        kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(40)
    good = [(rid.encode(), orjson.dumps({"id": rid, "features": x})) for rid, x in records]
    good[3] = (b"partition-key", good[3][1])  # a key that is not the id: counted, still predicted
    features = _interleaved(good, [(key, value) for key, value, _ in POISON_FEATURES])
    p = _producer(kafka_bootstrap)
    _produce(p, topics["features"], features)
    # δ large: most records ask for a label, so there are good labels around the bad one
    settings = settings_for(kafka_bootstrap, topics, tmp_path, learner_params={"delta": 10.0})
    service = service_for(settings, serve_http=False)
    service.start()
    run_until(service, lambda: service.offsets.next.get((topics["features"], 0), 0) >= len(features),
              what="every feature record consumed")
    requests = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["label_requests"])]
    assert requests
    labels = _interleaved([(rid.encode(), orjson.dumps({"id": rid, "label": truth[rid]})) for rid in requests],
                          [(b"big-label", BIG_LABEL)])
    _produce(p, topics["labels"], labels)
    run_until(service, lambda: service.offsets.next.get((topics["labels"], 0), 0) >= len(labels),
              what="every label consumed")
    applied = service.totals.get("labels.applied")
    assert service.totals.get("key_id_mismatches") == 1
    service.request_stop()
    service.shutdown()

    dead = read_all(kafka_bootstrap, topics["dead_letters"], expect=len(POISON_FEATURES) + 1)
    by_key = {m.key(): m for m in dead}
    assert sorted(by_key) == sorted([b"big-label", *(key for key, _, _ in POISON_FEATURES)])
    for key, value, reason in POISON_FEATURES:
        headers = dict(by_key[key].headers())
        assert [v for name, v in by_key[key].headers() if name == "activestream.dlq.reason"] == [reason.encode()]
        assert headers["activestream.dlq.topic"] == topics["features"].encode()
        assert headers["activestream.dlq.offset"] == b"%d" % features.index((key, value))
        if value is BIG_FEATURE:
            assert by_key[key].value() == BIG_FEATURE[:TRUNCATED_VALUE_BYTES]
            assert headers["activestream.dlq.truncated"] == b"true"
            assert headers["activestream.dlq.original_size"] == b"%d" % len(BIG_FEATURE)
            assert headers["activestream.dlq.partition"] == b"0"
            assert "trace" not in headers  # the record's own headers are left out of a truncated letter
        else:
            assert by_key[key].value() == value and "activestream.dlq.truncated" not in headers
            assert headers["trace"] == b"t-1"
    big_label = dict(by_key[b"big-label"].headers())
    assert big_label["activestream.dlq.reason"] == b"unknown_class"
    assert big_label["activestream.dlq.truncated"] == b"true"
    assert big_label["activestream.dlq.original_size"] == b"%d" % len(BIG_LABEL)
    assert big_label["activestream.dlq.topic"] == topics["labels"].encode()
    assert big_label["activestream.dlq.offset"] == b"1"
    predictions = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["predictions"],
                                                                   expect=len(records))]
    assert predictions == [rid for rid, _ in records]  # each good record once, in order
    assert applied == len(requests)

    again = service_for(settings, serve_http=False)  # a restart starts past the poison: no crash loop
    again.start()
    assert again.offsets.next[(topics["features"], 0)] == len(features)
    assert again.offsets.next[(topics["labels"], 0)] == len(labels)
    again.run_once()
    again.request_stop()
    again.shutdown()
    assert len(read_all(kafka_bootstrap, topics["predictions"])) == len(records)
