"""benchmarks.staleness: a results file's measured code, and whether it changed since the file was made."""

from __future__ import annotations

import dataclasses
import subprocess

from benchmarks import reproduce
from benchmarks.staleness import changed_since, measured_files


def test_the_measured_code_is_the_command_and_what_it_imports_not_the_runner():
    files = measured_files(("-m", "benchmarks.raw_defaults"))
    assert "benchmarks/raw_defaults.py" in files and "learners/scaling.py" in files
    assert "benchmarks/reproduce.py" not in files  # it imports every benchmark for its checks
    assert not any(f.startswith("consumer/") for f in files)  # a replay benchmark measures no service code
    assert "consumer/process.py" in measured_files(("-m", "benchmarks.service_throughput"))


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_a_change_of_comments_is_not_a_change_of_code(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "m.py").write_text('"""A module."""\nX = 1  # one\n')
    _git(tmp_path, "add", "m.py")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m")
    made = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tmp_path, capture_output=True,
                          text=True).stdout.strip()
    (tmp_path / "m.py").write_text('"""A module, described again."""\n\nX = 1  # still one\n')
    assert changed_since(made, ["m.py"], tmp_path) == []
    (tmp_path / "m.py").write_text("X = 2\n")
    assert changed_since(made, ["m.py"], tmp_path) == ["m.py"]
    assert changed_since(f"{made}+changes", ["m.py"], tmp_path) == ["m.py"]  # made on a dirty tree
    assert changed_since("unknown", ["m.py"], tmp_path) == ["m.py"]


def test_stale_fails_only_on_a_cited_file_nothing_rechecks(monkeypatch, capsys):
    [timing] = [e for e in reproduce.RESULTS if e.name == "replay-startup"]
    [checked] = [e for e in reproduce.RESULTS if e.name == "raw-defaults"]
    cites = {f: ["performance.md"] for e in (timing, checked) for f in e.files}
    monkeypatch.setattr(reproduce, "cited", lambda: cites)
    monkeypatch.setattr(reproduce, "provenance", lambda e: {"commit": "unknown", "made": "then"})
    assert reproduce.stale([timing, checked]) == 0  # a timing file shows its age; a checked one is re-run
    unchecked = dataclasses.replace(checked, check=None)
    assert reproduce.stale([unchecked]) == 1
    assert "STALE" in capsys.readouterr().out
