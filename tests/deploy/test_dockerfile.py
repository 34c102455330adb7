"""The Dockerfile, proven without a Docker engine.

BuildKit's own parser (the ``dockerfile`` package) reads it; the checks below hold it to what the
service needs (non-root, volume, port, signal, health check). Then its steps run here, as a build
would run them: the build stage's COPY and RUN lines into a fresh virtualenv under a temporary
root, the final stage's RUN lines as the image's unprivileged user, then ``activestream --help``, a
short ``activestream run`` against the test broker with its checkpoints on the "volume", the
HEALTHCHECK command, and SIGTERM.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dockerfile
import pytest
from confluent_kafka import Producer

from consumer import checkpointing
from consumer.cli import build_parser
from consumer.config import Settings
from consumer.demo.broker import CLIENT_SETTINGS, create_topics, free_port
from consumer.demo.feed import drifting_stream
from tests.deploy.conftest import ROOT

KUBERNETES_GRACE_S = 30  # terminationGracePeriodSeconds' default
SERVICE_UID = 10001


@dataclass
class Stage:
    base: str
    name: str | None
    commands: list = field(default_factory=list)

    def all(self, cmd: str) -> list:
        return [c for c in self.commands if c.cmd == cmd.upper()]

    def one(self, cmd: str):
        found = self.all(cmd)
        assert len(found) == 1, f"expected one {cmd} in the stage from {self.base}, got {len(found)}"
        return found[0]

    def env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for c in self.all("env"):
            pairs = c.value
            out.update(zip(pairs[::2], pairs[1::2], strict=True))
        return out


def stages() -> list[Stage]:
    out: list[Stage] = []
    for command in dockerfile.parse_file(str(ROOT / "Dockerfile")):
        if command.cmd == "FROM":
            value = command.value
            out.append(Stage(value[0], value[2] if len(value) == 3 and value[1].upper() == "AS" else None))
        elif out:
            out[-1].commands.append(command)
    return out


def args() -> dict[str, str]:
    found = {}
    for command in dockerfile.parse_file(str(ROOT / "Dockerfile")):
        if command.cmd == "FROM":
            break
        if command.cmd == "ARG":
            key, _, value = command.value[0].partition("=")
            found[key] = value
    return found


# -- what the file says ------------------------------------------------------------------------------
def test_it_is_multi_stage_on_a_slim_python_and_the_final_stage_installs_no_build_tools():
    build, final = stages()[0], stages()[-1]
    assert len(stages()) == 2 and build.name == "build"
    assert build.base == final.base == "${PYTHON_IMAGE}" and "-slim" in args()["PYTHON_IMAGE"]
    assert "3.11" in args()["PYTHON_IMAGE"]
    for run in final.all("run"):
        assert not re.search(r"apt-get|apk |gcc|build-essential|pip install", run.value[0]), run.original
    copy = final.one("copy")
    assert copy.flags == ("--from=build",) and copy.value == (build.env()["VIRTUAL_ENV"], final.env()["VIRTUAL_ENV"])


def test_the_service_runs_as_a_numeric_non_root_user_declared_before_it_starts():
    final = stages()[-1]
    user = final.one("user").value[0]
    assert user == f"{SERVICE_UID}:{SERVICE_UID}"
    order = [c.cmd for c in final.commands]
    assert order.index("USER") < order.index("ENTRYPOINT")
    assert f"--uid {SERVICE_UID}" in final.all("run")[0].value[0]


def test_entrypoint_volume_port_signal_and_health_check_match_the_service():
    final = stages()[-1]
    env = final.env()
    entrypoint, cmd = final.one("entrypoint"), final.one("cmd")
    assert entrypoint.json and entrypoint.value == ("activestream",)  # exec form: the service is PID 1
    assert cmd.json and cmd.value == ("run",)
    assert final.one("volume").value == (env["ACTIVESTREAM_CHECKPOINT_DIR"],)
    assert env["ACTIVESTREAM_CHECKPOINT_DIR"] == str(Settings.model_fields["checkpoint_dir"].default)
    assert final.one("expose").value == (env["ACTIVESTREAM_METRICS_PORT"],)
    assert int(env["ACTIVESTREAM_METRICS_PORT"]) == Settings.model_fields["metrics_port"].default
    assert final.one("stopsignal").value == ("SIGTERM",)
    health = final.one("healthcheck")
    assert health.value[0] == "CMD" and health.value[1:] == ("activestream", "healthcheck")
    build_parser().parse_args(list(health.value[2:]))  # a command the CLI has
    # SIGTERM flushes for at most FLUSH_TIMEOUT_S, then checkpoints and commits: inside the grace period
    assert checkpointing.FLUSH_TIMEOUT_S + 5 < KUBERNETES_GRACE_S


def test_dockerignore_lets_in_what_the_build_copies_and_little_else():
    patterns = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and line[0] != "#"]
    assert patterns[0] == "*"
    copied = [src for c in stages()[0].all("copy") for src in c.value[:-1]]
    for src in copied:
        assert f"!{src}" in patterns or f"!{src}/" in patterns, src


# -- what its steps do -------------------------------------------------------------------------------
def _runs_as(uid: int | None, python: str) -> bool:
    try:
        out = subprocess.run([python, "-c", "import venv, ensurepip"], user=uid, group=uid, extra_groups=[],
                             capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0


def base_interpreter(uid: int | None) -> str:
    """A Python 3.11 that the image's user can run, as the base image's /usr/local/bin/python is."""
    candidates = [sys.executable, shutil.which("python3.11"), "/usr/bin/python3.11", "/usr/local/bin/python3.11"]
    for python in filter(None, candidates):
        if _runs_as(uid, python):
            return python
    pytest.fail(f"no Python 3.11 that uid {uid} may run among {candidates}: install python3.11 system-wide")


class ImageRoot:
    """A temporary directory standing for the image's file system: /opt, /var and /src live under it."""

    def __init__(self, path: Path, uid: int | None) -> None:
        self.path, self.uid = path, uid

    def rebase(self, text: str) -> str:
        return re.sub(r"(?<![\w$/.])/(opt|var|src)\b", lambda m: f"{self.path}/{m.group(1)}", text)

    def env(self, stage: Stage, base: dict[str, str]) -> dict[str, str]:
        env = dict(base)
        for key, value in stage.env().items():
            env[key] = self.rebase(value.replace("$PATH", env.get("PATH", "")))
        return env

    def run(self, command: str, env: dict[str, str], cwd: Path, as_user: bool, timeout: float) -> None:
        uid = self.uid if as_user else None
        out = subprocess.run(["bash", "-c", self.rebase(command)], env=env, cwd=cwd, user=uid, group=uid,
                             extra_groups=[] if uid is not None else None, capture_output=True, text=True,
                             timeout=timeout)
        assert out.returncode == 0, f"{command}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"


@pytest.fixture(scope="module")
def image() -> Iterator[tuple[ImageRoot, dict[str, str]]]:
    """Build stage and final stage run here; yields the root and the final stage's environment."""
    uid = SERVICE_UID if os.geteuid() == 0 else None  # not root: already an unprivileged user
    root = ImageRoot(Path(tempfile.mkdtemp(prefix="activestream-image-")), uid)
    root.path.chmod(0o755)
    try:
        python = base_interpreter(uid)
        shim = root.path / "base-bin"  # the base image's `python`
        shim.mkdir()
        (shim / "python").symlink_to(python)
        tmp = root.path / "tmp"  # the image's own /tmp
        tmp.mkdir(mode=0o1777)
        tmp.chmod(0o1777)
        base_env = {"PATH": f"{shim}:/usr/local/bin:/usr/bin:/bin", "HOME": str(root.path / "home"),
                    "LANG": "C.UTF-8", "TMPDIR": str(tmp)}
        if "PIP_INDEX_URL" in os.environ:
            base_env["PIP_INDEX_URL"] = os.environ["PIP_INDEX_URL"]
        build, final = stages()
        # Build stage: WORKDIR, COPY from the context, RUN (with the pip cache: the result is the same).
        workdir = Path(root.rebase(build.one("workdir").value[0]))
        workdir.mkdir(parents=True)
        for copy in build.all("copy"):
            *sources, target = copy.value
            for src in sources:
                dest = workdir / target / (Path(src).name if target.endswith("/") else "")
                (shutil.copytree if (ROOT / src).is_dir() else shutil.copy2)(ROOT / src, dest)
        env = root.env(build, base_env)
        env.pop("PIP_NO_CACHE_DIR")
        for run in build.all("run"):
            root.run(run.value[0], env, workdir, as_user=False, timeout=900)
        # Final stage: the root-run RUN makes the user and its directories; after USER, RUN as that user.
        final_env = root.env(final, base_env)
        user_setup, *as_user = final.all("run")
        for directory in re.findall(r"install -d -o \d+ -g \d+ (.+)$", user_setup.value[0])[0].split():
            target = Path(root.rebase(directory))
            target.mkdir(parents=True)
            if uid is not None:
                os.chown(target, uid, uid)
        for run in as_user:
            root.run(run.value[0], final_env, root.path, as_user=True, timeout=600)
        yield root, final_env
    finally:
        shutil.rmtree(root.path, ignore_errors=True)


def as_service(root: ImageRoot, *argv: str, env: dict[str, str], **kwargs) -> subprocess.Popen:
    uid = root.uid
    return subprocess.Popen(list(argv), env=env, cwd=root.path, user=uid, group=uid,
                            extra_groups=[] if uid is not None else None, **kwargs)


def test_the_install_steps_give_a_read_only_venv_and_a_warm_kernel_cache(image):
    root, env = image
    cache = Path(env["NUMBA_CACHE_DIR"])
    assert list(cache.rglob("*.nbi")), "the warm-up compiled no kernel into NUMBA_CACHE_DIR"
    venv = Path(env["VIRTUAL_ENV"])
    writable = as_service(root, "bash", "-c", f"test -w {venv}/lib", env=env).wait()
    assert writable != 0 or root.uid is None, "the service user can write into its site-packages"
    out = as_service(root, "activestream", "--help", env=env, stdout=subprocess.PIPE, text=True)
    assert out.wait(60) == 0 and "run" in out.stdout.read()
    assert not list(Path(env["TMPDIR"]).iterdir()), "the warm-up left files in /tmp"


def test_activestream_run_as_the_image_user_scores_checkpoints_to_the_volume_and_stops_on_sigterm(
        image, kafka_bootstrap):
    root, env = image
    suffix = uuid.uuid4().hex[:8]
    topics = {k: f"image-{suffix}-{k}" for k in ("features", "predictions", "label-requests", "labels",
                                                 "dead-letters")}
    create_topics(kafka_bootstrap, list(topics.values()))
    port = free_port()
    env = {**env, "ACTIVESTREAM_BOOTSTRAP_SERVERS": kafka_bootstrap, "ACTIVESTREAM_GROUP_ID": f"image-{suffix}",
           "ACTIVESTREAM_METRICS_PORT": str(port), "ACTIVESTREAM_KAFKA_CONSUMER": _json(CLIENT_SETTINGS),
           "ACTIVESTREAM_CHECKPOINT__EVERY_S": "2",
           **{f"ACTIVESTREAM_TOPICS__{k.upper().replace('-', '_')}": v for k, v in topics.items()}}
    cache = Path(env["NUMBA_CACHE_DIR"])
    cached_before = sorted(p.name for p in cache.rglob("*"))
    records = drifting_stream(200, seed=5)  # the kind of records the warm-up streamed
    log = root.path / "run.log"
    with open(log, "wb") as out:
        proc = as_service(root, "activestream", "run", env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while subprocess.run(["activestream", "healthcheck", "--ready"], env=env, capture_output=True).returncode:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "not ready in 90 s:\n" + log.read_text()[-3000:]
            time.sleep(0.3)  # polling another process: nothing to wait on
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        for value in records.values:
            producer.produce(topics["features"], value=value)
        producer.flush(10)
        while _scored(port) < len(records.values):
            assert time.monotonic() < deadline, "records not scored:\n" + log.read_text()[-3000:]
            time.sleep(0.3)
        health = stages()[-1].one("healthcheck").value[1:]
        checked = as_service(root, *health, env=env, stdout=subprocess.PIPE, text=True)
        assert checked.wait(30) == 0 and checked.stdout.read().startswith("ok")
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(KUBERNETES_GRACE_S) == 0, log.read_text()[-3000:]
        stopped_in = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    volume = Path(env["ACTIVESTREAM_CHECKPOINT_DIR"])
    checkpoints = sorted(volume.glob("checkpoint-*.ckpt"))
    assert checkpoints and all(p.stat().st_uid == (root.uid if root.uid is not None else os.geteuid())
                               for p in checkpoints)
    inspect = subprocess.run(["activestream", "checkpoint", "inspect", str(volume)], env=env, capture_output=True,
                             text=True, timeout=60)
    assert f'"next_offset": {len(records.values)}' in inspect.stdout, inspect.stdout + inspect.stderr
    assert stopped_in < KUBERNETES_GRACE_S / 2
    assert sorted(p.name for p in cache.rglob("*")) == cached_before, "the service compiled kernels at run time"


def _json(mapping: dict) -> str:
    import json

    return json.dumps(mapping)


def _scored(port: int) -> float:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return 0.0
    match = re.search(r"^activestream_records_scored_total (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0
