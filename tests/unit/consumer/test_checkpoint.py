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


def with_parts(k: int, parts: dict[str, float]) -> dict:
    out = state(k)
    for name, value in parts.items():
        out[f"{name}.keys"], out[f"{name}.at"] = np.full(3, value), np.arange(10_000.0)
    return out


def test_a_part_is_written_once_and_read_back_into_every_checkpoint_that_refers_to_it(tmp_path):
    store = CheckpointStore(tmp_path, keep=3)
    first = store.write(with_parts(1, {"m.0": 7.0}), parts=["m.0"])
    part = tmp_path / "part-m.0.ckpt"
    written = part.stat().st_mtime_ns, part.stat().st_ino
    second = store.write(with_parts(2, {"m.0": 7.0, "m.1": 8.0}), parts=["m.0", "m.1"])
    assert (part.stat().st_mtime_ns, part.stat().st_ino) == written  # not written again
    assert first.stat().st_size < 5_000 < part.stat().st_size  # the parts' arrays live in their own files
    got = read_checkpoint(second)
    assert set(got) == {"w", "meta", "m.0.keys", "m.0.at", "m.1.keys", "m.1.at"}
    assert got["m.1.keys"].tolist() == [8.0] * 3 and got["w"][1] == 2.0


def test_parts_no_kept_checkpoint_refers_to_are_deleted(tmp_path):
    store = CheckpointStore(tmp_path, keep=2)
    store.write(with_parts(1, {"m.0": 1.0}), parts=["m.0"])
    store.write(with_parts(2, {"m.1": 2.0}), parts=["m.1"])
    assert sorted(p.name for p in tmp_path.glob("part-*")) == ["part-m.0.ckpt", "part-m.1.ckpt"]
    store.write(with_parts(3, {"m.1": 2.0}), parts=["m.1"])  # the first checkpoint is pruned, and m.0 with it
    assert sorted(p.name for p in tmp_path.glob("part-*")) == ["part-m.1.ckpt"]
    assert read_checkpoint(store.paths()[-1])["m.1.keys"][0] == 2.0


def test_a_damaged_or_missing_part_makes_its_checkpoints_unreadable(tmp_path):
    store = CheckpointStore(tmp_path, keep=3)
    good = store.write(with_parts(1, {"m.0": 1.0}), parts=["m.0"])
    store.write(with_parts(2, {"m.0": 1.0, "m.1": 2.0}), parts=["m.0", "m.1"])
    part = tmp_path / "part-m.1.ckpt"
    part.write_bytes(part.read_bytes()[:-5])
    path, got = CheckpointStore(tmp_path, keep=3).latest()
    assert path == good and got["w"][1] == 1.0
    part.unlink()
    assert CheckpointStore(tmp_path, keep=3).latest()[0] == good


def test_a_part_written_by_another_process_is_written_again_under_its_name(tmp_path):
    """A crash between a part and its checkpoint leaves a part no checkpoint refers to; the name
    is made again after the restore, with other content, and must not be taken for the old one."""
    CheckpointStore(tmp_path, keep=3).write(with_parts(1, {"m.0": 1.0}), parts=["m.0"])
    (tmp_path / "part-m.1.ckpt").write_bytes((tmp_path / "part-m.0.ckpt").read_bytes())  # the orphan
    store = CheckpointStore(tmp_path, keep=3)
    store.latest()
    path = store.write(with_parts(2, {"m.0": 1.0, "m.1": 5.0}), parts=["m.0", "m.1"])
    assert read_checkpoint(path)["m.1.keys"].tolist() == [5.0] * 3
