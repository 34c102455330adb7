"""A real Label Studio for the tests: ``label-studio start`` from a venv of its own, on 127.0.0.1.

Label Studio is heavy (Django) and its pins are not ours, so it lives in ``.ls-venv`` (or
``ACTIVESTREAM_LABEL_STUDIO_VENV``) with Playwright beside it, installed from
``tests/integration/label-studio-requirements.txt``. Its first start migrates an empty SQLite
database; that data directory is kept beside the venv as a template, so each test run starts from a
copy in seconds.

Standard library only: CI makes the template while the project's own venv is still being built::

    python3 tests/integration/label_studio_server.py   # prints the seconds the first start took
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LS_VENV = Path(os.environ.get("ACTIVESTREAM_LABEL_STUDIO_VENV", ROOT / ".ls-venv"))
TEMPLATE = LS_VENV / "activestream-template"
EMAIL, PASSWORD = "annotator@example.com", "activestream-test-1"
TOKEN = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
START_TIMEOUT_S = 900  # a first start on a loaded 2-core machine migrates for minutes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


class LabelStudioProcess:
    """``label-studio start`` on a data directory and a free port, stopped with its process group."""

    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data_dir.parent / f"{data_dir.name}.log"
        env = {**os.environ, "SSRF_PROTECTION_ENABLED": "false",  # the connector's webhook is on 127.0.0.1
               "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir), "DJANGO_DB": "sqlite"}
        started = time.monotonic()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [str(LS_VENV / "bin" / "label-studio"), "start", "--no-browser", "--internal-host", "127.0.0.1",
                 "--port", str(self.port), "--data-dir", str(data_dir), "--username", EMAIL, "--password",
                 PASSWORD, "--user-token", TOKEN, "--enable-legacy-api-token", "--log-level", "WARNING"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        # Nothing to wait on but its health endpoint: it answers once the migrations are done.
        while not _healthy(self.url):
            if self.proc.poll() is not None:
                raise RuntimeError(f"Label Studio exited: {self.log.read_text()[-2000:]}")
            if time.monotonic() - started > START_TIMEOUT_S:
                self.stop()
                raise TimeoutError(f"Label Studio did not start in {START_TIMEOUT_S} s: {self.log.read_text()[-2000:]}")
            time.sleep(0.5)
        self.start_s = time.monotonic() - started

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def template() -> Path:
    """The migrated data directory the tests copy, made by a first start when missing."""
    if not (TEMPLATE / "label_studio.sqlite3").exists():
        with tempfile.TemporaryDirectory(prefix="ls-template-") as tmp:
            fresh = Path(tmp) / "data"
            LabelStudioProcess(fresh).stop()
            partial = TEMPLATE.with_suffix(".tmp")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(fresh, partial)
            partial.rename(TEMPLATE)  # whole or absent: a run stopped half-way leaves no template
    return TEMPLATE


def start_from_template(parent: Path) -> LabelStudioProcess:
    data = parent / "data"
    shutil.copytree(template(), data)
    return LabelStudioProcess(data)


if __name__ == "__main__":
    began = time.monotonic()
    made = template()
    print(f"Label Studio template at {made} in {time.monotonic() - began:.0f} s", file=sys.stderr)
