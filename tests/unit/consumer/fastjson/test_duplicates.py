"""Duplicate keys found by the compiled pass, at any depth, and escaped keys handed to Python."""

from consumer.fastjson import DUPLICATE, UNSURE, duplicate_key_flags, escaped_keys


def test_duplicate_key_flags_a_repeated_key_in_one_object_at_any_depth():
    values = [b'{"id": "a", "id": "b"}', b'{"id": "a", "features": {"x": 1, "x": 2}}',
              b'{"id": "a", "features": [{"x": 1}, {"x": 2}]}', b'{"id": "a"}', None]
    assert duplicate_key_flags(values).tolist() == [DUPLICATE, DUPLICATE, 0, 0, 0]


def test_duplicate_key_flags_an_escaped_key_as_unsure():
    assert duplicate_key_flags([rb'{"id": "a", "\u0069d": "b"}']).tolist() == [UNSURE]


def test_escaped_keys_lists_each_key_as_written_with_its_object():
    assert escaped_keys(rb'{"a": {"b": 1, "\u0063": 2}}') == [(0, b"a"), (1, b"b"), (1, rb"\u0063")]
