"""The dashboard's "Labelling in Label Studio" row against a real Prometheus scraping a running
Label Studio connector.

The connector runs on an in-memory Label Studio and Kafka (tests/unit/annotate/fakes.py) and serves
its /metrics over HTTP; Prometheus scrapes it every second as the job ``activestream-annotate``, as
deploy/prometheus/prometheus.yml does. Every kind of event the row shows happens once at the start
(a task closed by a tombstone and one by expiry, an invalid request, one expired on arrival, a
replayed request, a skipped annotation, a deleted one, an ignored webhook, a failed Label Studio
call); then requests keep coming and being annotated, through webhooks and the poller, while the
row's targets are evaluated through the HTTP API. Each must return data of the right shape.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator

import orjson
import pytest

from tests.deploy.test_observability_e2e import (
    ANNOTATE_JOB,
    PrometheusServer,
    Scenario,
    check_target,
    dashboard_targets,
    reads_annotate,
    target_ids,
)
from tests.kafka_helpers import wait_for
from tests.unit.annotate.fakes import Rig

TARGETS = [t for t in dashboard_targets() if reads_annotate(t[2]["expr"])]


def post(rig: Rig, payload: dict) -> int:
    """A Label Studio webhook call to the connector's /webhook: the HTTP status it answers."""
    request = urllib.request.Request(f"http://127.0.0.1:{rig.connector.port}/webhook",
                                     data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.status


class Annotators(threading.Thread):
    """A request every 50 ms, annotated a fake 30 s later, alternately reported by webhook (over
    HTTP) and found by the poller; the connector's loop turns in between."""

    def __init__(self, rig: Rig) -> None:
        super().__init__(name="annotators", daemon=True)
        self.rig, self.n, self.error = rig, 0, None
        self._stop_event = threading.Event()

    def step(self) -> None:
        rig, rid = self.rig, f"a{self.n}"
        rig.request(rid)
        rig.connector.run_once(0.0)
        aid = rig.ls.annotate(rig.ls.task_of(rid)["id"], "1")
        rig.now += 30.0
        if self.n % 2:
            assert post(rig, {"action": "ANNOTATION_CREATED", "annotation": {"id": aid}}) == 200
        else:
            rig.connector.poll()
        self.n += 1

    def run(self) -> None:
        try:
            while not self._stop_event.wait(0.05):
                self.step()
        except BaseException as exc:  # shown by the fixture, which would otherwise wait for nothing
            self.error = exc

    def stop(self) -> None:
        self._stop_event.set()


def one_of_each(rig: Rig) -> None:
    """Every event the row counts, once."""
    c = rig.connector
    for rid in ("t0", "t1", "t2", "t3"):
        rig.request(rid)
    rig.request("soon", expires_in=60.0)
    rig.request("late", expires_in=-1.0)  # expired when read: no task
    rig.broker.append("label-requests", b"{not json", b"bad")
    c.run_once(0.0)
    rig.request("t0")  # replayed: its task exists
    rig.tombstone("t1")
    c.run_once(0.0)
    rig.ls.annotate(rig.ls.task_of("t2")["id"], "", cancelled=True)  # skipped: no label
    c.poll()
    assert post(rig, {"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 1}]}) == 200
    assert post(rig, {"action": "PROJECT_UPDATED"}) == 200  # ignored
    rig.request("t4")
    rig.ls.down = True
    assert not c.turn(0.0)  # its task cannot be made: counted, tried again on the next turn
    rig.ls.down = False
    assert c.turn(0.0) and rig.ls.task_of("t4")
    rig.now += 61.0
    c.run_once(0.0)  # "soon" expired: its task is removed
    assert c.poll() >= 0


@pytest.fixture(scope="module")
def annotate_scenario(prometheus_binary, tmp_path_factory) -> Iterator[Scenario]:
    tmp = tmp_path_factory.mktemp("e2e-annotate")
    rig = Rig()
    one_of_each(rig)
    annotators = Annotators(rig)
    prometheus = None
    try:
        prometheus = PrometheusServer(prometheus_binary, tmp, [f"127.0.0.1:{rig.connector.port}"], job=ANNOTATE_JOB)
        since = time.time()
        annotators.start()
        wait_for(lambda: annotators.error is None and prometheus.instant(
            f'increase(activestream_annotate_labels_produced_total{{job="{ANNOTATE_JOB}"}}[5s]) > 0')["result"]
            and annotators.n >= 40, 60, "the annotators did not get going",
            lambda: repr(annotators.error) if annotators.error else f"{annotators.n} annotated")
        # enough scrapes of the steady state for every rate and quantile of the row
        wait_for(lambda: prometheus.instant(f'count_over_time(activestream_annotate_tasks_open{{job="{ANNOTATE_JOB}"}}'
                                            f'[{round(time.time() - since) + 1}s]) >= 4')["result"], 30,
                 "Prometheus has too few samples")
        assert annotators.is_alive(), f"the annotators stopped: {annotators.error!r}"
        yield Scenario([], prometheus, since)
    finally:
        annotators.stop()
        annotators.join(15)
        rig.connector.close()
        if prometheus is not None:
            prometheus.stop()


def test_the_scenario_counted_one_of_each_event(annotate_scenario):
    series = {orjson.dumps(s["metric"]).decode() for s in annotate_scenario.prometheus.instant(
        f'{{job="{ANNOTATE_JOB}", __name__=~"activestream_annotate_.*_total"}}')["result"]}
    for wanted in ('"reason":"tombstone"', '"reason":"expired"', '"reason":"skipped"', '"outcome":"ok"',
                   '"outcome":"ignored"', "label_studio_errors", "requests_invalid", "expired_on_arrival",
                   "tasks_existing", "annotations_deleted"):
        assert any(wanted in s for s in series), wanted


@pytest.mark.parametrize(("title", "kind", "target"), TARGETS, ids=target_ids(TARGETS))
def test_every_label_studio_target_returns_data_with_its_legend_labels(annotate_scenario, title, kind, target):
    check_target(annotate_scenario, title, kind, target)
