"""A checkpoint part by part: namespaces, format versions, and the layouts written before."""

import json

import numpy as np
import orjson
import pytest

from consumer.errors import IncompatibleCheckpoint
from consumer.state import FORMAT_VERSION, gather, meta_of, pack_offsets, scatter, unpack_offsets, upgrade


class Part:
    def __init__(self, namespace: str, value: int, format_version: int = 1) -> None:
        self.namespace, self.value, self.format_version = namespace, value, format_version
        self.loaded: dict | None = None

    def state_dict(self) -> dict[str, np.ndarray]:
        return {"value": np.array(self.value), "nested.value": np.array(-self.value)}

    def load_state_dict(self, state) -> None:
        self.loaded = {k: int(v) for k, v in state.items()}


def test_each_part_gets_back_only_its_own_arrays():
    state = gather([Part("a", 1), Part("ab", 2)], {"role": "all"})
    assert sorted(state) == ["a.nested.value", "a.value", "ab.nested.value", "ab.value", "service.meta"]
    meta = meta_of(state)
    assert meta == {"role": "all", "format_version": FORMAT_VERSION, "formats": {"a": 1, "ab": 1}}
    a, ab = Part("a", 0), Part("ab", 0)
    scatter(state, [a, ab], "here")
    assert a.loaded == {"value": 1, "nested.value": -1} and ab.loaded == {"value": 2, "nested.value": -2}


def test_a_part_a_newer_build_wrote_is_refused_by_name_before_any_part_is_changed():
    state = gather([Part("a", 1), Part("b", 2, format_version=3)], {})
    a, b = Part("a", 0), Part("b", 0, format_version=2)
    with pytest.raises(IncompatibleCheckpoint, match="here: its b is of format version 3, this build reads 1 to 2"):
        scatter(state, [a, b], "here")
    assert a.loaded is None and b.loaded is None


def test_a_part_that_cannot_read_its_arrays_names_the_checkpoint():
    class Broken(Part):
        def load_state_dict(self, state) -> None:
            raise ValueError("rule: saved 'pa' vs this 'logistic'")

    with pytest.raises(IncompatibleCheckpoint, match="ckpt-7: rule: saved 'pa'"):
        scatter(gather([Part("a", 1)], {}), [Broken("a", 0)], "ckpt-7")


def layout_1() -> dict[str, np.ndarray]:
    return {"learner.w": np.arange(3.0), "budget.window": np.array(4), "budget.used": np.array(2),
            "service.recovery": np.frombuffer(b'{"recorded":[],"parked":{}}', dtype=np.uint8),
            "service.totals": np.array('{"records_scored": 9.0}'), "service.parked": np.frombuffer(b"[]", np.uint8),
            "service.meta": np.array(json.dumps({"format_version": 1, "role": "trainer"}))}


def test_layout_1_moves_the_service_arrays_to_their_parts_and_drops_the_retired_label_cap():
    state = upgrade(layout_1(), "old")
    assert sorted(state) == ["learner.w", "parked.labels", "recovery.decisions", "service.meta", "totals.counts"]
    assert orjson.loads(state["recovery.decisions"].tobytes()) == {"recorded": []}
    assert str(state["totals.counts"]) == '{"records_scored": 9.0}'
    assert meta_of(state) == {"format_version": FORMAT_VERSION, "role": "trainer"}
    assert upgrade(state, "new").keys() == state.keys()  # the current layout is left as it is


def test_layout_2_moves_the_labels_role_all_kept_waiting_into_the_parked_part():
    waiting = {"r1": [{"label": 1, "cost": None, "ts": 5.0}, {"label": -1, "cost": None, "ts": 6.0}]}
    state = {"recovery.decisions": np.frombuffer(orjson.dumps({"recorded": [], "parked": waiting}), dtype=np.uint8),
             "service.meta": np.array(json.dumps({"format_version": 2, "created_at": 9.0}))}
    state = upgrade(state, "old")
    assert orjson.loads(state["recovery.decisions"].tobytes()) == {"recorded": []}
    assert orjson.loads(state["parked.labels"].tobytes()) == [["r1", ["r1", 1, None, 5.0], 9.0]]  # the first waits


@pytest.mark.parametrize("version", [0, FORMAT_VERSION + 1, "2"])
def test_a_layout_this_build_does_not_know_is_refused(version):
    state = {**layout_1(), "service.meta": np.array(json.dumps({"format_version": version}))}
    with pytest.raises(IncompatibleCheckpoint, match=f"old: checkpoint format version {version}, this build reads"):
        upgrade(state, "old")


def test_offsets_round_trip_through_arrays():
    offsets = {("labels", 1): 7, ("features", 0): 5, ("features", 2): 0}
    packed = pack_offsets(offsets)
    assert packed["partitions"].tolist() == [0, 2, 1] and packed["next"].tolist() == [5, 0, 7]
    assert unpack_offsets(packed) == offsets
    assert unpack_offsets(pack_offsets({})) == {}
