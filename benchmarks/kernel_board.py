"""The kernel logistic learner on the committed leaderboard, against its default and River.

    python -m benchmarks.kernel_board            # the leaderboard's 10 permutations, every binary set
    python -m benchmarks.kernel_board --quick    # 3 permutations, svmguide1 and a8a

The leaderboard's rows are reused only while the code they ran is unchanged, and the random-feature
map of ``lr-ada-entropy-rff`` changed the shared modules of ``learners/``: until the board runs
again, this measures the new learner alone as the board would, and ranks it among the committed
board's rows. It runs online (the budget controller, no look-ahead), defaults regime, at 5 % and
10 % labels over the board's evaluated permutations, on every binary set, and is ranked within each
(set, budget) cell among the board's landed entries (peers included). Written to
``kernel_board.md`` and ``.json``: the binary ranking over the sets every learner runs on, as the
board chooses its default, and the cells against River's best landed configuration.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks import leaderboard as lb
from benchmarks import reproduce

__all__ = ["LEARNER", "main", "measure"]

RESULTS = Path(__file__).resolve().parent / "results"
LEARNER = "lr-ada-entropy-rff"
QUICK_SETS = ("svmguide1", "a8a")


def measure(dataset: str, budgets: Sequence[float], permutations: int) -> list[lb.Row]:
    """The learner's online rows on ``dataset``, as the board measures its entries."""
    spec = lb.DATASETS[dataset]
    data = spec.load()
    classes = spec.classes(data)
    return [row for target in budgets
            for row in lb.measure_ours(LEARNER, data, classes, {}, target, permutations, regime="defaults",
                                       dataset=dataset, metric="f1", offline=False)]


def board_rows(path: Path) -> list[lb.Row]:
    """The committed board's rows in the defaults regime, without any of the learner's own."""
    rows = [lb.Row(**r) for r in lb.read_rows(json.loads(path.read_text()))]
    return [r for r in rows if r.regime == "defaults" and r.entry != LEARNER]


def markdown(rows: list[lb.Row], mine: list[lb.Row], meta: dict) -> str:
    ranking = lb.default_ranking(rows, multiclass=False)
    place = next(i for i, (entry, _, _) in enumerate(ranking) if entry == LEARNER)
    lines = ["# The kernel logistic learner on the committed leaderboard", "",
             f"{meta['date']}, commit `{meta['commit']}`, {meta['permutations']} permutations (the board's evaluated "
             f"ones), {meta['minutes']:.1f} min on this machine. Command: `{meta['command']}`. Board: "
             f"`leaderboard.json` made at `{meta['board_commit']}`.", "",
             f"`{LEARNER}` online, defaults regime, ranked among the board's rows in each (set, budget) cell.", "",
             "## Binary: the ranking", "",
             "Mean rank over the 5% and 10% cells of every set but the large ones, online, as the board "
             "chooses its default.", "", "| place | entry | mean rank | cells |", "|---|---|---|---|"]
    lines += [f"| {i + 1} | {e} | {m:.2f} | {n} |" for i, (e, m, n) in enumerate(ranking)
              if i < 5 or i == place]
    lines += lb._against_river_table(rows, "binary", LEARNER, multiclass=False)
    lines += ["## The learner's rows", "", *lb.TABLE_HEAD, *(lb.line(r) for r in mine), ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kernel_board", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"3 permutations on {', '.join(QUICK_SETS)}")
    parser.add_argument("--datasets", nargs="+", choices=[d.name for d in lb.DATASETS.values() if not d.multiclass])
    parser.add_argument("--permutations", type=int)
    parser.add_argument("--board", type=Path, default=RESULTS / "leaderboard.json")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    todo = args.datasets or [d.name for d in lb.DATASETS.values()
                             if not d.multiclass and (not args.quick or d.name in QUICK_SETS)]
    permutations = args.permutations or (lb.QUICK_PERMUTATIONS if args.quick else lb.PERMUTATIONS)
    command = "python -m benchmarks.kernel_board " + " ".join(argv if argv is not None else sys.argv[1:])
    commit, started = reproduce.commit(), time.perf_counter()
    mine: list[lb.Row] = []
    for dataset in todo:
        for row in measure(dataset, lb.DEFAULT_BUDGETS, permutations):
            mine.append(row)
            print(lb.line(row), flush=True)
    rows = [*board_rows(args.board), *mine]
    lb.rank(rows)
    meta = reproduce.run_meta(command, commit, started, permutations=permutations,
                              board_commit=json.loads(args.board.read_text())["commit"])
    reproduce.write_results(args.out, "kernel_board", markdown(rows, mine, meta), meta, "rows",
                            [lb._stored(r) for r in mine])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
