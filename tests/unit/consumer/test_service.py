"""The service loop, driven iteration by iteration against an in-memory broker."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from consumer import clients as clients_module
from consumer import learner as learner_module
from consumer import output_ends
from consumer.errors import CheckpointError, IncompatibleCheckpoint, ProduceFailed
from learners.budget import BudgetController
from tests.bad_records import BAD_LABELS, bad_features
from tests.unit.consumer.conftest import Harness

X = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.5], [0.3, 0.0, 0.0, 1.0]]


def feed(h: Harness, n: int, prefix: str = "r") -> dict[str, int]:
    """n feature records with a learnable label; returns the ground truth by id."""
    rng = np.random.default_rng(len(prefix) + n)
    truth = {}
    for i in range(n):
        x = rng.standard_normal(4)
        rid = f"{prefix}{i}"
        truth[rid] = 1 if x[0] + 0.5 * x[1] > 0 else -1
        h.feature(rid, x.tolist())
    return truth


def test_batch_is_scored_and_predictions_and_requests_emitted(harness):
    harness.service.start()
    feed(harness, 50)
    harness.service.run_once()
    predictions = harness.out("predictions")
    assert [p["id"] for p in predictions] == [f"r{i}" for i in range(50)]
    requested = harness.requested_ids()
    assert requested == [p["id"] for p in predictions if p["label_requested"]]
    assert len(harness.service.pending) == len(requested) > 0
    assert harness.service.offsets.next[("features", 0)] == 50
    request = harness.out("label-requests")[0]
    assert set(request) == {"v", "id", "features", "prediction", "score", "probability", "uncertainty", "cost",
                            "requested_at", "expires_at", "model_version", "source"}
    assert request["source"] == f"features:0:{int(request['id'][1:])}"
    assert [p["source"] for p in predictions] == [f"features:0:{i}" for i in range(50)]
    assert request["expires_at"] - request["requested_at"] == harness.settings.labels.ttl_s
    sent = {orjson.loads(v)["id"]: orjson.loads(v)["features"] for v in harness.broker.values("features")}
    made = {p["id"]: p for p in predictions}
    for request in harness.out("label-requests"):  # each request: its record's features and decision
        rid, prediction = request["id"], made[request["id"]]
        assert request["features"] == sent[rid]
        assert (request["prediction"], request["score"], request["probability"]) == (
            prediction["label"], prediction["score"], prediction["probability"])
        assert request["uncertainty"] == 1 / (1 + abs(request["score"]))
        entry = harness.service.pending.get(rid)
        np.testing.assert_array_equal(entry.rows.row(entry.row)[1], [x for x in sent[rid] if x != 0])
        assert entry.probability == request["probability"]


def test_decisions_are_deterministic_per_id(harness, tmp_path):
    harness.service.start()
    feed(harness, 40)
    harness.service.run_once()
    twin = Harness(tmp_path / "twin")
    twin.service.start()
    feed(twin, 40)
    twin.service.run_once()
    assert harness.requested_ids() == twin.requested_ids()


def test_label_joins_its_request_and_is_applied_once(harness):
    h = harness
    h.service.start()
    truth = feed(h, 60)
    h.service.run_once()
    ids = h.requested_ids()
    for rid in ids:
        h.label(rid, truth[rid])
    h.service.run_once()
    assert h.service.learner.labels_ == len(ids)
    assert h.service.totals.get("labels.applied") == len(ids)
    w = h.service.learner.rule.w_.copy()
    for rid in ids[:5]:
        h.label(rid, truth[rid])  # the same labels again
    h.service.run_once()
    assert h.service.totals.get("labels.duplicate") == 5
    assert h.service.learner.labels_ == len(ids)
    np.testing.assert_array_equal(h.service.learner.rule.w_, w)
    assert len(h.service.pending) == 0


def test_a_label_again_is_a_duplicate_for_one_ttl_across_a_restart_and_unknown_after(harness):
    h = harness
    first = h.service
    first.start()
    truth = feed(h, 60)
    first.run_once()
    ids = h.requested_ids()
    for rid in ids:
        h.label(rid, truth[rid])
    first.run_once()
    first.checkpoint()  # the memory of applied ids goes to parts of its own
    assert list((h.tmp_path / "ckpt").glob("part-pending.applied.*"))
    second = h.new_service()  # a crash after the checkpoint
    second.start()
    h.clock.advance(h.settings.labels.ttl_s - 1)
    h.label(ids[0], truth[ids[0]])
    second.run_once()
    assert second.totals.get("labels.duplicate") == 1 and second.learner.labels_ == len(ids)
    h.clock.advance(2)  # one TTL after the labels: forgotten, so unknown, and still not applied
    second.run_once()
    h.label(ids[1], truth[ids[1]])
    second.run_once()
    assert second.totals.get("labels.unknown") == 1 and second.learner.labels_ == len(ids)


def test_labels_for_several_batches_teach_their_own_records_in_arrival_order(harness):
    h = harness
    h.service.start()
    truth = feed(h, 30)
    h.service.run_once()
    truth |= feed(h, 30, prefix="ss")  # other features (feed seeds by prefix and count)
    h.service.run_once()
    requests = {r["id"]: r for r in h.out("label-requests")}
    first, second = ([rid for rid in requests if rid.startswith(p)] for p in ("r", "ss"))
    order = [rid for pair in zip(second, first, strict=False) for rid in pair]  # across the two batches
    assert len(order) >= 10
    for rid in order:
        h.label(rid, truth[rid])
    h.service.run_once()
    reference = learner_module.build_learner(h.settings)
    reference.learn_many([requests[rid]["features"] for rid in order], [truth[rid] for rid in order],
                         predicted=reference.encode([requests[rid]["prediction"] for rid in order]))
    assert h.service.learner.labels_ == len(order)
    np.testing.assert_array_equal(h.service.learner.rule.w_, reference.rule.w_)


def test_a_checkpoint_lets_the_pending_entries_of_many_batches_share_one_copy_of_their_rows(harness):
    h = harness
    h.service.start()
    feed(h, 30)
    h.service.run_once()
    feed(h, 30, prefix="ss")
    h.service.run_once()
    entries = [h.service.pending.get(rid) for rid in h.requested_ids()]
    assert len({id(e.rows) for e in entries}) == 2  # a copy per batch
    before = [e.rows.row(e.row)[1].tolist() for e in entries]
    h.service.checkpoint()
    entries = [h.service.pending.get(rid) for rid in h.requested_ids()]
    assert len({id(e.rows) for e in entries}) == 1 and entries[0].rows.n == len(entries)
    assert [e.rows.row(e.row)[1].tolist() for e in entries] == before


def test_duplicates_all_applies_every_label(tmp_path):
    h = Harness(tmp_path, labels={"duplicates": "all"})
    h.service.start()
    truth = feed(h, 30)
    h.service.run_once()
    rid = h.requested_ids()[0]
    h.label(rid, truth[rid])
    h.label(rid, truth[rid])
    h.service.run_once()
    assert h.service.totals.get("labels.applied") == 2


def test_label_for_unknown_id_is_counted_not_applied(harness):
    harness.service.start()
    harness.label("never-seen", 1)
    harness.service.run_once()
    assert harness.service.totals.get("labels.unknown") == 1
    assert harness.service.learner.labels_ == 0


def test_labels_at_ten_times_the_record_rate_are_counted_by_reason_and_nothing_grows_with_them(harness):
    h = harness
    h.service.start()
    truth = feed(h, 100)
    h.service.run_once()
    asked = h.requested_ids()
    stale = asked[: len(asked) // 2]
    h.clock.advance(h.settings.labels.ttl_s + 1)
    h.service.run_once()  # the first half of the requests expire unanswered
    feed(h, 100, prefix="n")
    h.service.run_once()
    fresh = h.requested_ids()[len(asked):]
    labels = [rid for rid in stale + fresh for _ in range(3)]  # each answered three times
    labels += [f"ghost{i}" for i in range(2000 - len(labels))]  # the rest for ids never requested
    for rid in labels:
        h.label(rid, truth.get(rid, 1))
    h.service.run_once()
    totals, pending = h.service.totals.get, h.service.pending
    assert totals("labels.applied") == len(fresh) and totals("labels.duplicate") == 2 * len(fresh)
    assert totals("labels.expired") == 3 * len(stale)
    assert totals("labels.unknown") == 2000 - 3 * (len(stale) + len(fresh))
    # what is remembered is one entry per request, whatever the labels: none for an unknown id
    assert len(pending._applied) == len(fresh) and len(pending._expired) <= len(asked)
    assert not h.service.parked


def test_expired_request_makes_a_late_label_expired(harness):
    h = harness
    h.service.start()
    truth = feed(h, 20)
    h.service.run_once()
    ids = h.requested_ids()
    h.clock.advance(h.settings.labels.ttl_s + 1)
    h.service.run_once()
    assert len(h.service.pending) == 0
    assert h.service.totals.get("label_requests_expired") == len(ids)
    h.label(ids[0], truth[ids[0]])
    h.service.run_once()
    assert h.service.totals.get("labels.expired") == 1
    assert h.service.learner.labels_ == 0


def test_on_expiry_default_learns_the_expiry_label(tmp_path):
    h = Harness(tmp_path, labels={"on_expiry": "default", "expiry_label": -1, "ttl_s": 10})
    h.service.start()
    feed(h, 10)
    h.service.run_once()
    n = len(h.requested_ids())
    h.clock.advance(11)
    h.service.run_once()
    assert h.service.totals.get("labels.defaulted") == n
    assert h.service.learner.labels_ == n


def test_retract_expired_produces_a_tombstone_per_request(tmp_path):
    h = Harness(tmp_path, labels={"retract_expired": True, "ttl_s": 10})
    h.service.start()
    feed(h, 10)
    h.service.run_once()
    ids = h.requested_ids()
    h.clock.advance(11)
    h.service.run_once()
    h.service.io.emitter.serve()
    tombstones = [m.key().decode() for m in h.broker.messages("label-requests") if m.value() is None]
    assert tombstones == ids


BAD_RECORDS = bad_features(4)


def test_every_kind_of_bad_record_reaches_the_dead_letter_topic_while_good_ones_flow(harness):
    h = harness
    h.service.start()
    h.feature("good-1", X[0])
    for reason, value in BAD_RECORDS.items():
        h.raw_feature(value, key=reason.encode())
    h.feature("good-2", X[1])
    h.service.run_once()
    assert [p["id"] for p in h.out("predictions")] == ["good-1", "good-2"]
    dead = h.broker.messages("dead-letters")
    assert [dict(m.headers())["activestream.dlq.reason"].decode() for m in dead] == list(BAD_RECORDS)
    for msg, (reason, value) in zip(dead, BAD_RECORDS.items(), strict=True):
        headers = dict(msg.headers())
        assert msg.value() == value and msg.key() == reason.encode()
        assert headers["activestream.dlq.topic"] == b"features"
        assert headers["activestream.dlq.partition"] == b"0"
        assert int(headers["activestream.dlq.offset"]) >= 1
    assert h.service.totals.get("dead_letters.features.malformed_json") == 1
    assert h.service.offsets.next[("features", 0)] == len(BAD_RECORDS) + 2


def test_every_kind_of_bad_label_reaches_the_dead_letter_topic(harness):
    harness.service.start()
    for reason, value in BAD_LABELS.items():
        harness.broker.append("labels", value, reason.encode())
    harness.service.run_once()
    harness.deliver()
    dead = harness.broker.messages("dead-letters")
    assert [dict(m.headers())["activestream.dlq.reason"].decode() for m in dead] == list(BAD_LABELS)
    assert [m.value() for m in dead] == list(BAD_LABELS.values())
    assert harness.service.totals.get("dead_letters.labels.unknown_class") == 1


def test_budget_caps_requests_in_every_window_and_refreshes_in_the_next(tmp_path):
    h = Harness(tmp_path, labels={"budget": 3, "budget_window_s": 100, "clock_tolerance_s": 100})
    h.service.start()
    for i in range(40):
        h.feature(f"a{i}", X[i % 4], ts=h.clock.now() + i)
    h.service.run_once()
    first = len(h.requested_ids())
    assert 1 <= first <= 3  # the model is fresh: every record is uncertain, the cap holds
    assert h.service.metrics.registry.get_sample_value("activestream_label_budget_remaining") == 3 - first
    h.clock.advance(150)  # the next window
    for i in range(40):
        h.feature(f"b{i}", X[i % 4], ts=h.clock.now() + i)
    h.service.run_once()
    assert first < len(h.requested_ids()) <= first + 3


def test_budget_cap_holds_across_a_restart(tmp_path):
    h = Harness(tmp_path, labels={"budget": 4, "budget_window_s": 3600})
    h.service.start()
    for i in range(60):
        h.feature(f"a{i}", X[i % 4], ts=h.clock.now())
    h.service.run_once()
    before = len(h.requested_ids())
    h.service.checkpoint()
    h.service.close(final_checkpoint=False)
    h.service = h.new_service()
    h.service.start()
    assert h.service.learner.budget.requests == before  # restored, not cold-started
    h.clock.advance(60)  # the same window
    for i in range(200):
        h.feature(f"b{i}", X[i % 4], ts=h.clock.now())
    h.service.run_once()
    assert len(h.requested_ids()) <= 4


def test_query_rate_target_drives_decisions_from_the_first_record(tmp_path):
    h = Harness(tmp_path, query_rate_target=0.05)
    h.service.start()
    feed(h, 1000)  # no label comes back: the fresh model stays unsure of everything
    h.service.run_once()
    requests = h.out("label-requests")
    assert len(requests) <= 1.2 * 0.05 * 1000
    assert all(r["probability"] <= 0.5 for r in requests)  # what the request carries: after the controller
    sample = h.service.metrics.registry.get_sample_value
    assert sample("activestream_query_rate_aimed") == 0.05 and sample("activestream_budget_warmup_debt") == 0
    assert sample("activestream_query_knob") > 0 and 0 < sample("activestream_query_rate_recent") < 0.1


def test_a_boosted_warmup_aims_higher_first_and_shows_its_debt(tmp_path):
    h = Harness(tmp_path, query_rate_target=0.05, budget_warmup=400, budget_warmup_boost=4.0)
    h.service.start()
    feed(h, 1000)
    h.service.run_once()
    sample = h.service.metrics.registry.get_sample_value
    assert sample("activestream_query_rate_aimed") == pytest.approx(0.2)  # still warming up: 4 × 5 %
    assert sample("activestream_budget_warmup_debt") == pytest.approx(1000 * (0.2 - 0.05))
    assert 0.1 * 1000 <= len(h.out("label-requests")) <= 0.3 * 1000


def test_records_stamped_decades_off_do_not_move_the_budget_window(tmp_path):
    h = Harness(tmp_path, labels={"budget": 3, "budget_window_s": 100, "clock_tolerance_s": 100})
    h.service.start()
    for i in range(40):  # one producer's clock is a century ahead, another's decades behind
        h.feature(f"a{i}", X[i % 4], ts=h.clock.now() + (3.2e9 if i % 3 == 0 else -1.6e9 if i % 3 == 1 else 0))
    h.service.run_once()
    assert h.service.learner.budget.clock <= h.clock.now() + h.settings.labels.clock_tolerance_s
    assert len(h.requested_ids()) <= 3
    assert h.service.metrics.registry.get_sample_value("activestream_label_budget_remaining") >= 0


def test_one_record_stamped_in_the_future_does_not_starve_the_windows_after_it(tmp_path):
    # 50 requests per 10 s window; 3,000 records over 30 s, the 200th stamped 2100-01-01
    h = Harness(tmp_path, labels={"budget": 50, "budget_window_s": 10, "clock_tolerance_s": 10})
    h.service.start()
    rng = np.random.default_rng(0)
    start, sent = h.clock.now(), {}
    for second in range(30):
        for i in range(100):
            rid = f"s{second}-{i}"
            sent[rid] = start + second
            ts = 4_102_444_800.0 if second == 1 and i == 99 else start + second
            h.feature(rid, rng.standard_normal(4).tolist(), ts=ts)
        h.service.run_once()
        h.clock.advance(1.0)
    per_window = np.bincount([int((sent[r] - start) // 10) for r in h.requested_ids()], minlength=3)
    assert per_window.tolist() == [50, 50, 50]


def test_cost_budget_plans_with_the_expected_cost(tmp_path):
    h = Harness(tmp_path, labels={"cost_budget": 10.0, "budget_window_s": 3600,
                                  "cost_per_class": {"1": 4.0, "-1": 1.0}})
    h.service.start()
    feed(h, 300)
    h.service.run_once()
    assert 1 <= len(h.requested_ids()) <= 10.0 / 2.5  # 2.5: the mean class cost, no label back yet


def test_a_duplicate_feature_id_is_not_requested_twice(harness):
    harness.service.start()
    harness.feature("same", X[0])
    harness.feature("other", X[1])
    harness.feature("same", X[0])
    harness.service.run_once()
    assert harness.requested_ids() == ["same", "other"]  # in the order of their first record
    assert len(harness.out("predictions")) == 3
    assert harness.service.totals.get("label_requests_suppressed") == 1


def test_importance_weighted_totals_sum_inverse_probabilities(harness):
    h = harness
    h.service.start()
    truth = feed(h, 80)
    h.service.run_once()
    requests = h.out("label-requests")
    for r in requests:
        h.label(r["id"], truth[r["id"]])
    h.service.run_once()
    weights = np.array([1 / r["probability"] for r in requests])
    mistakes = np.array([r["prediction"] != truth[r["id"]] for r in requests])
    assert h.service.totals.get("importance_weighted_labels") == pytest.approx(weights.sum())
    assert h.service.totals.get("importance_weighted_mistakes") == pytest.approx(weights[mistakes].sum())
    assert h.service.totals.get("labelled_mistakes") == mistakes.sum()


def test_an_importance_weighted_learner_learns_each_label_with_its_request_probability(tmp_path):
    """Under IWAL (``paa-1-iwal``) a label asked with probability q is learnt with weight 1/q: the
    service's model equals one taught the same labels with those probabilities."""
    from learners import make

    h = Harness(tmp_path, learner="paa-1-iwal", learner_params={"mellowness": 1e-3})
    h.service.start()
    truth: dict[str, int] = {}
    labelled = 0
    for prefix in ("a", "b", "c"):  # each batch is decided by the model the labels before it taught
        truth |= feed(h, 100, prefix=prefix)
        h.service.run_once()
        requests = h.out("label-requests")
        for r in requests[labelled:]:
            h.label(r["id"], truth[r["id"]])
        labelled = len(requests)
        h.service.run_once()
    requests = h.out("label-requests")
    assert 0 < len(requests) < 300 and min(r["probability"] for r in requests) < 0.5
    taught = make("paa-1-iwal", n_features=4, mellowness=1e-3)
    rows = np.array([r["features"] for r in requests])
    codes = taught.encode([truth[r["id"]] for r in requests])
    predicted = taught.encode([r["prediction"] for r in requests])
    taught.learn_many(rows, codes, predicted=predicted, encoded=True,
                      probability=np.array([r["probability"] for r in requests]))
    np.testing.assert_allclose(h.service.learner.rule.S_, taught.rule.S_, rtol=1e-12)
    unweighted = make("paa-1-iwal", n_features=4, mellowness=1e-3)
    unweighted.learn_many(rows, codes, predicted=predicted, encoded=True)
    assert not np.allclose(h.service.learner.rule.S_, unweighted.rule.S_)


def test_labelled_records_count_applied_labels_by_true_and_predicted_class(harness):
    h = harness
    h.service.start()
    truth = feed(h, 80)
    h.service.run_once()
    requests = h.out("label-requests")
    for r in requests:
        h.label(r["id"], truth[r["id"]])
    h.service.run_once()
    sample = h.service.metrics.registry.get_sample_value
    for actual in (-1, 1):
        for predicted in (-1, 1):
            want = sum(1 for r in requests if truth[r["id"]] == actual and r["prediction"] == predicted)
            got = sample("activestream_labelled_records_total", {"class": str(actual), "predicted": str(predicted),
                                                                 "correct": "true" if actual == predicted else "false"})
            assert (got or 0.0) == want, (actual, predicted)
    mistakes = sum(1 for r in requests if r["prediction"] != truth[r["id"]])
    assert 0 < mistakes < len(requests)  # both cells of the diagonal and off it are exercised
    counted = sum(v for k, v in h.service.totals.values.items() if k.startswith("labelled_records."))
    assert counted == len(requests) == h.service.totals.get("labels.applied")


def test_labels_learnt_by_default_on_expiry_are_not_counted_as_labelled(tmp_path):
    h = Harness(tmp_path, labels={"ttl_s": 10, "on_expiry": "default", "expiry_label": -1})
    h.service.start()
    feed(h, 30)
    h.service.run_once()
    h.clock.advance(11)
    h.service.run_once()
    assert h.service.totals.get("labels.defaulted") > 0
    assert not [k for k in h.service.totals.values if k.startswith("labelled_records.")]


def test_series_known_in_advance_exist_at_zero_before_any_record(harness):
    sample = harness.service.metrics.registry.get_sample_value
    assert sample("activestream_dead_letters_total", {"reason": "malformed_json", "topic": "features"}) == 0
    assert sample("activestream_dead_letters_total", {"reason": "unknown_class", "topic": "labels"}) == 0
    for outcome in ("applied", "duplicate", "expired", "unknown", "defaulted"):
        assert sample("activestream_labels_total", {"outcome": outcome}) == 0
    assert sample("activestream_produce_errors_total", {"topic": "predictions"}) == 0
    assert sample("activestream_predictions_total", {"class": "-1"}) == 0
    assert sample("activestream_labelled_records_total", {"class": "1", "predicted": "-1", "correct": "false"}) == 0
    assert sample("activestream_labelled_records_total", {"class": "1", "predicted": "1", "correct": "true"}) == 0


def test_what_alerts_compare_against_is_exported(tmp_path):
    sample = lambda h, name: h.service.metrics.registry.get_sample_value(name)  # noqa: E731
    unset = Harness(tmp_path / "unset")
    assert sample(unset, "activestream_label_budget_requests") == float("inf")
    assert np.isnan(sample(unset, "activestream_query_rate_target"))
    assert sample(unset, "activestream_checkpoint_interval_seconds") == 30.0
    assert sample(unset, "activestream_dead_letter_ratio_limit") == 0.01
    set_ = Harness(tmp_path / "set", labels={"budget": 25}, query_rate_target=0.2, checkpoint={"every_s": 12},
                   dead_letter_ratio_limit=0.05)
    assert sample(set_, "activestream_label_budget_requests") == 25
    assert sample(set_, "activestream_query_rate_target") == 0.2
    assert sample(set_, "activestream_checkpoint_interval_seconds") == 12
    assert sample(set_, "activestream_dead_letter_ratio_limit") == 0.05
    assert sample(set_, "process_start_time_seconds") > 0


def test_restart_from_checkpoint_resumes_offsets_with_the_same_model(harness):
    h = harness
    h.service.start()
    truth = feed(h, 40)
    h.service.run_once()
    for rid in h.requested_ids()[:10]:
        h.label(rid, truth[rid])
    h.service.run_once()
    h.service.checkpoint()
    before = h.service.learner.state_dict()
    pending = len(h.service.pending)
    h.service.close(final_checkpoint=False)

    again = h.new_service()
    again.start()
    after = again.learner.state_dict()
    for key in before:
        if key != "meta":
            np.testing.assert_array_equal(before[key], after[key], err_msg=key)
    assert len(again.pending) == pending
    assert again.offsets.next[("features", 0)] == 40 and again.offsets.next[("labels", 0)] == 10
    n_predictions = len(h.out("predictions"))
    again.run_once()
    assert len(h.out("predictions")) == n_predictions  # nothing scored twice
    feed(h, 5, prefix="new")
    again.run_once()
    assert [p["id"] for p in h.out("predictions")[n_predictions:]] == [f"new{i}" for i in range(5)]


def test_crash_after_checkpoint_keeps_decisions_and_applies_each_label_once(harness):
    h = harness
    first = h.service
    first.start()
    feed(h, 30, prefix="a")
    first.run_once()
    first.checkpoint()
    feed(h, 30, prefix="b")
    first.run_once()  # decided after the checkpoint
    b_requests = [r for r in h.requested_ids() if r.startswith("b")]
    for rid in b_requests:
        h.label(rid, 1)
    first.run_once()
    first.io.emitter.serve()
    labels_before_crash = first.learner.labels_
    w_before_crash = first.learner.rule.w_.copy()
    outputs_before = (len(h.out("predictions")), len(h.out("label-requests")))
    # crash: no checkpoint, nothing closed cleanly
    second = h.new_service()
    second.start()
    assert len(second.recovery) == 30
    for _ in range(3):
        second.run_once()
    assert second.learner.labels_ == labels_before_crash
    np.testing.assert_allclose(second.learner.rule.w_, w_before_crash, rtol=1e-12, atol=1e-12)
    assert (len(h.out("predictions")), len(h.out("label-requests"))) == outputs_before  # nothing produced twice
    assert second.totals.get("labels.applied") == labels_before_crash
    assert second.totals.get("labels.unknown") == 0
    assert second.totals.get("label_requests") == len(h.requested_ids())  # requests kept are counted once
    assert second.totals.get("records_scored") == 60


def test_backpressure_holds_the_decided_batch_and_pauses_features(tmp_path):
    h = Harness(tmp_path, max_in_flight=10)
    h.service.start()
    h.hold(True)
    feed(h, 8)
    h.service.run_once()  # 8+ messages in flight, not acknowledged
    feed(h, 8, prefix="s")
    h.service.run_once()
    assert h.service.emit.batch is not None and h.service.emit.paused
    assert h.service.metrics.backpressure._value.get() >= 1
    h.hold(False)
    h.service.run_once()
    h.service.run_once()
    h.service.io.emitter.serve()
    assert h.service.emit.batch is None and not h.service.emit.paused
    assert len(h.out("predictions")) == 16


def test_the_next_batch_is_consumed_and_scanned_while_one_is_decided(tmp_path):
    h = Harness(tmp_path, batch_size=4)
    h.service.start()
    feed(h, 10)
    h.service.run_once()
    ahead = h.service.features_read.ahead
    assert [m.key() for m in ahead.messages] == [b"r4", b"r5", b"r6", b"r7"]
    ahead.scan.result()
    assert ahead.job.status.tolist() == [0, 0, 0, 0]  # the compiled scan read all four
    assert [p["id"] for p in h.out("predictions")] == [f"r{i}" for i in range(4)]
    h.service.run_once()
    h.service.run_once()
    h.service.run_once()
    assert h.service.features_read.ahead is None
    assert [p["id"] for p in h.out("predictions")] == [f"r{i}" for i in range(10)]  # in order, once each


def test_a_checkpoint_asks_an_absent_broker_for_a_bounded_time_then_keeps_the_last_known_ends(harness,
                                                                                              monkeypatch):
    h = harness
    h.service.start()
    feed(h, 20)
    h.service.run_once()
    h.service.checkpoint()  # the broker answers: where the outputs end is known
    known = h.service.store.latest()[1]
    assert known["outputs.next"].tolist()[1] == 20  # [label-requests, predictions]
    waited = []

    def away(*_, timeout: float = -1):  # a client call that waits its whole timeout, then fails
        waited.append(timeout)
        h.clock.advance(timeout)
        raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    monkeypatch.setattr(h.service.io.producer, "list_topics", away)
    monkeypatch.setattr(h.service.io.features, "offsets_for_times", away)
    h.service.checkpoint()
    assert 0 < sum(waited) <= output_ends.TIMEOUT_S + output_ends.MIN_WAIT_S
    state = h.service.store.latest()[1]
    assert state["outputs.next"].tolist() == known["outputs.next"].tolist()
    assert state["outputs.partitions"].tolist() == known["outputs.partitions"].tolist()


def test_a_failed_final_checkpoint_closes_every_client_once_and_exits_with_1(tmp_path, monkeypatch, caplog):
    h = Harness(tmp_path)
    feed(h, 10)

    def disk_full(state, parts=()):
        raise CheckpointError("disk full")

    monkeypatch.setattr(h.service.store, "write", disk_full)
    h.service.request_stop()  # a SIGTERM: run() goes straight to the final checkpoint, which fails
    assert h.service.run() == 1
    assert "disk full" in caplog.text
    assert h.clients.producers and all(p.closed for p in h.clients.producers)
    assert h.service.io.features.closed and h.service.io.labels.closed


def test_consumer_errors_among_the_records_are_logged_and_skipped(tmp_path, caplog):
    h = Harness(tmp_path, batch_size=4)
    h.service.start()
    h.service.io.features.partition_eof = True  # librdkafka reports a partition's end as an error message
    h.service.io.labels.partition_eof = True
    feed(h, 6)
    for _ in range(4):
        h.service.run_once()
    assert [p["id"] for p in h.out("predictions")] == [f"r{i}" for i in range(6)]
    assert h.service.offsets.next[("features", 0)] == 6
    assert "features consumer: end of partition" in caplog.text
    assert "labels consumer: end of partition" in caplog.text
    assert not h.out("dead-letters")


@pytest.mark.parametrize("revoked", ["labels", "features"])
def test_a_revocation_drops_only_the_revoked_consumers_records_and_loses_none(tmp_path, revoked):
    h = Harness(tmp_path, batch_size=4, max_in_flight=6)
    h.service.start()
    h.hold(True)
    feed(h, 12)
    h.service.run_once()  # r0-r3 produced, not acknowledged; r4-r7 read ahead
    h.service.run_once()  # r4-r7 decided, held back by backpressure
    assert h.service.emit.batch is not None and h.service.features_read.ahead is not None
    h.hold(False)
    h.deliver()
    consumer = getattr(h.service.io, revoked)
    partitions = consumer.assignment()
    h.service.rebalance.revoked(consumer, partitions)
    # the features' own records are dropped only with their consumer, which is then sought back
    assert (h.service.emit.batch is None) == (revoked == "features")
    h.service.rebalance.assigned(consumer, partitions)
    for _ in range(6):
        h.service.run_once()
        h.service.io.emitter.serve()
    assert sorted(p["id"] for p in h.out("predictions")) == sorted(f"r{i}" for i in range(12))


def test_a_revocation_while_reading_ahead_takes_the_batch_in_hand_with_it(tmp_path):
    h = Harness(tmp_path, batch_size=4)
    h.service.start()
    feed(h, 12)
    h.service.run_once()  # r0-r3 emitted; r4-r7 read ahead
    consumer = h.service.io.features
    poll = consumer.poll

    def revoked_here(timeout: float = -1):  # the group's rebalance, served by the next read ahead
        consumer.poll = poll
        h.service.rebalance.revoked(consumer, consumer.assignment())
        consumer.assign([])
        return None

    consumer.poll = revoked_here
    for _ in range(3):
        h.service.run_once()
        h.service.io.emitter.serve()
    # r4-r7 were read before the revocation: the new owner starts from the committed offset 4
    assert [p["id"] for p in h.out("predictions")] == [f"r{i}" for i in range(4)]
    assert h.broker.committed[(h.settings.group_id, "features", 0)] == 4
    assert h.service.offsets.next[("features", 0)] == 4


def test_a_retriable_delivery_error_is_resent(harness):
    h = harness
    h.service.start()
    h.clients.producers[0].fail = [KafkaError(KafkaError._MSG_TIMED_OUT)]  # the producer of dead letters
    h.raw_feature(b"{not json", b"bad")
    feed(h, 5)
    h.service.run_once()
    h.service.io.emitter.serve()
    h.service.io.emitter.serve()
    assert [m.value() for m in h.broker.messages("dead-letters")] == [b"{not json"]
    assert sorted(p["id"] for p in h.out("predictions")) == [f"r{i}" for i in range(5)]
    assert h.service.metrics.produce_errors.labels(topic="dead-letters")._value.get() == 1


def test_a_dead_letter_refused_even_truncated_stops_before_any_commit(harness):
    h = harness
    h.service.start()
    h.clients.producers[0].fail = [KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)] * 2
    h.raw_feature(b"{not json", b"bad")
    feed(h, 5)
    assert_checkpoint_refused(h, r"dead-letters")


def test_a_dead_letter_refused_as_is_is_written_truncated_and_committed(harness):
    h = harness
    h.service.start()
    h.clients.producers[0].fail = [KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)]
    h.raw_feature(b"{not json", b"bad")
    feed(h, 5)
    h.service.run_once()
    h.service.checkpoint()
    [letter] = h.broker.messages("dead-letters")
    headers = dict(letter.headers())
    assert letter.value() == b"{not json" and headers["activestream.dlq.truncated"] == b"true"
    assert headers["activestream.dlq.reason"] == b"malformed_json"
    assert h.broker.committed


def assert_checkpoint_refused(h: Harness, failed: str) -> None:
    """A loop turn, then a checkpoint that raises for the ``failed`` topics, writing and committing nothing."""
    h.service.run_once()
    with pytest.raises(ProduceFailed, match=failed):
        h.service.checkpoint()
    assert h.broker.committed == {}
    assert h.service.store.paths() == []


def test_a_failed_output_of_a_batch_is_resent_and_a_fatal_one_stops_before_any_commit(harness):
    h = harness
    h.service.start()
    batch = h.service.io.emitter.batch
    assert batch in h.clients.producers  # predictions and label requests go through the batch producer
    batch.fail = [KafkaError(KafkaError.REQUEST_TIMED_OUT)]
    feed(h, 5)
    h.service.run_once()
    h.service.io.emitter.serve()
    h.service.io.emitter.serve()
    assert sorted(p["id"] for p in h.out("predictions")) == [f"r{i}" for i in range(5)]
    assert len(h.out("label-requests")) == h.service.totals.get("label_requests") > 0
    errors = h.service.metrics.produce_errors
    assert errors.labels(topic="predictions")._value.get() + errors.labels(topic="label-requests")._value.get() == 1

    batch.fail = [KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)]
    feed(h, 5, prefix="s")
    assert_checkpoint_refused(h, r"predictions|label-requests")


def test_outputs_the_batch_producer_refuses_go_out_one_by_one_with_a_warning(harness, caplog):
    h = harness
    h.service.start()
    h.service.io.emitter.batch.refuse = {1, 3}  # its queue is full for two of the first batch's messages
    feed(h, 5)
    h.service.run_once()  # a new model asks for every label: the label requests go out first
    h.service.io.emitter.flush(1.0)
    ids = [f"r{i}" for i in range(5)]
    assert sorted(r["id"] for r in h.out("label-requests")) == sorted(p["id"] for p in h.out("predictions")) == ids
    assert "2 of 5 messages to label-requests refused by the batch producer" in caplog.text


def test_stop_request_ends_with_a_final_checkpoint_and_commit(harness):
    h = harness
    feed(h, 10)
    h.service.start()
    h.service.run_once()
    h.service.request_stop()
    h.service.shutdown()
    assert len(h.service.store.paths()) == 1
    assert h.broker.committed[("activestream", "features", 0)] == 10


def test_run_returns_zero_after_a_requested_stop(harness):
    harness.service.request_stop()
    assert harness.service.run() == 0
    assert len(harness.service.store.paths()) == 1


def test_run_puts_what_start_up_made_out_of_the_cyclic_collectors_sight(harness):
    gc.unfreeze()
    harness.service.request_stop()
    harness.service.run()
    frozen = gc.get_freeze_count()
    gc.unfreeze()  # give this test process its collector back
    assert frozen > 10_000  # the modules, the kernels and the model at least


def test_checkpoint_of_other_hyper_parameters_is_refused_naming_the_file(harness):
    h = harness
    h.service.start()
    feed(h, 5)
    h.service.run_once()
    path = h.service.checkpoint()
    h.service.close(final_checkpoint=False)
    other = h.new_service(learner_params={"delta": 2.0})
    with pytest.raises(IncompatibleCheckpoint, match=rf"{path.name}.*delta: saved 1\.0 vs this 2\.0"):
        other.start()
    allowed = h.new_service(learner_params={"delta": 2.0},
                            checkpoint=h.settings.checkpoint.model_copy(update={"allow_param_change": True}))
    allowed.start()
    assert allowed.learner.rounds_ == 5


def test_a_corrupt_newest_checkpoint_is_skipped(harness):
    h = harness
    h.service.start()
    feed(h, 5)
    h.service.run_once()
    h.service.checkpoint()
    feed(h, 5, prefix="x")
    h.service.run_once()
    newest = h.service.checkpoint()
    h.service.close(final_checkpoint=False)
    newest.write_bytes(newest.read_bytes()[:-100])
    again = h.new_service()
    again.start()
    assert again.restored_from.name != newest.name
    assert again.offsets.next[("features", 0)] == 5


def test_revocation_writes_a_checkpoint(harness):
    h = harness
    h.service.start()
    feed(h, 5)
    h.service.run_once()
    h.service.rebalance.revoked(h.service.io.features, h.service.io.features.assignment())
    assert len(h.service.store.paths()) == 1
    assert not h.service.health.assigned


def test_a_failed_checkpoint_at_revocation_commits_nothing_and_does_not_raise(tmp_path, monkeypatch):
    import consumer.checkpointing

    monkeypatch.setattr(consumer.checkpointing, "FLUSH_TIMEOUT_S", 0.05)
    h = Harness(tmp_path)
    h.service.start()
    h.hold(True)  # the broker is away: the flush cannot finish
    feed(h, 5)
    h.service.run_once()
    h.service.rebalance.revoked(h.service.io.features, h.service.io.features.assignment())
    assert h.service.metrics.checkpoint_failures._value.get() == 1
    assert h.service.store.paths() == [] and h.broker.committed == {}
    assert not h.service.health.assigned


def test_a_failed_periodic_checkpoint_keeps_the_loop_running(tmp_path, monkeypatch):
    import consumer.checkpointing

    monkeypatch.setattr(consumer.checkpointing, "FLUSH_TIMEOUT_S", 0.05)
    h = Harness(tmp_path, checkpoint={"every_s": 10})
    h.service.start()
    h.hold(True)  # the broker is away: nothing is acknowledged
    feed(h, 5)
    h.service.run_once()
    h.clock.advance(11)
    h.service.run_once()  # the checkpoint is due and fails; the loop goes on
    assert h.service.metrics.checkpoint_failures._value.get() == 1
    assert h.service.store.paths() == [] and h.broker.committed == {}
    h.hold(False)
    h.clock.advance(11)
    h.service.run_once()  # due again: written beside the loop, committed by a later turn
    h.service.checkpoints.finish(wait=True)
    assert len(h.service.store.paths()) == 1
    assert h.broker.committed[("activestream", "features", 0)] == 5


def test_a_due_checkpoint_is_written_beside_the_loop_and_commits_its_snapshot_once_durable(tmp_path, monkeypatch):
    h = Harness(tmp_path, checkpoint={"every_s": 10})
    h.service.start()
    written, write = threading.Event(), h.service.store.write

    def slow_write(state, parts=()):  # the disk is slow: the file is durable only once the test lets it be
        assert written.wait(10)
        return write(state, parts)

    monkeypatch.setattr(h.service.store, "write", slow_write)
    feed(h, 5)
    h.service.run_once()
    h.clock.advance(11)
    h.service.run_once()  # due: the snapshot holds offset 5
    feed(h, 3, prefix="s")
    h.service.run_once()  # the loop goes on while the file is written
    assert h.service.totals.get("records_scored") == 8
    assert h.service.store.paths() == [] and h.broker.committed == {}
    written.set()
    h.service.checkpoints.finish(wait=True)
    assert len(h.service.store.paths()) == 1
    assert h.broker.committed[("activestream", "features", 0)] == 5  # the snapshot's, not the loop's 8
    assert int(h.service.store.latest()[1]["offsets.next"][0]) == 5


def test_an_unwritable_checkpoint_directory_stops_start_up_naming_the_variable(tmp_path, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    h = Harness(tmp_path, checkpoint_dir=blocker / "ckpt")
    assert h.service.run() == 2
    assert "ACTIVESTREAM_CHECKPOINT_DIR" in caplog.text


def test_an_incompatible_checkpoint_makes_run_exit_2(harness, caplog):
    h = harness
    h.service.start()
    feed(h, 3)
    h.service.run_once()
    h.service.checkpoint()
    h.service.close(final_checkpoint=False)
    assert h.new_service(learner_params={"delta": 9.0}).run() == 2
    assert "ALLOW_PARAM_CHANGE" in caplog.text


def test_kafka_clients_report_librdkafka_statistics_by_client_name():
    from consumer.config import load_settings
    from tests.rdmock import MockCluster

    cluster = MockCluster(brokers=1)
    got: dict[str, list] = {}
    try:
        settings = load_settings(bootstrap_servers=cluster.bootstraps, kafka={"statistics.interval.ms": "100"})
        clients = clients_module.KafkaClients(settings, on_stats=lambda name, s: got.setdefault(name, []).append(s))
        features, labels = clients.consumer("features"), clients.consumer("labels")
        producer = clients.producer(lambda err, msg: None)
        batch = clients.batch_producer(print, print)
        names = {"features", "labels", "producer", "predictions"}
        deadline = time.monotonic() + 10
        while set(got) != names and time.monotonic() < deadline:
            for client in (features, labels, producer, batch):
                client.poll(0.02)  # statistics are served by each client's poll
        for client in (features, labels):
            client.close()
        producer.flush(1)
        batch.close()
    finally:
        cluster.close()
    assert set(got) == names
    assert {orjson.loads(got[name][-1])["type"] for name in names} == {"consumer", "producer"}
    assert orjson.loads(got["predictions"][-1])["client_id"] == "activestream-predictions"


def test_a_budget_with_online_scaling_holds_its_target_and_checkpoints_both(tmp_path):
    h = Harness(tmp_path, query_rate_target=0.05, learner_params={"scale": "rms"})
    h.service.start()
    feed(h, 1000)
    h.service.run_once()
    assert len(h.out("label-requests")) <= 1.2 * 0.05 * 1000
    for rid in h.requested_ids():
        h.label(rid, 1)
    h.service.run_once()
    state = h.service.learner.state_dict()
    assert any(k.startswith("budget.") for k in state) and any(k.startswith("scale.") for k in state)
    assert h.service.learner.budget is not None and h.service.learner.updates_ > 0


def test_feature_key_not_its_id_is_counted_and_still_scored(harness):
    h = harness
    h.service.start()
    dense = [0.5] * h.service.settings.n_features
    h.raw_feature(orjson.dumps({"id": "a", "features": dense}), b"a")
    h.raw_feature(orjson.dumps({"id": "b", "features": dense}), b"customer-9")  # keyed for partitioning
    h.raw_feature(orjson.dumps({"id": "c", "features": dense}), None)  # no key: not a mismatch
    h.raw_feature(orjson.dumps({"id": "d\u00e9", "features": {"x": 1}}), "dé".encode())  # the careful path
    h.raw_feature(orjson.dumps({"id": 7, "features": dense}), b"8")
    h.service.run_once()
    assert h.service.totals.get("records_scored") == 5
    assert h.service.totals.get("key_id_mismatches") == 2
    assert h.service.metrics.key_id_mismatches._value.get() == 2


def test_a_lost_trainer_lease_stops_the_service_with_1_and_writes_nothing_more(tmp_path, caplog):
    h = Harness(tmp_path)
    lease = _scripted_lease(h)
    feed(h, 10)
    lease.grant(0)  # partition 0 at the first poll, then taken away at the third: mid-run
    lease.revoke_at = 3
    assert h.service.run() == 1
    assert "trainer lease" in caplog.text and "taken away" in caplog.text
    assert not h.service.store.paths()  # no final checkpoint: another process may be restoring the model
    assert h.service.metrics.trainer_active._value.get() == 0.0
    assert lease.closed


def test_a_standby_in_role_all_consumes_nothing_until_it_holds_the_lease(tmp_path):
    h = Harness(tmp_path)
    standby = h.service
    lease = _scripted_lease(h)
    runner = threading.Thread(target=standby.start)
    runner.start()
    wait_until(lambda: lease.polls >= 3, "the standby joined and waits")
    assert standby.io.features is None and standby.io.labels is None and not standby.health.ready()[0]
    assert standby.metrics.trainer_active._value.get() == 0.0
    lease.grant(0)  # the active process left the group
    runner.join(10)
    assert standby.io.features is not None and standby.lease.held and standby.health.restored
    standby.shutdown()


def _scripted_lease(h: Harness) -> _ScriptedLease:
    made = _ScriptedLease()
    make = h.clients.consumer
    h.clients.consumer = lambda role: made if role == "lease" else make(role)
    return made


class _ScriptedLease:
    """A lease consumer whose group gives partition 0 to another member until :meth:`grant`, and
    takes it away at poll number ``revoke_at``."""

    def __init__(self) -> None:
        self.polls, self.revoke_at, self.closed = 0, None, False
        self._granted: int | None = None

    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None) -> None:
        self.topics, self._assign, self._revoke = topics, on_assign, on_revoke

    def grant(self, partition: int) -> None:
        self._granted = partition

    def poll(self, timeout: float = 0):
        self.polls += 1
        if self._granted is not None:
            self._assign(self, [TopicPartition(self.topics[0], self._granted)])
            self._granted = None
        elif self.polls == self.revoke_at:
            self._revoke(self, [TopicPartition(self.topics[0], 0)])
        elif timeout:
            time.sleep(min(timeout, 0.01))  # a poll with a timeout waits, as librdkafka's does
        return None

    def close(self) -> None:
        self.closed = True


def wait_until(condition, what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def decide_past_a_checkpoint_then_crash(h: Harness) -> dict[str, int]:
    """400 records decided and checkpointed, 1,000 more ("s…") decided, no label back yet, then the
    process gone without a final checkpoint; the truth of all 1,400."""
    h.service.start()
    totals = h.service.totals
    truth = feed(h, 400)
    while totals.get("records_scored") < 400:
        h.service.run_once()
    h.service.checkpoint()
    truth |= feed(h, 1000, prefix="s")
    while totals.get("records_scored") < 1400:
        h.service.run_once()
    h.service.close(final_checkpoint=False)
    return truth


def restart_and_decide_again(h: Harness) -> None:
    """A new process on the checkpoint: the labels first, then the 1,000 records decided again."""
    h.service = h.new_service()
    h.service.start()
    while h.service.totals.get("records_scored") < 1400:
        h.service.run_once()


@pytest.mark.parametrize("takes_back", [True, False])
def test_after_a_restart_the_budget_counts_only_the_requests_made(tmp_path, monkeypatch, takes_back):
    """Records decided after the checkpoint are decided again after a restart, by a model that has
    learnt meanwhile: where the restored controller asks but the kept decision made no request, it
    takes that request back. Without (``takes_back`` False) it counts requests never made, and asks
    less afterwards to repay them."""
    if not takes_back:
        monkeypatch.setattr(BudgetController, "uncount_request", lambda self: None)
    h = Harness(tmp_path, query_rate_target=0.2)
    truth = decide_past_a_checkpoint_then_crash(h)
    for rid in h.requested_ids():  # answered, not read before the crash
        h.label(rid, truth[rid])
    restart_and_decide_again(h)
    made = len(set(h.requested_ids()))
    assert h.service.learner.labels_ > 0 and made == h.service.totals.get("label_requests")
    assert (h.service.learner.budget.requests == made) == takes_back, (h.service.learner.budget.requests, made)


def test_labels_read_before_their_records_are_decided_again_wait_parked_and_are_applied_once(tmp_path):
    h = Harness(tmp_path, query_rate_target=0.2)
    truth = decide_past_a_checkpoint_then_crash(h)
    asked = set(h.requested_ids())
    for rid in asked:  # answered, not read before the crash
        h.label(rid, truth[rid])
    h.service = h.new_service()
    h.service.start()
    h.service.label_read()  # the labels come first: those of requests made after the checkpoint wait
    waiting = set(h.service.parked.waiting)
    assert waiting and all(rid.startswith("s") for rid in waiting) and waiting <= asked
    while h.service.totals.get("records_scored") < 1400:
        h.service.run_once()
    assert not h.service.parked and h.service.totals.get("labels.unknown") == 0
    assert h.service.totals.get("labels.applied") == len(asked) == h.service.learner.labels_
    assert h.service.totals.get("labels.duplicate") == 0


def test_a_request_lost_in_the_crash_is_made_again_and_counted_once(tmp_path):
    """SIGKILL can leave a batch's predictions on the broker and not its label requests (two topics,
    two produce batches). The restart finds a prediction that asked and no request: it makes the
    request again and the restored controller counts it, whatever its own coin says now. Counted
    neither before nor after, each such request would leave the ledger one request short, paid back
    by asking more than the target right after the restart."""
    h = Harness(tmp_path, query_rate_target=0.2)
    truth = decide_past_a_checkpoint_then_crash(h)
    log = h.broker.log[("label-requests", 0)]
    after_checkpoint = [m for m in log if orjson.loads(m.value())["id"].startswith("s")]
    lost = {orjson.loads(m.value())["id"] for m in after_checkpoint[len(after_checkpoint) // 2:]}
    del log[len(log) - len(lost):]  # the newest half of them never reached the broker
    kept = set(h.requested_ids())
    for rid in kept:  # answered, read after the restart: the model that decides again has learnt since
        h.label(rid, truth[rid])
    restart_and_decide_again(h)
    made = set(h.requested_ids())
    assert len(lost) > 20 and made == kept | lost and not kept & lost
    assert made == {p["id"] for p in h.out("predictions") if p["label_requested"]}
    assert len(made) == len(h.requested_ids())  # the ones kept were not made twice
    assert h.service.learner.budget.requests == len(made), (h.service.learner.budget.requests, len(made))


@pytest.mark.parametrize("classes", [None, [0, 1, 2]])
def test_the_warm_up_loads_the_first_batches_loops_and_leaves_the_learner_as_it_was(classes):
    from consumer import batch_reader, fastjson, fastwrite
    from consumer.config import Settings
    from learners.drivers import plain
    from learners.kernels import Lazy

    settings = Settings(classes=classes, query_rate_target=0.1)
    learner = learner_module.build_learner(settings)
    before = learner.state_dict()
    learner_module.warm_up(learner, settings.n_features)
    after = learner.state_dict()
    assert before.keys() == after.keys()
    for key, value in before.items():
        assert np.array_equal(np.asarray(value), np.asarray(after[key])), key
    # loaded (from numba's on-disk cache, or compiled): a Lazy driver holds its ready function, a
    # dispatcher its signatures
    for loop in (fastjson.scan_features, fastjson.scan_labels, fastwrite._interleave, plain.score_rows,
                 plain.learn_rows, batch_reader._gather, batch_reader._destroy_all):
        assert (loop._ready is not None) if isinstance(loop, Lazy) else loop.signatures, loop.__name__
