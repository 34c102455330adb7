"""HTTP endpoints: ``/metrics`` (Prometheus), ``/healthz`` (liveness), ``/readyz`` (readiness).

``/metrics`` is prometheus-client's own exposition: the Prometheus text format, or OpenMetrics when
the scraper's ``Accept`` asks for it, gzip-compressed when its ``Accept-Encoding`` allows, and only the
families named by ``name[]`` query parameters when there are any.

Liveness means the poll loop is still turning: its last iteration is younger than
``max_loop_age_s``. It never checks the broker: a broker outage is not cured by restarting the
pod. Readiness means the checkpoint has been restored and the features consumer has an assignment.
"""

from __future__ import annotations

import gzip
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted

from consumer.clock import Clock

__all__ = ["Health", "HealthServer", "exposition"]

log = logging.getLogger(__name__)


def exposition(registry: CollectorRegistry, accept: str | None, accept_encoding: str | None,
               query: str = "") -> tuple[bytes, dict[str, str]]:
    """The body and headers of a ``/metrics`` answer, as prometheus-client makes them: the format the
    ``Accept`` header asks for (``choose_encoder``), gzip where ``Accept-Encoding`` allows it, only
    the families named by ``name[]`` in ``query``."""
    encoder, content_type = choose_encoder(accept or "")
    names = parse_qs(query).get("name[]")
    body = encoder(registry.restricted_registry(names) if names else registry)
    headers = {"Content-Type": content_type, "Vary": "Accept, Accept-Encoding"}
    if gzip_accepted(accept_encoding or ""):
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return body, headers


class Health:
    """What the probes read; the loop writes it (thread-safe: single assignments)."""

    def __init__(self, clock: Clock, max_loop_age_s: float) -> None:
        self._clock = clock
        self.max_loop_age_s = max_loop_age_s
        self._last_beat = clock.monotonic()
        self.restored = False
        self.assigned = False
        self.stopping = False

    def beat(self) -> None:
        self._last_beat = self._clock.monotonic()

    def loop_age_s(self) -> float:
        return self._clock.monotonic() - self._last_beat

    def live(self) -> tuple[bool, str]:
        age = self.loop_age_s()
        if age > self.max_loop_age_s:
            return False, f"poll loop idle for {age:.1f} s (limit {self.max_loop_age_s:.0f} s)\n"
        return True, f"ok: last loop iteration {age:.2f} s ago\n"

    def ready(self) -> tuple[bool, str]:
        if self.stopping:
            return False, "stopping\n"
        if not self.restored:
            return False, "restoring checkpoint\n"
        if not self.assigned:
            return False, "no partitions assigned\n"
        return True, "ok\n"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: tuple) -> None:
        # a scraper that hung up mid-answer: logged like everything else, not printed to stderr
        log.debug("HTTP request from %s failed", client_address[0], exc_info=True)


class HealthServer:
    """A small threaded HTTP server for the probes and the metrics."""

    def __init__(self, health: Health, registry: CollectorRegistry, port: int, host: str = "0.0.0.0") -> None:
        routes = {
            "/healthz": lambda: health.live(),
            "/readyz": lambda: health.ready(),
        }

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path == "/metrics":
                    self._metrics(url.query)
                elif url.path in routes:
                    ok, text = routes[url.path]()
                    self._send(200 if ok else 503, text.encode(), "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found\n", "text/plain; charset=utf-8")

            def _metrics(self, query: str) -> None:
                try:
                    body, headers = exposition(registry, self.headers.get("Accept"),
                                               self.headers.get("Accept-Encoding"), query)
                except Exception:  # a collector that failed: an answer, and the reason in the log
                    log.exception("/metrics could not be rendered")
                    self._send(500, b"metrics could not be rendered\n", "text/plain; charset=utf-8")
                    return
                content_type = headers.pop("Content-Type")
                self._send(200, body, content_type, headers)

            def _send(self, status: int, body: bytes, content_type: str,
                      headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:  # probes every few seconds: no access log
                pass

        self._server = _Server((host, port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="activestream-http", daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
