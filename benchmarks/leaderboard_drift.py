"""The leaderboard on drifting streams: accuracy over time at 10 % labels, ours against River's samplers.

    python -m benchmarks.leaderboard_drift                  # 10 repetitions of both streams
    python -m benchmarks.leaderboard_drift --quick          # 3 repetitions, the synthetic stream only

Two streams whose concept moves, in their own order (a permutation would erase the drift), each
repetition a new draw (seed r):

* ``synthetic:shift`` (Moroshko & Crammer, AISTATS 2014, Sect. 5): x ~ N(0, I₅₀), y = sign(xᵀu) with a
  new u every 500 rows, 10,000 rows;
* ``usps-shift``: USPS (train + test, 9,298 rows) with the positive digits redrawn every 500 rows.

Every binary registry learner with a budget knob runs with ``BudgetController(target=0.1)`` (no
look-ahead, as the service and ``replay --budget-rate`` do), with its defaults. River's
``EntropySampler`` around ``PAClassifier`` and ``LogisticRegression``, each also behind River's
``StandardScaler`` (``scaler+pa``, ``scaler+lr``), runs with its discount
bisected to 10 % on the first repetition, then as found on the others (as in the leaderboard). Each
round is predicted before its label may be used. Writes ``leaderboard_drift.md``, ``.json`` and
``leaderboard_drift_<stream>.png`` (accuracy over a moving window of 250 rounds, the best of ours
against River's) into ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from benchmarks import peers
from benchmarks.leaderboard import PEER_CORRECTIONS, candidates, skip_reason
from benchmarks.paa_data import datasets_dir
from learners import make
from learners.budget import BudgetController
from learners.datasets import Dataset, concat, read_libsvm
from learners.replay import replay
from learners.synthetic import synthetic_shift, usps_shift

__all__ = ["STREAMS", "Curve", "main", "ours", "river"]

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 0.10
REPETITIONS, QUICK_REPETITIONS = 10, 3
SWITCH = 500  # rows between two shifts, in both streams
WINDOW = 250  # rounds of the moving accuracy in the figures


def _usps() -> Callable[[int], Dataset]:
    base = concat([read_libsvm(datasets_dir() / "usps.xz"), read_libsvm(datasets_dir() / "usps.t.xz")])
    return lambda seed: usps_shift(base, switch=SWITCH, seed=seed)


STREAMS: dict[str, Callable[[], Callable[[int], Dataset]]] = {
    "synthetic-shift": lambda: lambda seed: synthetic_shift(switch=SWITCH, seed=seed),
    "usps-shift": _usps,
}


@dataclass
class Curve:
    """One entry on one stream: which rounds were right and which were asked, per repetition."""

    stream: str
    entry: str
    correct: np.ndarray  # (repetitions, rounds) bool
    asked: np.ndarray  # (repetitions, rounds) bool
    knob: str
    value: float
    seconds: float  # mean of one pass

    def accuracy(self, lo: int = 0, hi: int | None = None) -> float:
        return float(self.correct[:, lo:hi].mean())

    def query(self) -> float:
        return float(self.asked.mean())

    def spread(self) -> float:
        """Standard deviation over the repetitions of their mean accuracy."""
        return float(self.correct.mean(axis=1).std())

    def moving(self) -> np.ndarray:
        """Mean accuracy over the repetitions, over the last ``WINDOW`` rounds at each round."""
        mean = self.correct.mean(axis=0)
        run = np.cumsum(np.r_[0.0, mean])
        t = np.arange(1, mean.size + 1)
        return (run[t] - run[np.maximum(t - WINDOW, 0)]) / np.minimum(t, WINDOW)


def ours(name: str, streams: Sequence[Dataset], label: str) -> Curve:
    """The learner with its defaults and the online budget controller, on each draw in order."""
    correct, asked, seconds = [], [], []
    for data in streams:
        learner = make(name, n_features=data.rows.n_features)
        learner.budget = BudgetController(target=TARGET)
        trace = replay(learner, data)
        correct.append(trace.y_pred == trace.y_true)
        asked.append(trace.queried)
        seconds.append(trace.seconds)
    return Curve(label, name, np.array(correct), np.array(asked), "target", TARGET, float(np.mean(seconds)))


def river(base: str, streams: Sequence[Dataset], label: str, scaled: bool = False) -> Curve:
    """River's EntropySampler(base) (behind its StandardScaler if ``scaled``), its discount bisected
    to the target on the first draw."""
    rows = [peers.dict_rows(d) for d in streams]
    codes = [np.asarray(d.labels, dtype=np.int64) for d in streams]
    runs: dict[tuple[float, int], tuple[np.ndarray, np.ndarray, float]] = {}

    def rounds(discount: float, k: int) -> tuple[np.ndarray, np.ndarray, float]:
        if (discount, k) not in runs:
            model = peers.river_model(base, False, discount, k, scaled=scaled)
            runs[discount, k] = peers.river_rounds(model, rows[k], np.arange(len(rows[k])), codes[k], False)
        return runs[discount, k]

    def one(discount: float, k: int):
        y_pred, asked, seconds = rounds(discount, k)
        return peers.Encoded(codes[k], False, 2).metrics(codes[k], y_pred, asked), seconds

    discount, _, _ = peers.bisect_knob(one, TARGET, 0, bounds=peers.RIVER_BOUNDS, rising=False, tol=0.0025)
    done = [rounds(discount, k) for k in range(len(streams))]
    correct = np.array([y == c for (y, _, _), c in zip(done, codes, strict=True)])
    return Curve(label, peers.river_name(base, scaled), correct, np.array([a for _, a, _ in done]), "discount",
                 discount, float(np.mean([s for _, _, s in done])))


def vw(streams: Sequence[Dataset], label: str) -> Curve:
    """VW ``--active --simulation --binary`` (logistic loss) in stream order, its mellowness bisected
    to the target on the first draw, then corrected over every draw (as :func:`benchmarks.peers.vw_active`
    does over permutations)."""
    from vowpalwabbit import pyvw

    lines = [peers.vw_lines(d) for d in streams]
    codes = [peers.Encoded.of(d, [-1, 1], False).codes for d in streams]
    runs: dict[tuple[float, int], tuple[np.ndarray, np.ndarray, float]] = {}

    def rounds(c0: float, k: int) -> tuple[np.ndarray, np.ndarray, float]:
        if (c0, k) not in runs:
            model = pyvw.Workspace(f"--active --simulation --binary --loss_function logistic --mellowness {c0:.6g} "
                                   f"--quiet --random_seed {k}")
            y_pred, asked = np.empty(len(lines[k]), np.int64), np.empty(len(lines[k]), bool)
            start = time.perf_counter()
            for t, (y, text) in enumerate(zip(codes[k].tolist(), lines[k], strict=True)):
                ex = model.example(f"{y} {text}")
                model.learn(ex)  # predicts before it learns
                y_pred[t] = 1 if ex.get_simplelabel_prediction() > 0 else -1
                asked[t] = ex.get_simplelabel_label() < peers.FLT_MAX
                model.finish_example(ex)
            model.finish()
            runs[c0, k] = y_pred, asked, time.perf_counter() - start
        return runs[c0, k]

    def one(c0: float, k: int):
        y_pred, asked, seconds = rounds(c0, k)
        return peers.Encoded(codes[k], False, 2).metrics(codes[k], y_pred, asked), seconds

    # VW's ratio varies more between draws than River's: corrected over every draw as on the leaderboard
    c0 = peers.landed_on_first("vw-active", "mellowness", one, TARGET, list(range(len(streams))),
                               bounds=peers.VW_BOUNDS, rising=True, tol=0.0025, params={},
                               corrections=PEER_CORRECTIONS, land=0.05 * TARGET).value
    done = [rounds(c0, k) for k in range(len(streams))]
    correct = np.array([y == c for (y, _, _), c in zip(done, codes, strict=True)])
    return Curve(label, "vw-active", correct, np.array([a for _, a, _ in done]), "mellowness", c0,
                 float(np.mean([s for _, _, s in done])))


@dataclass
class Row:
    stream: str
    entry: str
    accuracy: float
    std: float
    before: float  # rounds 1..SWITCH, before the first shift
    after: float  # the rest
    query: float
    knob: str
    value: float
    seconds: float
    landed: bool
    rank: float | None = None


def row(c: Curve) -> Row:
    query = c.query()
    return Row(c.stream, c.entry, c.accuracy(), c.spread(), c.accuracy(0, SWITCH), c.accuracy(SWITCH), query, c.knob,
               c.value, c.seconds, abs(query - TARGET) <= 0.1 * TARGET)


def rank(rows: list[Row]) -> None:
    """Rank the landed rows of each stream by accuracy, ties sharing their mean rank."""
    for stream in {r.stream for r in rows}:
        landed = sorted((r for r in rows if r.stream == stream and r.landed), key=lambda r: -r.accuracy)
        i = 0
        while i < len(landed):
            j = i
            while j + 1 < len(landed) and landed[j + 1].accuracy == landed[i].accuracy:
                j += 1
            for r in landed[i:j + 1]:
                r.rank = (i + j) / 2 + 1
            i = j + 1


def markdown(rows: list[Row], meta: dict, streams: Sequence[str]) -> str:
    out = ["# Leaderboard on drifting streams: accuracy over time at 10 % labels", "",
           f"{meta['date']}, commit `{meta['commit']}`, {meta['repetitions']} repetitions (a new draw of each stream "
           f"per repetition, rows in stream order), {meta['minutes']:.1f} min on this machine. Command: "
           f"`{meta['command']}`", "",
           "Ours: every binary registry learner with a budget knob, its defaults, `BudgetController(target=0.1)` "
           "(no look-ahead). River: `EntropySampler` around `PAClassifier(C=1, mode=1)` and `LogisticRegression()`, "
           "each also behind River's `preprocessing.StandardScaler()` (`scaler+`), and VW `--active --simulation "
           "--binary --loss_function logistic` (`vw-active`), the discount (mellowness) bisected to 10 % on "
           "the first repetition, then as found. Accuracy is prequential over every "
           f"round; *before* is rounds 1-{SWITCH} (before the first shift), *after* the rest. Ranked: entries whose "
           "realised query ratio is within ±10 % of 10 %. See docs/leaderboard.md.", ""]
    for stream in streams:
        mine = sorted((r for r in rows if r.stream == stream), key=lambda r: (r.rank is None, r.rank or 0, -r.accuracy))
        out += [f"## {stream}", "", "| rank | entry | accuracy ± std | before first shift | after | query ratio | knob "
                "| s / pass |", "|---|---|---|---|---|---|---|---|"]
        out += [f"| {'—' if r.rank is None else f'{r.rank:g}'} | {r.entry} | {r.accuracy:.4f} ± {r.std:.4f} | "
                f"{r.before:.4f} | {r.after:.4f} | {r.query:.4f}{'' if r.landed else ' (missed)'} | "
                f"{r.knob}={r.value:.4g} | {r.seconds:.3f} |" for r in mine]
        out += ["", f"![{stream}](leaderboard_drift_{stream}.png)", ""]
    return "\n".join(out)


def plot(curves: list[Curve], rows: list[Row], stream: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranked = sorted((r for r in rows if r.stream == stream and r.rank is not None and not r.entry.startswith("river")),
                    key=lambda r: r.rank)
    shown = {r.entry for r in ranked[:5]} | {peers.river_name(b, s) for b in peers.RIVER_BASES for s in (False, True)}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for c in curves:
        if c.stream == stream and c.entry in shown:
            ax.plot(np.arange(1, c.correct.shape[1] + 1), c.moving(), lw=1.0,
                    ls="--" if c.entry.startswith("river") else "-", label=c.entry)
    for shift in range(SWITCH, max(c.correct.shape[1] for c in curves if c.stream == stream), SWITCH):
        ax.axvline(shift, color="grey", lw=0.3)
    ax.set(xlabel="round", ylabel=f"accuracy over the last {WINDOW} rounds", title=f"{stream}: 10 % labels")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _commit() -> str:
    from benchmarks.leaderboard import _commit as commit

    return commit()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.leaderboard_drift", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_REPETITIONS} repetitions, synthetic-shift only")
    parser.add_argument("--streams", nargs="+", choices=list(STREAMS))
    parser.add_argument("--learners", nargs="+", metavar="NAME", help="registry names (default: every binary one "
                        "with a budget knob)")
    parser.add_argument("--repetitions", type=int)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    streams = args.streams or (["synthetic-shift"] if args.quick else list(STREAMS))
    repetitions = args.repetitions or (QUICK_REPETITIONS if args.quick else REPETITIONS)
    command = "python -m benchmarks.leaderboard_drift " + " ".join(argv if argv is not None else sys.argv[1:])
    commit, started = _commit(), time.perf_counter()
    curves: list[Curve] = []
    for stream in streams:
        draw = STREAMS[stream]()
        data = [draw(seed) for seed in range(repetitions)]
        for name in candidates(False, args.learners):
            if skip_reason(name, data[0]) is None:
                curves.append(ours(name, data, stream))
                print(f"{stream} {name}: {curves[-1].accuracy():.4f}, query {curves[-1].query():.4f}", flush=True)
        for scaled in (False, True):
            for base in peers.RIVER_BASES:
                curves.append(river(base, data, stream, scaled))
                print(f"{stream} {curves[-1].entry}: {curves[-1].accuracy():.4f}, query {curves[-1].query():.4f}",
                      flush=True)
        curves.append(vw(data, stream))
        print(f"{stream} vw-active: {curves[-1].accuracy():.4f}, query {curves[-1].query():.4f}", flush=True)
    rows = [row(c) for c in curves]
    rank(rows)
    meta = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
            "command": command.strip(), "minutes": (time.perf_counter() - started) / 60, "repetitions": repetitions,
            "target": TARGET, "switch": SWITCH}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "leaderboard_drift.md").write_text(markdown(rows, meta, streams))
    (args.out / "leaderboard_drift.json").write_text(json.dumps({**meta, "rows": [asdict(r) for r in rows]}, indent=1))
    for stream in streams:
        plot(curves, rows, stream, args.out / f"leaderboard_drift_{stream}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
