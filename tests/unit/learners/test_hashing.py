"""Stable feature hashing."""

import subprocess
import sys

from learners.hashing import feature_index, hash_features


def test_feature_index_is_stable_across_processes():
    code = "from learners.hashing import feature_index; print(feature_index('country=FR', 2**20))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert int(out) == feature_index("country=FR", 2**20)


def test_feature_index_stays_in_range():
    assert all(0 <= feature_index(f"f{i}", 1000) < 1000 for i in range(2000))


def test_hash_features_spreads_names():
    idx, _ = hash_features({f"token{i}": 1.0 for i in range(1000)}, 2**20)
    assert len(set(idx.tolist())) >= 999
