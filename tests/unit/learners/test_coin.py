"""The query coin: deterministic per (seed, id), uniform, stable across processes."""

import subprocess
import sys

import numpy as np

from learners.coin import coin, coins, record_key, record_keys, span_keys


def test_coin_is_deterministic_and_seed_dependent():
    assert coin(1, "a") == coin(1, "a")
    assert coin(1, "a") != coin(2, "a")
    assert coin(1, "a") != coin(1, "b")


def test_coins_match_scalar_coin():
    ids = ["x", "y", 17, "order-42"]
    np.testing.assert_array_equal(coins(5, record_keys(ids)), [coin(5, i) for i in ids])


def test_coins_are_uniform():
    u = coins(3, np.arange(200_000, dtype=np.uint64))
    assert u.min() >= 0.0 and u.max() < 1.0
    counts = np.histogram(u, bins=20, range=(0, 1))[0]
    expected = u.size / 20
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 43.8  # 99.9 % quantile of χ² with 19 degrees of freedom


def test_record_key_is_the_same_in_another_process():
    code = "from learners.coin import record_key, coin; print(record_key('order-42'), coin(9, 'order-42'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) == record_key("order-42")
    assert float(out[1]) == coin(9, "order-42")


def test_integer_keys_are_the_ids_themselves():
    assert record_key(12345) == 12345
    assert record_keys(np.array([3, 4])).tolist() == [3, 4]


def test_string_keys_are_fnv1a_64():
    def fnv1a(data: bytes) -> int:
        h = 0xCBF29CE484222325
        for b in data:
            h = ((h ^ b) * 0x100000001B3) & (2**64 - 1)
        return h

    for rid in ["", "a", "order-42", "ünïcödé-7"]:
        assert record_key(rid) == fnv1a(rid.encode())
    assert record_keys(["a", "order-42"]).tolist() == [fnv1a(b"a"), fnv1a(b"order-42")]
    blob = b'{"id":"order-42"} "a" ' + "ünïcödé-7".encode()
    spans = [(7, 15), (19, 20), (22, len(blob)), (3, 3)]
    lo, hi = np.array(spans).T
    assert span_keys(blob, lo, hi).tolist() == [fnv1a(blob[a:b]) for a, b in spans]
    assert span_keys(blob, lo, hi).tolist() == record_keys(["order-42", "a", "ünïcödé-7", ""]).tolist()
