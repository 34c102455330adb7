"""The compiled feature-record reader against the careful decoder, record for record.

The fast reader may only ever take the common shapes and must read them exactly as the careful
decoder does; everything else it must hand over. These tests generate well-formed, odd and broken
records and check that the batch decoder (fast reader + careful decoder) and the careful decoder
alone agree on every record: same ids, timestamps, rows, and the same rejections with the same reason.
"""

from __future__ import annotations

import random

import numpy as np
import orjson
import pytest

from consumer.fastjson import scan_batch
from consumer.records.feature_batch import _decode_one_by_one, decode_feature_batch
from learners.coin import record_keys
from tests.unit.consumer.fastjson.random_json import random_number, random_object

D = 16


def same(values: list, n_features: int = D) -> None:
    default = lambda ks: 1000.0 + ks  # noqa: E731
    got = decode_feature_batch(values, n_features, default)
    want = _decode_one_by_one(values, n_features, default)
    assert got.positions == want.positions
    assert got.ids == want.ids
    assert got.ts == want.ts
    assert [(k, e.reason) for k, e in got.rejected] == [(k, e.reason) for k, e in want.rejected]
    np.testing.assert_array_equal(got.rows.to_csr().toarray(), want.rows.to_csr().toarray())
    as_sent = got.features_packed(range(len(got.ids)))
    for i in range(len(got.ids)):
        sent = orjson.loads(values[got.positions[i]])["features"]
        assert got.features(i) == sent
        assert orjson.loads(as_sent[i]) == sent


def test_common_shapes_are_read_by_the_compiled_reader():
    values = [b'{"id": "a", "features": {"indices": [1, 3], "values": [0.5, -2e-3]}, "ts": 12.5}',
              b'{"ts":7,"v":1,"features":{"values":[1,2],"indices":[0,15]},"id":"b"}',
              b'\n{ "id" : "c" , "features" : [' + b", ".join(b"%d" % (i % 3) for i in range(D)) + b"] }\t"]
    status = scan_batch(values, D)[1]
    assert status.tolist() == [0, 0, 0]
    same(values)
    batch = decode_feature_batch(values, D, np.zeros_like)  # an output carries the features as sent
    assert list(batch.features_packed([0, 1, 2])) == [
        b'{"indices": [1, 3], "values": [0.5, -2e-3]}', b'{"values":[1,2],"indices":[0,15]}',
        b"[" + b", ".join(b"%d" % (i % 3) for i in range(D)) + b"]"]



@pytest.mark.parametrize("careful", [False, True])
def test_keys_and_kafka_keys_come_from_the_received_ids(careful):
    values = [b'{"id": "order-1", "features": [' + b", ".join(b"1" for _ in range(D)) + b"]}",
              b'{"features": {"indices": [2], "values": [1]}, "id": "b"}']
    if careful:  # an id with an escape: read by the careful decoder, and the whole batch's keys with it
        values.append(rb'{"id": "\u00e9t\u00e9", "features": {"indices": [2], "values": [1]}}')
    batch = decode_feature_batch(values, D, np.zeros_like)
    assert (batch.id_spans is None) == careful
    assert batch.keys().tolist() == record_keys(batch.ids).tolist()
    assert list(batch.packed_ids()) == [rid.encode() for rid in batch.ids]


def test_a_timestamp_with_many_digits_stays_on_the_compiled_reader_and_is_exact():
    stamps = [1763850011.6237588, 1700000000.123456789012, 0.30000000000000004, 1e-7, 1763850011]
    values = [orjson.dumps({"id": f"r{k}", "features": {"indices": [1], "values": [1.0]}})[:-1]
              + b', "ts": ' + (repr(t) if k != 1 else "1700000000.123456789012").encode() + b"}"
              for k, t in enumerate(stamps)]
    assert scan_batch(values, D)[1].tolist() == [0] * len(values)
    got = decode_feature_batch(values, D, np.zeros_like)
    assert got.ts == [1763850011.6237588, float("1700000000.123456789012"), 0.30000000000000004, 1e-7, 1763850011.0]
    same(values)



ODD = [
    b'{"id": "caf\\u00e9", "features": {"indices": [1], "values": [1]}}',  # an escape in the id
    '{"id": "café", "features": {"indices": [1], "values": [1]}}'.encode(),  # non-ASCII id
    b'{"id": 17, "features": {"indices": [1], "values": [1]}}',  # an integer id
    b'{"id": "a", "features": {"country": "FR", "amount": 2.5}}',  # named features
    b'{"id": "a", "features": {"indices": [1], "values": [true]}}',  # a boolean value
    b'{"id": "a", "features": {"indices": [1], "values": [1]}, "ts": "2023-11-14T22:13:20Z"}',
    b'{"id": "a", "features": {"indices": [1], "values": [1]}, "ts": 1700000000.123456789012}',
    b'{"id": "a", "features": {"indices": [1], "values": [1]}, "v": 1.0}',
    b'{"id": "a", "features": {"indices": [1], "values": [1]}, "extra": {"nested": [1, 2]}}',
    b'{"id": "a", "id": "b", "features": {"indices": [1], "values": [1]}}',  # a duplicate key
    b'{"id": "a", "features": {"indices": [1, 1], "values": [0.1, 0.2]}}',  # a duplicate index
    b'{"id": "a", "features": {"indices": [], "values": []}}',
    b'{"id": "a", "features": {"indices": [1], "values": [0.30000000000000004]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [123456789012345678901234567890]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [1e-400]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [-0.0]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [2.2250738585072014e-308]}}',
]
BROKEN = [
    None, b"", b"{", b"[]", b'"x"', b'{"id": "a"}', b'{"features": [1]}',
    b'{"id": "", "features": {"indices": [1], "values": [1]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [.5]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [01]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [1.]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [+1]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [1e]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [-]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [NaN]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [1e999]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [1,]}}',
    b'{"id": "a", "features": {"indices": [1.5], "values": [1]}}',
    b'{"id": "a", "features": {"indices": [99], "values": [1]}}',
    b'{"id": "a", "features": {"indices": [-1], "values": [1]}}',
    b'{"id": "a", "features": {"indices": [1, 2], "values": [1]}}',
    b'{"id": "a", "features": {"indices": [1], "values": [1]}} trailing',
    b'{"id": "a", "features": {"indices": [1], "values": [1]},}',
    b'{"id": "a", "features": [1, 2]}',
    b'{"id": "a", "features": "x"}',
    b'{"id": "a", "features": {"indices": [1], "values": [1]}, "ts": "soon"}',
    b'{"id": "a", "features": {"indices": [1], "values": [1]}, "ts": true}',
    b'{"id": "a", "features": {"indices": [1], "values": [1]}, "ts": -}',
    b'{"id": "a", "features": {"indices": [1], "values": [1]}, "v": 1}}',
    b'{"id": "a", "features": {"indices": [1], "values": [1]}, "v": 2}',
    b'{"id": "a\x01", "features": {"indices": [1], "values": [1]}}',
    b'{"id": "a", "features": {"indices": [12345678901234567890123], "values": [1]}}',
]


@pytest.mark.parametrize("value", ODD + BROKEN, ids=range(len(ODD + BROKEN)))
def test_odd_and_broken_records_get_the_careful_verdict(value):
    good = b'{"id": "ok", "features": {"indices": [2], "values": [1.5]}}'
    same([good, value, good])


def _random_record(rng: random.Random, k: int) -> bytes:
    n = rng.randint(0, 6)
    idx = [rng.randrange(D) for _ in range(n)]
    vals = [random_number(rng) for _ in range(n)]
    ws = lambda: rng.choice(["", " ", "\n", "\t ", "  "])  # noqa: E731
    if rng.random() < 0.2:
        feats = "[" + ",".join(ws() + random_number(rng) for _ in range(D)) + "]"
    else:
        parts = [f'"indices"{ws()}:{ws()}[{",".join(map(str, idx))}]', f'"values":[{",".join(vals)}]']
        rng.shuffle(parts)
        feats = "{" + ws() + ("," + ws()).join(parts) + ws() + "}"
    return random_object(rng, [f'"id":"r{k}"', f'"features":{feats}'], ts=0.7)



@pytest.mark.parametrize("seed", range(8))
def test_random_records_are_read_exactly_as_the_careful_decoder_reads_them(seed):
    rng = random.Random(seed)
    values = [_random_record(rng, k) for k in range(400)]
    same(values)
    status = scan_batch(values, D)[1]
    assert (status == 0).mean() > 0.5  # most of them did take the fast path
