"""The pending store: one hand-out per id, ordered expiry, memory of applied and expired ids."""

import numpy as np

from consumer.pending import Entry, Memory, PendingStore, pack_strings, unpack_strings
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


def test_a_memory_restores_its_forgetting_order_from_any_order_of_its_state():
    memory = Memory.from_state(["x", "y", "z", "w"], np.array([3.0, 1.0, 3.0, 2.0]))
    assert sorted(memory.state()[0]) == ["w", "x", "y", "z"]
    memory.forget_before(2.5)
    assert ("x" in memory, "y" in memory, "z" in memory, "w" in memory) == (True, False, True, False)
    assert len(Memory.from_state([], np.array([]))) == 0


def test_strings_pack_without_pickles():
    strings = ["", "a", "ünïcode", "x" * 1000]
    assert unpack_strings(*pack_strings(strings)) == strings
