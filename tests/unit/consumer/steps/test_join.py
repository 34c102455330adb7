"""Join: a label meets its pending request once; the rest are counted or handed on; requests expire."""

import numpy as np

from consumer.config import LabelSettings
from consumer.metrics import Metrics
from consumer.pending import Entry, PendingStore
from consumer.records import Label
from consumer.steps.join import Join
from consumer.totals import Totals
from learners.inputs import Rows


def entry(requested_at: float, ttl_s: float = 60.0) -> Entry:
    rows = Rows.stack([(np.array([0]), np.array([1.0]))], 2)
    return Entry(rows, 0, 1, 0.5, 0.2, requested_at, requested_at + ttl_s, 1.0)


def join(**labels) -> tuple[Join, list, list, list]:
    learnt, unknown, retracted = [], [], []
    pending, totals = PendingStore(100, memory_s=600.0), Totals(Metrics())

    def learn(joined, now, outcome):
        learnt.append((outcome, [lab.id for _, lab in joined]))

    made = Join(pending, learn, totals, LabelSettings(**labels), unknown=unknown.append,
                retract=retracted.append, changed=lambda: None)
    return made, learnt, unknown, retracted


def test_each_label_is_learnt_once_and_the_others_are_counted_or_handed_on():
    j, learnt, unknown, _ = join()
    j.pending.add_many([("a", entry(0.0)), ("b", entry(0.0))], now=0.0)
    j([Label("a", 1, None, 1.0), Label("x", 1, None, 1.0), Label("a", -1, None, 2.0)], now=2.0)
    assert learnt == [("applied", ["a"])]
    assert j.totals.get("labels.duplicate") == 1 and [lab.id for lab in unknown] == ["x"]
    j.pending.expire(100.0)  # b's request expires unanswered
    j([Label("b", 1, None, 101.0)], now=101.0)
    assert j.totals.get("labels.expired") == 1 and learnt == [("applied", ["a"])]


def test_expired_requests_are_counted_learnt_with_the_default_label_where_set_and_retracted_where_asked():
    j, learnt, _, retracted = join(on_expiry="default", expiry_label=-1, retract_expired=True)
    j.pending.add_many([("a", entry(0.0)), ("b", entry(50.0))], now=50.0)
    j.expire(61.0)
    assert j.totals.get("label_requests_expired") == 1
    assert learnt == [("defaulted", ["a"])] and retracted == ["a"]
