"""`activestream demo` end to end, as a user runs it after `pip install`."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

REPORT_KEYS = {"records", "predictions", "label_requests", "labels_applied", "labels_expired", "query_ratio",
               "labelling_cost", "accuracy", "f1", "estimated_accuracy", "dead_letters", "seconds"}


def demo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "consumer", "demo", *args], capture_output=True, text=True,
                          timeout=300)


def test_demo_on_the_bundled_stream_reports_every_pinned_key():
    out = demo("--records", "3000", "--rate", "2000", "--label-delay", "0.2", "--label-cost", "0.5", "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert set(report) >= REPORT_KEYS
    assert report["records"] == report["predictions"] == 3000
    assert report["labels_applied"] == report["label_requests"] > 0
    assert report["query_ratio"] == report["label_requests"] / 3000
    assert report["labelling_cost"] == 0.5 * report["labels_applied"]
    assert report["dead_letters"] == 0 and report["accuracy"] > 0.7
    assert abs(report["accuracy"] - report["estimated_accuracy"]) < 0.1


def test_demo_streams_a_libsvm_file(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 5))
    y = np.where(X[:, 0] - X[:, 1] > 0, 1, 0)
    path = tmp_path / "toy.svm"
    path.write_text("".join(f"{label} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)) + "\n"
                            for x, label in zip(X, y, strict=True)))
    out = demo("--data", str(path), "--learner", "pa-2", "--rate", "1000", "--label-delay", "0", "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["predictions"] == 1500 and report["query_ratio"] == 1.0  # pa-2 asks for every label
    assert report["accuracy"] > 0.75


def test_demo_human_output_is_a_summary():
    out = demo("--records", "1000", "--rate", "0", "--label-delay", "0")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "online accuracy / F1 vs truth" in out.stdout and "estimated accuracy (service)" in out.stdout


def test_demo_report_writes_a_self_contained_page_with_its_curves(tmp_path):
    page = tmp_path / "report.html"
    out = demo("--records", "2000", "--rate", "2000", "--label-delay", "0.2", "--report", str(page), "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    text = page.read_text()
    assert text.count("<svg") == 4 and text.count("<polyline") >= 6
    assert f"{report['accuracy']:.4f}" in text and "<script" not in text
