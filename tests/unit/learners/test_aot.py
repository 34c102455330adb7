"""Kernels compiled ahead of time against the same code compiled by numba at run time: the same
numbers bit for bit, no numba in a replay's process, the GIL released."""

import json
import lzma
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from learners import ALGORITHMS, aot, compiled
from learners.budget import backtest_controller
from learners.datasets import read_libsvm
from learners.defaults import default_learner
from learners.replay import replay
from tests.unit.learners.test_replay_stream import assert_same, dataset, learner

# the default learners (the binary one on narrow rows with its random Fourier features), importance
# weights (binary and multiclass), a full second-order rule, a kernel rule with its support set, a
# drift rule: compiled for the tests (seconds each), where `python -m learners.aot` compiles every
# pair of the registry
REPRESENTATIVE = ["paa-1", "lr-ada-entropy", "lr-ada-entropy-rff", "mlr-ada-entropy", "paa-1-iwal", "mpaa-1-iwal",
                  "soal", "kpa", "lasec-diag"]


# numba's cache files of the package's modules that the fixture's build wrote (it should write none)
_CACHE_WRITTEN: list[Path] = []


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """Modules compiled from these sources for the representative learners, used instead of any
    in the package."""
    out = tmp_path_factory.mktemp("compiled")
    package = Path(aot.__file__).parent
    started = time.time()
    aot.build(out, jobs=2, learners=REPRESENTATIVE)
    _CACHE_WRITTEN[:] = [p for p in package.rglob("*.nb[ic]") if p.stat().st_mtime >= started]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compiled, "META", out / compiled.META.name)
        compiled._functions.cache_clear()
        assert compiled.available()
        yield out
    compiled._functions.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_lookup():
    """Each test looks the twins up again (a test changes what may be used)."""
    compiled._functions.cache_clear()
    yield
    compiled._functions.cache_clear()


@pytest.fixture
def jit_only(monkeypatch):
    """Run the code compiled by numba at run time, not its compiled twins."""
    monkeypatch.setenv("ACTIVESTREAM_AOT", "0")
    compiled._functions.cache_clear()
    yield
    monkeypatch.delenv("ACTIVESTREAM_AOT")
    compiled._functions.cache_clear()


@pytest.mark.parametrize("delay, budget", [(0, False), (50, False), (0, True)])
@pytest.mark.parametrize("name", REPRESENTATIVE)
def test_a_replay_through_a_compiled_driver_equals_the_jit_one_bit_for_bit(twins, name, delay, budget, monkeypatch):
    """Both drivers, the plain one and the online controller's, on every registry entry."""
    data = dataset(ALGORITHMS[name].rule.multiclass)
    a, b = learner(name), learner(name)
    if budget:
        a.budget, b.budget = backtest_controller(0.2, data.n), backtest_controller(0.2, data.n)
    twin = compiled.budget_replay_rows if budget else compiled.replay_rows
    assert twin(a) is not None
    ahead = replay(a, data, delay=delay)
    monkeypatch.setenv("ACTIVESTREAM_AOT", "0")
    compiled._functions.cache_clear()
    assert twin(b) is None
    jit = replay(b, data, delay=delay)
    assert jit.updates > 0
    assert_same(jit, ahead, b, a)


def _read(text: bytes):
    data = read_libsvm(text)
    return data.rows.indptr, data.rows.indices, data.rows.data, data.labels


def test_the_compiled_reader_reads_what_the_jit_one_reads(twins, jit_only, datasets_dir):
    text = lzma.decompress((datasets_dir / "a8a.xz").read_bytes())[:3_000_000]
    text += b"\n+1 3:0.5 7:1e-3 9:-2.25e+02\n-1 4:123456789.123456789\n"  # the parser's slow paths
    compiled._functions.cache_clear()
    jit = _read(text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ACTIVESTREAM_AOT", "1")
        compiled._functions.cache_clear()
        assert compiled.compiled("datasets_parse") is not None
        ahead = _read(text)
    for got, want in zip(ahead, jit, strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_build_keeps_out_of_the_packages_numba_cache(twins):
    # the cache other processes of the installation write: its index once failed the build
    assert _CACHE_WRITTEN == []


def test_twins_are_not_used_when_turned_off_or_compiled_from_other_sources(twins, monkeypatch, tmp_path):
    assert compiled.compiled("datasets_count") is not None
    monkeypatch.setenv("ACTIVESTREAM_AOT", "off")
    compiled._functions.cache_clear()
    assert compiled.compiled("datasets_count") is None
    monkeypatch.delenv("ACTIVESTREAM_AOT")
    meta = json.loads(compiled.META.read_text())
    stale = tmp_path / "meta.json"
    stale.write_text(json.dumps({**meta, "digest": "0" * 16}))
    monkeypatch.setattr(compiled, "META", stale)
    compiled._functions.cache_clear()
    assert compiled.compiled("datasets_count") is None


def _replay_loads(twins: Path, args: list[str]) -> dict:
    """The report's F1 and the modules of numba, llvmlite, numpy.ma and statistics that an
    ``activestream replay`` with ``args`` loads, in a process of its own."""
    probe = f"""
import io, json, pathlib, sys
import learners.compiled
learners.compiled.META = pathlib.Path({str(twins / compiled.META.name)!r})  # the modules compiled for the tests
from consumer.cli import main
out = io.TextIOWrapper(io.BytesIO())
real, sys.stdout = sys.stdout, out
main(["replay", *{args!r}, "--json"])
out.flush()
sys.stdout = real
report = json.loads(out.buffer.getvalue())
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite", "statistics") or m == "numpy.ma")
print(json.dumps({{"f1": report["f1"], "loaded": loaded}}))
"""
    return json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                     check=True).stdout.splitlines()[-1])


def test_an_offline_replay_with_its_kernels_compiled_ahead_of_time_loads_no_numba(twins, tmp_path, datasets_dir):
    path = tmp_path / "rows.svm"
    path.write_bytes(lzma.decompress((datasets_dir / "a8a.xz").read_bytes())[:20_000])
    got = _replay_loads(twins, ["--learner", "paa-1", "--in-order", "--data", str(path)])
    assert not [m for m in got["loaded"] if m.split(".")[0] in ("numba", "llvmlite")] and 0 < got["f1"] < 1
    # with the width and the classes given, the labels are not read ahead: np.unique (which imports
    # numpy.ma) is not called, and nothing imports statistics (CW's φ does, when a CW learner is made)
    given = ["--param", "n_features=124", "--param", "classes=[-1,1]"]
    got = _replay_loads(twins, ["--learner", "paa-1", "--in-order", *given, "--data", str(path)])
    assert got["loaded"] == [] and 0 < got["f1"] < 1


def test_a_replay_with_the_default_learner_of_narrow_rows_loads_no_numba(twins, tmp_path, datasets_dir):
    path = tmp_path / "rows.svm"
    path.write_bytes(lzma.decompress((datasets_dir / "a8a.xz").read_bytes())[:20_000])
    assert default_learner(2, 124) == "lr-ada-entropy-rff"  # its map's kernels are compiled ahead of time too
    got = _replay_loads(twins, ["--in-order", "--param", "n_features=124", "--param", "classes=[-1,1]",
                                "--data", str(path)])
    assert got["loaded"] == [] and 0 < got["f1"] < 1


def test_a_compiled_kernel_releases_the_gil(twins, datasets_dir):
    text = np.frombuffer(lzma.decompress((datasets_dir / "a8a.xz").read_bytes()) * 40, dtype=np.uint8)
    count = compiled.compiled("datasets_count")
    assert count is not None
    ticks = 0
    worker = threading.Thread(target=count, args=(text,))
    worker.start()
    while worker.is_alive():  # runs only while the worker's call lets go of the GIL
        ticks += 1
    worker.join()
    assert ticks > 0
