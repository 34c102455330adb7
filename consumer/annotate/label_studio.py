"""``activestream annotate label-studio``: label requests become Label Studio tasks, annotations labels.

The process has three parts:

- **the request loop** reads the label-requests topic in its own consumer group. Each request makes
  a task (unless its record id already has one, see :mod:`consumer.annotate.tasks`); a tombstone
  (null value, key = id) removes the open task. A partition's offset is committed only after every
  request before it has its task, so a restart reads again what had no task yet.
- **webhooks** (``POST /webhook``, annotation created/updated/deleted) are a doorbell: the
  annotation is read back from Label Studio, its label produced and flushed, and only then is the
  call answered 200 (:mod:`consumer.annotate.forward`).
- **the poller** reads every task's annotations every ``poll_interval_s`` (and once at start-up),
  forwarding what no webhook brought: webhooks are not retried by Label Studio, the poller is
  what makes a lost one harmless.

Expired requests' open tasks are removed by the loop.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from consumer.annotate.client import LabelStudio, LabelStudioError
from consumer.annotate.config import ENV_PREFIX, AnnotateSettings
from consumer.annotate.forward import Forwarder, LabelNotDelivered
from consumer.annotate.mapping import BadRequest, choices_of, label_config, parse_request
from consumer.annotate.metrics import AnnotateMetrics
from consumer.annotate.tasks import TaskBook
from consumer.errors import ConfigError
from consumer.logs import kafka_logger
from consumer.stop import Stop

__all__ = ["WEBHOOK_ACTIONS", "Connector", "ensure_project"]

log = logging.getLogger(__name__)

WEBHOOK_ACTIONS = ["ANNOTATION_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED"]
_BATCH = 500  # requests read at once; each costs a Label Studio call, so small batches commit often


def ensure_project(ls: LabelStudio, title: str, classes: list[Any]) -> int:
    """The id of the project titled ``title``, created with the classes' labeling config if missing.

    An existing project must ask the ``label`` question with exactly the classes as choices.
    """
    for project in ls.projects():
        if project.get("title") == title:
            got = choices_of(project.get("label_config") or "")
            want = [str(c) for c in classes]
            if got is None or sorted(got) != sorted(want):
                raise ConfigError(f"{ENV_PREFIX}ANNOTATE__PROJECT: project {title!r} (id {project['id']}) does not "
                                  f"ask a single 'label' choice among {want} ({ENV_PREFIX}CLASSES); its choices: "
                                  f"{got}")
            return int(project["id"])
    created = ls.create_project(title, label_config(classes))
    log.info("created Label Studio project %r (id %s)", title, created["id"])
    return int(created["id"])


class Connector:
    """The running connector; :meth:`run` until :meth:`request_stop`."""

    def __init__(self, settings: AnnotateSettings, metrics: AnnotateMetrics | None = None,
                 now: Callable[[], float] = time.time, ls: Any = None,
                 make_consumer: Callable[[dict], Any] = Consumer, make_producer: Callable[[dict], Any] = Producer
                 ) -> None:
        self.settings = s = settings
        self.metrics = metrics or AnnotateMetrics()
        self._now = now
        self.ls = ls or LabelStudio(s.annotate.url, s.annotate.token.get_secret_value(), s.annotate.timeout_s)
        self._make_consumer, self._make_producer = make_consumer, make_producer
        self._stop = Stop()  # what a signal handler may set (consumer.stop)
        self._reload = True  # the book is (re)loaded before the first batch and after each assignment
        self._next_poll = 0.0
        self.project: int | None = None
        self.book: TaskBook | None = None
        self.forwarder: Forwarder | None = None
        self._server: ThreadingHTTPServer | None = None
        self._consumer: Any = None
        self._producer: Any = None
        self.port: int | None = None
        self.last_loop = time.monotonic()

    # -- life cycle

    def start(self) -> Connector:
        """Find or make the project, register the webhook, serve HTTP, subscribe. Raises
        :class:`LabelStudioError` if Label Studio cannot be reached, :class:`ConfigError` on a bad project."""
        s = self.settings
        self.project = ensure_project(self.ls, s.annotate.project, s.class_list)
        self.book = TaskBook(self.ls, self.project, self.metrics, self._now)
        self._producer = self._producer or self._make_producer({
            "bootstrap.servers": s.bootstrap_servers, "enable.idempotence": True, "acks": "all", "linger.ms": 0,
            "client.id": "activestream-annotate", **s.kafka, **s.kafka_producer, "logger": kafka_logger()})
        self.forwarder = Forwarder(self.ls, self.book, self._producer, s.topics.labels, s.class_list,
                                   s.annotate.cost, s.annotate.cost_per_label, s.annotate.cost_per_second,
                                   self.metrics, now=self._now)
        if s.annotate.webhook_url:
            self._register_webhook(s.annotate.webhook_url + "/webhook")
        self._serve()  # last of what can fail, so that a failed start can simply be called again
        self._consumer = self._make_consumer({
            "bootstrap.servers": s.bootstrap_servers, "group.id": s.annotate.group_id, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "client.id": "activestream-annotate", **s.kafka, **s.kafka_consumer,
            "logger": kafka_logger()})
        self._consumer.subscribe([s.topics.label_requests], on_assign=self._assigned)
        return self

    def run(self) -> int:
        while not self._stop.requested:
            if not self.turn():
                self._stop.wait(self.settings.annotate.retry_s)
        self.close()
        return 0

    def turn(self, timeout_s: float = 0.2) -> bool:
        """:meth:`run_once`; False if Label Studio or Kafka failed (counted and logged: the next turn
        tries again, nothing committed past the failure)."""
        try:
            self.run_once(timeout_s)
        except (LabelStudioError, LabelNotDelivered, KafkaException) as exc:
            if isinstance(exc, LabelStudioError):
                self.metrics.label_studio_errors.inc()
            log.warning("%s; trying again in %.0f s", exc, self.settings.annotate.retry_s)
            return False
        return True

    def request_stop(self, *_: object) -> None:
        self._stop.request()

    def close(self) -> None:
        if self.forwarder is not None:
            self._save_marks_for_good()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.forwarder = None  # no webhook can reach it now; it holds the producer, let go below
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        if self._producer is not None:
            self._producer.flush(10)
            # librdkafka keeps reconnecting for as long as the producer lives: let it go now, not
            # whenever the last reference to this connector does
            self._producer = None

    # -- the loop

    def run_once(self, timeout_s: float = 0.2) -> None:
        """One turn: read requests and make their tasks, close expired tasks, poll when due."""
        self.last_loop = time.monotonic()
        assert self._consumer is not None and self.book is not None
        messages = [m for m in self._consumer.consume(_BATCH, timeout_s) if m.error() is None]
        self._handle(messages)
        self.forwarder.save_marks()
        self.book.expire()
        if time.monotonic() >= self._next_poll:
            self.poll()
            self._next_poll = time.monotonic() + self.settings.annotate.poll_interval_s

    def _save_marks_for_good(self) -> None:
        """A clean stop leaves no label to repeat: the tasks marked since the last poll are read back
        and any mark Label Studio lost is saved again."""
        self.forwarder.save_marks()
        try:
            for task_id in self.forwarder.take_recent():
                self.forwarder.check_marks(self.ls.task(task_id))
        except LabelStudioError as exc:
            log.warning("forwarded marks not checked at stop: %s", exc)
        self.forwarder.save_marks()

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # another instance may have made tasks for these partitions' ids
        self._reload = True
        consumer.assign(partitions)

    def _handle(self, messages: list[Any]) -> None:
        """Make each message's task in order; commit each partition up to the last one done."""
        done: dict[tuple[str, int], int] = {}
        handled = 0
        try:
            if self._reload:  # before the batch: it may hold requests whose tasks another instance made
                self.book.load()
                self._reload = False
            for msg in messages:
                self._request(msg)
                done[(msg.topic(), msg.partition())] = msg.offset() + 1
                handled += 1
        except (LabelStudioError, LabelNotDelivered):
            # every partition resumes at its first message not done
            first: dict[tuple[str, int], int] = {}
            for later in messages[handled:]:
                first.setdefault((later.topic(), later.partition()), later.offset())
            for (topic, partition), offset in first.items():
                self._consumer.seek(TopicPartition(topic, partition, offset))
            raise
        finally:
            if done:
                self._consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in done.items()],
                                      asynchronous=False)

    def _request(self, msg: Any) -> None:
        if msg.value() is None:
            if msg.key():
                self.book.close(msg.key().decode(errors="replace"), "tombstone")
            return
        try:
            req = parse_request(orjson.loads(msg.value()))
        except (orjson.JSONDecodeError, BadRequest) as exc:
            self.metrics.requests_invalid.inc()
            log.warning("label request at %s:%d:%d ignored: %s", msg.topic(), msg.partition(), msg.offset(), exc)
            return
        self.book.request(req)

    def poll(self) -> int:
        """Forward every annotation not forwarded yet; returns the labels produced."""
        produced = 0
        self.forwarder.take_recent()  # the poll reads every task back
        for task in self.ls.tasks(self.project):
            self.book.note(task)
            self.forwarder.check_marks(task)
            for annotation in task.get("annotations") or []:
                if isinstance(annotation, dict):
                    produced += self.forwarder.forward(task, annotation)
        self.forwarder.save_marks()
        self.book.publish()
        self.metrics.last_poll.set(self._now())
        return produced

    # -- webhooks and HTTP

    def _register_webhook(self, url: str) -> None:
        for hook in self.ls.webhooks(self.project):
            if hook.get("url") == url:
                return
        self.ls.create_webhook(self.project, url, WEBHOOK_ACTIONS)
        log.info("registered webhook %s on project %s", url, self.project)

    def webhook(self, payload: dict[str, Any]) -> str:
        """Handle one webhook call; returns its outcome. Raises if the label could not be produced."""
        action = payload.get("action")
        if action == "ANNOTATIONS_DELETED":
            self.metrics.annotations_deleted.inc(len(payload.get("annotations") or []))
            return "ok"
        if action not in ("ANNOTATION_CREATED", "ANNOTATION_UPDATED"):
            return "ignored"
        annotation_id = (payload.get("annotation") or {}).get("id")
        if annotation_id is None or (payload.get("project") or {}).get("id") not in (None, self.project):
            return "ignored"
        # the payload says which annotation changed; what it holds is read from Label Studio
        annotation = self.ls.annotation(int(annotation_id))
        self.forwarder.forward(self.ls.task(annotation["task"]), annotation)
        return "ok"

    def live(self) -> bool:
        return time.monotonic() - self.last_loop < max(60.0, 3 * self.settings.annotate.retry_s)

    def _serve(self) -> None:
        connector = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/metrics":
                    self._send(200, generate_latest(connector.metrics.registry), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    ok = connector.live()
                    self._send(200 if ok else 503, b"ok\n" if ok else b"loop stalled\n", "text/plain")
                else:
                    self._send(404, b"not found\n", "text/plain")

            def do_POST(self) -> None:
                if self.path.split("?")[0] != "/webhook":
                    self._send(404, b"not found\n", "text/plain")
                    return
                try:
                    payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                    outcome = connector.webhook(payload if isinstance(payload, dict) else {})
                except (ValueError, LabelStudioError, LabelNotDelivered) as exc:
                    connector.metrics.webhooks.labels("error").inc()
                    log.warning("webhook not handled (the poller will catch up): %s", exc)
                    self._send(503, b"not handled\n", "text/plain")
                    return
                connector.metrics.webhooks.labels(outcome).inc()
                self._send(200, b"ok\n", "text/plain")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    # Label Studio stops waiting after its WEBHOOK_TIMEOUT; the label is out already
                    pass

            def log_message(self, *args: object) -> None:
                pass

        try:
            self._server = ThreadingHTTPServer(("0.0.0.0", self.settings.annotate.port), Handler)
        except OSError as exc:
            raise ConfigError(f"{ENV_PREFIX}ANNOTATE__PORT: cannot listen on {self.settings.annotate.port}: "
                              f"{exc.strerror}") from None
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="annotate-http", daemon=True).start()


def main() -> int:
    """The CLI entry: settings, start (retrying while Label Studio is not up), run."""
    import signal

    from consumer import logs
    from consumer.annotate.config import load_annotate_settings

    try:
        settings = load_annotate_settings()
    except ConfigError as exc:
        logs.print_error(f"activestream annotate label-studio: {exc}", logs.requested_format())
        return 2
    logs.configure(settings.log_level, settings.log_format)
    connector = Connector(settings)
    signal.signal(signal.SIGTERM, connector.request_stop)
    signal.signal(signal.SIGINT, connector.request_stop)
    while True:
        try:
            connector.start()
            break
        except ConfigError as exc:
            logs.print_error(f"activestream annotate label-studio: {exc}", settings.log_format)
            return 2
        except LabelStudioError as exc:
            if exc.status in (401, 403):
                logs.print_error(f"activestream annotate label-studio: {ENV_PREFIX}ANNOTATE__TOKEN was refused by "
                                 f"{settings.annotate.url}", settings.log_format)
                return 2
            log.warning("Label Studio not reachable (%s); trying again in %.0f s", exc, settings.annotate.retry_s)
            if connector._stop.wait(settings.annotate.retry_s):
                return 0
    log.info("annotating: requests from %s, labels to %s, project %s at %s", settings.topics.label_requests,
             settings.topics.labels, connector.project, settings.annotate.url)
    return connector.run()
