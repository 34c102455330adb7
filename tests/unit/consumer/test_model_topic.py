"""The model topic without a broker: encoding, deltas (bitwise exact, by property), chunks and
manifests, and a follower that only ever holds a complete, verified version.

The property tests are bounded for CI (profile "ci", see ``tests/conftest.py``)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from confluent_kafka import KafkaError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from consumer.errors import Fenced, PublishFailed
from consumer.model_topic import (
    ModelFollower,
    ModelPublisher,
    apply_delta,
    decode_state,
    delta,
    encode_state,
    newest_manifest,
    read_checkpoint,
)
from learners import make
from learners.inputs import Rows
from tests.fakes import FakeConsumer, FakeMessage, FakeProducer, LocalBroker

TOPIC = "model"
_SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)


class Producer(FakeProducer):
    """FakeProducer with the real client's ``partition`` argument; values copied, as librdkafka does."""

    def __init__(self, broker: LocalBroker) -> None:
        super().__init__(broker)
        self.lose_ack: set[bytes] = set()  # records that land but are reported as failed
        self.twice: set[bytes] = set()  # records a retry writes twice; the first is reported

    def produce(self, topic, value=None, key=None, partition=-1, on_delivery=None, headers=None) -> None:
        assert partition == 0
        if key in self.lose_ack:
            report = on_delivery
            on_delivery = lambda err, msg: report(KafkaError(KafkaError._MSG_TIMED_OUT), msg)  # noqa: E731
        super().produce(topic, None if value is None else bytes(value), key, headers, on_delivery)
        if key in self.twice:
            super().produce(topic, None if value is None else bytes(value), key, headers)


def same(a: dict, b: dict) -> bool:
    """Bitwise equal states: same names, dtypes, shapes and bytes."""
    return a.keys() == b.keys() and all(
        np.asarray(a[k]).dtype == np.asarray(b[k]).dtype and np.asarray(a[k]).shape == np.asarray(b[k]).shape
        and np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes() for k in a)


def model_state(n: int = 1000, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"format_version": np.array(1), "meta": np.array('{"learner": "test"}'),
            "counters": np.array([0, 0, 0], dtype=np.int64), "rule.w": rng.normal(size=n)}


def touch(state: dict, rng: np.random.Generator, k: int = 5) -> None:
    """A few labels' worth of change, in place, as a learner makes it."""
    state["rule.w"][rng.integers(0, state["rule.w"].size, k)] += rng.normal(size=k)
    state["counters"] += 1


@pytest.fixture
def broker() -> LocalBroker:
    b = LocalBroker()
    b.create(TOPIC)
    return b


def follower(broker: LocalBroker) -> ModelFollower:
    return ModelFollower(FakeConsumer(broker, "scorer"), TOPIC)


def keys(broker: LocalBroker) -> list[bytes]:
    return [m.key() for m in broker.messages(TOPIC)]


# ---------------------------------------------------------------------------------------- encoding


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


# ------------------------------------------------------------------------------------------ deltas

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


# ---------------------------------------------------------------------------------------- publisher


def test_a_publication_is_chunks_then_a_manifest_naming_them(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=1000)
    state = model_state(1000)
    published = publisher.publish(state, epoch=3, extra={"labels": 10})
    messages = broker.messages(TOPIC)
    n = published.chunks
    assert published.kind == "full" and published.version == 1 and n == -(-published.bytes // 1000) > 1
    assert [m.key() for m in messages[:-1]] == [f"model/1/{i}".encode() for i in range(n)]
    assert all(len(m.value()) <= 1000 for m in messages[:-1])
    assert messages[-1].key() == b"model/manifest/1"
    manifest = json.loads(messages[-1].value())
    assert manifest == {**manifest, "epoch": 3, "version": 1, "kind": "full", "base_version": None,
                        "snapshot_offset": 0, "first_offset": 0, "last_offset": n - 1, "chunks": n,
                        "bytes": published.bytes, "meta": {"learner": "test"}, "extra": {"labels": 10}}
    assert published.offsets == tuple(range(n)) and published.manifest_offset == n
    assert same(decode_state(b"".join(m.value() for m in messages[:-1])), state)


def test_a_transactional_publisher_writes_each_publication_in_one_transaction(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, chunk_bytes=1000, transactional=True)
    publisher.start(epoch=1, after_version=0)
    state = model_state(1000)
    publisher.publish(state, epoch=1)
    publisher.publish_checkpoint(state, epoch=1)
    assert producer.transactions == ["init", "begin", "commit", "begin", "commit"]
    producer.lose_ack.add(b"model/manifest/3")  # a record not delivered: the transaction is aborted
    with pytest.raises(PublishFailed) as failed:
        publisher.publish(state, epoch=1)
    assert type(failed.value) is PublishFailed and producer.transactions[-2:] == ["begin", "abort"]


def test_a_fenced_publisher_raises_fenced_and_writes_nothing(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, transactional=True)
    publisher.start(epoch=1, after_version=0)
    publisher.publish(model_state(), epoch=1)
    written = len(broker.messages(TOPIC))
    producer.fenced = True  # a newer trainer initialised the same transactional id
    with pytest.raises(Fenced):
        publisher.publish(model_state(), epoch=1)
    with pytest.raises(Fenced):
        publisher.publish_checkpoint(model_state(), epoch=1)
    assert len(broker.messages(TOPIC)) == written


def test_publisher_chooses_full_then_deltas_until_full_every(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, full_every=2)
    state, rng = model_state(), np.random.default_rng(1)
    kinds = []
    for _ in range(6):
        kinds.append(publisher.publish(state, epoch=1).kind)
        touch(state, rng)
    assert kinds == ["full", "delta", "delta", "full", "delta", "delta"]
    manifests = [json.loads(m.value()) for m in broker.messages(TOPIC) if m.key().startswith(b"model/manifest")]
    assert [m["base_version"] for m in manifests] == [None, 1, 2, None, 4, 5]
    assert manifests[2]["snapshot_offset"] == manifests[0]["first_offset"]
    assert manifests[5]["snapshot_offset"] == manifests[3]["first_offset"]


def test_publisher_sends_a_full_snapshot_when_the_delta_is_heavy_or_the_epoch_new(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC)
    state = model_state()
    assert publisher.publish(state, epoch=1).kind == "full"
    state["rule.w"][:] += 1.0
    assert publisher.publish(state, epoch=1).kind == "full"  # every element changed
    touch(state, np.random.default_rng(0))
    assert publisher.publish(state, epoch=1, kind="full").kind == "full"
    touch(state, np.random.default_rng(1))
    assert publisher.publish(state, epoch=2).kind == "full"
    touch(state, np.random.default_rng(2))
    assert publisher.publish(state, epoch=2).kind == "delta"
    with pytest.raises(ValueError, match="older"):
        publisher.publish(state, epoch=1)


def test_start_continues_the_numbering_with_a_full_snapshot(broker):
    publisher = ModelPublisher(lambda: Producer(broker), TOPIC)
    publisher.start(epoch=7, after_version=41)
    published = publisher.publish(model_state(), epoch=7)
    assert (published.version, published.epoch, published.kind) == (42, 7, "full")


def test_a_failed_delivery_raises_and_the_next_publication_is_full(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC)
    state, rng = model_state(), np.random.default_rng(0)
    publisher.publish(state, epoch=1)
    touch(state, rng)
    producer.fail = [KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)]
    with pytest.raises(PublishFailed, match="not delivered"):
        publisher.publish(state, epoch=1)
    touch(state, rng)
    published = publisher.publish(state, epoch=1)
    assert (published.version, published.kind) == (3, "full")


def test_an_unacknowledged_publication_times_out(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, timeout_s=0.05)
    producer.hold = True
    with pytest.raises(PublishFailed, match="not acknowledged"):
        publisher.publish(model_state(), epoch=1)
    assert broker.messages(TOPIC) == []


def test_a_new_full_snapshot_tombstones_the_chains_before_the_previous_one(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=4000, full_every=1)
    state, rng = model_state(), np.random.default_rng(0)
    for _ in range(4):  # versions 1 (full), 2 (delta), 3 (full), 4 (delta)
        publisher.publish(state, epoch=1)
        touch(state, rng)
    assert not [m for m in broker.messages(TOPIC) if m.value() is None]
    publisher.publish(state, epoch=1)  # version 5, full: versions 1 and 2 go
    tombstoned = {m.key() for m in broker.messages(TOPIC) if m.value() is None}
    assert tombstoned == {b"model/1/0", b"model/1/1", b"model/1/2", b"model/manifest/1", b"model/2/0",
                          b"model/manifest/2"}
    assert keys(broker)[-1] == b"model/manifest/5"  # the manifest comes after its tombstones


def test_a_failed_full_snapshot_is_tombstoned_later_and_the_chain_before_it_kept(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, chunk_bytes=4000, full_every=0)
    state = model_state()
    publisher.publish(state, epoch=1)
    publisher.publish(state, epoch=1)
    producer.lose_ack = {b"model/manifest/3"}
    with pytest.raises(PublishFailed):
        publisher.publish(state, epoch=1)  # version 1 tombstoned; 2 is the newest complete chain
    publisher.publish(state, epoch=1)  # version 4: version 3's records go, version 2's stay
    tombstoned = {m.key() for m in broker.messages(TOPIC) if m.value() is None}
    assert {k.split(b"/")[-2 if b"manifest" not in k else -1] for k in tombstoned} == {b"1", b"3"}
    assert b"model/manifest/3" in tombstoned and b"model/3/0" in tombstoned


# ---------------------------------------------------------------------------------------- follower


def test_a_follower_started_at_the_end_holds_the_publishers_newest_state(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000, full_every=4)
    state, rng = model_state(), np.random.default_rng(0)
    for _ in range(7):  # 1 full, 2-5 deltas, 6 full, 7 delta
        publisher.publish(state, epoch=1)
        touch(state, rng)
    touch(state, rng)
    last = publisher.publish(state, epoch=1)
    scorer = follower(broker)
    newest = scorer.start(timeout_s=1)
    assert newest["version"] == last.version and newest["snapshot_offset"] > 0  # from the second chain
    model = scorer.poll()
    assert model.version == last.version and same(model.state, state)
    assert scorer.poll() is None


def test_a_follower_keeps_up_publication_by_publication(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=2000, full_every=3)
    scorer = follower(broker)
    assert scorer.start(timeout_s=1) is None and scorer.poll() is None  # nothing published yet
    state, rng = model_state(), np.random.default_rng(0)
    for _ in range(12):  # full snapshots at 1, 5, 9: the first chain is tombstoned under the follower
        touch(state, rng)
        published = publisher.publish(state, epoch=1)
        model = scorer.poll()
        assert model.version == published.version and same(model.state, state)
        assert scorer._chunks == {}  # nothing buffered once a version is applied
    assert [m for m in broker.messages(TOPIC) if m.value() is None]


def test_a_follower_started_mid_chain_waits_for_the_next_full_snapshot(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, full_every=10)
    state, rng = model_state(), np.random.default_rng(0)
    publisher.publish(state, epoch=1)
    touch(state, rng)
    mid = publisher.publish(state, epoch=1).offsets[0]
    touch(state, rng)
    publisher.publish(state, epoch=1)
    scorer = follower(broker)
    scorer.seek(mid)
    assert scorer.poll() is None  # two deltas with no base
    touch(state, rng)
    publisher.publish(state, epoch=1, kind="full")
    assert same(scorer.poll().state, state)


def test_chunks_without_a_manifest_leave_the_follower_on_the_previous_version(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, chunk_bytes=2000)
    state = model_state()
    publisher.publish(state, epoch=1)
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    assert scorer.poll().version == 1
    for i in range(3):  # a trainer dies between its chunks and its manifest
        broker.append(TOPIC, b"x" * 2000, f"model/2/{i}".encode())
    assert scorer.poll() is None and scorer.version == 1
    successor = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=2000)  # the next trainer
    successor.start(epoch=2, after_version=newest_manifest(lambda: FakeConsumer(broker, "t"), TOPIC, timeout_s=1)
                    ["version"])
    touch(state, np.random.default_rng(0))
    assert successor.publish(state, epoch=2).version == 2  # reuses the dead trainer's chunk keys
    model = scorer.poll()
    assert (model.version, model.epoch) == (2, 2) and same(model.state, state)


@pytest.mark.parametrize("damage", ["flip", "drop", "manifest"])
def test_a_damaged_version_is_skipped_with_a_warning_and_its_deltas_wait_for_a_full(broker, caplog, damage):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    state, rng = model_state(), np.random.default_rng(0)
    publisher.publish(state, epoch=1)
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    scorer.poll()
    touch(state, rng, k=300)
    published = publisher.publish(state, epoch=1, kind="full")
    log = broker.log[(TOPIC, 0)]
    chunk = log[published.offsets[1]]
    if damage == "flip":
        chunk._value = chunk._value[:100] + bytes([chunk._value[100] ^ 1]) + chunk._value[101:]
    elif damage == "drop":
        chunk._key = b"model/2/99"
    else:
        log[published.manifest_offset]._value = b"{not json"
    touch(state, rng)
    publisher.publish(state, epoch=1)  # a delta against the damaged version
    with caplog.at_level(logging.WARNING, logger="consumer.model_topic"):
        assert scorer.poll() is None
    assert scorer.version == 1 and [r for r in caplog.records if r.levelno == logging.WARNING]
    touch(state, rng)
    publisher.publish(state, epoch=1, kind="full")
    assert same(scorer.poll().state, state)


def test_a_chunk_written_twice_by_a_retry_is_no_harm(broker):
    producer = Producer(broker)
    publisher = ModelPublisher(producer, TOPIC, chunk_bytes=3000)
    producer.twice = {b"model/1/0", b"model/1/3"}
    state = model_state()
    published = publisher.publish(state, epoch=1)
    assert published.chunks == 4 and keys(broker)[:6] == [b"model/1/0", b"model/1/0", b"model/1/1", b"model/1/2",
                                                           b"model/1/3", b"model/1/3"]  # past last_offset
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    assert same(scorer.poll().state, state)


class _Untouchable(FakeMessage):
    def value(self):
        raise AssertionError("a checkpoint's value was read")


def test_a_follower_skips_checkpoints_by_key_without_reading_them(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    state, rng = model_state(), np.random.default_rng(0)
    publisher.publish_checkpoint(state, epoch=1)  # version 1
    publisher.publish(state, epoch=1)  # 2, full
    touch(state, rng)
    publisher.publish_checkpoint(state, epoch=1)  # 3
    touch(state, rng)
    published = publisher.publish(state, epoch=1)  # 4, a delta against 2
    assert (published.kind, json.loads(broker.messages(TOPIC)[-1].value())["base_version"]) == ("delta", 2)
    log = broker.log[(TOPIC, 0)]
    log[:] = [_Untouchable(*vars(m).values()) if m.key().startswith(b"checkpoint/") else m for m in log]
    scorer = follower(broker)
    scorer.seek(0)
    model = scorer.poll()
    assert model.version == 4 and same(model.state, state)


def test_a_manifest_from_an_older_epoch_is_ignored(broker):
    old, new = ModelPublisher(Producer(broker), TOPIC), ModelPublisher(Producer(broker), TOPIC)
    state = model_state()
    new.start(epoch=2, after_version=0)
    new.publish(state, epoch=2)
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    assert scorer.poll().epoch == 2
    old.start(epoch=1, after_version=5)  # a trainer that does not know it was replaced
    old.publish(model_state(seed=9), epoch=1)
    assert scorer.poll() is None and scorer.model.epoch == 2


@pytest.mark.parametrize("partition_eof", [False, True])
def test_the_newest_manifest_is_found_behind_many_later_records(broker, partition_eof):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=100)
    publisher.publish(model_state(100), epoch=1)
    for i in range(500):  # e.g. a dead trainer's chunks: the search widens its window
        broker.append(TOPIC, b"x", f"model/2/{i}".encode())
    reader = lambda: FakeConsumer(broker, "t", partition_eof=partition_eof)  # noqa: E731
    assert newest_manifest(reader, TOPIC, timeout_s=2)["version"] == 1
    assert newest_manifest(reader, TOPIC, kind="checkpoint", timeout_s=2) is None
    empty = LocalBroker()
    empty.create(TOPIC)
    assert newest_manifest(lambda: FakeConsumer(empty, "t", partition_eof=partition_eof), TOPIC, timeout_s=2) is None


def test_a_follower_holds_what_a_real_learner_publishes_and_a_clone_scores_alike(broker):
    n, rng = 2**10, np.random.default_rng(0)
    learner = make("paa-1", n_features=n, seed=0)
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=2000)
    scorer = follower(broker)
    scorer.start(timeout_s=1)
    kinds = []
    for _ in range(4):
        rows = Rows.stack([(np.sort(rng.choice(n, 20, replace=False)), rng.normal(size=20)) for _ in range(5)], n)
        learner.learn_many(rows, rng.choice([-1, 1], 5), scored=False)
        kinds.append(publisher.publish(learner.state_dict(), epoch=1).kind)
    assert kinds == ["full", "delta", "delta", "delta"]
    clone = make("paa-1", n_features=n, seed=0)
    clone.load_state_dict(scorer.poll().state)
    np.testing.assert_array_equal(clone.score(rows).p, learner.score(rows).p)


# -------------------------------------------------------------------------------------- checkpoints


def test_read_checkpoint_returns_the_newest_complete_one(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    reader = lambda: FakeConsumer(broker, "restore")  # noqa: E731
    assert read_checkpoint(reader, TOPIC, timeout_s=1) is None
    first = model_state(seed=1)
    publisher.publish_checkpoint(first, epoch=1, extra={"offsets": {"features": [5]}})
    publisher.publish(model_state(seed=2), epoch=1)
    second = publisher.publish_checkpoint(model_state(seed=3), epoch=1)
    manifest, state = read_checkpoint(reader, TOPIC, timeout_s=1)
    assert manifest["version"] == second.version and same(state, model_state(seed=3))
    damaged = broker.log[(TOPIC, 0)][second.offsets[0]]
    damaged._value = b"y" + damaged._value[1:]  # the newest is corrupt: the one before is used
    manifest, state = read_checkpoint(reader, TOPIC, timeout_s=1)
    assert manifest["extra"] == {"offsets": {"features": [5]}} and same(state, first)


def with_parts(seed: int, parts: dict[str, float]) -> dict:
    state = model_state(seed=seed)
    for name, value in parts.items():
        state[f"{name}.keys"], state[f"{name}.at"] = np.full(500, value), np.arange(500.0)
    return state


def part_records(broker) -> dict[bytes, bytes | None]:
    """The newest value of each ``part/`` key (what compaction keeps)."""
    return {m.key(): m.value() for m in broker.log[(TOPIC, 0)] if m.key().startswith(b"part/")}


def test_a_checkpoint_part_is_published_once_and_read_back_into_each_checkpoint(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    reader = lambda: FakeConsumer(broker, "restore")  # noqa: E731
    first = publisher.publish_checkpoint(with_parts(1, {"m.0": 1.0}), epoch=1, parts=["m.0"])
    published = len(part_records(broker))
    assert published >= 3  # 8,000 bytes of arrays in chunks of 3,000
    second = publisher.publish_checkpoint(with_parts(2, {"m.0": 1.0, "m.1": 2.0}), epoch=1, parts=["m.0", "m.1"])
    assert len(part_records(broker)) == 2 * published  # m.0 not again
    assert second.bytes < first.bytes + 100  # a checkpoint's own payload holds no part
    manifest, state = read_checkpoint(reader, TOPIC, timeout_s=1)
    assert manifest["version"] == second.version and same(state, with_parts(2, {"m.0": 1.0, "m.1": 2.0}))
    assert set(manifest["parts"]) == {"m.0", "m.1"}


def test_a_part_no_kept_checkpoint_holds_is_tombstoned(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    publisher.publish_checkpoint(with_parts(1, {"m.0": 1.0}), epoch=1, parts=["m.0"])
    publisher.publish_checkpoint(with_parts(2, {"m.1": 2.0}), epoch=1, parts=["m.1"])
    assert all(v is not None for v in part_records(broker).values())  # m.0: the checkpoint before holds it
    publisher.publish_checkpoint(with_parts(3, {"m.1": 2.0}), epoch=1, parts=["m.1"])
    records = part_records(broker)
    gone = {k for k, v in records.items() if v is None}
    assert 2 * len(gone) == len(records) >= 6  # m.0's chunks, and m.1's still there
    _, state = read_checkpoint(lambda: FakeConsumer(broker, "restore"), TOPIC, timeout_s=1)
    assert same(state, with_parts(3, {"m.1": 2.0}))


def test_a_damaged_part_makes_the_checkpoint_unreadable_and_the_one_before_is_used(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    publisher.publish_checkpoint(with_parts(1, {"m.0": 1.0}), epoch=1, parts=["m.0"])
    publisher.publish_checkpoint(with_parts(2, {"m.0": 1.0, "m.1": 2.0}), epoch=1, parts=["m.0", "m.1"])
    newest_part = max((m for m in broker.log[(TOPIC, 0)] if m.key().startswith(b"part/")), key=lambda m: m.offset())
    newest_part._value = b"y" + newest_part._value[1:]
    _, state = read_checkpoint(lambda: FakeConsumer(broker, "restore"), TOPIC, timeout_s=1)
    assert same(state, with_parts(1, {"m.0": 1.0}))


def test_a_new_trainer_refers_to_the_parts_it_restored_without_publishing_them_again(broker):
    ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000).publish_checkpoint(
        with_parts(1, {"m.0": 1.0}), epoch=1, parts=["m.0"])
    manifest, _ = read_checkpoint(lambda: FakeConsumer(broker, "restore"), TOPIC, timeout_s=1)
    successor = ModelPublisher(Producer(broker), TOPIC, chunk_bytes=3000)
    successor.start(2, manifest["version"])
    successor.adopt_parts(manifest["parts"])
    before = len(part_records(broker))
    successor.publish_checkpoint(with_parts(2, {"m.0": 1.0, "m.1": 5.0}), epoch=2, parts=["m.0", "m.1"])
    assert len(part_records(broker)) == 2 * before
    _, state = read_checkpoint(lambda: FakeConsumer(broker, "restore"), TOPIC, timeout_s=1)
    assert same(state, with_parts(2, {"m.0": 1.0, "m.1": 5.0}))


def test_extra_that_is_not_json_is_refused_before_anything_is_sent(broker):
    publisher = ModelPublisher(Producer(broker), TOPIC)
    with pytest.raises(TypeError):
        publisher.publish(model_state(), epoch=1, extra={"when": object()})
    assert broker.messages(TOPIC) == [] and publisher.publish(model_state(), epoch=1).version == 1
