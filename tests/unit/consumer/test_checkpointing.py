"""The checkpoint protocol: flush → snapshot → persist → commit → record, in the loop or beside it."""

import threading

import pytest

from consumer import checkpointing
from consumer.checkpoint import CheckpointPolicy
from consumer.checkpointing import Checkpoints, Snapshot
from consumer.clock import ManualClock
from consumer.errors import CheckpointError
from consumer.metrics import Metrics


class Sink:
    def __init__(self, steps: list, background: bool = False, fail: bool = False) -> None:
        self.steps, self.background, self.fail = steps, background, fail
        self.release = threading.Event()
        if not background:
            self.release.set()

    def persist(self, snapshot: Snapshot) -> str:
        assert self.release.wait(10)
        if self.fail:
            raise CheckpointError("the disk is full")
        self.steps.append(("persist", snapshot.offsets))
        return "file-1"

    def committed(self, snapshot: Snapshot) -> None:
        self.steps.append(("committed", snapshot.offsets))


def protocol(sink: Sink, steps: list, *, flushed: bool = True, every_s: float = 10.0, every_labels: int = 100):
    clock, metrics, offsets = ManualClock(), Metrics(), {("features", 0): 5}

    def flush(timeout_s: float) -> bool:
        steps.append(("flush", timeout_s))
        return flushed

    def snapshot() -> Snapshot:
        steps.append(("snapshot", dict(offsets)))
        return Snapshot(dict(offsets))

    made = Checkpoints(sink, policy=CheckpointPolicy(every_s, every_labels), clock=clock, metrics=metrics,
                       flush=flush, pending=lambda: 7, snapshot=snapshot,
                       commit=lambda committed: steps.append(("commit", committed)))
    return made, clock, metrics, offsets


def test_a_checkpoint_runs_its_five_steps_in_order_and_records_its_success():
    steps: list = []
    checkpoints, clock, metrics, _ = protocol(Sink(steps), steps)
    clock.advance(3)
    assert checkpoints.run() == "file-1"
    assert [name for name, _ in steps] == ["flush", "snapshot", "persist", "commit", "committed"]
    assert steps[0][1] == checkpointing.FLUSH_TIMEOUT_S and steps[3][1] == {("features", 0): 5}
    assert metrics.checkpoint_last_success._value.get() == clock.now()
    assert metrics.checkpoint_failures._value.get() == 0


@pytest.mark.parametrize("flushed, fail", [(False, False), (True, True)])
def test_a_flush_or_a_write_that_fails_commits_nothing_and_is_counted(flushed, fail):
    steps: list = []
    checkpoints, _, metrics, _ = protocol(Sink(steps, fail=fail), steps, flushed=flushed)
    with pytest.raises(CheckpointError, match="producer still holds 7 messages" if not flushed else "disk is full"):
        checkpoints.run()
    assert not any(name in ("commit", "committed") for name, _ in steps)
    assert metrics.checkpoint_failures._value.get() == 1


def test_a_due_checkpoint_is_persisted_beside_the_loop_and_commits_its_own_snapshot_once_durable():
    steps: list = []
    sink = Sink(steps, background=True)
    checkpoints, clock, _, offsets = protocol(sink, steps)
    checkpoints.tick()
    assert steps == []  # not due yet
    clock.advance(10)
    checkpoints.tick()  # due: flushed and snapshotted here, persisted in the writer thread
    assert checkpoints.writing
    offsets[("features", 0)] = 9  # the loop goes on
    checkpoints.tick()
    assert [name for name, _ in steps] == ["flush", "snapshot"]
    sink.release.set()
    checkpoints.finish(wait=True)
    assert not checkpoints.writing
    assert ("commit", {("features", 0): 5}) in steps  # the snapshot's offsets, not the loop's 9
    checkpoints.close()


def test_labels_make_a_checkpoint_due_and_a_snapshot_starts_their_count_again():
    steps: list = []
    checkpoints, _, _, _ = protocol(Sink(steps), steps, every_labels=3)
    checkpoints.labels += 2
    checkpoints.tick()
    assert steps == []
    checkpoints.labels += 1
    checkpoints.tick()
    assert [name for name, _ in steps][-1] == "committed" and checkpoints.labels == 0


def test_a_failed_due_checkpoint_keeps_the_loop_going_and_is_tried_again_an_interval_later():
    steps: list = []
    checkpoints, clock, metrics, _ = protocol(Sink(steps), steps, flushed=False)
    clock.advance(10)
    checkpoints.tick()  # fails: logged and counted, not raised
    assert metrics.checkpoint_failures._value.get() == 1
    steps.clear()
    clock.advance(5)
    checkpoints.tick()
    assert steps == []  # not due again before an interval has passed
    checkpoints.postpone()
    clock.advance(9)
    checkpoints.tick()
    assert steps == []
