"""Forgetting in the default learners' AdaGrad: which setting follows a concept that moves.

    python -m benchmarks.drift_defaults            # every candidate: 5 draws, 3 permutations, 2 processes
    python -m benchmarks.drift_defaults --quick    # 2 draws, 1 permutation, a few candidates

The defaults (``lr-ada-entropy``, ``lr-ada-entropy-rff``, ``mlr-factored-entropy``) step by diagonal
AdaGrad, whose step decays like 1/√G: after thousands of labels the model barely moves. Candidates,
each a setting of the rule beside its registered defaults:

- β, the forgetting of AdaGrad's sums (G ← β G + g², RMSProp's), and λ, the forgetting of the
  weights (w ← (1 − λ) w, NORMA's), on a grid (:mod:`learners.rules.logistic`); β = 1, λ = 0 is
  plain AdaGrad exactly;
- for the binary learners, a change detector: Page's test on the labelled prequential error
  (:class:`DetectorRule`, a prototype kept here), which restarts AdaGrad's sums when it fires, and
  also shrinks the weights in one variant;
- for the binary learners, paired learners (:mod:`learners.rules.paired`): the model as registered
  beside a reactive twin forgetting by β_r and λ_r, which replaces it after h mistakes more than it
  (Page's CUSUM); the candidates without a pair never replace (``replace_after`` =
  :data:`benchmarks.leaderboard.NEVER`).

Each runs as ``activestream replay --budget-rate 0.1`` and the service run it, the
:class:`~learners.budget.BudgetController` holding 10 % of queries online, on

(a) streams whose concept changes at 2/3 of the stream. Binary: the demo's own
    (:func:`consumer.demo.feed.drifting_stream`, 10,000 records, a draw per seed) as the service
    sees it, its named features hashed into 2²⁰ (:func:`learners.hashing.hash_features`, the
    service's width, so ``lr-ada-entropy``), or, for ``lr-ada-entropy-rff``, the same records as 13
    columns; the controller as the service builds it (no warm-up); labels applied 0, 100, 250 or
    1,000 records after their request (the demo feeds 1,000 records/s; its annotator answers after
    ``--label-delay``).
    Multiclass: usps, satimage and letter shuffled, every class relabelled by a cyclic shift at 2/3.
    Windows of 500 records: before the change, the 1,500 after it, the last 500; and how many
    records after the change a window of 500 wholly after it is back within 0.05 of the one before;
(b) for the binary learners, the drift board's streams (:mod:`benchmarks.leaderboard_drift`:
    ``synthetic:shift`` and ``usps-shift``, a new concept every 500 rows), accuracy over the stream;
(c) stationary sets of the leaderboard, F1 (binary) or accuracy (multiclass) at 10 %, online with the
    backtest's warm-up, on its tuning permutations: forgetting must not cost them.

The setting to register is the best mean rank over the drift cells (the 1,500 records after each
change at each delay, and the drift board's streams) among those that lose no stationary cell to
plain AdaGrad by more than :data:`benchmarks.logistic_defaults.HARM`. Written to
``drift_defaults.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import functools
import math
import multiprocessing
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import orjson
import scipy.sparse as sp

from benchmarks import leaderboard as lb
from benchmarks import reproduce
from benchmarks.leaderboard_drift import STREAMS
from benchmarks.logistic_defaults import HARM
from learners import make
from learners.base import Learner
from learners.budget import BudgetController, backtest_controller
from learners.datasets import Dataset
from learners.hashing import DEFAULT_DIMENSION, hash_features
from learners.inputs import as_rows
from learners.jit import jit
from learners.kernels import UPDATE_SIG, kernel, sparse_dot, sq_norm
from learners.params import Interval
from learners.replay import replay, run
from learners.rules.logistic import LogisticRule
from learners.rules.paired import PairedFactoredSoftmaxRule, PairedLogisticRule

__all__ = ["CANDIDATES", "PAIR", "Candidate", "DetectorRule", "Result", "chosen", "demo_stream", "flipped", "main",
           "measure", "recovered_after"]

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 0.10
DRAWS, QUICK_DRAWS = 5, 2
PERMUTATIONS, QUICK_PERMUTATIONS = 3, 1
DEMO_RECORDS = 10_000
DELAYS = (0, 100, 250, 1000)  # the demo feeds 1,000 records/s: its annotator at 0.1 s is 100, at 1 s 1,000
WINDOW = 500
RECOVERY = 1500  # records after the change within which accuracy should be back
BACK = 0.05  # ... within this of its level before the change
# ijcnn1: the longest (141,691 records), where a forgetting that bounds the weights costs most
STATIONARY = {False: ("a8a", "spambase", "magic04", "w8a", "ijcnn1"), True: ("dna", "satimage", "usps", "letter")}
FLIPPED = ("usps", "satimage", "letter")


@dataclass(frozen=True)
class Candidate:
    """A setting of the rule: β and λ of :mod:`learners.rules.logistic`, or the change detector."""

    beta: float = 1.0
    lam: float = 0.0
    detector: dict[str, float] | None = None  # DetectorRule's parameters
    pair: dict[str, float] | None = None  # the reactive twin of learners.rules.paired; None: no replacement

    @property
    def label(self) -> str:
        if self.pair is not None:
            p = self.pair
            return (f"β = {self.beta:g}, paired: β_r = {p['reactive_beta']:g}, λ_r = {p['reactive_lam']:g}, "
                    f"h = {p['replace_after']:g}")
        if self.detector is not None:
            kappa = self.detector.get("kappa", 1.0)
            return "Page's test: G ← 0" + ("" if kappa == 1.0 else f", w ← {kappa:g} w")
        return f"β = {self.beta:g}, λ = {self.lam:g}"


def _grid(betas: Sequence[float], lams: Sequence[float]) -> list[Candidate]:
    return [Candidate(b, lam) for b in betas for lam in lams]


_LAMS = (0.0, 0.0005, 0.001, 0.002, 0.003, 0.005)
_PAGE = {"delta": 0.05, "threshold": 5.0}
PAIR = {"reactive_beta": 0.99, "reactive_lam": 0.005, "replace_after": 10.0}
PAIRS = [Candidate(0.999, pair=PAIR), Candidate(0.999, pair={**PAIR, "replace_after": 5.0}),
          Candidate(0.999, pair={**PAIR, "replace_after": 20.0}), Candidate(0.999, pair={**PAIR, "reactive_lam": 0.01}),
          Candidate(0.999, pair={**PAIR, "reactive_lam": 0.003})]
CANDIDATES: dict[str, list[Candidate]] = {
    "lr-ada-entropy": [*_grid((1.0, 0.999, 0.99), _LAMS), Candidate(detector=_PAGE),
                       Candidate(detector={**_PAGE, "kappa": 0.3}), *PAIRS],
    # its map makes every pass ~10 times slower: the grid's corners that lost on lr-ada-entropy are left out
    "lr-ada-entropy-rff": [*_grid((1.0, 0.999), (0.0, 0.002, 0.005)), Candidate(detector=_PAGE), PAIRS[0],
                           *(Candidate(0.999, pair={**PAIR, "replace_after": h}) for h in (15.0, 20.0))],
    "mlr-factored-entropy": [*_grid((1.0, 0.999, 0.995, 0.99), (0.0, 1e-4, 3e-4, 1e-3)),
                             *(Candidate(0.999, pair={**PAIR, "reactive_lam": lam}) for lam in (0.005, 0.01, 0.02))],
}
QUICK_CANDIDATES = (Candidate(), Candidate(0.999, 0.003), Candidate(1.0, 0.003), Candidate(0.999, 3e-4),
                    Candidate(0.999, pair=PAIR))


# -- the change detector, a prototype -------------------------------------------------------------------


@jit
def page_detector_update(w, G, a, idx, val, y, eta, weight, delta, beta, lam, tolerance, threshold, kappa):
    """Page's test on the labelled 0/1 error e (Page, "Continuous inspection schemes", Biometrika 41,
    1954, the Page-Hinkley form): m_n = Σ (e_i − ē_i − tolerance), alarm when m_n − min m > threshold;
    on an alarm AdaGrad's sums restart (G ← 0) and the weights shrink (w ← κ w), then the step of
    :func:`learners.rules.logistic.logistic_update`. a = (n, ē, m, min m, alarms). O(nnz), O(D) on an alarm."""
    p = y * sparse_dot(w, idx, val)
    a[0] += 1.0
    a[1] += ((1.0 if p <= 0.0 else 0.0) - a[1]) / a[0]
    a[2] += (1.0 if p <= 0.0 else 0.0) - a[1] - tolerance
    a[3] = min(a[3], a[2])
    if a[2] - a[3] > threshold:
        for i in range(G.size):
            G[i] = 0.0
            w[i] *= kappa
        a[0], a[1], a[2], a[3] = 0.0, 0.0, 0.0, 0.0
        a[4] += 1.0
        p = y * sparse_dot(w, idx, val)
    s = 1.0 / (1.0 + math.exp(p)) if p < 700.0 else 0.0
    if s == 0.0 or sq_norm(val) == 0.0:
        return False
    c = -weight * y * s
    for j in range(idx.size):
        i, g = idx[j], c * val[j]
        w[i] *= 1.0 - lam
        G[i] = beta * G[i] + g * g
        if G[i] > 0.0:
            w[i] -= eta * g / (delta + math.sqrt(G[i]))
    return True


@kernel(UPDATE_SIG)
def _page(S, a, P, idx, val, y, weight):
    return page_detector_update(S[0], S[1], a, idx, val, y, P[0], weight, P[2], P[3], P[4], P[5], P[6], P[7])


class DetectorRule(LogisticRule):
    """:class:`~learners.rules.logistic.LogisticRule` (AdaGrad) with Page's test on its labelled error
    (:func:`page_detector_update`): ``tolerance`` and ``threshold`` of the test, ``kappa`` the share of
    the weights kept on an alarm."""

    _constraints: ClassVar = {**LogisticRule._constraints, "tolerance": Interval(0, None),
                              "threshold": Interval(0, None, closed="neither"), "kappa": Interval(0, 1)}
    scalars: ClassVar = ("n", "mean_error", "page", "page_min", "alarms")
    update_kernel = _page

    def __init__(self, *, eta: float = 1.0, damping: float = 0.0, beta: float = 1.0, lam: float = 0.0,
                 tolerance: float = 0.05, threshold: float = 5.0, kappa: float = 1.0) -> None:
        self.tolerance, self.threshold, self.kappa = tolerance, threshold, kappa
        super().__init__(eta=eta, step="adagrad", damping=damping, beta=beta, lam=lam)

    def packed_params(self) -> np.ndarray:
        return np.append(super().packed_params(), [self.tolerance, self.threshold, self.kappa])


def build(name: str, candidate: Candidate, n_features: int, classes: Sequence | None = None) -> Learner:
    """The registry learner with its defaults and the candidate's setting of the rule."""
    sized = {"n_features": n_features, **({} if classes is None else {"classes": list(classes)})}
    if candidate.detector is None:
        paired = isinstance(make(name).rule, PairedLogisticRule | PairedFactoredSoftmaxRule)
        pair = candidate.pair or ({"replace_after": lb.NEVER} if paired else {})
        return make(name, **sized, beta=candidate.beta, lam=candidate.lam, **pair)
    base = make(name, **sized)
    own = {k: v for k, v in base.get_params().items() if k in set(Learner.param_names()) - {"name"}}
    rule = DetectorRule(eta=base.rule.eta, damping=base.rule.damping, tolerance=candidate.detector["delta"],
                        threshold=candidate.detector["threshold"], kappa=candidate.detector.get("kappa", 1.0))
    return Learner(rule, base.query.clone(), name=name, **own)


# -- streams ---------------------------------------------------------------------------------------


def demo_stream(seed: int, hashed: bool) -> tuple[Dataset, int]:
    """The demo's records (:func:`consumer.demo.feed.drifting_stream`) with their true labels, and
    where the concept changes: the named features hashed as the service hashes them, or one column
    per name (``segment=A`` … being three) for a model of narrow rows."""
    from consumer.demo.feed import drifting_stream

    stream = drifting_stream(DEMO_RECORDS, seed=seed)
    records = [orjson.loads(v) for v in stream.values]
    names: dict[str, int] = {}
    rows, labels = [], []
    for r in records:
        if hashed:
            idx, val = hash_features(r["features"], DEFAULT_DIMENSION)
        else:
            named = {(f"{k}={v}" if isinstance(v, str) else k): (1.0 if isinstance(v, str) else v)
                     for k, v in r["features"].items()}
            idx = np.array([names.setdefault(k, len(names)) for k in named], dtype=np.int32)
            val = np.array(list(named.values()), dtype=np.float64)
        rows.append((idx, val))
        labels.append(stream.truth[r["id"]])
    width = DEFAULT_DIMENSION if hashed else len(names)
    indptr = np.cumsum([0] + [idx.size for idx, _ in rows])
    X = sp.csr_matrix((np.concatenate([v for _, v in rows]), np.concatenate([i for i, _ in rows]), indptr),
                      shape=(len(rows), width))
    X.sum_duplicates()
    name = f"demo:drifting?seed={seed}&{'hashed' if hashed else 'columns'}"
    return Dataset(as_rows(X, width), np.asarray(labels, dtype=np.int64), name, ordered=True), 2 * DEMO_RECORDS // 3


def flipped(data: Dataset, seed: int) -> tuple[Dataset, int]:
    """``data`` shuffled, every class relabelled from 2/3 of the stream on by a cyclic shift of the
    classes (no class keeps its label), and where that happens."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(data.n)
    classes = np.unique(data.labels)
    shifted = np.roll(classes, 1 + int(rng.integers(classes.size - 1)))
    labels = data.labels[order].copy()
    change = 2 * data.n // 3
    labels[change:] = shifted[np.searchsorted(classes, labels[change:])]
    return Dataset(data.rows.take(order), labels, f"{data.name}:flipped?seed={seed}", ordered=True), change


def recovered_after(correct: np.ndarray, change: int) -> int | None:
    """Records after ``change`` until a window of :data:`WINDOW` wholly after it is back within
    :data:`BACK` of the window before it (None: never)."""
    before = correct[change - WINDOW:change].mean()
    after = np.convolve(correct[change:].astype(np.float64), np.ones(WINDOW) / WINDOW, "valid")
    back = np.flatnonzero(after >= before - BACK)
    return int(back[0]) + WINDOW if back.size else None


# -- measurement -----------------------------------------------------------------------------------------


@dataclass
class ChangeCell:
    """One change stream at one label delay, means over the draws."""

    stream: str
    delay: int
    before: float  # the 500 records before the change
    after: float  # the 1,500 after it
    last: float  # the 500 that end the 1,500 after it
    end: float  # the stream's last 500
    recovered: int | None  # the slowest draw's records to be back (None: a draw never was)
    query: float


@dataclass
class Result:
    learner: str
    label: str
    beta: float
    lam: float
    detector: dict[str, float] | None
    pair: dict[str, float] | None = None
    changes: list[ChangeCell] = field(default_factory=list)
    board: dict[str, float] = field(default_factory=dict)  # drift board stream → accuracy
    stationary: dict[str, float] = field(default_factory=dict)  # set → F1 or accuracy
    seconds: float = 0.0
    rank: float | None = None
    harmless: bool = True

    @property
    def is_today(self) -> bool:
        """β = 1, λ = 0 and no detector: plain AdaGrad, the defaults before forgetting."""
        return self.detector is None and self.pair is None and self.beta == 1.0 and self.lam == 0.0


Drawn = tuple[tuple[Dataset, int], ...]  # each draw of a change stream, and where it changes


@functools.cache
def _change_streams(multiclass: bool, hashed: bool, draws: int) -> tuple[tuple[str, Drawn], ...]:
    if multiclass:
        return tuple((d, tuple(flipped(lb.DATASETS[d].load(), k) for k in range(draws))) for d in FLIPPED)
    return (("demo", tuple(demo_stream(k, hashed) for k in range(draws))),)


@functools.cache
def _board(draws: int) -> tuple[tuple[str, tuple[Dataset, ...]], ...]:
    return tuple((s, tuple(STREAMS[s]()(k) for k in range(draws))) for s in STREAMS)


@functools.cache
def _stationary(multiclass: bool) -> tuple[tuple[str, Dataset, list], ...]:
    out = []
    for d in STATIONARY[multiclass]:
        spec = lb.DATASETS[d]
        data = spec.load()
        out.append((d, data, spec.classes(data)))
    return tuple(out)


def _classes(name: str, data: Dataset) -> list | None:
    return list(np.unique(data.labels)) if make(name).multiclass else None


def measure(name: str, candidate: Candidate, draws: int, permutations: int) -> Result:
    """Every stream of :data:`__doc__` for one learner and one candidate."""
    started = time.perf_counter()
    multiclass = make(name).multiclass
    result = Result(name, candidate.label, candidate.beta, candidate.lam, candidate.detector, candidate.pair)
    for stream, draws_ in _change_streams(multiclass, name == "lr-ada-entropy", draws):
        for delay in DELAYS:
            seen = []
            for data, change in draws_:
                learner = build(name, candidate, data.rows.n_features, _classes(name, data))
                learner.budget = BudgetController(target=TARGET)  # the service's: no warm-up
                trace = replay(learner, data, delay=delay)
                correct = trace.y_pred == trace.y_true
                seen.append((correct[change - WINDOW:change].mean(), correct[change:change + RECOVERY].mean(),
                             correct[change + RECOVERY - WINDOW:change + RECOVERY].mean(), correct[-WINDOW:].mean(),
                             recovered_after(correct, change), trace.queried.mean()))
            back = [s[4] for s in seen]
            mean = np.mean([[s[k] for k in (0, 1, 2, 3, 5)] for s in seen], axis=0)
            result.changes.append(ChangeCell(stream, delay, *mean[:4], None if None in back else max(back), mean[4]))
    if not multiclass:
        for stream, datas in _board(draws):
            accuracy = []
            for data in datas:
                learner = build(name, candidate, data.rows.n_features)
                learner.budget = BudgetController(target=TARGET)
                trace = replay(learner, data)
                accuracy.append(float((trace.y_pred == trace.y_true).mean()))
            result.board[stream] = float(np.mean(accuracy))
    for dataset, data, classes in _stationary(multiclass):
        learner = build(name, candidate, data.rows.n_features, classes)
        learner.budget = backtest_controller(TARGET, data.n)
        runs = run(learner, data, permutations=permutations, seed=lb.TUNING_SEED)
        result.stationary[dataset] = runs.mean("accuracy" if multiclass else "f1")
    result.seconds = time.perf_counter() - started
    return result


def _drift_cells(r: Result) -> list[float]:
    return [c.after for c in r.changes] + list(r.board.values())


def chosen(results: Sequence[Result]) -> Result:
    """Rank one learner's candidates by their mean rank over the drift cells; mark those that lose a
    stationary cell to plain AdaGrad by more than HARM; return the best ranked of the others."""
    today = next(r for r in results if r.is_today)
    cells = np.array([_drift_cells(r) for r in results])
    ranks = np.array([lb.average_ranks(list(column)) for column in cells.T]).T
    for r, row in zip(results, ranks, strict=True):
        r.rank = float(row.mean())
        r.harmless = all(today.stationary[d] - v <= HARM for d, v in r.stationary.items())
    return min((r for r in results if r.harmless), key=lambda r: r.rank)


# -- report ----------------------------------------------------------------------------------------------


def _recovered(c: ChangeCell) -> str:
    if c.recovered is None:
        return "never"
    return f"**{c.recovered:,}**" if c.recovered <= RECOVERY else f"{c.recovered:,}"


def section(results: Sequence[Result]) -> list[str]:
    pick = chosen(results)
    name = results[0].learner
    ordered = sorted(results, key=lambda r: (not r.harmless, r.rank))
    streams = list(dict.fromkeys(c.stream for c in results[0].changes))
    params = ", ".join(f"{k}={v!r}" for k, v in make(name).get_params().items()
                       if k in ("eta", "damping", "normalize", "rff_components", "scale"))
    out = [f"## `{name}`", "", f"Registered defaults beside the candidate: {params}. To register: **{pick.label}**"
           f"{' (plain AdaGrad)' if pick.is_today else ''}. "
           f"Candidates in *italics* lose a stationary cell to plain AdaGrad by more than {HARM:g}.", ""]
    for stream in streams:
        out += [f"### {stream}: accuracy around the change (means over the draws)", "",
                "Before: the 500 records before the change; after: the 1,500 after it; at +1,500: the 500 that "
                "end those; end: the stream's last 500; back after: records until a window of 500 wholly after "
                f"the change is within {BACK} of *before* (the slowest draw; bold: within {RECOVERY:,}).", "",
                "| candidate | delay | before | after | at +1,500 | end | back after | query ratio |",
                "|---|---|---|---|---|---|---|---|"]
        for r in ordered:
            label = r.label if r.harmless else f"*{r.label}*"
            for c in (c for c in r.changes if c.stream == stream):
                out.append(f"| {label} | {c.delay:,} | {c.before:.3f} | {c.after:.3f} | {c.last:.3f} | {c.end:.3f} | "
                           f"{_recovered(c)} | {c.query:.3f} |")
        out.append("")
    board = list(results[0].board)
    stationary = list(results[0].stationary)
    metric = "accuracy" if make(name).multiclass else "F1"
    out += ["### Drift board and stationary sets", "",
            f"Drift board: accuracy over the stream; stationary: {metric} at 10 %. Mean rank over the drift cells "
            "(the *after* column of every change stream and delay, and the drift board).", "",
            "| candidate | mean rank | " + " | ".join(board + [f"{d} ({metric})" for d in stationary]) + " | s |",
            "|---|---|" + "---|" * (len(board) + len(stationary) + 1)]
    for r in ordered:
        label = r.label if r.harmless else f"*{r.label}*"
        mark = " (to register)" if r is pick else (" (plain AdaGrad)" if r.is_today else "")
        cells = [f"{r.board[s]:.4f}" for s in board] + [f"{r.stationary[d]:.4f}" for d in stationary]
        out.append(f"| {label}{mark} | {r.rank:.2f} | " + " | ".join(cells) + f" | {r.seconds:.0f} |")
    return [*out, ""]


def markdown(results: Sequence[Result], meta: dict) -> str:
    lines = ["# Forgetting in the defaults' AdaGrad: following a concept that moves", "",
             f"{meta['date']}, commit `{meta['commit']}`, {meta['draws']} draws of "
             f"each drifting stream, {meta['permutations']} tuning permutations of each stationary set, "
             f"{meta['minutes']:.1f} min on this machine. Command: `{meta['command']}`", "",
             "Online, `BudgetController(target=0.1)` (the service's on the change streams and the drift board; "
             "`replay --budget-rate 0.1`'s warm-up on the stationary sets). β: G ← β G + g² (RMSProp's sums); "
             "λ: w ← (1 − λ) w at each update (NORMA's shrinkage); Page's test: a change detector on the labelled "
             "error restarting AdaGrad's sums; paired: a reactive twin forgetting by β_r and λ_r replaces the model "
             "after h mistakes more than it (`learners/rules/paired.py`). See `benchmarks/drift_defaults.py`.", ""]
    groups = [[r for r in results if r.learner == name] for name in dict.fromkeys(r.learner for r in results)]
    lines += summary(groups)
    for group in groups:
        lines += section(group)
    return "\n".join(lines)


def summary(groups: Sequence[Sequence[Result]]) -> list[str]:
    """Today's rule and the one to register, side by side, per learner."""
    out = ["## Summary", "", "Per learner, plain AdaGrad and the setting to register: on each change stream at each "
           "label delay, accuracy in the 500 records before the change / the 1,500 after it / the stream's last 500, "
           "and the records until it is back within 0.05 (the slowest draw); then the drift board's accuracy and the "
           "stationary sets' F1 or accuracy.", "",
           "| learner | setting | change stream, delay: before / after / end (back after) | drift board | "
           "stationary |", "|---|---|---|---|---|"]
    for group in groups:
        pick = chosen(group)
        today = next(r for r in group if r.is_today)
        for r in (today,) if pick is today else (today, pick):
            changes = "; ".join(f"{c.stream} {c.delay:,}: {c.before:.3f} / {c.after:.3f} / {c.end:.3f} "
                                f"({'never' if c.recovered is None else f'{c.recovered:,}'})" for c in r.changes)
            board = ", ".join(f"{k} {v:.4f}" for k, v in r.board.items()) or "—"
            stationary = ", ".join(f"{k} {v:.4f}" for k, v in r.stationary.items())
            role = " (plain AdaGrad)" if r is today else " (to register)"
            out.append(f"| `{r.learner}` | {r.label}{role} | {changes} | {board} | {stationary} |")
    return [*out, ""]


def _unit(args: tuple[str, Candidate, int, int]) -> Result:
    return measure(*args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.drift_defaults", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_DRAWS} draws, {QUICK_PERMUTATIONS} permutation, "
                        "4 candidates, lr-ada-entropy and mlr-factored-entropy")
    parser.add_argument("--learners", nargs="+", choices=list(CANDIDATES))
    parser.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    draws = QUICK_DRAWS if args.quick else DRAWS
    permutations = QUICK_PERMUTATIONS if args.quick else PERMUTATIONS
    names = args.learners or (["lr-ada-entropy", "mlr-factored-entropy"] if args.quick else list(CANDIDATES))
    units = [(name, c, draws, permutations) for name in names
             for c in (QUICK_CANDIDATES if args.quick else CANDIDATES[name])]
    command = "python -m benchmarks.drift_defaults " + " ".join(argv if argv is not None else sys.argv[1:])
    commit, started = reproduce.commit(), time.perf_counter()
    # the slowest first, so the processes finish together; forked, they share the streams read here
    units.sort(key=lambda u: u[0] != "lr-ada-entropy-rff")
    for name in names:
        multiclass = make(name).multiclass
        _change_streams(multiclass, name == "lr-ada-entropy", draws)
        _stationary(multiclass)
    _board(draws)
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        results = []
        for r in pool.map(_unit, units):
            results.append(r)
            print(f"{r.learner:22s} {r.label:28s} " + " ".join(f"{c.stream}/{c.delay}: {c.after:.3f}"
                                                             for c in r.changes)
                  + " | " + " ".join(f"{k} {v:.4f}" for k, v in {**r.board, **r.stationary}.items())
                  + f" ({r.seconds:.0f} s)", flush=True)
    results.sort(key=lambda r: names.index(r.learner))
    meta = reproduce.run_meta(command, commit, started, draws=draws, permutations=permutations, target=TARGET,
                              delays=list(DELAYS), harm=HARM)
    reproduce.write_results(args.out, "drift_defaults", markdown(results, meta), meta, "results", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
