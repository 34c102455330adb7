"""The connector's ordering and idempotence, against an in-memory Label Studio and Kafka."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from consumer.annotate.client import LabelStudioError
from consumer.annotate.config import load_annotate_settings
from consumer.annotate.forward import LabelNotDelivered
from consumer.annotate.label_studio import Connector, ensure_project
from consumer.annotate.mapping import label_config
from consumer.annotate.metrics import AnnotateMetrics
from consumer.errors import ConfigError
from tests.fakes import FakeConsumer, FakeProducer
from tests.unit.annotate.fakes import FakeLabelStudio, Rig


@pytest.fixture
def rig():
    r = Rig()
    yield r
    r.connector.close()


def test_ensure_project_missing_creates_it_with_the_classes_config() -> None:
    ls = FakeLabelStudio()
    pid = ensure_project(ls, "fraud", ["no", "yes"])
    assert ls.projects_ == [{"id": pid, "title": "fraud", "label_config": label_config(["no", "yes"])}]
    assert ensure_project(ls, "fraud", ["yes", "no"]) == pid and len(ls.projects_) == 1


def test_ensure_project_other_classes_fails_naming_the_settings() -> None:
    ls = FakeLabelStudio()
    ls.create_project("fraud", label_config(["a", "b"]))
    with pytest.raises(ConfigError, match=r"ACTIVESTREAM_ANNOTATE__PROJECT.*ACTIVESTREAM_CLASSES"):
        ensure_project(ls, "fraud", [-1, 1])


def test_config_token_missing_fails_naming_the_variable_and_never_shows_it() -> None:
    with pytest.raises(ConfigError, match="ACTIVESTREAM_ANNOTATE__TOKEN"):
        load_annotate_settings()
    with pytest.raises(ConfigError) as err:
        load_annotate_settings(annotate={"token": ["s3cret-token"]})
    assert "s3cret" not in str(err.value)
    assert "s3cret" not in repr(load_annotate_settings(annotate={"token": "s3cret"}))


def test_config_auto_commit_refused_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="ACTIVESTREAM_KAFKA_CONSUMER"):
        load_annotate_settings(annotate={"token": "t"}, kafka_consumer={"enable.auto.commit": "true"})


def test_request_each_record_makes_one_task_and_commits_after_it(rig) -> None:
    for i in range(3):
        rig.request(f"r{i}")
    rig.connector.run_once()
    assert sorted(t["data"]["activestream_id"] for t in rig.ls.tasks_.values()) == ["r0", "r1", "r2"]
    assert rig.committed() == 3
    assert rig.metric("tasks_created_total") == 3 and rig.metric("tasks_open") == 3


def test_request_replayed_after_restart_makes_no_second_task(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    rig.broker.committed.clear()  # the commit was lost: everything is read again
    rig.request("r0")  # and the service asked again for the same id
    rig.restart()
    rig.connector.run_once()
    assert len(rig.ls.tasks_) == 1
    assert rig.metric("tasks_existing_total") == 2 and rig.metric("tasks_created_total") == 0


def test_request_label_studio_down_commits_nothing_past_the_failure(rig) -> None:
    for i in range(4):
        rig.request(f"r{i}")
    rig.ls.fail_creates_after = 2
    with pytest.raises(Exception, match="502"):
        rig.connector.run_once()
    assert rig.committed() == 2  # r0 and r1 have tasks, r2 does not
    rig.ls.fail_creates_after = None
    rig.connector.run_once()  # the partition was rewound to r2
    assert sorted(t["data"]["activestream_id"] for t in rig.ls.tasks_.values()) == ["r0", "r1", "r2", "r3"]
    assert rig.committed() == 4


def test_request_crash_before_commit_restart_makes_each_task_once(rig) -> None:
    for i in range(3):
        rig.request(f"r{i}")
    rig.ls.fail_creates_after = 1
    with pytest.raises(Exception, match="502"):
        rig.connector.run_once()
    rig.ls.fail_creates_after = None
    rig.broker.committed.clear()
    rig.restart()
    rig.connector.run_once()
    assert sorted(t["data"]["activestream_id"] for t in rig.ls.tasks_.values()) == ["r0", "r1", "r2"]


def test_tombstone_removes_the_open_task_and_a_replay_does_not_bring_it_back(rig) -> None:
    rig.request("r0")
    rig.tombstone("r0")
    rig.request("r0")
    rig.connector.run_once()
    assert rig.ls.tasks_ == {}
    assert rig.metric("tasks_closed_total", {"reason": "tombstone"}) == 1 and rig.metric("tasks_open") == 0


def test_expired_request_task_is_removed_unless_answered(rig) -> None:
    rig.request("r0", expires_in=60)
    rig.request("r1", expires_in=60)
    rig.connector.run_once()
    rig.ls.annotate(rig.ls.task_of("r1")["id"], "1")
    rig.connector.poll()
    rig.now += 61
    rig.connector.run_once()
    assert [t["data"]["activestream_id"] for t in rig.ls.tasks_.values()] == ["r1"]
    assert rig.metric("tasks_closed_total", {"reason": "expired"}) == 1


def test_request_already_expired_makes_no_task(rig) -> None:
    rig.request("r0", expires_in=-1)
    rig.connector.run_once()
    assert rig.ls.tasks_ == {} and rig.committed() == 1
    assert rig.metric("requests_expired_on_arrival_total") == 1


def test_expired_task_restored_from_label_studio_after_restart_is_removed(rig) -> None:
    rig.request("r0", expires_in=60)
    rig.connector.run_once()
    rig.restart()
    rig.now += 61
    rig.connector.run_once()
    assert rig.ls.tasks_ == {}


def test_annotation_polled_becomes_one_label_with_cost(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    rig.ls.annotate(rig.ls.task_of("r0")["id"], "-1")
    rig.now += 30
    assert rig.connector.poll() == 1
    assert rig.connector.poll() == 0
    assert rig.labels() == [{"id": "r0", "label": -1, "cost": 1.0}]
    assert rig.broker.messages("labels")[0].key() == b"r0"
    assert rig.metric("labels_produced_total") == 1 and rig.metric("tasks_open") == 0
    assert rig.metric("annotation_latency_seconds_sum") == 30


def test_annotation_by_webhook_then_poll_gives_one_label(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    aid = rig.ls.annotate(rig.ls.task_of("r0")["id"], "1")
    assert rig.connector.webhook({"action": "ANNOTATION_CREATED", "annotation": {"id": aid}}) == "ok"
    rig.connector.poll()
    rig.restart()  # the forwarded mark is read back from Label Studio
    rig.connector.run_once()
    rig.connector.poll()
    assert rig.labels() == [{"id": "r0", "label": 1, "cost": 1.0}]


def test_annotation_edited_to_another_class_is_forwarded_again_same_class_is_not(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    aid = rig.ls.annotate(rig.ls.task_of("r0")["id"], "1")
    rig.connector.poll()
    rig.ls.edit(aid, "1")
    rig.connector.webhook({"action": "ANNOTATION_UPDATED", "annotation": {"id": aid}})
    rig.ls.edit(aid, "-1")
    rig.connector.webhook({"action": "ANNOTATION_UPDATED", "annotation": {"id": aid}})
    assert [lab["label"] for lab in rig.labels()] == [1, -1]


def _annotated(rig, rid: str, choice: str) -> int:
    """A request for ``rid``, its task made, and an annotation choosing ``choice``; its id."""
    rig.request(rid)
    rig.connector.run_once()
    return rig.ls.annotate(rig.ls.task_of(rid)["id"], choice)


def test_poll_listing_read_before_an_edit_sends_neither_class_again(rig) -> None:
    aid = _annotated(rig, "r0", "1")
    rig.connector.poll()
    listing = list(rig.ls.tasks(rig.connector.project))  # a poll's page, read before the edit
    rig.ls.edit(aid, "-1")
    rig.connector.webhook({"action": "ANNOTATION_UPDATED", "annotation": {"id": aid}})
    real = rig.ls.tasks
    rig.ls.tasks = lambda _project: iter(listing)  # ...reaching the annotation after the webhook
    assert rig.connector.poll() == 0
    rig.ls.tasks = real
    assert rig.connector.poll() == 0
    assert [lab["label"] for lab in rig.labels()] == [1, -1]
    assert rig.metric("annotations_stale_total") == 1


def test_annotation_without_updated_at_is_decided_by_its_mark(rig) -> None:
    aid = _annotated(rig, "r0", "1")
    del rig.ls.annotations_[aid]["updated_at"]
    rig.connector.poll()
    rig.ls.edit(aid, "-1")
    rig.ls.annotations_[aid]["updated_at"] = None
    rig.connector.poll()
    assert [lab["label"] for lab in rig.labels()] == [1, -1]
    assert rig.metric("annotations_stale_total") == 0


def test_annotation_times_with_and_without_their_zone_compare_as_utc(rig) -> None:
    aid = _annotated(rig, "r0", "1")
    rig.ls.annotations_[aid]["updated_at"] = "2026-01-01T00:00:02+00:00"
    rig.connector.poll()
    rig.ls.edit(aid, "-1")
    rig.ls.annotations_[aid]["updated_at"] = "2026-01-01T00:00:01"  # older, without its zone
    rig.connector.poll()
    assert [lab["label"] for lab in rig.labels()] == [1]
    assert rig.metric("annotations_stale_total") == 1


def test_book_reloaded_before_a_mark_is_saved_sends_no_label_again(rig) -> None:
    aid = _annotated(rig, "r0", "1")
    real = rig.ls.set_task_meta
    rig.ls.set_task_meta = lambda *_: (_ for _ in ()).throw(LabelStudioError("database is locked", 500))
    rig.connector.webhook({"action": "ANNOTATION_CREATED", "annotation": {"id": aid}})
    rig.connector.book.load()  # partitions assigned again: the book is read from Label Studio
    rig.connector.forwarder._versions.clear()  # only the book's mark stands between it and a repeat
    rig.connector.poll()
    rig.ls.set_task_meta = real
    rig.connector.run_once()
    assert rig.labels() == [{"id": "r0", "label": 1, "cost": 1.0}]
    assert rig.ls.task_of("r0")["meta"] == {"activestream_forwarded": {str(aid): "1"}}


def test_annotation_skipped_gives_no_label_and_leaves_the_task_open(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    rig.ls.annotate(rig.ls.task_of("r0")["id"], "", cancelled=True)
    rig.connector.poll()
    rig.connector.poll()
    assert rig.labels() == []
    assert rig.metric("annotations_ignored_total", {"reason": "skipped"}) == 1 and rig.metric("tasks_open") == 1


def test_webhook_label_not_delivered_raises_and_the_poller_forwards_it_later(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    aid = rig.ls.annotate(rig.ls.task_of("r0")["id"], "1")
    rig.producer.fail = [KafkaError(KafkaError._MSG_TIMED_OUT)]
    with pytest.raises(LabelNotDelivered):
        rig.connector.webhook({"action": "ANNOTATION_CREATED", "annotation": {"id": aid}})
    assert rig.ls.task_of("r0")["meta"] == {}  # not marked: not forwarded
    rig.connector.poll()
    assert rig.labels() == [{"id": "r0", "label": 1, "cost": 1.0}]


def test_webhook_mark_not_saved_label_not_sent_again_and_mark_saved_later(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    aid = rig.ls.annotate(rig.ls.task_of("r0")["id"], "1")
    real = rig.ls.set_task_meta
    rig.ls.set_task_meta = lambda *_: (_ for _ in ()).throw(LabelStudioError("database is locked", 500))
    assert rig.connector.webhook({"action": "ANNOTATION_CREATED", "annotation": {"id": aid}}) == "ok"
    rig.connector.poll()
    assert rig.ls.task_of("r0")["meta"] == {}
    rig.ls.set_task_meta = real
    rig.connector.run_once()
    assert rig.ls.task_of("r0")["meta"] == {"activestream_forwarded": {str(aid): "1"}}
    rig.restart()
    rig.connector.run_once()
    rig.connector.poll()
    assert rig.labels() == [{"id": "r0", "label": 1, "cost": 1.0}]


def test_crash_before_the_mark_is_saved_label_repeats_once_after_restart(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    aid = rig.ls.annotate(rig.ls.task_of("r0")["id"], "1")
    real = rig.ls.set_task_meta
    rig.ls.set_task_meta = lambda *_: (_ for _ in ()).throw(LabelStudioError("connection reset"))
    rig.connector.webhook({"action": "ANNOTATION_CREATED", "annotation": {"id": aid}})
    rig.connector.run_once()
    rig.ls.set_task_meta = real
    rig.restart(crash=True)  # the unsaved mark dies with the process
    rig.connector.run_once()
    rig.connector.poll()
    assert [lab["id"] for lab in rig.labels()] == ["r0", "r0"]  # at least once: here exactly twice


def test_webhook_other_actions_and_projects_are_ignored(rig) -> None:
    assert rig.connector.webhook({"action": "PROJECT_UPDATED"}) == "ignored"
    assert rig.connector.webhook({"action": "ANNOTATION_CREATED", "annotation": {"id": 1},
                                  "project": {"id": 999}}) == "ignored"
    assert rig.connector.webhook({"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 1}]}) == "ok"
    assert rig.metric("annotations_deleted_total") == 1


def test_webhook_registered_once_across_restarts() -> None:
    rig = Rig(webhook_url="http://annotate:9109")
    rig.restart()
    assert [h["url"] for h in rig.ls.webhooks_] == ["http://annotate:9109/webhook"]
    rig.connector.close()


def test_annotation_for_task_made_elsewhere_is_not_forwarded(rig) -> None:
    task = rig.ls.create_task(rig.connector.project, {"text": "not ours"})
    rig.ls.annotate(task["id"], "1")
    rig.connector.run_once()
    assert rig.labels() == []


def test_cli_annotate_label_studio_without_token_exits_2_naming_the_variable(monkeypatch, capsys) -> None:
    from consumer.cli import main

    monkeypatch.delenv("ACTIVESTREAM_ANNOTATE__TOKEN", raising=False)
    assert main(["annotate", "label-studio"]) == 2
    assert "ACTIVESTREAM_ANNOTATE__TOKEN" in capsys.readouterr().err


def test_book_reload_failing_after_a_read_rewinds_and_loses_no_request(rig) -> None:
    rig.request("r0")
    rig.request("r1")
    rig.connector._reload = True  # as after a rebalance
    rig.ls.down = True
    with pytest.raises(LabelStudioError):
        rig.connector.run_once()
    assert rig.committed() == 0
    rig.ls.down = False
    rig.connector.run_once()
    assert sorted(t["data"]["activestream_id"] for t in rig.ls.tasks_.values()) == ["r0", "r1"]
    assert rig.committed() == 2


def test_start_failing_on_label_studio_can_be_called_again() -> None:
    rig = Rig()
    rig.connector.close()
    connector = Connector(rig.settings, AnnotateMetrics(), now=lambda: rig.now, ls=rig.ls,
                          make_consumer=lambda conf: FakeConsumer(rig.broker, conf["group.id"]),
                          make_producer=lambda _conf: FakeProducer(rig.broker))
    rig.ls.down = True
    with pytest.raises(LabelStudioError):
        connector.start()
    rig.ls.down = False
    connector.start()
    rig.request("r0")
    connector.run_once()
    assert len(rig.ls.tasks_) == 1
    connector.close()


def test_mark_overwritten_by_label_studio_is_saved_again_by_the_poller(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    aid = rig.ls.annotate(rig.ls.task_of("r0")["id"], "1")
    rig.connector.webhook({"action": "ANNOTATION_CREATED", "annotation": {"id": aid}})
    rig.connector.run_once()
    rig.ls.task_of("r0")["meta"] = {}  # Label Studio wrote the task back with the meta it had read before
    rig.connector.poll()
    assert rig.ls.task_of("r0")["meta"] == {"activestream_forwarded": {str(aid): "1"}}
    rig.restart(crash=True)
    rig.connector.run_once()
    rig.connector.poll()
    assert rig.labels() == [{"id": "r0", "label": 1, "cost": 1.0}]


def test_clean_stop_saves_pending_marks_so_a_restart_repeats_nothing(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    aid = rig.ls.annotate(rig.ls.task_of("r0")["id"], "1")
    rig.connector.webhook({"action": "ANNOTATION_CREATED", "annotation": {"id": aid}})
    rig.restart()
    rig.connector.run_once()
    rig.connector.poll()
    assert rig.labels() == [{"id": "r0", "label": 1, "cost": 1.0}]


def test_clean_stop_restores_a_mark_label_studio_overwrote_since_the_last_poll(rig) -> None:
    rig.request("r0")
    rig.connector.run_once()
    aid = rig.ls.annotate(rig.ls.task_of("r0")["id"], "1")
    rig.connector.webhook({"action": "ANNOTATION_CREATED", "annotation": {"id": aid}})
    rig.connector.run_once()
    rig.ls.task_of("r0")["meta"] = {}
    rig.restart()
    rig.connector.run_once()
    rig.connector.poll()
    assert rig.labels() == [{"id": "r0", "label": 1, "cost": 1.0}]


def test_start_port_taken_fails_naming_the_setting(rig) -> None:
    taken = rig.connector.port
    settings = load_annotate_settings(annotate={"token": "t", "port": taken})
    with pytest.raises(ConfigError, match="ACTIVESTREAM_ANNOTATE__PORT"):
        Connector(settings, AnnotateMetrics(), ls=rig.ls,
                  make_consumer=lambda conf: FakeConsumer(rig.broker, conf["group.id"]),
                  make_producer=lambda _conf: FakeProducer(rig.broker)).start()
