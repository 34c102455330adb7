"""Shared fixtures: where the benchmark datasets live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATASETS = Path(os.environ.get("ACTIVESTREAM_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    """../shared/datasets (or $ACTIVESTREAM_DATASETS); tests that need it skip without it."""
    if not (DATASETS / "MANIFEST.md").exists():
        pytest.skip(f"benchmark datasets not found at {DATASETS}")
    return DATASETS
