"""`activestream replay`'s progress bar, read from a pseudo-terminal as a user sees it."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from consumer.progress import ReplayProgress, wanted
from tests.terminal import run_on_a_terminal

ROOT = Path(__file__).resolve().parents[3]


def _rows(path: Path, n: int = 3000) -> Path:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 3))
    y = np.where(X[:, 0] > X[:, 1], 1, -1)
    path.write_text("".join(f"{label:+d} 1:{a:.3f} 2:{b:.3f} 3:{c:.3f}\n" for (a, b, c), label in zip(X, y,
                                                                                                     strict=True)))
    return path


def on_a_terminal(*args: str) -> tuple[int, str]:
    """``activestream replay ARGS`` on a pseudo-terminal: exit code and all it drew."""
    return run_on_a_terminal([sys.executable, "-m", "consumer", "replay", *args], cwd=ROOT)


def test_a_replay_on_a_terminal_draws_rows_a_second_and_the_running_metrics(tmp_path):
    data = _rows(tmp_path / "rows.svm")
    code, drawn = on_a_terminal("--data", str(data), "--learner", "paa-1", "--permutations", "2")
    assert code == 0, drawn[-2000:]
    assert "rows/s" in drawn and "accuracy=" in drawn and "queried=" in drawn, drawn[-2000:]
    assert "pass 2/2" in drawn
    assert "  f1 " in drawn  # the report follows the bar


def test_a_streamed_replay_draws_it_too(tmp_path):
    data = _rows(tmp_path / "rows.svm")
    code, drawn = on_a_terminal("--data", str(data), "--learner", "paa-1", "--in-order")
    assert code == 0, drawn[-2000:]
    assert "rows/s" in drawn and "accuracy=" in drawn, drawn[-2000:]


@pytest.mark.parametrize("flag", ["--json", "--quiet"])
def test_json_and_quiet_draw_no_bar_on_a_terminal(tmp_path, flag):
    data = _rows(tmp_path / "rows.svm")
    code, drawn = on_a_terminal("--data", str(data), "--learner", "paa-1", flag)
    assert code == 0, drawn[-2000:]
    assert "rows/s" not in drawn and "accuracy=" not in drawn


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path):
    data = _rows(tmp_path / "rows.svm")
    done = subprocess.run([sys.executable, "-m", "consumer", "replay", "--data", str(data), "--learner", "paa-1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "rows/s" not in done.stderr and "  f1 " in done.stdout


def test_the_bar_counts_every_pass_and_shows_the_pass_running_accuracy():
    out = io.StringIO()
    bar = ReplayProgress(100, 2, stream=out)
    bar(0, 50, 5, 10)
    bar(0, 100, 20, 12)
    bar(1, 100, 10, 9)
    assert bar.bar.n == 200 and bar.bar.total == 200
    assert "accuracy=0.9000" in out.getvalue() and "queried=9.0%" in out.getvalue()
    bar.close()
    assert not wanted(json=False, quiet=False, stream=out)  # not a terminal
