"""A user's own raw stream through the service with its defaults: named columns on their own scales,
labels answered 0/1, no ACTIVESTREAM_CLASSES, no ACTIVESTREAM_LEARNER, a 10 % query-rate target."""

from __future__ import annotations

import numpy as np
import orjson
from river import linear_model, preprocessing

from consumer.roles import service_for
from learners.defaults import default_learner
from tests.kafka_helpers import Annotator, produce_features, read_all, run_until, settings_for, unique_topics

N, D, TARGET = 4000, 20, 0.1


def raw_table(seed: int = 0) -> tuple[list[tuple[str, dict[str, float]]], dict[str, int]]:
    """Named columns on scales 10⁻¹ … 10³ with offsets (amounts, counts, rates side by side), the
    label a linear concept of the standardised columns with noise, answered 0/1."""
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.uniform(-1, 3, D)
    offset = scale * rng.uniform(0, 4, D)
    Z = rng.standard_normal((N, D))
    y = (Z @ rng.standard_normal(D) + 0.3 * rng.standard_normal(N) > 0).astype(int)
    X = (Z * scale + offset).round(4)
    records = [(f"r{i}", {f"col{j}": float(X[i, j]) for j in range(D)}) for i in range(N)]
    return records, {f"r{i}": int(y[i]) for i in range(N)}


def river_with_random_labels(records, truth, rate: float, seed: int = 0) -> float:
    """River's StandardScaler | LogisticRegression, prequential, the scaler learning from every record,
    the regression from a random ``rate`` of the labels: accuracy on the second half."""
    rng = np.random.default_rng(seed)
    scaler, model = preprocessing.StandardScaler(), linear_model.LogisticRegression()
    hits = []
    for rid, x in records:
        scaler.learn_one(x)
        xs = scaler.transform_one(x)
        hits.append(int(model.predict_one(xs) or False) == truth[rid])
        if rng.random() < rate:
            model.learn_one(xs, bool(truth[rid]))
    return float(np.mean(hits[N // 2 :]))


def test_the_defaults_learn_a_raw_named_table_answered_zero_one(kafka_bootstrap, tmp_path):
    topics = unique_topics(kafka_bootstrap)
    records, truth = raw_table()
    settings = settings_for(kafka_bootstrap, topics, tmp_path, learner=None, learner_params={}, classes=None,
                            n_features=2**20, query_rate_target=TARGET, batch_size=200)
    service = service_for(settings, serve_http=False)
    assert service.learner.name == default_learner(2, settings.n_features)
    annotator = Annotator(kafka_bootstrap, topics, truth)
    service.start()
    totals = service.totals
    try:
        for start in range(0, N, 200):  # records arrive over time; labels come back meanwhile
            produce_features(kafka_bootstrap, topics["features"], records[start : start + 200])
            run_until(service, lambda n=start + 200: totals.get("records_scored") >= n, what="chunk scored")
            annotator.answer(timeout=0.2)
        annotator.answer(timeout=1.0)
        run_until(service, lambda: totals.get("labels.applied") == len(annotator.answered), what="labels applied")
    finally:
        service.request_stop()
        service.shutdown()
        annotator.close()
    assert service.learner.classes == (0, 1)
    assert read_all(kafka_bootstrap, topics["dead_letters"]) == []
    predictions = [orjson.loads(m.value()) for m in read_all(kafka_bootstrap, topics["predictions"], expect=N)]
    by_id = {p["id"]: p["label"] for p in predictions}
    asked = len(annotator.answered) / N
    assert abs(asked - TARGET) <= 0.01
    ours = float(np.mean([by_id[f"r{i}"] == truth[f"r{i}"] for i in range(N // 2, N)]))
    river = river_with_random_labels(records, truth, asked)
    assert ours >= river, (ours, river)
