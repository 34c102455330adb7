"""The model topic's keys and manifests: parsed strictly, foreign keys and bad fields refused."""

import json

import pytest

from consumer.model_topic.manifest import _chunk_key, _manifest_key, _parse_key, _parse_manifest

GOOD = {"epoch": 1, "version": 2, "kind": "full", "snapshot_offset": 0, "first_offset": 0, "last_offset": 1,
        "chunks": 2, "bytes": 10, "sha256": "00"}


def test_keys_parse_back_and_foreign_keys_are_none():
    assert _parse_key(_manifest_key("model", 7)) == ("model", "manifest", 7, -1)
    assert _parse_key(_chunk_key("part", 3, 4)) == ("part", "chunk", 3, 4)
    for foreign in (None, b"other/1/2", b"model/x/1", b"model/1"):
        assert _parse_key(foreign) is None


def test_a_manifest_missing_a_field_or_of_an_unknown_kind_is_refused():
    assert _parse_manifest(json.dumps(GOOD).encode()) == GOOD
    for bad in ({k: v for k, v in GOOD.items() if k != "chunks"}, {**GOOD, "kind": "other"},
                {**GOOD, "kind": "delta"}):
        with pytest.raises(ValueError):
            _parse_manifest(json.dumps(bad).encode())
    with pytest.raises(ValueError, match="not JSON"):
        _parse_manifest(b"{")
