"""The pending store: one hand-out per id, ordered expiry, memory of applied and expired ids."""

import tracemalloc

import numpy as np

from consumer.pending import Entry, Memory, PendingStore, fingerprints, pack_strings, unpack_strings
from learners.inputs import Rows


def entry(t: float, ttl: float = 10.0) -> Entry:
    return Entry(Rows.from_arrays([0, 1], [1], [2.0], 16), 0, 1, 0.5, 0.1, t, t + ttl, 1.0)


def test_take_hands_an_entry_out_once_then_remembers_it():
    store = PendingStore(max_entries=10, memory_s=100)
    first = entry(0)
    store.add("a", first)
    assert store.status("a") == "pending"
    assert store.take("a", now=1) is first
    assert store.status("a") == "applied" and "a" not in store
    assert store.take("a", now=2) is None and store.take("b", now=2) is None
    assert store.status("b") == "unknown"


def test_take_keeping_the_entry_hands_it_out_to_every_label():
    store = PendingStore(max_entries=10, memory_s=100)
    store.add("a", entry(0))
    assert store.take("a", now=1, keep=True) is store.take("a", now=2, keep=True) is not None
    assert store.status("a") == "pending" and "a" in store


def test_take_many_hands_each_pending_id_out_once_in_turn():
    store = PendingStore(max_entries=10, memory_s=100)
    a, b = entry(0), entry(1)
    store.add_many([("a", a), ("b", b)], now=1)
    assert store.take_many(["b", "x", "b", "a"], now=2) == [b, None, None, a]
    assert [store.status(rid) for rid in "abx"] == ["applied", "applied", "unknown"] and len(store) == 0
    store.add("c", entry(3))
    assert store.take_many(["c", "c"], now=4, keep=True) == [store.get("c")] * 2 and "c" in store.ids()


def test_compact_keeps_only_the_pending_rows_in_one_shared_copy():
    store = PendingStore(max_entries=10, memory_s=100)
    first = Rows.from_arrays([0, 1, 3, 4], [1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0], 16)
    second = Rows.from_arrays([0, 2, 3], [5, 6, 7], [5.0, 6.0, 7.0], 16)
    store.add_many([(f"a{k}", entry(0)._replace(rows=first, row=k)) for k in range(3)], now=0)
    store.add_many([(f"b{k}", entry(1)._replace(rows=second, row=k)) for k in range(2)], now=1)
    store.take_many(["a0", "a2", "b0"], now=2)
    store.compact()
    left = [store.get(rid) for rid in ("a1", "b1")]
    assert left[0].rows is left[1].rows and left[0].rows.n == 2 and left[0].rows.n_features == 16
    assert [e.rows.row(e.row)[1].tolist() for e in left] == [[2.0, 3.0], [7.0]]
    assert [(e.requested_at, e.predicted) for e in left] == [(0, 1), (1, 1)]
    PendingStore(max_entries=1, memory_s=1).compact()  # nothing pending: nothing to do


def test_expire_pops_in_request_order_and_forgets_after_memory():
    store = PendingStore(max_entries=10, memory_s=5)
    for i in range(4):
        store.add(f"r{i}", entry(float(i)))
    assert [rid for rid, _ in store.expire(now=11.5)] == ["r0", "r1"]
    assert store.status("r0") == "expired" and len(store) == 2
    store.expire(now=17.0)
    assert store.status("r0") == "unknown"


def test_a_full_store_pushes_out_its_oldest_entry():
    store = PendingStore(max_entries=2, memory_s=100)
    store.add("a", entry(0))
    store.add("b", entry(1))
    pushed = store.add("c", entry(2))
    assert [rid for rid, _ in pushed] == ["a"] and store.status("a") == "expired"
    pushed = store.add_many([("d", entry(3)), ("e", entry(3))], now=3)
    assert [rid for rid, _ in pushed] == ["b", "c"] and list(store.ids()) == ["d", "e"]


def test_state_round_trip_keeps_entries_and_memories():
    store = PendingStore(max_entries=10, memory_s=100)
    store.add("é-1", entry(0))
    block = Rows.from_arrays([0, 1, 3], [4, 3, 7], [9.0, 0.5, -1.0], 16)  # the request's batch: row 1 is b's
    store.add("b", Entry(block, 1, -1, 0.25, -0.3, 1.0, 11.0, 2.0))
    store.add("c", entry(2))
    store.take("c", now=3)
    copy = PendingStore(max_entries=10, memory_s=100)
    copy.load_state_dict(store.state_dict())
    assert copy.status("é-1") == "pending" and copy.status("c") == "applied"
    b = copy.get("b")
    idx, val = b.rows.row(b.row)
    assert idx.tolist() == [3, 7] and val.tolist() == [0.5, -1.0] and b.predicted == -1 and b.cost == 2.0


def test_an_id_applied_again_is_remembered_from_its_last_time_also_after_a_restore():
    store = PendingStore(max_entries=10, memory_s=5)
    for rid in ("a", "b", "c"):
        store.add(rid, entry(0.0, ttl=100))
    store.take_many(["a", "b"], now=1.0)
    store.add("a", entry(2.0, ttl=100))  # asked again, answered again later
    store.take_many(["a", "c"], now=3.0)
    restored = PendingStore(max_entries=10, memory_s=5)
    restored.load_state_dict(store.state_dict())
    for s in (store, restored):
        s.expire(now=7.0)  # forgets what was applied before 2.0: b, but not a
        assert [s.status(rid) for rid in "abc"] == ["applied", "unknown", "applied"]
        s.expire(now=8.5)
        assert [s.status(rid) for rid in "abc"] == ["unknown", "unknown", "unknown"]


def test_a_memory_of_ids_restores_its_forgetting_order_from_any_order():
    memory = Memory.from_ids(["x", "y", "z", "w"], np.array([3.0, 1.0, 3.0, 2.0]), seal_every=1.0)
    assert len(memory) == 4
    memory.forget_before(2.5)
    assert memory.holds(fingerprints(["x", "y", "z", "w"])).tolist() == [True, False, True, False]
    assert len(Memory.from_ids([], np.array([]), seal_every=1.0)) == 0


def test_a_memory_holds_each_id_exactly_from_its_time_across_segments_and_head():
    memory = Memory(seal_every=10.0)
    ids = [f"id-{k}" for k in range(1000)]
    for t in range(100):  # 10 ids a second: ten segments of 100, and a head
        memory.remember(fingerprints(ids[10 * t : 10 * t + 10]), float(t))
    assert len(memory.state_dict()["segments"]) == 9 and len(memory) == 1000
    others = fingerprints([f"other-{k}" for k in range(1000)])
    assert memory.holds(fingerprints(ids)).all() and not memory.holds(others).any()
    memory.forget_before(45.0)  # mid-segment: its older ids are no longer held, though still stored
    held = memory.holds(fingerprints(ids))
    assert held.tolist() == [k >= 450 for k in range(1000)] and len(memory) == 600
    memory.remember(fingerprints(["id-0"]), 100.0)  # remembered again: held from its new time
    assert memory.holds(fingerprints(["id-0", "id-1"])).tolist() == [True, False]
    memory.forget_before(1000.0)
    assert len(memory) == 0 and not memory.holds(fingerprints(ids)).any()


def test_a_fingerprint_ending_in_zero_bytes_survives_a_segment_and_a_restore():
    rid = next(f"z{k}" for k in range(100_000) if fingerprints([f"z{k}"])[0].endswith(b"\0"))
    memory = Memory(seal_every=1.0)
    memory.remember(fingerprints([rid]), 0.0)
    memory.remember(fingerprints(["later"]), 5.0)  # seals the first into a segment
    restored = Memory.from_state(memory.state_dict(), seal_every=1.0)
    for m in (memory, restored):
        assert m.holds(fingerprints([rid, "later", "never"])).tolist() == [True, True, False]


def test_a_part_never_changes_once_made_and_a_snapshot_adds_only_what_is_new():
    memory = Memory(seal_every=10.0)
    memory.remember(fingerprints(["a", "b"]), 0.0)
    first = memory.state_dict()
    first_parts = memory.parts()
    memory.remember(fingerprints(["c"]), 1.0)
    second = memory.state_dict()
    new = set(memory.parts()) - set(first_parts)
    assert set(first_parts) <= set(memory.parts()) and len(new) == 1
    for part in first_parts:
        assert first[f"{part}.keys"].tobytes() == second[f"{part}.keys"].tobytes()
    (log,) = new
    assert second[f"{log}.keys"].tobytes() == b"".join(fingerprints(["c"]))
    memory.remember(fingerprints(["d"]), 20.0)  # seals a, b and c into a segment: the logs go
    third = memory.state_dict()
    assert third["logs"].size == 1 and third["segments"].size == 1
    assert not set(memory.parts()) & (set(first_parts) | new)
    restored = Memory.from_state(third, seal_every=10.0)
    assert restored.holds(fingerprints(["a", "b", "c", "d", "e"])).tolist() == [True] * 4 + [False]
    restored.remember(fingerprints(["e"]), 21.0)
    restored.state_dict()
    assert not set(restored.parts()) & set(memory.parts()) - {str(n) for n in third["segments"].tolist()} \
        - {str(n) for n in third["logs"].tolist()}  # a restored memory never reuses a number


def test_a_remembered_id_costs_at_most_32_bytes():
    ids = [f"record-{k:012d}-with-a-long-identifier" for k in range(320_000)]
    tracemalloc.start()
    try:
        memory = Memory(seal_every=10.0)
        for t in range(320):  # one TTL of 320 s at 1,000 ids/s: 32 segments
            memory.remember(fingerprints(ids[1000 * t : 1000 * t + 1000]), float(t))
        memory.state_dict()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(memory) == len(ids) and held / len(ids) <= 32


def test_a_store_reads_a_checkpoint_written_with_the_ids_themselves():
    old = PendingStore(max_entries=10, memory_s=100).state_dict()
    for name in ("applied", "expired"):
        for key in [k for k in old if k.startswith(f"{name}.")]:
            del old[key]
    old["applied_ids"], old["applied_offsets"] = pack_strings(["a", "b"])
    old["applied_at"] = np.array([1.0, 2.0])
    old["expired_ids"], old["expired_offsets"] = pack_strings(["c"])
    old["expired_at"] = np.array([3.0])
    store = PendingStore(max_entries=10, memory_s=100)
    store.load_state_dict(old)
    assert store.statuses(["a", "b", "c", "d"]) == ["applied", "applied", "expired", "unknown"]


def test_a_label_more_than_a_ttl_after_the_first_is_unknown_again():
    store = PendingStore(max_entries=10, memory_s=60)
    store.add("a", entry(0.0))
    store.take("a", now=1.0)
    store.expire(now=60.5)
    assert store.status("a") == "applied"
    store.expire(now=61.5)  # one TTL after it was applied
    assert store.status("a") == "unknown"


def test_strings_pack_without_pickles():
    strings = ["", "a", "ünïcode", "x" * 1000]
    assert unpack_strings(*pack_strings(strings)) == strings
