"""HTTP endpoints: ``/metrics`` (Prometheus), ``/healthz`` (liveness), ``/readyz`` (readiness).

Liveness means the poll loop is still turning: its last iteration is younger than
``max_loop_age_s``. It never checks the broker: a broker outage is not cured by restarting the
pod. Readiness means the checkpoint has been restored and the features consumer has an assignment.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from consumer.clock import Clock

__all__ = ["Health", "HealthServer"]


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


class HealthServer:
    """A small threaded HTTP server for the probes and the metrics."""

    def __init__(self, health: Health, registry: CollectorRegistry, port: int, host: str = "0.0.0.0") -> None:
        routes = {
            "/healthz": lambda: health.live(),
            "/readyz": lambda: health.ready(),
        }

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/metrics":
                    self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                elif path in routes:
                    ok, text = routes[path]()
                    self._send(200 if ok else 503, text.encode(), "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found\n", "text/plain; charset=utf-8")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:  # probes every few seconds: no access log
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="activestream-http", daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
