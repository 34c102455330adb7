import struct
from random import Random

import numpy as np
import orjson

from consumer.fastwrite import pack, write_label_requests, write_predictions
from consumer.records import pack_keys, source_of

IDS = ["r1", 'quote"and\\backslash', "ünïcødé", "tab\there", "\u2028", "x" * 300, "0"]
LABELS = [1, -1, "cat", 2.5, True, None, 0]
EDGE_FLOATS = [0.0, -0.0, 1.0, 0.1, 1 / 3, 1e-7, 2.5e-5, 1e15, 1e16, 1e22, 5e-324, 1.7976931348623157e308,
               1763812345.1234567, float("nan"), float("inf"), -float("inf")]


def reference(ids, labels, scores, probs, asked, ts, version, now, topic, partitions, offsets):
    return [orjson.dumps({
        "v": 1, "id": ids[i], "label": labels[i], "score": scores[i], "probability": probs[i],
        "label_requested": asked[i], "model_version": version, "ts": ts[i], "predicted_at": now,
        "source": f"{topic}:{partitions[i]}:{offsets[i]}",
    }) for i in range(len(ids))]


def request_reference(rid, features, prediction, score, probability, uncertainty, cost, requested_at, expires_at,
                      model_version, source):
    return orjson.dumps({
        "v": 1, "id": rid, "features": features, "prediction": prediction, "score": score,
        "probability": probability, "uncertainty": uncertainty, "cost": cost, "requested_at": requested_at,
        "expires_at": expires_at, "model_version": model_version, "source": source,
    })


def random_floats(rng, n):
    bits = [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(n)]
    return [b if np.isfinite(b) else rng.choice(EDGE_FLOATS) for b in bits]


def test_every_record_is_what_orjson_writes_of_its_dict():
    rng = Random(7)
    n = 2000
    args = ([rng.choice(IDS) + str(i) for i in range(n)], [rng.choice(LABELS) for _ in range(n)],
            random_floats(rng, n), [rng.random() for _ in range(n)], [rng.random() < 0.1 for _ in range(n)],
            [rng.choice(EDGE_FLOATS) if i % 7 == 0 else 1.7e9 + rng.random() for i in range(n)],
            rng.randrange(10**12), 1763812345.25, "features.v2_x-1",
            [rng.randrange(1000) for _ in range(n)], [rng.choice([0, 9, 10, 2**62]) + i for i in range(n)])
    packed = write_predictions(*args)
    assert list(packed) == reference(*args)
    assert bytes(packed.data) == b"".join(reference(*args))  # laid end to end, nothing between


def test_edge_floats_in_every_column():
    k = len(EDGE_FLOATS)
    args = (["a"] * k, [1] * k, EDGE_FLOATS, EDGE_FLOATS[::-1], [False] * k, EDGE_FLOATS, 0, -0.0, "t",
            [0] * k, list(range(k)))
    assert list(write_predictions(*args)) == reference(*args)


def test_numpy_columns_and_an_empty_batch():
    scores, probs, ts = np.array([0.5, -2.0]), np.array([1.0, 0.25]), np.array([10.0, 11.5])
    out = write_predictions(["a", "b"], [1, -1], scores, probs, np.array([True, False]), ts, 3, 12.0, "f", [1, 1],
                            [5, 6])
    assert list(out) == reference(["a", "b"], [1, -1], scores.tolist(), probs.tolist(), [True, False], ts.tolist(),
                                  3, 12.0, "f", [1, 1], [5, 6])
    assert list(write_predictions([], [], [], [], [], [], 0, 0.0, "f", [], [])) == []


def test_packed_messages_are_read_back_one_by_one_and_selected():
    items = [b"", b"a", "\u00e9t\u00e9".encode(), b"xyz" * 50]
    packed = pack(items)
    assert list(packed) == items and len(packed) == 4 and packed[2] == items[2]
    assert list(packed.select([3, 0])) == [items[3], items[0]]
    assert list(packed.select(np.array([True, False, True, False]))) == [items[0], items[2]]


def test_keys_are_the_ids_in_utf8_ascii_or_not():
    for ids in (["r1", "r22", "", "abc"], ["r1", "\u00fcn\u00efc\u00f8d\u00e9", "\u2028", "x"]):
        assert list(pack_keys(ids)) == [i.encode() for i in ids]


def test_every_label_request_is_what_orjson_writes_of_its_dict():
    rng = Random(11)
    n = 500
    features = [orjson.dumps({"indices": [rng.randrange(100) for _ in range(3)], "values": random_floats(rng, 3)})
                if i % 3 else b'[ 0.5,\n 1e-3 ]' for i in range(n)]  # received text, kept as it is
    ids = [rng.choice(IDS) + str(i) for i in range(n)]
    predictions, costs = [rng.choice(LABELS) for _ in range(n)], [rng.choice([0.0, 1.0, 2.5, 1 / 3]) for _ in range(n)]
    scores, probs, unc = random_floats(rng, n), [rng.random() for _ in range(n)], [rng.random() for _ in range(n)]
    partitions, offsets = [rng.randrange(100) for _ in range(n)], [rng.randrange(2**62) for _ in range(n)]
    out = write_label_requests(ids, pack(features), predictions, np.array(scores), probs, unc, costs,
                               1763812345.125, 1763815945.125, 42, "features.v2_x-1", partitions, offsets)
    assert list(out) == [request_reference(
        ids[i], orjson.Fragment(features[i]), predictions[i], scores[i], probs[i], unc[i], costs[i], 1763812345.125,
        1763815945.125, 42, source_of("features.v2_x-1", partitions[i], offsets[i])) for i in range(n)]
    assert len(write_label_requests([], pack([]), [], [], [], [], [], 0.0, 0.0, 0, "f", [], [])) == 0
