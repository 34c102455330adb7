"""The compiled label-record reader against the careful decoder, record for record.

The fast reader may only ever take the common shapes and must read them exactly as the careful
decoder does; everything else it must hand over. These tests generate well-formed, odd and broken
records and check that the batch decoder (fast reader + careful decoder) and the careful decoder
alone agree on every record: same ids, timestamps, rows, and the same rejections with the same reason.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from consumer.errors import InvalidRecord
from consumer.fastjson import scan_label_batch
from consumer.records import decode_label, decode_label_batch
from tests.unit.consumer.fastjson.random_json import random_number, random_object

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
        fields.append(f'"cost":{random_number(rng)}')
    return random_object(rng, fields, ts=0.5)


@pytest.mark.parametrize("seed", range(6))
def test_random_labels_are_read_exactly_as_the_careful_decoder_reads_them(seed):
    rng = random.Random(seed)
    values = [_random_label(rng, k) for k in range(400)]
    same_labels(values)
    assert (scan_label_batch(values)[1] == 0).mean() > 0.5  # most of them did take the fast path
