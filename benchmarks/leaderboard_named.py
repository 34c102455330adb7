"""The leaderboard on named-feature tables: records as a user's service receives them, every learner with its defaults.

    python -m benchmarks.leaderboard_named                  # 5 permutations, 5 % and 10 % labels
    python -m benchmarks.leaderboard_named --quick          # 2 permutations, the binary tables only

A production record is a JSON object of named columns on their own scales (``{"amount": 1290.5,
"country": "FR", ...}``), every column present, zeros included, and labels as the user names them
(0/1). The service hashes the names into ``ACTIVESTREAM_N_FEATURES`` = 2²⁰ coordinates
(:func:`learners.hashing.hash_features`, strings as ``name=value`` flags). Each table here is put
through that same map:

* ``spambase``, ``svmguide1`` (train + test), ``magic04``: the UCI tables as distributed, one named
  column per attribute, the labels as 0/1;
* ``table-mixed``: a synthetic table of 12 numeric columns on scales 10⁻¹ … 10³ with offsets and 3
  categorical columns, the label a linear concept of both with noise (what an operator's table
  looks like);
* ``satimage`` (train + test, raw, 6 classes): the multiclass table.

Every registry learner with a budget knob runs with its registry defaults, online (the
``BudgetController``, no look-ahead: what the service does), as on the leaderboard
(:func:`benchmarks.leaderboard.measure_ours`). The peers are the leaderboard's
(:func:`benchmarks.leaderboard.measure_peers`): River's ``EntropySampler`` around PA and logistic
regression, each also behind River's ``StandardScaler``, VW ``--active``, and the all-label
references. Ranked as the leaderboard is. Writes ``leaderboard_named.md`` and ``.json`` in ``--out``.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np

from benchmarks import leaderboard as lb
from benchmarks.paa_data import DATASETS as PAA
from learners.datasets import Dataset
from learners.hashing import DEFAULT_DIMENSION, hash_features
from learners.inputs import Rows

__all__ = ["SETS", "main", "mixed_table", "named", "run_dataset"]

RESULTS = Path(__file__).resolve().parent / "results"
REGIME = "named"
BUDGETS = (0.05, 0.10)
PERMUTATIONS, QUICK_PERMUTATIONS = 5, 2
MIXED_ROWS = 8000


def named(records: Sequence[Mapping[str, object]], labels: Sequence, name: str) -> Dataset:
    """Named records through the service's feature hashing, in a space of 2²⁰ coordinates."""
    indptr = np.zeros(len(records) + 1, dtype=np.int64)
    indices, values = [], []
    for i, record in enumerate(records):
        idx, val = hash_features(record, DEFAULT_DIMENSION)
        indices.append(idx)
        values.append(val)
        indptr[i + 1] = indptr[i] + idx.size
    rows = Rows(indptr, np.concatenate(indices).astype(np.int32), np.concatenate(values), DEFAULT_DIMENSION)
    return Dataset(rows, np.asarray(labels), name)


def _columns(data: Dataset) -> list[dict[str, float]]:
    """A LIBSVM set as a table: every column named and present, zeros included."""
    dense = np.zeros((data.n, data.rows.n_features))
    for i in range(data.n):
        lo, hi = data.rows.indptr[i], data.rows.indptr[i + 1]
        dense[i, data.rows.indices[lo:hi]] = data.rows.data[lo:hi]
    names = [f"x{j}" for j in range(data.rows.n_features)]
    return [dict(zip(names, row.tolist(), strict=True)) for row in dense]


def _uci(load: Callable[[], Dataset], positive: object, name: str) -> Callable[[], Dataset]:
    """A binary UCI table as named columns, its labels as 0/1 (1: the positive class)."""
    def build() -> Dataset:
        data = load()
        return named(_columns(data), (np.asarray(data.labels) == positive).astype(int), name)
    return build


def mixed_table(n: int = MIXED_ROWS, seed: int = 0) -> tuple[list[dict[str, object]], np.ndarray]:
    """12 numeric columns on scales 10⁻¹ … 10³ with offsets and 3 categorical ones; the label (0/1) a
    linear concept of the standardised numbers and the categories' effects, with noise."""
    rng = np.random.default_rng(seed)
    d = 12
    scale = 10.0 ** rng.uniform(-1, 3, d)
    offset = scale * rng.uniform(0, 4, d)
    z = rng.standard_normal((n, d))
    score = z @ rng.standard_normal(d)
    categorical = {"country": 8, "channel": 4, "plan": 3}
    picks = {}
    for column, levels in categorical.items():
        picks[column] = rng.integers(levels, size=n)
        score += rng.standard_normal(levels)[picks[column]]
    y = (score + 0.3 * rng.standard_normal(n) > np.median(score)).astype(int)
    x = (z * scale + offset).round(4)
    records: list[dict[str, object]] = []
    for i in range(n):
        record: dict[str, object] = {f"num{j}": float(x[i, j]) for j in range(d)}
        record.update({column: f"{column[:2]}{picks[column][i]}" for column in categorical})
        records.append(record)
    return records, y


def _mixed() -> Dataset:
    records, y = mixed_table()
    return named(records, y, "table-mixed")


def _satimage() -> Dataset:
    data = lb._files("satimage.xz", "satimage.t.xz")
    return named(_columns(data), data.labels, "satimage")


SETS: dict[str, lb.BoardData] = {d.name: d for d in (
    lb.BoardData("spambase", False, _uci(lambda: PAA["spambase"].load(raw=True), PAA["spambase"].positive,
                                         "spambase"), 1, "57 named columns as distributed, labels 0/1"),
    lb.BoardData("svmguide1", False, _uci(lambda: PAA["svmguide1"].load(raw=True), PAA["svmguide1"].positive,
                                          "svmguide1"), 1, "train + test, 4 named columns as distributed, labels 0/1"),
    lb.BoardData("magic04", False, _uci(lambda: lb._files("magic04.xz"), 1, "magic04"), 1,
                 "10 named columns as distributed, labels 0/1"),
    lb.BoardData("table-mixed", False, _mixed, 1,
                 f"{MIXED_ROWS:,} rows, 12 numeric columns (scales 0.1 … 1000) and 3 categorical ones, labels 0/1"),
    lb.BoardData("satimage", True, _satimage, note="train + test, 36 named columns as distributed, 6 classes"),
)}


def run_dataset(spec: lb.BoardData, data: Dataset, names: Sequence[str] | None, budgets: Sequence[float],
                permutations: int, *, peers: bool = True, log=print,
                skipped: dict[str, str] | None = None) -> list[lb.Row]:
    """Every learner with its defaults, online, and every peer on one named table (``data``, loaded);
    a learner that cannot hold the table's 2²⁰ coordinates is put in ``skipped`` with the reason."""
    classes = spec.classes(data)
    metric = "accuracy" if spec.multiclass else "f1"
    rows: list[lb.Row] = []
    skipped = {} if skipped is None else skipped
    for name in lb.candidates(spec.multiclass, names):
        reason = lb.skip_reason(name, data)
        if reason is None:
            try:
                lb.build(name, data, classes, {})
            except ValueError as exc:  # a state too large for 2²⁰ coordinates (kernel support vectors)
                reason = str(exc).split(";")[0]
        if reason:
            skipped[name] = reason
            continue
        for target in budgets:
            for r in lb.measure_ours(name, data, classes, {}, target, permutations, regime=REGIME,
                                     dataset=spec.name, metric=metric, offline=False):
                rows.append(r)
                log(lb.line(r))
    if peers:
        rows += [lb.Row(**{**asdict(r), "regime": REGIME})
                 for r in lb.measure_peers(spec, data, classes, budgets, permutations, metric=metric, log=log,
                                           corrections=lb.PEER_CORRECTIONS)]
    return rows


def markdown(rows: list[lb.Row], meta: dict, datasets: Sequence[str], budgets: Sequence[float]) -> str:
    head = ["# Leaderboard on named-feature tables: records as the service receives them", "",
            f"{meta['date']}, commit `{meta['commit']}`, {meta['permutations']} permutations, "
            f"{meta['minutes']:.1f} min on this machine. Command: `{meta['command']}`", "",
            "Tables as JSON records of named columns, every column present, labels 0/1, hashed into 2²⁰ "
            "coordinates as the service does (strings as `name=value` flags). Ours: every registry learner with a "
            "budget knob, its registry defaults, *online* (`BudgetController`, no look-ahead). Peers as on the "
            "leaderboard, River also behind its `StandardScaler` (`scaler+`). Ranked within each table and budget "
            "among the entries that land it (docs/leaderboard.md).", "",
            "| table | rows | what |", "|---|---|---|"]
    head += [f"| {d} | {meta['sizes'][d]:,} | {SETS[d].note} |" for d in datasets]
    head.append("")
    if meta["skipped"]:
        head += ["Not run: " + "; ".join(f"`{n}` ({why})" for n, why in sorted(meta["skipped"].items())) + ".", ""]
    body: list[str] = []
    for kind, multiclass in (("Binary", False), ("Multiclass", True)):
        mine = [r for r in rows if SETS[r.dataset].multiclass == multiclass]
        if mine:
            body += [f"## {kind} tables", "", *lb.summary_table(mine, REGIME, budgets), ""]
    body += ["## Per table", "", *lb.dataset_tables(rows, REGIME, datasets)]
    return "\n".join(head + body + [""])


def main(argv: Sequence[str] | None = None) -> int:
    run = lb.side_board_args("benchmarks.leaderboard_named", __doc__.splitlines()[0], SETS, BUDGETS, PERMUTATIONS,
                             QUICK_PERMUTATIONS, argv)
    args, datasets = run.args, run.datasets
    commit, started = lb._commit(), time.perf_counter()
    rows: list[lb.Row] = []
    sizes: dict[str, int] = {}
    skipped: dict[str, str] = {}
    for name in datasets:
        data = SETS[name].load()
        sizes[name] = data.n
        rows += run_dataset(SETS[name], data, args.learners, args.budgets, run.permutations,
                            peers=not args.no_peers, log=lambda s: print(s, flush=True), skipped=skipped)
    lb.rank(rows)
    meta = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
            "command": run.command, "minutes": (time.perf_counter() - started) / 60,
            "permutations": run.permutations, "budgets": list(args.budgets), "sizes": sizes, "skipped": skipped}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "leaderboard_named.md").write_text(markdown(rows, meta, datasets, args.budgets))
    (args.out / "leaderboard_named.json").write_text(lb.side_board_json(meta, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
