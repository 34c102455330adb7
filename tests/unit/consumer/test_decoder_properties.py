"""Property-based and differential tests of the decoders: for any bytes and any JSON, every path
gives one verdict (a record, or a rejection with a known reason; never an exception), and the
numbers of an accepted record are orjson's, bit for bit.

The example count is bounded for CI (profile "ci"); ``ACTIVESTREAM_HYPOTHESIS_PROFILE=long`` runs
many more (see ``tests/conftest.py``)."""

from __future__ import annotations

import json
import math

import numpy as np
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consumer.records import MAX_TS, REASONS
from tests.verdicts import N_FEATURES, check_feature, feature_verdicts, label_verdicts, one_verdict

_SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)

# Decimal texts of every length up to 20 significant digits, with and without exponents: the
# numbers the compiled reader reads itself or hands over to Python's float.
_digits = st.text(alphabet="0123456789", min_size=1, max_size=20)
number_text = st.builds(
    lambda sign, whole, frac, exp: sign + (whole.lstrip("0") or "0") + (f".{frac}" if frac else "") + exp,
    st.sampled_from(["", "-"]), _digits, st.one_of(st.just(""), _digits),
    st.one_of(st.just(""), st.builds(lambda e, x: e + x, st.sampled_from(["e", "E", "e-", "e+", "E-"]),
                                     st.integers(0, 330).map(str))))
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**65), 2**65), st.floats(allow_nan=False,
                        allow_infinity=False), st.text(max_size=8))
json_value = st.recursive(json_scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                               st.dictionaries(st.text(max_size=4), inner, max_size=4)),
                          max_leaves=12)


dense = st.lists(st.one_of(number_text, json_value.map(json.dumps)), min_size=N_FEATURES - 1,
                 max_size=N_FEATURES + 1).map(lambda xs: "[" + ",".join(xs) + "]")
index_text = st.one_of(st.integers(-2, N_FEATURES + 1).map(str), number_text,
                       st.sampled_from(["9223372036854775808", "true", "[1]", '"1"']))
sparse = st.integers(0, 20).flatmap(lambda n: st.tuples(st.lists(index_text, min_size=n, max_size=n),
                                                        st.lists(number_text, min_size=n, max_size=n + 1))).map(
    lambda iv: '{"indices":[' + ",".join(iv[0]) + '],"values":[' + ",".join(iv[1]) + "]}")
named = st.dictionaries(st.text(max_size=5), st.one_of(number_text, json_value.map(json.dumps)), max_size=4).map(
    lambda d: "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in d.items()) + "}")
ident = st.one_of(st.text(min_size=0, max_size=6).map(json.dumps), json_value.map(json.dumps))
stamp = st.one_of(number_text, st.sampled_from(['"2023-11-14T22:13:20Z"', '"2023-11-14T22:13:20"', "true", "null"]))


def _record(fields: list[tuple[str, str]], order: list[int]) -> bytes:
    members = [f'"{name}":{text}' for name, text in fields]
    return ("{" + ",".join(members[k % len(members)] for k in order) + "}").encode() if members else b"{}"


feature_record = st.builds(
    lambda rid, feats, ts, v, order: _record([("id", rid), ("features", feats), *ts, *v], order),
    ident, st.one_of(dense, sparse, named), st.lists(stamp.map(lambda t: ("ts", t)), max_size=1),
    st.lists(st.sampled_from(["1", "2", "true", "1.0"]).map(lambda t: ("v", t)), max_size=1),
    st.permutations(range(4)).map(list) | st.lists(st.integers(0, 5), min_size=1, max_size=6))
label_record = st.builds(
    lambda rid, label, cost, ts, order: _record([("id", rid), ("label", label), *cost, *ts], order),
    ident, st.one_of(st.sampled_from(["1", "-1", "1.0", "-0", "true", '"1"', "2"]), number_text),
    st.lists(number_text.map(lambda t: ("cost", t)), max_size=1), st.lists(stamp.map(lambda t: ("ts", t)), max_size=1),
    st.permutations(range(4)).map(list) | st.lists(st.integers(0, 5), min_size=1, max_size=6))


@_SETTINGS
@given(st.binary(max_size=200))
def test_decoders_any_bytes_one_verdict(value):
    check_feature(value)
    verdict = one_verdict(label_verdicts(value))
    assert not isinstance(verdict, str) or verdict in REASONS


@_SETTINGS
@given(json_value)
def test_decoders_any_json_one_verdict(obj):
    value = json.dumps(obj).encode()  # orjson refuses integers beyond 64 bits; records may hold them
    check_feature(value)
    verdict = one_verdict(label_verdicts(value))
    assert not isinstance(verdict, str) or verdict in REASONS


@_SETTINGS
@given(feature_record)
def test_decoders_generated_feature_records_one_verdict_with_orjson_numbers(value):
    check_feature(value)


@_SETTINGS
@given(label_record)
def test_decoders_generated_label_records_one_verdict_with_orjson_numbers(value):
    verdict = one_verdict(label_verdicts(value))
    if isinstance(verdict, str):
        assert verdict in REASONS
        return
    obj = orjson.loads(value)
    _, _, label, cost, ts = verdict
    assert label == obj["label"] and type(obj["label"]) is not bool
    if obj.get("cost") is not None:
        assert cost == np.float64(float(obj["cost"])).tobytes()
    if type(obj.get("ts")) in (int, float):
        assert ts == np.float64(float(obj["ts"])).tobytes() and 0 <= float(obj["ts"]) < MAX_TS


@_SETTINGS
@given(st.lists(number_text, min_size=N_FEATURES, max_size=N_FEATURES), number_text)
def test_decoders_numbers_read_bit_for_bit_as_orjson(texts, ts):
    """The differential core: dense values and ts of any decimal text, against orjson."""
    value = ('{"id":"n","features":[' + ",".join(texts) + '],"ts":' + ts + "}").encode()
    verdict = one_verdict(feature_verdicts(value))
    try:
        parsed = [float(orjson.loads(t)) for t in texts]
        stamp = float(orjson.loads(ts))
    except orjson.JSONDecodeError:
        assert verdict == "malformed_json"
        return
    if not all(map(math.isfinite, parsed)) or not math.isfinite(stamp):
        assert isinstance(verdict, str)
        return
    if not 0 <= stamp < MAX_TS or not any(parsed):
        assert verdict in ("bad_timestamp",) if not 0 <= stamp < MAX_TS else True
        return
    _, idx, val, got_ts = verdict
    assert got_ts == np.float64(stamp).tobytes()
    assert val == np.array([parsed[i] for i in idx], dtype=np.float64).tobytes()
    assert idx == [i for i, x in enumerate(parsed) if x != 0]
