"""What the outputs carry: the prediction schema, keys and sources."""

import orjson

from consumer.records import encode_predictions, pack_keys, parse_source, source_of


def test_prediction_schema_is_versioned():
    out = orjson.loads(encode_predictions(["a"], [1], [0.5], [0.2], [True], [10.0], 3, 11.0, "features", [2], [7])[0])
    assert out == {"v": 1, "id": "a", "label": 1, "score": 0.5, "probability": 0.2, "label_requested": True,
                   "model_version": 3, "ts": 10.0, "predicted_at": 11.0, "source": "features:2:7"}


def test_sources_read_back_as_written():
    assert parse_source(source_of("my.topic-1", 3, 12345678901)) == ("my.topic-1", 3, 12345678901)


def test_keys_are_the_ids_in_utf8_whatever_they_hold():
    for ids in (["a", "b"], ["line\nbreak", "ü", ""], [], ["x"]):
        assert list(pack_keys(ids)) == [rid.encode() for rid in ids]
