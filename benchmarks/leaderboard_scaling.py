"""The leaderboard on raw features: our learners with online scaling off and on, River with and without its scaler.

    python -m benchmarks.leaderboard_scaling                  # 10 permutations, 5 % and 10 % labels
    python -m benchmarks.leaderboard_scaling --quick          # 3 permutations, the binary sets only

Real streams carry features on mixed scales. The sets here are the leaderboard's sets that are
distributed with raw columns, read as distributed: svmguide1 (train + test), spambase and magic04
(binary), satimage (train + test) (multiclass). letter and shuttle are raw too, but River's
one-vs-rest samplers handle about a thousand rows a second over their 26 and 7 classes: with four
River variants bisected at two budgets they would take hours, so they are left out. Every registry
learner with a budget knob runs with its registry defaults (entry ``<learner>``: what a user gets,
``scale="auto"`` for the default learners) and with ``scale`` = ``rms`` and ``standard``
(:mod:`learners.scaling`; the support-vector rules, which cannot be rescaled, are left out), entry
``<learner>+<scale>``, online (``BudgetController``) and offline (knob bisected) as on the
leaderboard (:func:`benchmarks.leaderboard.measure_ours`). The peers are the leaderboard's
(:func:`benchmarks.leaderboard.measure_peers`): River's ``EntropySampler`` around PA and logistic
regression, each also behind River's ``StandardScaler``, VW, and the all-label references. Ranked
and written as the leaderboard is: ``leaderboard_scaling.md``, ``.json`` and
``leaderboard_scaling_<dataset>.png`` in ``--out``.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from benchmarks import leaderboard as lb
from benchmarks.paa_data import DATASETS as PAA
from learners.registry import ALGORITHMS

__all__ = ["SCALES", "SETS", "main", "run_dataset"]

RESULTS = Path(__file__).resolve().parent / "results"
REGIME = "raw"
# None: the learner's registry defaults, as a user gets it (entry ``<learner>``; ``scale="auto"`` for the
# default learners, no scaling for most others)
SCALES = (None, "rms", "standard")
BUDGETS = (0.05, 0.10)
PERMUTATIONS, QUICK_PERMUTATIONS = 10, 3

SETS: dict[str, lb.BoardData] = {d.name: d for d in (
    lb.BoardData("svmguide1", False, lambda: PAA["svmguide1"].load(raw=True), PAA["svmguide1"].positive,
                 "train + test as distributed"),
    lb.BoardData("spambase", False, lambda: PAA["spambase"].load(raw=True), PAA["spambase"].positive,
                 "as distributed"),
    lb.BoardData("magic04", False, lambda: lb._files("magic04.xz"), 1, "as distributed"),
    lb.BoardData("satimage", True, lambda: lb._files("satimage.xz", "satimage.t.xz"), note="train + test, raw"),
)}


def run_dataset(spec: lb.BoardData, names: Sequence[str] | None, budgets: Sequence[float], permutations: int,
                *, peers: bool = True, log=print) -> list[lb.Row]:
    """Every (learner, scale) and every peer on one raw set."""
    data = spec.load()
    classes = spec.classes(data)
    metric = "accuracy" if spec.multiclass else "f1"
    rows: list[lb.Row] = []
    for name in lb.candidates(spec.multiclass, names):
        if lb.skip_reason(name, data) or not ALGORITHMS[name].scalable:
            continue
        for scale in SCALES:
            params, entry = ({}, name) if scale is None else ({"scale": scale}, f"{name}+{scale}")
            for target in budgets:
                for r in lb.measure_ours(name, data, classes, params, target, permutations, regime=REGIME,
                                         dataset=spec.name, metric=metric, entry=entry):
                    rows.append(r)
                    log(lb.line(r))
    if peers:
        rows += [lb.Row(**{**asdict(r), "regime": REGIME})
                 for r in lb.measure_peers(spec, data, classes, budgets, permutations, metric=metric, log=log)]
    return rows


def markdown(rows: list[lb.Row], meta: dict, datasets: Sequence[str], budgets: Sequence[float]) -> str:
    head = ["# Leaderboard on raw features: online scaling off and on, River with and without its scaler", "",
            f"{meta['date']}, commit `{meta['commit']}`, {meta['permutations']} permutations, "
            f"{meta['minutes']:.1f} min on this machine. Command: `{meta['command']}`", "",
            "Sets read as distributed (raw columns). Ours: every registry learner with a budget knob whose state can "
            "be rescaled (not the support-vector rules): its registry defaults (entry `<learner>`, what a user gets) "
            "and `scale` rms / standard (entry `<learner>+<scale>`), *online* (`BudgetController`, no look-ahead) "
            "and *offline* (knob bisected over the evaluated permutations). Peers as on the leaderboard, River also "
            "behind its `StandardScaler` (`scaler+`). Ranked within each dataset and budget among the entries that "
            "land it, as on the leaderboard (docs/leaderboard.md).", ""]
    body: list[str] = []
    for kind, multiclass in (("Binary", False), ("Multiclass", True)):
        mine = [r for r in rows if SETS[r.dataset].multiclass == multiclass]
        if mine:
            body += [f"## {kind} sets", "", *lb.summary_table(mine, REGIME, budgets), ""]
    body += ["## Per dataset", "", *lb.dataset_tables(rows, REGIME, datasets)]
    plots = [f"![{d}](leaderboard_scaling_{d}.png)" for d in datasets if any(r.dataset == d for r in rows)]
    return "\n".join(head + body + plots + [""])


def main(argv: Sequence[str] | None = None) -> int:
    run = lb.side_board_args("benchmarks.leaderboard_scaling", __doc__.splitlines()[0], SETS, BUDGETS, PERMUTATIONS,
                             QUICK_PERMUTATIONS, argv)
    args, datasets = run.args, run.datasets
    commit, started = lb._commit(), time.perf_counter()
    rows: list[lb.Row] = []
    for name in datasets:
        rows += run_dataset(SETS[name], args.learners, args.budgets, run.permutations, peers=not args.no_peers,
                            log=lambda s: print(s, flush=True))
    lb.rank(rows)
    meta = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
            "command": run.command, "minutes": (time.perf_counter() - started) / 60,
            "permutations": run.permutations, "budgets": list(args.budgets)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "leaderboard_scaling.md").write_text(markdown(rows, meta, datasets, args.budgets))
    (args.out / "leaderboard_scaling.json").write_text(lb.side_board_json(meta, rows))
    for d in datasets:
        if any(r.dataset == d for r in rows):
            lb.plot(rows, d, args.out / f"leaderboard_scaling_{d}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
