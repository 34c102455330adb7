"""Parked: labels that came before their requests wait once per id, bounded, and are given up by count."""

from consumer.metrics import Metrics
from consumer.records import Label
from consumer.steps.parked import Parked
from consumer.totals import Totals


def parked(max_waiting: int = 3) -> Parked:
    return Parked(max_waiting, Totals(Metrics()))


def test_a_label_waits_once_per_id_and_is_handed_out_once_its_request_comes():
    p = parked()
    p.park(Label("a", 1, None, 5.0), now=10.0)
    p.park(Label("a", -1, None, 6.0), now=11.0)  # a second label for the same request: a duplicate
    p.park(Label("b", 1, None, 7.0), now=12.0)
    assert p.totals.get("labels.duplicate") == 1 and len(p) == 2 and "a" in p
    assert p.take(["c", "a"]) == [Label("a", 1, None, 5.0)]
    assert p.take(["a"]) == [] and list(p.waiting) == ["b"]


def test_a_flood_is_bounded_by_dropping_the_oldest_and_counting_it():
    p = parked(max_waiting=3)
    for k in range(5):
        p.park(Label(f"x{k}", 1, None, 0.0), now=float(k))
    assert list(p.waiting) == ["x2", "x3", "x4"]
    assert p.totals.get("labels.overflow") == 2 and p.overflowed == 2


def test_labels_given_up_are_counted_unknown_and_the_rest_survive_a_checkpoint():
    p = parked()
    for rid in ("a", "b", "c"):
        p.park(Label(rid, 1, 2.5, 1.0), now=3.0)
    assert p.give_up(["a", "z"]) == 1 and p.totals.get("labels.unknown") == 1
    restored = parked()
    restored.load_state_dict(p.state_dict())
    assert restored.waiting == {"b": [Label("b", 1, 2.5, 1.0), 3.0, None], "c": [Label("c", 1, 2.5, 1.0), 3.0, None]}
