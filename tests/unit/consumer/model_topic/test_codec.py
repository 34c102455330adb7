"""A state's encoding and its deltas, bitwise exact (by property: bounded for CI, profile "ci", see
``tests/conftest.py``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from consumer.model_topic import apply_delta, decode_state, delta, encode_state
from tests.unit.consumer.model_topic.topic import model_state, same

_SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)



def test_encode_decode_round_trip_keeps_every_dtype_and_shape():
    state = {**model_state(10), "flags": np.array([True, False]), "z": np.array([1 + 2j]),
             "scalar": np.float32(np.nan), "grid": np.arange(6, dtype=np.int8).reshape(2, 3)}
    assert same(decode_state(encode_state(state)), {k: np.asarray(v) for k, v in state.items()})


def test_decode_state_refuses_garbage_with_value_error():
    payload = encode_state(model_state(10))
    for bad in (b"junk", payload[:-20], b""):
        with pytest.raises(ValueError, match="unreadable"):
            decode_state(bad)


def test_encode_state_refuses_object_arrays():
    with pytest.raises(ValueError, match="plain arrays"):
        encode_state({"x": np.array([{}, 1], dtype=object)})



_dtypes = st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.uint16, np.bool_, np.complex128, "<U3"])

_arrays = _dtypes.flatmap(lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=12)))

_names = st.sampled_from(["a", "b", "rule.w", "query.x", "meta", "removed", "whole.c"])

_states = st.dictionaries(_names, _arrays, max_size=5)


@st.composite
def _edits(draw, base: dict) -> dict:
    """``base`` changed as a learner or a new build would change it: some elements, some arrays
    replaced, some removed, some added."""
    new = {}
    for name, a in base.items():
        action = draw(st.sampled_from(["keep", "patch", "patch", "replace", "remove"]))
        if action == "keep":
            new[name] = a.copy()
        elif action == "patch":
            b = a.copy()
            if b.size:
                flat = b.reshape(-1)
                for i in draw(st.lists(st.integers(0, b.size - 1), max_size=max(1, b.size // 4))):
                    flat[i] = draw(hnp.from_dtype(b.dtype))
            new[name] = b
        elif action == "replace":
            new[name] = draw(_arrays)
    new.update(draw(st.dictionaries(_names.filter(lambda n: n not in base), _arrays, max_size=2)))
    return new


@_SETTINGS
@given(st.data())
def test_apply_delta_rebuilds_new_bit_for_bit(data):
    base = data.draw(_states)
    new = data.draw(_edits(base))
    before = {k: v.copy() for k, v in base.items()}
    change = delta(base, new)
    assert same(apply_delta(base, change), new)
    assert same(apply_delta(base, decode_state(encode_state(change))), new)  # and after the wire
    assert same(base, before)  # the base is not modified


@_SETTINGS
@given(st.data(), st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.bool_, np.complex64]),
       st.integers(40, 300))
def test_apply_delta_rebuilds_sparsely_patched_vectors_bit_for_bit(data, dtype, n):
    base = {"w": data.draw(hnp.arrays(dtype, n)), "s": data.draw(hnp.arrays(dtype, ()))}
    new = {k: v.copy() for k, v in base.items()}
    for i in data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n // 10)):
        new["w"][i] = data.draw(hnp.from_dtype(np.dtype(dtype)))
    change = delta(base, new)
    assert "whole.w" not in change  # a few elements: only those travel
    assert same(apply_delta(base, decode_state(encode_state(change))), new)


def test_delta_of_a_sparse_change_holds_only_the_changed_elements():
    base = model_state(1000)
    new = {k: v.copy() for k, v in base.items()}
    new["rule.w"][[3, 500, 999]] = 7.0
    change = delta(base, new)
    assert change["index.rule.w"].tolist() == [3, 500, 999]
    assert change["value.rule.w"].tolist() == [7.0] * 3
    assert {k for k in change if k != "removed"} == {"index.rule.w", "value.rule.w"}  # unchanged: nothing


def test_delta_compares_floats_bitwise_nan_and_negative_zero():
    quiet, other = np.array([np.nan]), np.array([np.nan]).view(np.uint64) ^ np.uint64(1)
    base = {"w": np.array([np.nan, 0.0, 1.0, 2.0, 3.0, 4.0]), "s": np.array(np.nan)}
    new = {"w": np.array([np.nan, -0.0, 1.0, 2.0, 3.0, 4.0]), "s": np.array(np.nan)}
    change = delta(base, new)
    assert change["index.w"].tolist() == [1]  # NaN equals itself, -0.0 differs from 0.0
    assert "whole.s" not in change and "index.s" not in change
    got = apply_delta(base, change)
    assert np.signbit(got["w"][1]) and same(got, new)
    payload = {"w": other.view(np.float64)}  # another NaN bit pattern is a change
    assert same(apply_delta({"w": quiet}, delta({"w": quiet}, payload)), payload)


def test_delta_stores_whole_what_is_new_reshaped_retyped_mostly_changed_or_text():
    base = {"a": np.zeros(10), "b": np.zeros(10), "c": np.zeros(10), "t": np.array("x"), "same": np.array("y"),
            "gone": np.ones(3), "zero_d": np.array(1.5)}
    new = {"a": np.zeros((2, 5)), "b": np.zeros(10, dtype=np.float32), "c": np.arange(10.0), "t": np.array("xy"),
           "same": np.array("y"), "added": np.ones(2), "zero_d": np.array(2.5)}
    change = delta(base, new)
    assert {k for k in change if k.startswith("whole.")} == {"whole.a", "whole.b", "whole.c", "whole.t",
                                                             "whole.added", "whole.zero_d"}
    assert change["removed"].tolist() == ["gone"]
    assert same(apply_delta(base, change), new)


def test_delta_of_a_unicode_array_changed_in_place():
    base, new = {"names": np.array(["ab", "cd", "ef"])}, {"names": np.array(["ab", "cx", "ef"])}
    assert same(apply_delta(base, delta(base, new)), new)


def test_apply_delta_refuses_a_delta_that_does_not_fit_the_base():
    change = delta({"w": np.zeros(10)}, {"w": np.eye(1, 10).ravel()})
    with pytest.raises(ValueError):
        apply_delta({}, change)
    with pytest.raises(ValueError):
        apply_delta({"w": np.zeros(3)}, {**change, "index.w": np.array([9], dtype=np.uint32)})
    with pytest.raises(ValueError):
        apply_delta({"w": np.zeros(10, dtype=np.float32)}, change)

