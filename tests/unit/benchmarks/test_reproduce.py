"""benchmarks.reproduce: the registry of results files, provenance stamps and the --check mechanism."""

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks import reproduce
from benchmarks.reproduce import RESULTS, CheckCell, Entry, check_entry, stamp

RESULTS_DIR = Path(reproduce.__file__).resolve().parent / "results"


def test_registry_covers_every_results_file():
    listed = set()
    for entry in RESULTS:
        for name in entry.files:
            path = RESULTS_DIR / name
            if name.endswith("/"):  # a directory of cells, perhaps not made yet
                listed |= {p.relative_to(RESULTS_DIR) for p in path.iterdir()} if path.is_dir() else set()
            else:
                listed.add(Path(name))
    on_disk = {p.relative_to(RESULTS_DIR) for p in RESULTS_DIR.rglob("*") if p.is_file()}
    assert on_disk - listed == set()


def test_every_reproduction_has_a_check_and_timings_have_none():
    for entry in RESULTS:
        assert (entry.check is None) == entry.timing, entry.name


def test_cell_holds_within_half_a_printed_unit_only():
    assert CheckCell("x", 0.8624, 0.86243, 3).holds
    assert not CheckCell("x", 0.862, 0.8627, 3).holds


@dataclasses.dataclass(frozen=True)
class _Cell:
    dataset: str
    budget: float
    mean: float
    params: dict


def test_results_hold_cells_as_a_table_one_line_each_which_a_stamp_keeps(tmp_path):
    cells = [_Cell("a8a", 0.05, 0.6126101, {"eta": 0.5}), _Cell("w8a", 0.1, 1 / 3, {}), _Cell("dna", 0.2, 0.79, {})]
    meta = {"date": "2026-01-01 00:00 UTC", "budgets": [0.05, 0.1, 0.2], "parts": {"a8a": {"minutes": 1.5}}}
    reproduce.write_results(tmp_path, "r", "# R\n", meta, "cells", cells)
    entry = Entry("r", "paa", ("r.md", "r.json"), ("x.py",), {"permutations": 3})
    stamp(entry, made_at="2026-01-02 00:00 UTC", commit_id="abc1234", command="python x.py", minutes=1.0,
          results=tmp_path)
    text = (tmp_path / "r.json").read_text()
    payload = json.loads(text)
    assert reproduce.records(payload["cells"]) == [dataclasses.asdict(c) for c in cells]  # every figure as it was
    assert payload["provenance"]["commit"] == "abc1234" and payload["parts"] == meta["parts"]
    lines = text.splitlines()
    assert ' "budgets": [0.05, 0.1, 0.2],' in lines
    assert '  "columns": ["dataset", "budget", "mean", "params"],' in lines
    assert '   ["a8a",0.05,0.6126101,{"eta":0.5}],' in lines and '   ["dna",0.2,0.79,{}]' in lines
    assert reproduce.records({"columns": [], "values": []}) == [] == reproduce.table([])["values"]


def test_dump_json_reads_back_as_the_payload():
    payload = {"a": [], "b": {}, "c": [[1, 2], [3]], "d": [{"x": None}, [True]], "e": "é\u0000", "f": [1, "2"],
               "g": {"h": {"i": [{"j": 1.5}]}}, "k": np.float64(0.25)}
    assert json.loads(reproduce.dump_json(payload)) == {**payload, "k": 0.25}


def test_stamp_writes_block_and_field_and_replaces_them(tmp_path, monkeypatch):
    (tmp_path / "r.md").write_text("# Title\n\nbody\n")
    (tmp_path / "r.json").write_text(json.dumps({"cells": [1]}))
    entry = Entry("r", "paa", ("r.md", "r.json"), ("x.py",), {"permutations": 20})
    for made in ("2026-01-01 00:00 UTC", "2026-01-02 00:00 UTC"):
        stamp(entry, made_at=made, commit_id="abc1234", command="python x.py", minutes=1.0, results=tmp_path)
    text = (tmp_path / "r.md").read_text()
    assert text.count(reproduce.BEGIN) == 1 and "2026-01-02" in text and "2026-01-01" not in text
    assert text.startswith("# Title\n\n" + reproduce.BEGIN) and text.endswith("\n\nbody\n")
    payload = json.loads((tmp_path / "r.json").read_text())
    assert payload["provenance"]["commit"] == "abc1234" and payload["cells"] == [1]
    assert payload["provenance"]["settings"] == {"permutations": 20}
    monkeypatch.setattr(reproduce, "RESULTS_DIR", tmp_path)
    assert reproduce.provenance(entry)["made"] == "2026-01-02 00:00 UTC"


def test_stamp_since_leaves_files_the_run_did_not_write(tmp_path):
    (tmp_path / "r.md").write_text("# Title\n\nbody\n")
    entry = Entry("r", "paa", ("r.md",), ("x.py",), {})
    later = (tmp_path / "r.md").stat().st_mtime + 10
    assert stamp(entry, made_at="now", commit_id="abc", command="x", minutes=0, results=tmp_path, since=later) == []
    assert reproduce.BEGIN not in (tmp_path / "r.md").read_text()


def test_check_reports_a_differing_cell_and_a_missing_dataset():
    assert check_entry(Entry("c", "p", (), (), {}, check=lambda: CheckCell("x", 1.0, 1.01, 3)))[0] == "DIFFERS"
    assert check_entry(Entry("c", "p", (), (), {}, check=lambda: CheckCell("x", 1.0, 1.0, 3)))[0] == "ok"

    def missing() -> CheckCell:
        raise FileNotFoundError(2, "No such file", "/nowhere/a8a.xz")

    assert check_entry(Entry("c", "p", (), (), {}, check=missing))[0].startswith("skipped")


@pytest.mark.parametrize("delta, verdict", [(0.0, "ok"), (0.002, "DIFFERS")])
def test_check_detects_a_tampered_cell_in_a_committed_file(datasets_dir, monkeypatch, tmp_path, delta, verdict):
    stem = "paa_table2_3_paper"
    shutil.copy(RESULTS_DIR / f"{stem}.json", tmp_path / f"{stem}.json")
    payload = json.loads((tmp_path / f"{stem}.json").read_text())
    cell = next(c for c in payload["cells"] if (c["dataset"], c["algorithm"], c["rate"]) == ("svmguide1", "paa-1", 0.1))
    cell["f1"] += delta
    (tmp_path / f"{stem}.json").write_text(json.dumps(payload))
    monkeypatch.setattr(reproduce, "RESULTS_DIR", tmp_path)
    entry = next(e for e in RESULTS if e.name == "paa-tables")
    assert check_entry(entry)[0] == verdict


def test_an_entry_name_selects_that_entry_alone_and_a_paper_name_all_of_its_entries():
    assert [e.name for e in reproduce._select(["budget"])] == ["budget"]  # also a paper's name
    assert {e.name for e in reproduce._select(["paa"])} >= {"paa-tables", "paa-tables-best", "paa-gaps"}


def _script_entry(tmp_path, body: str) -> reproduce.Entry:
    code = f"import pathlib; p = pathlib.Path({str(tmp_path)!r}); {body}"
    return reproduce.Entry("cached", "performance", ("cached.md", "cells/"), ("-c", code), {}, timing=True)


def test_regenerating_sets_a_cache_of_cells_aside_and_restores_it_if_the_run_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "RESULTS_DIR", tmp_path)
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / "old.json").write_text("{}")
    fails = _script_entry(tmp_path, "assert not (p / 'cells').exists(); raise SystemExit(3)")
    assert reproduce.regenerate(fails, quick=False, invoked="") == 3
    assert sorted(f.name for f in (tmp_path / "cells").iterdir()) == ["old.json"]  # put back
    runs = _script_entry(tmp_path, "assert not (p / 'cells').exists(); (p / 'cells').mkdir(); "
                                   "(p / 'cells' / 'new.json').write_text('{}'); (p / 'cached.md').write_text('# t')")
    assert reproduce.regenerate(runs, quick=False, invoked="") == 0
    assert sorted(f.name for f in (tmp_path / "cells").iterdir()) == ["new.json"]  # made afresh, the old gone
    assert not (tmp_path / "cells.before").exists()



def test_a_cache_the_script_checks_itself_is_kept_for_the_run(tmp_path, monkeypatch):
    """The leaderboard's parts are reused only when made by the same code: regenerating keeps them."""
    monkeypatch.setattr(reproduce, "RESULTS_DIR", tmp_path)
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / "old.json").write_text("{}")
    keeps = dataclasses.replace(_script_entry(tmp_path, "assert (p / 'cells' / 'old.json').exists(); "
                                                        "(p / 'cached.md').write_text('# t')"), checked_cache=True)
    assert reproduce.regenerate(keeps, quick=False, invoked="") == 0
    assert sorted(f.name for f in (tmp_path / "cells").iterdir()) == ["old.json"]
    [board] = [e for e in reproduce.RESULTS if e.name == "leaderboard"]
    assert board.checked_cache and "leaderboard_parts/" in board.files


def test_compiled_kernels_are_dropped_before_anything_is_regenerated_or_checked(tmp_path):
    cache = tmp_path / "learners" / "__pycache__"
    cache.mkdir(parents=True)
    for name in ("budget._step-1.py311.nbi", "budget._step-1.py311.1.nbc", "budget.cpython-311.pyc"):
        (cache / name).write_bytes(b"x")
    assert reproduce.drop_compiled_kernels(tmp_path) == 2
    assert [p.name for p in cache.iterdir()] == ["budget.cpython-311.pyc"]


def test_the_defaults_board_runs_every_default_learner():
    from learners.defaults import DEFAULT_LEARNERS

    assert set(reproduce.DEFAULT_BOARD_LEARNERS) == set(DEFAULT_LEARNERS.values())
