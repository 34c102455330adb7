"""Checkpoint files: atomic, checksummed, numbered, pruned."""

import numpy as np
import pytest

from consumer.checkpoint import CheckpointPolicy, CheckpointStore, read_checkpoint
from consumer.errors import CheckpointError


def state(k: int) -> dict:
    return {"w": np.arange(5.0) * k, "meta": np.array(f'{{"k": {k}}}')}


def test_write_then_read_gives_the_arrays_back(tmp_path):
    store = CheckpointStore(tmp_path, keep=3)
    path = store.write(state(2))
    got = read_checkpoint(path)
    np.testing.assert_array_equal(got["w"], np.arange(5.0) * 2)
    assert str(got["meta"]) == '{"k": 2}'
    assert not list(tmp_path.glob(".*.tmp"))


def test_only_the_newest_are_kept(tmp_path):
    store = CheckpointStore(tmp_path, keep=2)
    paths = [store.write(state(k)) for k in range(4)]
    assert store.paths() == [paths[3], paths[2]]
    assert store.latest()[0] == paths[3]


@pytest.mark.parametrize("damage", [lambda b: b[:-10], lambda b: b[:40] + b"X" + b[41:], lambda b: b"junk" + b])
def test_a_damaged_file_is_refused_and_the_previous_one_used(tmp_path, damage):
    store = CheckpointStore(tmp_path, keep=3)
    good = store.write(state(1))
    bad = store.write(state(2))
    bad.write_bytes(damage(bad.read_bytes()))
    with pytest.raises(CheckpointError):
        read_checkpoint(bad)
    path, got = store.latest()
    assert path == good and got["w"][1] == 1.0


def test_an_unwritable_directory_fails_at_start_up(tmp_path):
    target = tmp_path / "file"
    target.write_text("not a directory")
    with pytest.raises(CheckpointError, match="not writable"):
        CheckpointStore(target / "ckpt", keep=1).prepare()


def test_policy_is_due_on_time_or_labels():
    policy = CheckpointPolicy(every_s=30, every_labels=100)
    assert not policy.due(10, 5) and policy.due(30, 0) and policy.due(0, 100)
