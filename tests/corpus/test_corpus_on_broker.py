"""Every kind of bad record in the corpus, through the service and a real broker: each reaches the
dead-letter topic with its reason, and each good record in between is predicted once."""

from __future__ import annotations

import orjson
from confluent_kafka import Producer

from consumer.roles import service_for
from tests.corpus.corpus import FEATURES, LABELS
from tests.kafka_helpers import read_all, run_until, settings_for, stream, unique_topics


def _interleave(p: Producer, topic: str, good: list[tuple[bytes, bytes]], bad) -> int:
    """good[0], bad[0], good[1], bad[1], ...; bad records keyed by their kind. Returns the count sent."""
    sent = 0
    for k, (key, value) in enumerate(good):
        p.produce(topic, key=key, value=value)
        sent += 1
        if k < len(bad):
            p.produce(topic, key=bad[k].kind.encode(), value=bad[k].value)
            sent += 1
    assert p.flush(30) == 0
    return sent


def test_corpus_every_kind_dead_lettered_with_its_reason_and_good_records_predicted_once(kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, truth = stream(len(FEATURES) + 40)
    p = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
    n_features = _interleave(p, topics["features"],
                             [(rid.encode(), orjson.dumps({"id": rid, "features": x})) for rid, x in records], FEATURES)
    # δ large: most records ask for a label, so there are good labels around every bad one
    service = service_for(settings_for(kafka_bootstrap, topics, tmp_path, learner_params={"delta": 10.0},
                                   batch_size=50), serve_http=False)
    service.start()
    try:
        run_until(service, lambda: service.offsets.next.get((topics["features"], 0), 0) >= n_features,
                  what="features consumed")
        requests = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["label_requests"])]
        assert len(requests) >= len(LABELS)
        n_labels = _interleave(p, topics["labels"],
                               [(rid.encode(), orjson.dumps({"id": rid, "label": truth[rid]})) for rid in requests],
                               LABELS)
        run_until(service, lambda: service.offsets.next.get((topics["labels"], 0), 0) >= n_labels,
                  what="labels consumed")
        applied = service.totals.get("labels.applied")
    finally:
        service.request_stop()
        service.shutdown()

    dead = read_all(kafka_bootstrap, topics["dead_letters"], expect=len(FEATURES) + len(LABELS))
    for source, kinds in ((topics["features"], FEATURES), (topics["labels"], LABELS)):
        letters = [m for m in dead if dict(m.headers())["activestream.dlq.topic"] == source.encode()]
        got = [(m.key().decode(), dict(m.headers())["activestream.dlq.reason"].decode(), m.value()) for m in letters]
        assert got == [(k.kind, k.reason, k.value) for k in kinds]
    predictions = [orjson.loads(m.value())["id"] for m in read_all(kafka_bootstrap, topics["predictions"],
                                                                   expect=len(records))]
    assert predictions == [rid for rid, _ in records]  # every good record once, in order
    assert applied == len(requests)
