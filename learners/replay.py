"""Replay a dataset through a learner as a stream: predict, decide, learn if queried.

:func:`replay` runs one pass (labels immediate or delayed by k records) in a compiled loop;
:func:`run` repeats it over random permutations as the papers do; :func:`find_budget` searches
the query strategy's budget parameter (δ for margin queries) until the mean query ratio lands on a
requested value.

Examples
--------
>>> from learners import make
>>> from learners.synthetic import synthetic_sparse
>>> data = synthetic_sparse(n=5000, d=2**12, seed=1)
>>> result = run(make("paa-1", C=1.0, delta=0.5, seed=3), data, permutations=2)
>>> round(result.mean("query_ratio"), 3), round(result.mean("f1"), 3)
(0.385, 0.537)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from learners import budget, compiled, evaluation
from learners.base import Learner
from learners.datasets import Dataset
from learners.drivers import DRIVERS
from learners.evaluation import Metrics, binary_metrics, multiclass_metrics
from learners.inputs import Rows
from learners.loop_parts import scratch

__all__ = ["PROGRESS_ROUNDS", "Run", "Trace", "find_budget", "replay", "replay_stream", "run", "run_stream"]

# rounds per driver call when a pass reports its progress: a few calls a second at the drivers' speed
PROGRESS_ROUNDS = 1 << 18
Progress = Callable[[int, int, int], None]  # (rounds so far, mistakes so far, queries so far) of a pass


@dataclass(frozen=True, slots=True)
class Trace:
    """Per-round record of one replay, in stream order (labels are internal codes)."""

    y_true: np.ndarray
    y_pred: np.ndarray
    p: np.ndarray
    probability: np.ndarray
    queried: np.ndarray
    updates: int
    seconds: float

    def after(self, warmup: int) -> Trace:
        """The rounds after the first ``warmup``: what a model already trained on them did next
        (``updates`` and ``seconds`` stay those of the whole pass)."""
        if not 0 <= warmup < self.y_true.size:
            raise ValueError(f"warmup must be in [0, {self.y_true.size}), got {warmup}")
        return Trace(self.y_true[warmup:], self.y_pred[warmup:], self.p[warmup:], self.probability[warmup:],
                     self.queried[warmup:], self.updates, self.seconds)

    def metrics(self, learner: Learner, **costs: float) -> Metrics:
        if learner.multiclass:
            return multiclass_metrics(self.y_true, self.y_pred, self.queried, len(learner.classes))
        return binary_metrics(self.y_true, self.y_pred, self.queried, scores=self.p, **costs)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """Rows as the drivers take them (the intercept, ``bias`` at index ``column``, appended by the
    drivers), their labels' codes and their coins' keys."""

    rows: Rows
    codes: np.ndarray
    keys: np.ndarray
    bias: float
    column: int

    def tail(self, k: int) -> _Prepared:
        """The last ``k`` rows."""
        rows = self.rows.take(np.arange(self.rows.n - k, self.rows.n))
        return _Prepared(rows, self.codes[-k:], self.keys[-k:], self.bias, self.column)

    def then(self, later: _Prepared) -> _Prepared:
        """These rows followed by ``later``'s."""
        return _Prepared(Rows.vstack([self.rows, later.rows]), np.concatenate([self.codes, later.codes]),
                         np.concatenate([self.keys, later.keys]), self.bias, self.column)


def _prepare(learner: Learner, data: Dataset, first_key: int = 0, order: np.ndarray | None = None) -> _Prepared:
    """``order``: the order the rows will be replayed in, which a scale before a random feature map
    observes them in (every row is decided, so the map's input is the one the round would see)."""
    rows, bias, column = learner._rows_and_intercept(data.rows, order)
    codes = np.ascontiguousarray(learner.encode(data.labels), dtype=np.int64)
    return _Prepared(rows, codes, np.arange(first_key, first_key + data.n, dtype=np.uint64), bias, column)


@dataclass(slots=True)
class _Outputs:
    """Per-round outputs of a driver call, in stream order."""

    yhat: np.ndarray
    p: np.ndarray
    prob: np.ndarray
    queried: np.ndarray

    @classmethod
    def empty(cls, n: int) -> _Outputs:
        return cls(np.empty(n, dtype=np.int64), np.empty(n), np.empty(n), np.empty(n, dtype=np.bool_))

    def window(self, start: int, stop: int) -> _Outputs:
        """Views of rounds ``start .. stop-1``: what a driver call writes there lands in these arrays."""
        return _Outputs(self.yhat[start:stop], self.p[start:stop], self.prob[start:stop], self.queried[start:stop])

    def carried(self, k: int, n: int) -> _Outputs:
        """Outputs for ``n`` rounds whose first ``k`` are this call's last ``k``."""
        out = _Outputs.empty(n)
        for name in ("yhat", "p", "prob", "queried"):
            getattr(out, name)[:k] = getattr(self, name)[len(self.yhat) - k:]
        return out


class _Trail:
    """Per-round outputs of a stream, chunk after chunk, in arrays that grow by doubling (sized at
    once when the stream's length is known)."""

    def __init__(self, capacity: int) -> None:
        self.out = _Outputs.empty(max(capacity, 1))
        self.n = 0

    def append(self, out: _Outputs, first: int) -> None:
        """The rounds of ``out`` after its first ``first`` (those carried from the previous chunk)."""
        m = len(out.yhat) - first
        if self.n + m > len(self.out.yhat):
            grown = _Outputs.empty(max(2 * len(self.out.yhat), self.n + m))
            for name in _Outputs.__slots__:
                getattr(grown, name)[: self.n] = getattr(self.out, name)[: self.n]
            self.out = grown
        for name in _Outputs.__slots__:
            getattr(self.out, name)[self.n : self.n + m] = getattr(out, name)[first:]
        self.n += m

    def arrays(self) -> list[np.ndarray]:
        return [getattr(self.out, name)[: self.n] for name in _Outputs.__slots__]


def _drive(learner: Learner, prep: _Prepared, order: np.ndarray, delay: int, first: int, final: bool,
           out: _Outputs, changed: int = 0) -> int:
    """One call of the learner's replay driver; returns the updates that changed the model
    (``changed``: those of the earlier calls of the same replay, not yet counted by the learner)."""
    rows, scaler = prep.rows, learner._rule_scaler
    head = (rows.indptr, rows.indices, rows.data, order, prep.codes, prep.keys, np.uint64(learner.seed),
            learner._tie, learner.multiclass, int(delay), prep.bias, prep.column, int(first), bool(final),
            learner.query.importance_weighted)
    outputs = (out.yhat, out.p, out.prob, out.queried, *scratch(rows.indptr, order.size))
    fresh = learner.updates_ == 0 and changed == 0
    if scaler is None:  # a driver compiled ahead of time with the learner's kernels in it
        if learner.budget is None and (twin := compiled.replay_rows(learner)) is not None:
            return int(twin(*head, *learner.rule.kernel_state(), *learner.query.kernel_state(), *outputs))
        if learner.budget is not None and (twin := compiled.budget_replay_rows(learner)) is not None:
            return int(twin(*head, fresh, *learner.rule.kernel_state(), learner.query.qs_,
                                *learner.budget.arrays(), *outputs))
    loop = DRIVERS[learner.budget is not None, scaler is not None].replay
    rule = (*learner.rule.kernel_state(), learner.rule.score_fn, learner.rule.update_fn)
    scaling = () if scaler is None else scaler.replay_arguments()
    if learner.budget is not None:  # the online controller, between probability and coin
        return int(loop(*head, fresh, *rule, learner.query.qs_, *learner.query.kernels, *learner.budget.arrays(),
                        *outputs, *scaling))
    return int(loop(*head, *rule, *learner.query.kernel_state(), *learner.query.kernels, *outputs, *scaling))


def _drive_in_steps(learner: Learner, prep: _Prepared, order: np.ndarray, delay: int, out: _Outputs,
                    progress: Progress) -> int:
    """:func:`_drive` over ``order`` in calls of :data:`PROGRESS_ROUNDS` rounds, each carrying the
    previous call's last ``delay`` rounds (their labels still on the way), as :func:`_stream` does:
    the same rounds, bit for bit. ``progress(rounds, mistakes, queries)`` after each call."""
    n = order.size
    changed = mistakes = queries = 0
    for start in range(0, n, PROGRESS_ROUNDS):
        stop, k = min(n, start + PROGRESS_ROUNDS), min(delay, start)
        changed += _drive(learner, prep, order[start - k:stop], delay, k, stop == n, out.window(start - k, stop),
                          changed)
        mistakes += int(np.count_nonzero(out.yhat[start:stop] != prep.codes[order[start:stop]]))
        queries += int(np.count_nonzero(out.queried[start:stop]))
        progress(stop, mistakes, queries)
    return changed


def _replay_prepared(learner: Learner, prep: _Prepared, order: np.ndarray, delay: int,
                     progress: Progress | None = None) -> Trace:
    n = order.size
    out = _Outputs.empty(n)
    start = time.perf_counter()
    if progress is None or n == 0:
        changed = _drive(learner, prep, order, delay, 0, True, out)
    else:
        changed = _drive_in_steps(learner, prep, order, delay, out, progress)
    seconds = time.perf_counter() - start
    learner.rounds_ += n
    learner.labels_ += int(np.count_nonzero(out.queried))
    learner.updates_ += changed
    return Trace(prep.codes[order], out.yhat, out.p, out.prob, out.queried, changed, seconds)


def replay(learner: Learner, data: Dataset, *, order: np.ndarray | None = None, delay: int = 0) -> Trace:
    """One prequential pass of ``data`` through ``learner`` (which keeps the state it learns).

    Round t handles row ``order[t]`` (default: file order), whose id for the query coin is its
    row number. A queried label is applied after ``delay`` further records have been predicted.
    """
    if delay < 0:
        raise ValueError(f"delay must be ≥ 0, got {delay}")
    order = np.arange(data.n, dtype=np.int64) if order is None else np.ascontiguousarray(order, dtype=np.int64)
    return _replay_prepared(learner, _prepare(learner, data, order=order), order, delay)


def _stream(learner: Learner, chunks: Iterable[Dataset], delay: int,
            sink: Callable[[np.ndarray, _Outputs, int], None]) -> tuple[int, float]:
    """The chunk loop of :func:`replay_stream` and :func:`run_stream`: ``sink(codes, out, first)``
    gets each chunk's rounds as they are decided (``out``'s rounds after its first ``first``, the
    labels' codes of those rounds); the learner counts its rounds, labels and updates. Returns
    (updates that changed the model, seconds)."""
    if delay < 0:
        raise ValueError(f"delay must be ≥ 0, got {delay}")
    carry: _Prepared | None = None  # the previous chunk's last rows, their labels possibly pending
    carried: _Outputs | None = None
    n = changed = labels = 0
    seconds = 0.0
    for chunk in chunks:
        if chunk.n == 0:
            continue
        prep = _prepare(learner, chunk, first_key=n)
        codes = prep.codes
        first = 0 if carry is None else carry.rows.n
        if carry is not None:
            prep = carry.then(prep)
        size = prep.rows.n
        out = _Outputs.empty(size) if carried is None else carried.carried(first, size)
        start = time.perf_counter()
        changed += _drive(learner, prep, np.arange(size, dtype=np.int64), delay, first, False, out, changed)
        seconds += time.perf_counter() - start
        sink(codes, out, first)
        labels += int(np.count_nonzero(out.queried[first:]))
        keep = min(delay, size)
        carry, carried = (prep.tail(keep), out) if keep else (None, None)
        n += chunk.n
    if carry is not None:  # the labels still on their way arrive after the last record
        k = carry.rows.n
        out = carried.carried(k, k)
        start = time.perf_counter()
        changed += _drive(learner, carry, np.arange(k, dtype=np.int64), delay, k, True, out, changed)
        seconds += time.perf_counter() - start
    learner.rounds_ += n
    learner.labels_ += labels
    learner.updates_ += changed
    return changed, seconds


def replay_stream(learner: Learner, chunks: Iterable[Dataset], *, delay: int = 0, rows: int = 0) -> Trace:
    """:func:`replay` in file order of the rows of ``chunks`` one after the other, bit for bit, holding
    one chunk at a time: a file read as a stream (:func:`learners.datasets.iter_libsvm`).

    The chunks must share their ``n_features`` (the stream's). Besides the chunk, memory holds the
    last ``delay`` rows (their labels may still be on the way) and the per-round outputs of the
    trace (34 bytes a row), allocated once if ``rows`` says how many the stream holds;
    :func:`run_stream` keeps only what the metrics need.
    """
    codes, trail = [], _Trail(rows)

    def keep(chunk_codes: np.ndarray, out: _Outputs, first: int) -> None:
        codes.append(chunk_codes)
        trail.append(out, first)

    changed, seconds = _stream(learner, chunks, delay, keep)
    joined = trail.arrays()
    y_true = np.concatenate(codes) if codes else np.empty(0, dtype=np.int64)
    return Trace(y_true, *joined, changed, seconds)


class _Margins:
    """Scores appended chunk after chunk into blocks, each as large as all before it and sorted
    as soon as it is full (by ``sorter``, beside the stream, when there is one): the stream's scores are held
    once, with no copy and no zeros written ahead of them (a block's unwritten pages are never
    touched), and the AUC-ROC merges sorted blocks (:func:`learners.evaluation.auc_of_sorted`)
    instead of sorting the whole stream at its end."""

    # scores in the first block: the AUC merges every block of one class with every block of the other,
    # so few blocks; a short stream never touches most of its pages
    FIRST = 1 << 20

    def __init__(self, sorter: Executor | None = None) -> None:
        self._blocks: list[np.ndarray] = []
        self._filled = 0  # scores in the last block
        self._n = 0
        self._sorter = sorter
        self._sorting: list[Future] = []

    def extend(self, scores: np.ndarray) -> None:
        at = 0
        while at < scores.size:
            if not self._blocks or self._filled == self._blocks[-1].size:
                if self._blocks:
                    self._sort(self._blocks[-1])
                self._blocks.append(np.empty(max(self.FIRST, self._n)))
                self._filled = 0
            block = self._blocks[-1]
            take = min(block.size - self._filled, scores.size - at)
            block[self._filled : self._filled + take] = scores[at : at + take]
            self._filled += take
            self._n += take
            at += take

    def _sort(self, block: np.ndarray) -> None:
        if self._sorter is None:
            evaluation.sort_scores(block)
        else:  # beside the stream, not in its way
            self._sorting.append(self._sorter.submit(evaluation.sort_scores, block))

    def sorted_blocks(self) -> list[np.ndarray]:
        """The scores as sorted blocks (the last one sorted now)."""
        if not self._blocks:
            return []
        last = self._blocks[-1][: self._filled]
        evaluation.sort_scores(last)
        for sorting in self._sorting:
            sorting.result()
        return [*self._blocks[:-1], last]


class _Tally:
    """What one pass's metrics need, summed chunk after chunk: the counts of the rounds after
    ``warmup`` (:func:`learners.evaluation.binary_counts` or ``multiclass_counts``), their queries,
    the queries of every window of :func:`learners.budget.max_window_query_ratio`, and (binary) the
    margins of the AUC-ROC by class: 8 bytes a round, the one part that grows with the stream, as an
    exact rank statistic must (held once: :class:`_Margins`)."""

    def __init__(self, n_classes: int, multiclass: bool, warmup: int, window: int = 1000) -> None:
        self.n_classes, self.multiclass, self.warmup, self.window = n_classes, multiclass, warmup, window
        self.counts = np.zeros((3, n_classes) if multiclass else 4, dtype=np.int64)
        self.rounds = self.queries = 0
        self.windows: list[int] = []  # queries per full window, in order
        self.open = 0  # queries of the window being filled
        # full blocks of margins sorted in a thread of their own, which the replay's and the reader's
        # threads leave a share of the cores to while they wait for each other
        self._sorter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="margins-sort")
        self.margins = (_Margins(self._sorter), _Margins(self._sorter))  # of positive, of negative rounds
        self._split = np.empty((2, 0))  # a chunk's scores by class, on their way into the margins

    def add(self, codes: np.ndarray, out: _Outputs, first: int) -> None:
        yhat, p, queried = out.yhat[first:], out.p[first:], out.queried[first:]
        self._count_windows(queried)
        skip = min(max(self.warmup - self.rounds, 0), codes.size)
        self.rounds += codes.size
        y, yhat, p, queried = codes[skip:], yhat[skip:], p[skip:], queried[skip:]
        if self.multiclass:
            self.counts += evaluation.multiclass_counts(y, yhat, self.n_classes)
        else:
            if self._split.shape[1] < y.size:
                self._split = np.empty((2, y.size))
            counts, positives = evaluation.binary_counts_and_scores(y, yhat, p, *self._split)
            self.counts += counts
            self.margins[0].extend(self._split[0, :positives])
            self.margins[1].extend(self._split[1, : y.size - positives])
        self.queries += int(np.count_nonzero(queried))

    def _count_windows(self, queried: np.ndarray) -> None:
        at = self.rounds % self.window
        head = min(self.window - at, queried.size) if at else 0
        self.open += int(np.count_nonzero(queried[:head]))
        if at and at + head == self.window:
            self.windows.append(self.open)
            self.open = 0
        body = queried[head:]
        full = body.size // self.window * self.window
        if full:
            self.windows += np.count_nonzero(body[:full].reshape(-1, self.window), axis=1).tolist()
        self.open += int(np.count_nonzero(body[full:]))

    def max_window(self) -> float:
        """:func:`learners.budget.max_window_query_ratio` of the whole pass."""
        later = self.windows[1:]
        return float(max(later) / self.window) if later else math.nan

    def metrics(self, **costs: float) -> Metrics:
        if not 0 <= self.warmup < max(self.rounds, 1):
            raise ValueError(f"warmup must be in [0, {self.rounds}), got {self.warmup}")
        if self.multiclass:
            return evaluation.multiclass_metrics_of_counts(self.counts, self.queries)
        with self._sorter:  # its sorts waited for by sorted_blocks, its thread ended after them
            if self.rounds <= _Margins.FIRST:
                auc = evaluation.auc_of_sorted(*(part.sorted_blocks() for part in self.margins))
            else:  # the stream's last step, its reader's core free: the classes sorted, then merged, side by side
                with ThreadPoolExecutor(max_workers=2) as pool:
                    auc = evaluation.auc_of_sorted(*pool.map(_Margins.sorted_blocks, self.margins), each=pool.map)
        return evaluation.binary_metrics_of_counts(self.counts, self.queries, auc=auc, **costs)


@dataclass(frozen=True, slots=True)
class Run:
    """Metrics of repeated replays (one per permutation) and the parameters that produced them."""

    metrics: list[Metrics]
    params: dict
    seconds: list[float]
    # per pass: the largest query ratio over windows of 1,000 records after the first
    window_ratios: list[float] = field(default_factory=list)

    def mean(self, key: str) -> float:
        return float(np.mean([getattr(m, key) for m in self.metrics]))

    def std(self, key: str) -> float:
        return float(np.std([getattr(m, key) for m in self.metrics]))


def _orders(n: int, permutations: int, seed: int, shuffle: bool) -> list[np.ndarray]:
    if not shuffle:
        return [np.arange(n, dtype=np.int64)] * permutations
    return [np.random.default_rng(seed + k).permutation(n).astype(np.int64) for k in range(permutations)]


def run(learner: Learner, data: Dataset, *, permutations: int = 1, seed: int = 0, delay: int = 0,
        shuffle: bool = True, costs: dict | None = None, warmup: int = 0,
        progress: Callable[[int, int, int, int], None] | None = None) -> Run:
    """Replay ``data`` once per permutation with a fresh clone of ``learner``.

    Permutation k shuffles the rows with ``default_rng(seed + k)`` (file order if not ``shuffle``,
    or if the dataset is ``ordered``: a drifting stream) and draws its query coins with seed
    ``learner.seed + k``. ``costs`` (``eta_p``, ``eta_n``, ``c_p``, ``c_n``) weight the binary
    metrics' sum and cost. With ``warmup``, the metrics cover the rounds after the first ``warmup``
    of each pass: the model learns from all of them, as a service restored from a checkpoint has.
    ``progress(pass, rounds, mistakes, queries)`` is called every :data:`PROGRESS_ROUNDS` rounds of
    each pass, with that pass's counts so far; the results do not change.
    """
    if permutations < 1:
        raise ValueError(f"permutations must be ≥ 1, got {permutations}")
    template = learner.clone()
    prep = _prepare(template, data)
    metrics, seconds, windows = [], [], []
    for k, order in enumerate(_orders(data.n, permutations, seed, shuffle and not data.ordered)):
        fresh = learner.clone(seed=learner.seed + k)
        fresh._ensure_allocated(template.n_features)
        fresh._resolve_scale(data.rows, True)  # "auto": the mode the template chose on the same rows
        # a scale before the map depends on the order: each permutation maps its rows anew
        here = _prepare(fresh, data, order=order) if template.scales_before_map else prep
        trace = _replay_prepared(fresh, here, order, delay, None if progress is None else partial(progress, k))
        metrics.append(trace.after(warmup).metrics(fresh, **(costs or {})))
        seconds.append(trace.seconds)
        windows.append(budget.max_window_query_ratio(trace.queried))
    return Run(metrics, learner.get_params(), seconds, windows)


def run_stream(learner: Learner, chunks: Callable[[], Iterable[Dataset]], *, permutations: int = 1,
               delay: int = 0, costs: dict | None = None, warmup: int = 0,
               progress: Callable[[int, int, int, int], None] | None = None) -> Run:
    """:func:`run` in file order (``shuffle=False``), bit for bit, over a stream: ``chunks()`` yields
    the rows again for each pass, so memory follows a chunk, not the data (but for the AUC-ROC's
    8 bytes a round, :class:`_Tally`). ``progress`` as :func:`run`'s, after each chunk."""
    if permutations < 1:
        raise ValueError(f"permutations must be ≥ 1, got {permutations}")
    metrics, seconds, windows = [], [], []
    for k in range(permutations):
        fresh = learner.clone(seed=learner.seed + k)
        tally = _Tally(len(fresh.classes), fresh.multiclass, warmup)
        sink = tally.add if progress is None else _reporting(tally.add, partial(progress, k))
        _, spent = _stream(fresh, chunks(), delay, sink)
        metrics.append(tally.metrics(**(costs or {})))
        seconds.append(spent)
        windows.append(tally.max_window())
    return Run(metrics, learner.get_params(), seconds, windows)


def _reporting(sink: Callable[[np.ndarray, _Outputs, int], None],
               progress: Progress) -> Callable[[np.ndarray, _Outputs, int], None]:
    """``sink``, then ``progress`` with the pass's rounds, mistakes and queries so far."""
    counts = [0, 0, 0]

    def both(codes: np.ndarray, out: _Outputs, first: int) -> None:
        sink(codes, out, first)
        counts[0] += codes.size
        counts[1] += int(np.count_nonzero(out.yhat[first:] != codes))
        counts[2] += int(np.count_nonzero(out.queried[first:]))
        progress(*counts)

    return both


def find_budget(learner: Learner, data: Dataset, target: float, *, permutations: int = 1, seed: int = 0,
                delay: int = 0, shuffle: bool = True, tol: float = 0.005,
                bounds: Sequence[float] = (2.0**-24, 2.0**24), max_steps: int = 48,
                costs: dict | None = None, warmup: int = 0) -> tuple[Learner, Run]:
    """The learner with its budget parameter set so the mean query ratio is within ``tol`` of
    ``target``, and the run that shows it.

    A fixed-rate query takes ``rate = target`` directly. A margin-type query's δ is bisected on a
    log scale (the query ratio grows with δ; it falls with a parameter whose :class:`learners.values.Knob`
    is not ``increasing``, such as the entropy query's discount); the coins are fixed per (seed, row),
    which makes the ratio a deterministic function of δ. If no δ lands within ``tol`` the closest
    one is returned.
    ``costs`` are the weights of the binary metrics and ``warmup`` the rounds left out of them, as
    for :func:`run`.
    """
    if not 0.0 < target <= 1.0:
        raise ValueError(f"the query rate must be in (0, 1], got {target}")
    param = learner.query.budget_param
    if param is None:
        raise ValueError(f"{learner.name or type(learner.query).__name__} asks for every label; "
                         "a query rate cannot be set")
    go = lambda value: run(learner.clone(**{param: value}), data, permutations=permutations,  # noqa: E731
                           seed=seed, delay=delay, shuffle=shuffle, costs=costs, warmup=warmup)
    if param == "rate":
        return learner.clone(rate=target), go(target)
    knob = type(learner.query).knob
    rising = knob is None or knob.increasing  # the query ratio grows with the parameter
    lo, hi = math.log(bounds[0]), math.log(bounds[1])
    best: tuple[float, float, Run] | None = None
    for _ in range(max_steps):
        mid = 0.5 * (lo + hi)
        result = go(math.exp(mid))
        ratio = result.mean("query_ratio")
        if best is None or abs(ratio - target) < best[0]:
            best = (abs(ratio - target), math.exp(mid), result)
        if abs(ratio - target) <= tol:
            break
        lo, hi = (mid, hi) if (ratio < target) == rising else (lo, mid)
    _, value, result = best
    return learner.clone(**{param: value}), result
