"""`activestream replay` as a process: it ends without finalising the interpreter, so its output must
be flushed and its exit code kept."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]


def replay(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    data = tmp_path / "rows.svm"
    data.write_bytes(b"+1 1:1 3:0.5\n-1 2:1\n+1 1:0.25 2:2\n-1 3:1\n")
    return subprocess.run([sys.executable, "-m", "consumer", "replay", "--data", str(data), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_replay_process_prints_its_whole_report_and_exits_zero(tmp_path):
    done = replay("--learner", "paa-1", "--in-order", "--json", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["examples"] == 4 and report["learner"] == "paa-1"


def test_replay_process_with_a_bad_learner_exits_two_with_the_reason(tmp_path):
    done = replay("--learner", "no-such-learner", "--in-order", tmp_path=tmp_path)
    assert done.returncode == 2
    assert "unknown learner 'no-such-learner'" in done.stderr and done.stdout == ""


BLAS_PROBE = """
import ctypes, os, sys
from consumer.cli import main
main(sys.argv[1:])
[library] = {line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line}
print(os.environ.get("OPENBLAS_NUM_THREADS"), ctypes.CDLL(library).scipy_openblas_get_num_threads64_())
"""


def probe(source: str, variable: str, tmp_path: Path, **env: str) -> list[str]:
    """The last line ``source`` prints after a replay in its own process, run with ``variable``
    unset but for ``env``."""
    data = tmp_path / "rows.svm"
    data.write_bytes(b"+1 1:1 3:0.5\n-1 2:1\n")
    args = ["replay", "--learner", "paa-1", "--in-order", "--json", "--data", str(data)]
    environ = {k: v for k, v in os.environ.items() if k != variable} | env
    done = subprocess.run([sys.executable, "-c", source, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=environ, check=True)
    return done.stdout.splitlines()[-1].split()


def test_replay_runs_openblas_on_one_thread_unless_the_user_says_otherwise(tmp_path):
    # idle OpenBLAS workers spin before they sleep, on the cores the reader and the learner use
    assert probe(BLAS_PROBE, "OPENBLAS_NUM_THREADS", tmp_path) == ["1", "1"]
    assert probe(BLAS_PROBE, "OPENBLAS_NUM_THREADS", tmp_path, OPENBLAS_NUM_THREADS="2")[0] == "2"


HUGEPAGE_PROBE = """
import os, sys
from consumer.cli import main
main(sys.argv[1:])
import numpy as np
print(os.environ.get("NUMPY_MADVISE_HUGEPAGE"), np._core.multiarray._get_madvise_hugepage())
"""


def test_replay_asks_numpy_for_small_pages_unless_the_user_says_otherwise(tmp_path):
    # a 2 MB page is zeroed whole at its first write, in the learner's thread, as it writes the margins
    assert probe(HUGEPAGE_PROBE, "NUMPY_MADVISE_HUGEPAGE", tmp_path) == ["0", "False"]
    assert probe(HUGEPAGE_PROBE, "NUMPY_MADVISE_HUGEPAGE", tmp_path, NUMPY_MADVISE_HUGEPAGE="1") == ["1", "True"]
