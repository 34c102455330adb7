"""The compiled feature- and label-record readers against the careful decoders, record for record.

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
import scipy.sparse as sp

from consumer.errors import InvalidRecord
from consumer.fastjson import _number, scan_batch, scan_label_batch
from consumer.records import _canonical, _decode_one_by_one, decode_feature_batch, decode_label, decode_label_batch
from learners.coin import record_keys

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


def _read(text: str) -> tuple[float, int]:
    """(value, status) of the compiled number reader on the whole of ``text``."""
    value, end, status, _ = _number(np.frombuffer(text.encode(), dtype=np.uint8), 0, len(text))
    assert end == len(text)
    return value, status


def _near_midpoints(rng: random.Random, n: int) -> list[str]:
    """Decimal strings within a hair of the midpoint between two neighbouring doubles, where a
    reader that rounds twice goes wrong."""
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    out = []
    for _ in range(n):
        x = rng.uniform(1.0, 2.0**rng.randrange(1, 52))
        mid = (Decimal(x) + Decimal(np.nextafter(x, np.inf))) / 2
        digits = rng.choice([17, 18, 19])
        scale = digits - len(str(int(mid)))  # digits after the point
        if not 1 <= scale <= 15:
            continue
        text = str(mid.quantize(Decimal(1).scaleb(-scale)))
        out.append(text)
        last = int(text[-1])  # and one unit of the last digit either side
        out += [text[:-1] + str(last + 1)] if last < 9 else []
        out += [text[:-1] + str(last - 1)] if last > 0 else []
    return out


@pytest.mark.parametrize("seed", range(4))
def test_long_decimals_are_read_exactly_or_handed_to_python(seed):
    rng = random.Random(seed)
    stamps = [repr(rng.uniform(1.6e9, 1.9e9)) for _ in range(3000)]
    long = [f"{rng.randrange(1, 10**rng.randrange(16, 20))}" for _ in range(3000)]
    long = [t[: -(k := rng.randrange(1, min(15, len(t) - 1) + 1))] + "." + t[-k:] for t in long]
    tricky = _near_midpoints(rng, 3000)
    fast = {}
    for name, texts in (("stamps", stamps), ("long", long), ("tricky", tricky)):
        statuses = []
        for text in texts:
            value, status = _read(text)
            assert status in (0, 1), text
            if status == 0:
                assert value == float(text), text  # bit for bit: both are finite and positive
            statuses.append(status)
        fast[name] = statuses.count(0) / len(statuses)
    assert fast["stamps"] > 0.999  # time.time()'s 17 digits never leave the compiled reader
    assert fast["long"] > 0.9  # the rest have an integer part beyond 2**53
    assert fast["tricky"] < 0.99, fast  # a value on a midpoint's edge is handed over


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


def _random_number(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.2:
        return str(rng.randint(-1000, 1000))
    if kind < 0.5:
        return repr(rng.uniform(-10, 10))
    if kind < 0.7:
        return f"{rng.uniform(-1, 1):.{rng.randint(1, 9)}f}"
    if kind < 0.9:
        return f"{rng.uniform(-1e5, 1e5):.{rng.randint(0, 12)}e}"
    return rng.choice(["0", "-0", "0.0", "1E5", "1e-7", "-2.5E+3", "123456789.987654321", "4.9e-324"])


def _random_record(rng: random.Random, k: int) -> bytes:
    n = rng.randint(0, 6)
    idx = [rng.randrange(D) for _ in range(n)]
    vals = [_random_number(rng) for _ in range(n)]
    ws = lambda: rng.choice(["", " ", "\n", "\t ", "  "])  # noqa: E731
    if rng.random() < 0.2:
        feats = "[" + ",".join(ws() + _random_number(rng) for _ in range(D)) + "]"
    else:
        parts = [f'"indices"{ws()}:{ws()}[{",".join(map(str, idx))}]', f'"values":[{",".join(vals)}]']
        rng.shuffle(parts)
        feats = "{" + ws() + ("," + ws()).join(parts) + ws() + "}"
    return _random_object(rng, [f'"id":"r{k}"', f'"features":{feats}'], ts=0.7)


def _random_object(rng: random.Random, fields: list[str], ts: float) -> bytes:
    """A record of ``fields``, with a ts (probability ``ts``) and a "v" (0.2), in random order and
    whitespace; one in seven broken somewhere."""
    ws = lambda: rng.choice(["", " ", "\n", "\t ", "  "])  # noqa: E731
    if rng.random() < ts:
        fields.append(f'"ts":{_random_number(rng)}')
    if rng.random() < 0.2:
        fields.append('"v":1')
    rng.shuffle(fields)
    text = "{" + ws() + ("," + ws()).join(fields) + ws() + "}"
    if rng.random() < 0.15:  # break it somewhere
        cut = rng.randrange(len(text))
        text = text[:cut] + rng.choice(["", "}", ",", "x", "]", '"', "1", "."]) + text[cut + 1 :]
    return text.encode()


@pytest.mark.parametrize("seed", range(8))
def test_random_records_are_read_exactly_as_the_careful_decoder_reads_them(seed):
    rng = random.Random(seed)
    values = [_random_record(rng, k) for k in range(400)]
    same(values)
    status = scan_batch(values, D)[1]
    assert (status == 0).mean() > 0.5  # most of them did take the fast path


@pytest.mark.parametrize("seed", range(6))
def test_rows_are_made_canonical_as_scipy_makes_them(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, 50)
    indices = rng.integers(0, 8 if seed % 2 else 10**6, lengths.sum())  # small range: duplicates
    if seed < 2:  # sorted and unique rows: the compiled path alone
        indices = np.concatenate([np.sort(rng.choice(10**6, n, replace=False)) for n in lengths])
    data = rng.choice([0.0, -0.0, 1.5, -2.0, 0.25], lengths.sum())
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    want = sp.csr_matrix((data.copy(), indices.astype(np.int32), indptr), shape=(50, 10**6))
    want.eliminate_zeros()
    want.sum_duplicates()
    want.eliminate_zeros()  # a repeated index whose values sum to zero is dropped too
    got, overflow = _canonical(indices.copy(), data.copy(), lengths, 10**6)
    assert overflow is None
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)
    assert got.indices.dtype == np.int32


# -- labels ------------------------------------------------------------------------------------------
CLASSES = {-1: -1, 1: 1, "spam": 2, 2.5: 3}


def same_labels(values: list) -> None:
    """The batch decoder and :func:`decode_label` alone agree on every record: same labels, of the
    same Python types, same costs and times, same rejections."""
    default = lambda ks: 1000.0 + ks  # noqa: E731
    got, positions, rejected = decode_label_batch(values, CLASSES, default)
    want, want_positions, want_rejected = [], [], []
    for k, value in enumerate(values):
        try:
            want.append(decode_label(value, CLASSES, 1000.0 + k))
            want_positions.append(k)
        except InvalidRecord as err:
            want_rejected.append((k, err.reason))
    assert positions == want_positions
    assert [(k, e.reason) for k, e in rejected] == want_rejected
    assert got == want
    assert [tuple(map(type, g)) for g in got] == [tuple(map(type, w)) for w in want]


def test_common_label_shapes_are_read_by_the_compiled_reader():
    values = [b'{"id":"a","label":1}', b'{ "label" : -1 , "id" : "b", "cost": 0.25, "ts": 1763850011.6237588 }',
              b'{"v":1,"id":"c","label":"spam"}', b'{"id":"d","label":2.5,"cost":0}', b'{"id":"e","label":1.0}']
    assert scan_label_batch(values)[1].tolist() == [0] * len(values)
    same_labels(values)
    same_labels([b'{"id":"a","label":1}', b'{"id":"b","label":-1}'])  # all integers: Python ints
    got = decode_label_batch(values, CLASSES, np.zeros_like)[0]
    assert [(g.id, g.label, g.cost, g.ts) for g in got] == [
        ("a", 1, None, 0.0), ("b", -1, 0.25, 1763850011.6237588), ("c", "spam", None, 0.0), ("d", 2.5, 0.0, 0.0),
        ("e", 1.0, None, 0.0)]


LABELS_ODD = [  # valid, but for the careful decoder
    b'{"id": 17, "label": 1}',
    rb'{"id": "\u00e9", "label": 1}',
    rb'{"id": "a", "label": "sp\u0061m"}',
    b'{"id": "a", "label": 1, "ts": "2023-11-14T22:13:20Z"}',
    b'{"id": "a", "label": 1, "extra": [1, 2]}',
    b'{"id": "a", "label": 1, "cost": 1e400}',
    b'{"id": "a", "label": 1, "cost": 0.1000000000000000055511151231257827}',
    b'{"id": "a", "label": 1, "cost": null}',
    b'{"id": "a", "label": 12345678901234567}',
    b'{"id": "a", "label": true}',
]
LABELS_BROKEN = [
    b"", b"null", b"[]", b'"a"', b"{", b'{"id": "a"}', b'{"label": 1}', b'{"id": "", "label": 1}',
    b'{"id": "a", "label": 3}', b'{"id": "a", "label": "ham"}', b'{"id": "a", "label": [1]}',
    b'{"id": "a", "label": {"x": 1}}', b'{"id": "a", "label": 1, "cost": -1}', b'{"id": "a", "label": 1, "cost": "1"}',
    b'{"id": "a", "label": 1, "ts": true}', b'{"id": "a", "label": 1, "ts": -}', b'{"id": "a", "label": -}',
    b'{"id": "a", "label": 1, "cost": -}', b'{"id": "a", "label": "x', b'{"id": "a", "id": 1, "label": 1}',
    b'{"id": "a", "label": 1, "v": 2}', b'{"id": "a", "label": 1, "v": 10}',
    b'{"id": "a", "label": 1, "label": -1}', b'{"id": "a", "id": "b", "label": 1}',
    b'{"id": "a", "label": 1, "cost": 1, "cost": 2}', b'{"id": "a", "label": 1,}', b'{"id": "a", "label": 1} x',
    b'{"id": "a", "label": 01}', b'{"id": "a\x01", "label": 1}', b'{"id": "a", "label": -}',
]


@pytest.mark.parametrize("value", LABELS_ODD + LABELS_BROKEN, ids=range(len(LABELS_ODD + LABELS_BROKEN)))
def test_odd_and_broken_labels_get_the_careful_verdict(value):
    good = b'{"id": "ok", "label": -1}'
    same_labels([good, value, None, good])


def _random_label(rng: random.Random, k: int) -> bytes:
    label = rng.choice(["1", "-1", "1.0", "-1e0", '"spam"', "2.5", "25e-1", "3", '"ham"', "true"])
    fields = [f'"id":"r{k}"', f'"label":{rng.choice(["", " "])}{label}']
    if rng.random() < 0.5:
        fields.append(f'"cost":{_random_number(rng)}')
    return _random_object(rng, fields, ts=0.5)


@pytest.mark.parametrize("seed", range(6))
def test_random_labels_are_read_exactly_as_the_careful_decoder_reads_them(seed):
    rng = random.Random(seed)
    values = [_random_label(rng, k) for k in range(400)]
    same_labels(values)
    assert (scan_label_batch(values)[1] == 0).mean() > 0.5  # most of them did take the fast path
