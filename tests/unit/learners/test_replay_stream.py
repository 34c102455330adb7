"""The streaming replay (a file read chunk by chunk) against the in-memory one: the same outputs, metrics
and final state, bit for bit, on every registry entry; the streaming LIBSVM reader against the whole-file one."""

import bz2
import gzip
import json
import lzma
import threading

import numpy as np
import pytest

from learners import ALGORITHMS, make
from learners.budget import BudgetController
from learners.checks import stream as check_stream
from learners.datasets import Dataset, LibsvmStream, iter_libsvm, read_libsvm, scan_libsvm
from learners.inputs import Rows, as_rows
from learners.replay import replay, replay_stream, run, run_stream

D = 12
SCALABLE = sorted(name for name, spec in ALGORITHMS.items() if spec.scalable)


def dataset(multiclass: bool) -> Dataset:
    X, y = check_stream(multiclass, n=300, seed=4)
    return Dataset(as_rows(X, D), y, "check")


def chunks(data: Dataset, sizes=(1, 37, 0, 64)):
    """``data`` in consecutive chunks of the given sizes, repeated (an empty chunk among them)."""
    lo, k = 0, 0
    while lo < data.n:
        hi = min(data.n, lo + sizes[k % len(sizes)])
        rows = np.arange(lo, hi)
        yield Dataset(data.rows.take(rows), data.labels[rows], data.name)
        lo, k = hi, k + 1


def learner(name: str, **overrides):
    params = {"n_features": D, "seed": 11, **overrides}
    if ALGORITHMS[name].rule.multiclass:
        params["classes"] = [0, 1, 2]
    probe = make(name, **params)
    budget = probe.query.budget_param
    if budget is not None and budget not in overrides:  # asks often enough for updates to matter
        knob = type(probe.query).knob
        params[budget] = 0.5 if budget == "rate" else 4.0 if knob is None or knob.increasing else 0.25
    return make(name, **params)


def assert_same(memory, streamed, a, b):
    for field in ("y_true", "y_pred", "p", "probability", "queried"):
        np.testing.assert_array_equal(getattr(streamed, field), getattr(memory, field), err_msg=field)
    assert streamed.updates == memory.updates
    assert (b.rounds_, b.labels_, b.updates_) == (a.rounds_, a.labels_, a.updates_)
    sa, sb = a.state_dict(), b.state_dict()
    assert sorted(sa) == sorted(sb)
    for key in sa:
        np.testing.assert_array_equal(sb[key], sa[key], err_msg=key)


@pytest.mark.parametrize("delay", [0, 50])
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_stream_replay_equals_in_memory_replay_bit_for_bit(name, delay):
    data = dataset(ALGORITHMS[name].rule.multiclass)
    a, b = learner(name), learner(name)
    memory = replay(a, data, delay=delay)
    streamed = replay_stream(b, chunks(data), delay=delay)
    assert memory.updates > 0
    assert_same(memory, streamed, a, b)


@pytest.mark.parametrize("name", SCALABLE[::6])
def test_stream_replay_with_online_scaling_equals_in_memory_replay(name):
    data = dataset(ALGORITHMS[name].rule.multiclass)
    a, b = learner(name, scale="maxabs", normalize=True), learner(name, scale="maxabs", normalize=True)
    assert_same(replay(a, data, delay=3), replay_stream(b, chunks(data), delay=3), a, b)


@pytest.mark.parametrize("name", ["paa-1", "sel-ada", "mpaa-1"])
def test_stream_replay_with_budget_controller_equals_in_memory_replay(name):
    data = dataset(ALGORITHMS[name].rule.multiclass)
    a, b = learner(name), learner(name)
    a.budget, b.budget = BudgetController(target=0.2), BudgetController(target=0.2)
    assert_same(replay(a, data, delay=4), replay_stream(b, chunks(data), delay=4), a, b)


def test_stream_replay_with_intercept_off_and_random_features_equals_in_memory_replay():
    data = dataset(False)
    for overrides in ({"bias": 0.0}, {"rff_components": 16, "normalize": True}, {"bias": 2.5}):
        a, b = learner("soal", **overrides), learner("soal", **overrides)
        assert_same(replay(a, data, delay=2), replay_stream(b, chunks(data), delay=2), a, b)


@pytest.mark.parametrize("first", [None, 64])
@pytest.mark.parametrize("name", ["paa-1", "mpaa-1"])
def test_run_stream_metrics_equal_run_in_file_order(name, first, monkeypatch):
    """The metrics from the streaming tally (counts, windows, AUC margins summed chunk by chunk, the
    chunks not aligned with the 1,000-record windows nor with the warm-up) equal those from the
    whole trace; also with the margins in many sorted blocks, which two threads sort and merge."""
    if first is not None:
        from learners.replay import _Margins

        monkeypatch.setattr(_Margins, "FIRST", first)
    multiclass = ALGORITHMS[name].rule.multiclass
    X, y = check_stream(multiclass, n=3_300, seed=4)
    data = Dataset(as_rows(X, D), y, "check")
    base = learner(name)
    costs = {} if multiclass else {"eta_p": 0.3, "eta_n": 0.7}
    memory = run(base, data, permutations=3, shuffle=False, delay=2, warmup=10, costs=costs)
    streamed = run_stream(base, lambda: chunks(data, sizes=(1, 37, 0, 641)), permutations=3, delay=2, warmup=10,
                          costs=costs)
    assert streamed.metrics == memory.metrics
    assert np.isfinite(streamed.window_ratios).all()
    np.testing.assert_array_equal(streamed.window_ratios, memory.window_ratios)
    assert len({m.queries for m in streamed.metrics}) > 1  # each pass draws its own coins
    if not multiclass:
        assert np.isfinite(streamed.mean("auc_roc"))


TEXT = (b"# a comment line\n+1 3:1 11:0.5 14:1e-3\n-1 2:1 6:1.25\n\n-1 1:0.1 90:7 qid:3\n"
        b"+1 " + b" ".join(b"%d:0.%d" % (k, k % 9 + 1) for k in range(1, 400)) + b"\n"
        b"+1 5:1 5:2\n-1 4:123456789012345678901234\n+1\n")


@pytest.mark.parametrize("suffix, compress", [("", bytes), (".xz", lzma.compress), (".gz", gzip.compress),
                                              (".bz2", bz2.compress)])
def test_iter_libsvm_reads_the_rows_read_libsvm_reads(tmp_path, suffix, compress):
    path = tmp_path / f"rows.svm{suffix}"
    path.write_bytes(compress(TEXT * 5))
    whole = read_libsvm(path)
    summary = scan_libsvm([path])
    assert (summary.n, summary.n_features) == (whole.n, whole.rows.n_features)
    assert summary.labels.tolist() == whole.classes()
    parts = list(iter_libsvm(path, n_features=summary.n_features, integral_labels=summary.integral_labels,
                             block_bytes=97))
    assert len(parts) > 5  # lines cross the blocks' ends; the 400-feature line is longer than a block
    joined = Rows.vstack([p.rows for p in parts])
    for field in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(joined, field), getattr(whole.rows, field))
    labels = np.concatenate([p.labels for p in parts])
    assert labels.dtype == whole.labels.dtype
    np.testing.assert_array_equal(labels, whole.labels)


@pytest.mark.parametrize("parts", [1, 3])
def test_the_blocks_of_a_file_are_its_lines_read_into_one_buffer_blank_ones_left_out(tmp_path, parts):
    from learners.datasets import _blocks

    text = b"+1 1:1\n" * 5 + b" \n" * 30 + b"-1 " + b"2:1 " * 40 + b"\n" + b"+1 3:1\n" * 4 + b"-1 4:1"
    path = tmp_path / "rows.svm"
    path.write_bytes(text)
    lines = text.splitlines(keepends=True)
    blocks = []
    for block, before, pieces in _blocks(path, 16, parts):
        assert not block.flags.writeable  # a view of the reading buffer, which the next block overwrites
        got = block.tobytes()
        newlines = got.count(b"\n")
        assert got == b"".join(lines[before : before + newlines + (not got.endswith(b"\n"))])
        assert not got.isspace()
        # pieces: the block end to end, each ending at a line end, each with what its parse sizes arrays by
        starts, ends = [lo for (lo, _), _ in pieces], [hi for (_, hi), _ in pieces]
        assert starts == [0, *ends[:-1]] and ends[-1] == len(got)
        assert 1 <= len(pieces) <= parts and all(got[hi - 1 : hi] == b"\n" for (_, hi), _ in pieces[:-1])
        for (lo, hi), (most_rows, colons) in pieces:
            assert (most_rows, colons) == (got[lo:hi].count(b"\n") + 1, got[lo:hi].count(b":"))
        blocks.append((before, got))
    assert [before for before, got in blocks if got.startswith(lines[35])] == [35]  # longer than the buffer
    covered = {before + k for before, got in blocks for k in range(len(got.splitlines()))}
    left_out = set(range(len(lines))) - covered
    assert left_out and all(lines[k].isspace() for k in left_out)  # whole blank blocks, and nothing else
    if parts > 1:
        assert any(len(pieces) > 1 for _, _, pieces in _blocks(path, 16, parts))


def test_iter_libsvm_names_the_line_of_a_malformed_row(tmp_path):
    path = tmp_path / "bad.svm"
    path.write_bytes(b"+1 1:1\n" * 40 + b"-1 2:x\n")
    with pytest.raises(ValueError, match="line 41") as whole:
        read_libsvm(path)
    with pytest.raises(ValueError, match="line 41") as streamed:
        list(iter_libsvm(path, block_bytes=50))
    assert str(streamed.value) == str(whole.value)
    stream = LibsvmStream([path], n_features=3, block_bytes=50)
    rows = []
    with pytest.raises(ValueError, match="line 41") as prefetched:  # raised by the reading thread
        for chunk in stream():
            rows.append(chunk.n)
    assert str(prefetched.value) == str(whole.value) and sum(rows) == 35  # the blocks before the bad one


def test_a_stream_names_a_feature_beyond_its_width_in_the_block_that_holds_it(tmp_path):
    # the check runs where the block becomes rows: in the replay's thread, for a prefetched stream
    path = tmp_path / "rows.svm"
    path.write_bytes(b"+1 1:1 3:1\n" * 40 + b"-1 9:1\n" + b"+1 2:1\n" * 5)
    with pytest.raises(ValueError, match=r"rows\.svm has feature index 8, beyond n_features=3"):
        list(iter_libsvm(path, n_features=3, block_bytes=50))
    stream = LibsvmStream([path], n_features=3, block_bytes=50)
    rows = []
    with pytest.raises(ValueError, match="feature index 8, beyond n_features=3"):
        for chunk in stream():
            rows.append(chunk.n)
    assert sum(rows) == 40  # the blocks before the one that holds it (4 lines of 11 bytes each)
    assert not [t for t in threading.enumerate() if t.name == "libsvm-reader"]  # the reader stopped


def test_scan_libsvm_finds_what_read_libsvm_finds_in_parallel_parts(tmp_path, monkeypatch):
    """The scan (labels and widths only, values stepped over) split in parts scanned by threads at
    once, labels that need an exact re-read (20 digits) among them."""
    import learners.datasets as datasets

    monkeypatch.setattr(datasets, "_PARALLEL_BYTES", 1000)  # every block in parts
    text = TEXT * 3 + b"3.14159265358979323846 7:1\n" + TEXT + b"2 qid:4 12:1 # the widest\n"
    path = tmp_path / "rows.svm"
    path.write_bytes(text)
    whole = read_libsvm(path)
    summary = scan_libsvm([path])
    assert (summary.n, summary.n_features) == (whole.n, whole.rows.n_features)
    np.testing.assert_array_equal(summary.labels, np.unique(whole.labels))
    assert 3.14159265358979323846 in summary.labels.tolist() and summary.labels.dtype == np.float64


def test_scan_libsvm_names_a_malformed_index_and_leaves_values_to_the_parse(tmp_path):
    bad_index = tmp_path / "index.svm"
    bad_index.write_bytes(b"+1 1:1\n" * 40 + b"-1 x:1\n")
    with pytest.raises(ValueError, match="line 41") as scanned:
        scan_libsvm([bad_index])
    with pytest.raises(ValueError, match="line 41") as whole:
        read_libsvm(bad_index)
    assert str(scanned.value) == str(whole.value)
    bad_value = tmp_path / "value.svm"
    bad_value.write_bytes(b"+1 1:1\n" * 40 + b"-1 2:x\n")
    assert scan_libsvm([bad_value]).n == 41  # the replay's parse names it (above)


def test_scan_and_parse_name_the_line_of_a_label_that_overflows_float64(tmp_path):
    path = tmp_path / "label.svm"
    path.write_bytes(b"+1 1:1\n" * 40 + b"1.5e999 2:1\n")
    with pytest.raises(ValueError, match=r"line 41: a number that overflows float64 at '1\.5e999 2:1'") as scanned:
        scan_libsvm([path])
    with pytest.raises(ValueError) as streamed:
        list(iter_libsvm(path, n_features=2))
    assert str(scanned.value) == str(streamed.value)


def test_libsvm_stream_joins_files_and_counts_rows(tmp_path):
    (tmp_path / "a.svm").write_bytes(b"+1 1:1\n-1 2:1\n")
    (tmp_path / "b.svm.gz").write_bytes(gzip.compress(b"-1 7:0.5\n"))
    paths = [tmp_path / "a.svm", tmp_path / "b.svm.gz"]
    stream = LibsvmStream(paths, n_features=scan_libsvm(paths).n_features, block_bytes=4)
    parts = list(stream())
    assert stream.rows == 3 and {p.rows.n_features for p in parts} == {7}
    assert stream.read_seconds > 0


def test_cli_in_order_replay_streams_and_reports_the_in_memory_metrics(tmp_path, capsys):
    from consumer.cli import main

    data = dataset(False)
    lines = [f"{int(y):+d} " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in zip(*data.rows.row(i), strict=True))
             for i, y in enumerate(data.labels)]
    path = tmp_path / "check.svm.xz"
    path.write_bytes(lzma.compress(("\n".join(lines) + "\n").encode()))
    assert main(["replay", "--learner", "soal", "--data", str(path), "--in-order", "--delay", "3",
                 "--permutations", "2", "--warmup", "5", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    file = read_libsvm(path)
    expected = run(make("soal", n_features=file.rows.n_features, classes=[-1, 1]), file, permutations=2,
                   shuffle=False, delay=3, warmup=5, costs={"eta_p": 0.5, "eta_n": 0.5, "c_p": 0.5, "c_n": 0.5})
    assert report["examples"] == data.n
    for key in ("f1", "accuracy", "query_ratio", "auc_roc", "cost", "mistakes", "queries"):
        assert report[key] == expected.mean(key), key
        assert report[f"{key}_std"] == expected.std(key), key


def test_cli_stream_with_dimension_and_classes_given_skips_the_first_pass(tmp_path, capsys, monkeypatch):
    from consumer.cli import main
    from learners import datasets

    path = tmp_path / "rows.svm.gz"
    path.write_bytes(gzip.compress(TEXT * 3))
    args = ["replay", "--learner", "paa-1", "--data", str(path), "--in-order", "--json"]
    assert main(args) == 0
    scanned = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(datasets, "scan_libsvm", lambda *a, **k: pytest.fail("scanned"))
    assert main([*args, "--param", f"n_features={scanned['params']['n_features']}", "--param", "classes=[-1, 1]"]) == 0
    given = json.loads(capsys.readouterr().out)
    for key in ("examples", "f1", "accuracy", "query_ratio", "auc_roc", "mistakes", "queries", "params"):
        assert given[key] == scanned[key], key


def test_in_memory_replay_holds_the_rows_once_with_the_intercept_appended_by_the_loop():
    from learners.replay import _prepare

    data = dataset(False)
    prep = _prepare(learner("paa-1"), data)
    assert (prep.bias, prep.column) == (1.0, D)
    for field in ("indptr", "indices", "data"):
        assert getattr(prep.rows, field) is getattr(data.rows, field)


def test_the_tallys_margins_are_the_chunks_scores_in_sorted_blocks_each_as_large_as_all_before(monkeypatch):
    from learners.replay import _Margins

    monkeypatch.setattr(_Margins, "FIRST", 1 << 16)
    rng = np.random.default_rng(3)
    parts = [rng.standard_normal(k) for k in (0, 5, 4096, 1, 150_000, 0, 3, 70_000)]
    margins = _Margins()
    for part in parts:
        margins.extend(part)
    blocks = margins.sorted_blocks()
    whole = np.concatenate(parts)
    np.testing.assert_array_equal(np.sort(np.concatenate(blocks)), np.sort(whole))
    for block in blocks:
        assert np.all(block[1:] >= block[:-1])
    first = _Margins.FIRST  # then each block as large as all before it, the last one filled in part
    assert [b.size for b in blocks] == [first, first, whole.size - 2 * first]
    assert _Margins().sorted_blocks() == []


def test_a_libsvm_stream_parses_each_block_in_parts_into_the_rows_read_libsvm_reads(tmp_path):
    path = tmp_path / "rows.svm"
    path.write_bytes(TEXT * 5)
    whole = read_libsvm(path)
    stream = LibsvmStream([path], n_features=whole.rows.n_features, block_bytes=1000)
    parts = list(stream())
    assert len(parts) > 2 and len(TEXT * 5) > 2 * 1000
    joined = Rows.vstack([p.rows for p in parts])
    for field in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(joined, field), getattr(whole.rows, field))
    np.testing.assert_array_equal(np.concatenate([p.labels for p in parts]), whole.labels)


def test_shared_work_runs_every_task_once_in_order_whichever_thread_takes_it():
    from learners.datasets import _SharedWork

    shared = _SharedWork()
    assert not shared.help()  # nothing mapped
    first_running, second_taken = threading.Event(), threading.Event()
    ran: dict[int, str] = {}

    def task(j: int) -> int:
        ran[j] = threading.current_thread().name
        if j == 0:  # the mapping thread holds task 0 until the helper has taken task 1
            first_running.set()
            assert second_taken.wait(timeout=30)
        return j * j

    def helper() -> None:
        assert first_running.wait(timeout=30)
        assert shared.help()  # takes task 1 while task 0 runs
        second_taken.set()

    thread = threading.Thread(target=helper, name="helper")
    thread.start()
    assert shared.map(task, range(4)) == [0, 1, 4, 9]
    thread.join()
    assert ran == {0: "MainThread", 1: "helper", 2: "MainThread", 3: "MainThread"}
    assert not shared.help()  # the map is over


def test_shared_work_raises_a_helpers_error_in_the_mapping_thread():
    from learners.datasets import _SharedWork

    shared = _SharedWork()
    started = threading.Event()

    def task(j: int) -> int:
        if j == 0:
            started.set()
            helper.join(timeout=30)  # task 1 is the helper's, and has failed, before task 0 ends
            return 0
        raise ValueError(f"task {j}")

    helper = threading.Thread(target=lambda: started.wait(timeout=30) and shared.help())
    helper.start()
    with pytest.raises(ValueError, match="task 1"):
        shared.map(task, range(2))
