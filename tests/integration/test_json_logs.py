"""``activestream run`` with ACTIVESTREAM_LOG_FORMAT=json: every line on stderr is a JSON object,
librdkafka's included (they come through Python logging, not printed by librdkafka itself).

The brokers are a port where nothing listens: librdkafka logs the refused connections (level 3,
without any ``debug`` setting) while the service waits for them to check its lease topic."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]


def test_every_stderr_line_is_a_json_object_and_librdkafka_s_lines_are_among_them(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: every connection is refused
        env = {**os.environ, "ACTIVESTREAM_LOG_FORMAT": "json",
               "ACTIVESTREAM_BOOTSTRAP_SERVERS": f"127.0.0.1:{sock.getsockname()[1]}",
               "ACTIVESTREAM_CHECKPOINT_DIR": str(tmp_path / "checkpoints"), "ACTIVESTREAM_METRICS_PORT": "0",
               "ACTIVESTREAM_ROLE": "all"}
        proc = subprocess.Popen([sys.executable, "-m", "consumer", "run"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        seen = threading.Event()

        def read() -> None:
            for line in proc.stderr:
                lines.append(line)
                if '"logger":"librdkafka"' in line:
                    seen.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            # the lease check gives up after 5 s, then the service logs librdkafka's lines and waits
            deadline = time.monotonic() + 180
            while not (seen.is_set() and any('"logger":"consumer.lease"' in line for line in lines)):
                assert proc.poll() is None, f"exited with {proc.returncode}: {''.join(lines)[-3000:]}"
                assert time.monotonic() < deadline, f"no librdkafka line within 180 s: {''.join(lines)[-3000:]}"
                seen.wait(0.2)  # the librdkafka line, or a turn to read the service's own
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=120)
            reader.join(timeout=10)
    assert code == 0, "".join(lines)[-3000:]

    objects = []
    for line in lines:
        obj = orjson.loads(line)  # raises on any line that is not JSON (a librdkafka line printed by itself)
        assert isinstance(obj, dict) and {"time", "level", "logger", "message"} <= set(obj), line
        objects.append(obj)
    kafka = [o for o in objects if o["logger"] == "librdkafka"]
    assert kafka and all(o["facility"] and "#" in o["client"] for o in kafka)
    assert any(o["facility"] == "FAIL" and "Connection refused" in o["message"] for o in kafka)
    assert any(o["logger"] == "consumer.lease" and "lease topic" in o["message"] for o in objects)
