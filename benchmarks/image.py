"""The service image: its size, how long it takes to build, and how soon a container is ready.

One command writes ``benchmarks/results/image.md`` and ``image.json``::

    python -m benchmarks.image              # --repeats 5 by default

It builds the image twice with ``deploy/image/build.sh`` (podman, the base made from Debian's
packages): from nothing (the base removed first, ``--no-cache``), then again as CI's later runs do
(the base and podman's layer cache reused). It reports the image's size and its base's
(``podman image inspect``), then starts a container ``--repeats`` times against a broker
on the host (read-only, as uid 10001, a fresh volume each time) and times it from ``podman run`` to
the first ``/readyz`` that answers 200: with the image's kernel cache, and once with an empty cache
(``NUMBA_CACHE_DIR`` on the tmpfs), which compiles the kernels at start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request
import uuid

from benchmarks.reproduce import ROOT, commit, dump_json, run_meta
from consumer.demo.broker import CLIENT_SETTINGS, Broker, create_topics, free_port

__all__ = ["main"]

RESULTS = ROOT / "benchmarks" / "results"
BUILD = ROOT / "deploy" / "image" / "build.sh"
CONF = ROOT / "deploy" / "image" / "containers.conf"
TAG = "localhost/activestream:test"
BASE = "localhost/pybase:3.11"
READY_TIMEOUT_S = 600.0  # an empty kernel cache compiles every kernel first


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "CONTAINERS_CONF": str(CONF)}
    return subprocess.run(["podman", "--runtime", "runc", *args], env=env, capture_output=True, text=True,
                          check=check, timeout=timeout)


def size_mb(image: str) -> float:
    return int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout.strip()) / 1e6


def build(cold: bool) -> float:
    if cold:
        podman("rmi", "--force", TAG, BASE, check=False)
    started = time.perf_counter()
    subprocess.run(["bash", str(BUILD), TAG, *(["--no-cache"] if cold else [])], check=True, timeout=3600,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def time_to_ready(bootstrap: str, empty_cache: bool) -> float:
    """Seconds from ``podman run`` to the first /readyz that answers 200."""
    tag = uuid.uuid4().hex[:8]
    topics = {k: f"image-{tag}-{k}" for k in ("features", "predictions", "label-requests", "labels", "dead-letters")}
    create_topics(bootstrap, list(topics.values()))
    port = free_port()
    env = {"ACTIVESTREAM_BOOTSTRAP_SERVERS": bootstrap, "ACTIVESTREAM_GROUP_ID": f"image-{tag}",
           "ACTIVESTREAM_METRICS_PORT": str(port), "ACTIVESTREAM_KAFKA_CONSUMER": json.dumps(CLIENT_SETTINGS),
           **{f"ACTIVESTREAM_TOPICS__{k.upper().replace('-', '_')}": v for k, v in topics.items()}}
    if empty_cache:
        env["NUMBA_CACHE_DIR"] = "/tmp/numba"
    name = f"activestream-bench-{tag}"
    with tempfile.TemporaryDirectory() as volume:
        os.chown(volume, 10001, 10001)
        options = [arg for k, v in env.items() for arg in ("-e", f"{k}={v}")]
        started = time.perf_counter()
        podman("run", "-d", "--name", name, "--network", "host", "--read-only", "--read-only-tmpfs=false",
               "--tmpfs", "/tmp", "-v", f"{volume}:/var/lib/activestream", *options, TAG)
        try:
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
                        if r.status == 200:
                            return time.perf_counter() - started
                except OSError:
                    pass
                if time.perf_counter() - started > READY_TIMEOUT_S:
                    raise TimeoutError(podman("logs", name, check=False).stderr[-3000:])
                time.sleep(0.05)  # polling another process's port: nothing to wait on
        finally:
            podman("rm", "--force", "--time", "0", name, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.image", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    commit_id = commit()
    cold_s, cached_s = build(cold=True), build(cold=False)
    image_mb, base_mb = size_mb(TAG), size_mb(BASE)
    with Broker() as broker:
        ready = [time_to_ready(broker.bootstrap, empty_cache=False) for _ in range(args.repeats)]
        no_cache = time_to_ready(broker.bootstrap, empty_cache=True)
    command = f"python -m benchmarks.image --repeats {args.repeats}"
    meta = run_meta(command, commit_id, started, repeats=args.repeats)
    figures = {"image_mb": round(image_mb, 1), "base_mb": round(base_mb, 1), "build_s_cold": round(cold_s, 1),
               "build_s_cached": round(cached_s, 1),
               "ready_s_median": round(statistics.median(ready), 2), "ready_s": [round(s, 2) for s in ready],
               "ready_s_empty_kernel_cache": round(no_cache, 2)}
    markdown = f"""# The service image

Command: `{command}`, on the shared 2-core machine. `deploy/image/build.sh` (podman, the base from
Debian's packages) from nothing, then again with its caches; then {args.repeats} containers started
against a broker on the host (read-only, uid 10001, a fresh volume each), each timed from
`podman run` to the first `/readyz` answering 200.

| what | value |
|---|---|
| image size (`podman image inspect`) | {image_mb:.0f} MB |
| of which the base (Debian minbase with Python 3.11) | {base_mb:.0f} MB |
| build time from nothing (debootstrap, `--no-cache`) | {cold_s:.0f} s |
| build time again, nothing changed (the base and the layers reused) | {cached_s:.0f} s |
| time to ready, with the image's kernel cache (median of {args.repeats}) | {statistics.median(ready):.1f} s |
| time to ready, each run | {', '.join(f'{s:.1f}' for s in ready)} s |
| time to ready, with an empty kernel cache (compiled at start) | {no_cache:.1f} s |
"""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "image.md").write_text(markdown)
    (RESULTS / "image.json").write_text(dump_json({**meta, **figures}) + "\n")
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
