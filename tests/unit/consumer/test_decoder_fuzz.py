"""A differential fuzzer: valid records of every shape, mutated at random, through every decoding
path and against orjson. Seeded, with a bounded budget (``ACTIVESTREAM_FUZZ_RECORDS`` records per
seed, 1500 by default)."""

from __future__ import annotations

import os
import random

import pytest

from tests.verdicts import check_feature, label_verdicts, one_verdict

BUDGET = int(os.environ.get("ACTIVESTREAM_FUZZ_RECORDS", "1500"))
SEEDS = [
    b'{"id": "a", "features": {"indices": [1, 3, 3, 7], "values": [0.5, -2e-3, 1.25, 1234567.8901234567]}}',
    b'{"id": "b", "features": [0.1, 0, -0, 2.5, 1e-7, 12345678901234567, 0.30000000000000004, 9007199254740993]}',
    b'{"id": "c", "features": {"country": "FR", "amount": 12.5, "vip": true}, "ts": 1700000000.1234567}',
    b'{"v": 1, "id": 17, "features": {"values": [1, 2], "indices": [0, 5]}, "ts": "2023-11-14T22:13:20Z"}',
]
LABEL_SEEDS = [b'{"id": "a", "label": 1, "cost": 0.8, "ts": 1763850011.6237588}',
               b'{"v": 1, "id": "b", "label": -1}', b'{"id": "c", "label": 1.0, "cost": 0}']
TOKENS = [b"", b"}", b"{", b"]", b"[", b",", b":", b'"', b"\\", b"-", b"0", b"1", b"9", b".", b"e", b"E", b"+",
          b"true", b"null", b"[[1]]", b"9223372036854775808", b"1e308", b"-0", b"\xff", b" ", b'"id"',
          b"1.0000000000000002"]


def mutate(rng: random.Random, value: bytes) -> bytes:
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(value) + 1)
        action = rng.random()
        token = rng.choice(TOKENS)
        if action < 0.4:
            value = value[:at] + token + value[at + 1:]  # replace a byte
        elif action < 0.8:
            value = value[:at] + token + value[at:]  # insert
        else:
            value = value[:at] + value[at + rng.randint(1, 4):]  # delete a few bytes
    return value


@pytest.mark.parametrize("seed", range(2))
def test_decoder_fuzz_mutated_feature_records_one_verdict_with_orjson_numbers(seed):
    rng = random.Random(seed)
    for _ in range(BUDGET):
        check_feature(mutate(rng, rng.choice(SEEDS)))


@pytest.mark.parametrize("seed", range(2))
def test_decoder_fuzz_mutated_label_records_one_verdict(seed):
    rng = random.Random(seed)
    for _ in range(BUDGET):
        one_verdict(label_verdicts(mutate(rng, rng.choice(LABEL_SEEDS))))
