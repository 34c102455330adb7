"""`activestream checkpoint inspect` and `activestream healthcheck`."""

import json
import subprocess
import sys

from consumer.cli import main


def test_checkpoint_inspect_prints_what_a_checkpoint_holds(tmp_path):
    from tests.unit.consumer.conftest import Harness

    h = Harness(tmp_path)
    h.service.start()
    h.feature("a", [1.0, 0.0, 0.0, 0.0])
    h.service.run_once()
    assert h.requested_ids() == ["a"]  # the first record is always asked about
    h.label("a", 1)
    h.service.run_once()
    path = h.service.checkpoint()
    for target in (path, path.parent):
        out = subprocess.run([sys.executable, "-m", "consumer", "checkpoint", "inspect", str(target)],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["path"] == str(path) and report["learner"]["learner"] == "paa-1"
        assert {"topic": "features", "partition": 0, "next_offset": 1} in report["offsets"]
        assert report["counters"]["rounds"] == 1 and report["totals"]["records_scored"] == 1
        assert report["remembered"] == {"applied": 1, "expired": 0} and report["parts_bytes"] > 0
    out = subprocess.run([sys.executable, "-m", "consumer", "checkpoint", "inspect", str(tmp_path / "none")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and ("no checkpoint" in out.stderr or "cannot read" in out.stderr)


def test_healthcheck_exits_zero_on_200_and_one_with_the_reason_otherwise(capsys):
    from consumer.clock import ManualClock
    from consumer.health import Health, HealthServer
    from consumer.metrics import Metrics

    clock = ManualClock()
    health = Health(clock, max_loop_age_s=30)
    server = HealthServer(health, Metrics().registry, port=0, host="127.0.0.1").start()
    try:
        assert main(["healthcheck", "--port", str(server.port)]) == 0
        assert main(["healthcheck", "--port", str(server.port), "--ready"]) == 1
        assert "restoring checkpoint" in capsys.readouterr().err
        clock.advance(31)
        assert main(["healthcheck", "--port", str(server.port)]) == 1
    finally:
        server.close()
    assert main(["healthcheck", "--port", str(server.port), "--timeout", "1"]) == 1  # nothing listens

