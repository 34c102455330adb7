"""The label budget as a setting: a controller that moves a query strategy's knob online.

Every query strategy whose probability is monotone in one of its parameters declares that
parameter as its :class:`~learners.values.Knob` (δ of the margin rules, b of the discrimination rule, the rate of the
R- learners, κ of BBQ). A :class:`BudgetController` attached to a learner moves the knob record by
record so that the realised query rate follows what the operator set, using only the past:

1. **Feed-forward** (every ``resolve_every`` records): over the scores of the last ``window``
   records, solve the mean query probability equal to the rate wanted,

       (1/m) Σ_j q(κ; s_j) = r_eff                        by bisection over log κ (monotone),

   and when even the knob's lowest value asks for more (a fresh model: every |p| ≈ 0, so
   δ/(δ + |p|) ≈ 1 for every δ), keep κ at that floor and solve for a ceiling ū instead,

       (1/m) Σ_j min(q(κ_lo; s_j), ū) = r_eff.

2. **Feedback** on the requests actually made, pending labels included (a request counts when it
   is made, not when its label returns): the ledger b_t = λ b_{t−1} + r_t − Z_t (requests owed,
   forgetting λ = 1 − 1/``memory``) shifts the rate the bisection aims at,

       r_eff = clip(r_t + b_t / horizon, r_t/4, 2 r_t),

   and bounds each record's probability from above,

       u_t = clip(ū + b_t / brake, floor · r_t, 1),     q_t = min(q(κ_t; s_t), u_t).

   While the model is fresh or its labels are late, ū ≈ r_t and the brake keeps the requests made
   within a few of r_t · t from the first record on. A burst brake lowers u_t to floor · r_t while
   the last L records already hold ⌈burst · r_t · L⌉ requests, so a run of uncertain records cannot
   spend a window's worth at once.

3. **Hard caps** (optional): at most ``max_requests`` requests, or at most ``max_cost`` of planned
   cost, in any window of ``window_s`` seconds of the controller's clock. A request is refused
   (q_t = 0) when it would break the cap; the rate the controller aims at is then the cap spread
   over the window, r_t = pace · (cap / ĉ) / (records per window), so the cap is rarely reached
   and the most uncertain records of the window get the requests. ĉ is the expected cost of a
   request (the class is known only once the label is back): the mean cost of the labels
   returned so far (:meth:`BudgetController.observe_costs`), the mean class cost before that.

4. **Warm-up** (optional): until ``warmup`` requests have been made, the controller plans for a
   higher rate, ρ_t = min(k · r_t, 1) with the boost k (``warmup_boost``), or asks about every
   record (q_t = 1, ρ_t = 1) without one. A fresh model learns fastest from its first labels, and a
   budget spent evenly from the first record leaves it guessing longest; with a boost the query
   strategy still picks which records get the early requests. The requests it made beyond the
   rate are a debt that is never forgotten, D_t = D_{t−1} + Z_t − r_t, repaid afterwards out of
   the rate,

       ρ_t = r_t − clip(D_{t−1}, −½ r_t, ½ r_t),        D_t = D_{t−1} − (r_t − ρ_t),

   so the requests made come back to r_t · t once it is repaid, however long that takes. Steps 1-2
   aim at ρ_t in place of r_t; the ledger rests during the warm-up (the debt holds what it made,
   so a warm-up slower than planned owes no more than it spent), the burst brake forgets the
   warm-up's requests when it ends (else it would hold the rate at its floor for ``burst_span``
   records), and the hard caps still hold.

5. **A floor under the probability** (strategies that have one, :attr:`~learners.values.Knob.floor`): the entropy
   queries ask with probability max(q_min, H^k), so that no label stands for more than 1/q_min
   records in the importance-weighted estimate. Under a controller the floor is

       q_min,t = min(q_min, ``query_floor`` · r_t),

   a label weighing at most 1/``query_floor`` times the mean weight 1/r_t; a fixed q_min above a
   low rate would spend the budget on the floor alone, asking at random.

q_t is known before record t's coin is drawn and depends only on the past and on x_t, so the
importance weight Z_t / q_t keeps its expectation 1 however the knob moves (Horvitz & Thompson
1952; the martingale argument of Beygelzimer, Dasgupta & Langford, ICML 2009, IWAL); ``floor``
keeps every q_t > 0 while no hard cap is binding.

References
----------
The feed-forward step is the quantile idea of budgeted stream active learning (Žliobaitė, Bifet,
Pfahringer & Holmes, "Active learning with drifting streaming data", IEEE TNNLS 25(1), 2014: a
threshold moved so that a fixed fraction of recent uncertainty values falls beyond it); the ledger
is an integral controller on the spent budget (Åström & Murray, Feedback Systems, 2008, Ch. 10).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from learners.jit import jit
from learners.params import Interval, Parameterized
from learners.values import Knob

__all__ = ["BACKTEST_WARMUP_BOOST", "BACKTEST_WARMUP_SHARE", "BudgetController", "advance_clock",
           "backtest_controller", "backtest_warmup", "max_window_query_ratio"]

FORMAT_VERSION = 2  # 2: the warm-up's debt and the rate it is owed against joined the scalars


# positions in the packed parameters ``cp``
_TARGET, _WINDOW, _EVERY, _HORIZON, _BRAKE, _FORGET, _FLOOR, _KNOB, _LOG_LO, _LOG_HI, _UP, _CAP, \
    _SPAN, _PACE, _NCAP, _BURST, _BSPAN, _WARMUP, _BOOST, _QFLOOR_AT, _QFLOOR, _QSHARE = range(22)
# positions in the scalar state ``cs``
(_S, _UBAR, _LEDGER, _SEEN, _ASKED, _SINCE, _HEAD, _FILLED, _CLOCK, _RHEAD, _RLEN, _RSUM, _CHAT,
 _REFUSED, _RATE, _BHEAD, _BLEN, _DEBT, _BASE) = range(19)
_STATE_FIELDS = ("knob_position", "ceiling", "ledger", "records", "requests", "since_solve", "head", "filled",
                 "clock", "ring_head", "ring_length", "ring_cost", "expected_cost", "refused", "rate",
                 "recent_head", "recent_length", "debt", "base_rate")
_BISECTIONS = 18  # halvings of the ceiling's interval: 2^-18 is far below the scores' noise
_FIRST_STEP = 1.0 / 64  # first step of the warm search for the knob's position, from the last one
_REFINE = 7  # halvings of the bracket found: at least 2^-13 of the knob's log range
# share of the rate that repays the warm-up's excess: the learner keeps half its labels meanwhile
_REPAY = 0.5


def advance_clock(ts: np.ndarray, now: float, tolerance: float, last: float) -> np.ndarray:
    """The controller's clock for a batch: record times clamped to ``now ± tolerance``, never backwards.

    c_i = max(c_{i−1}, clip(ts_i, now − tolerance, now + tolerance)), c_0 = ``last``.
    A producer whose clock is off, a partition that lags, or a record stamped decades away moves
    the budget windows by at most ``tolerance`` beyond processing time, and never back.
    NaN (no time) reads as ``now``.
    """
    t = np.where(np.isnan(ts), now, np.asarray(ts, dtype=np.float64))
    clamped = np.clip(t, now - tolerance, now + tolerance)
    return np.maximum.accumulate(np.maximum(clamped, last)) if clamped.size else clamped


# what ``activestream replay --budget-rate`` and the leaderboard's online entries warm up with
# (benchmarks/results/budget_warmup.md measures the choice)
BACKTEST_WARMUP_BOOST = 4.0
BACKTEST_WARMUP_SHARE = 0.5


def backtest_warmup(target: float, records: int, share: float = BACKTEST_WARMUP_SHARE) -> int:
    """The warm-up of a backtest of ``records`` records at rate ``target``: ``share`` of its budget of
    requests. At boost k it is spent over share · records / k records and repaid (at half the rate)
    over the next 2 · share · (1 − 1/k) · records, so the pass ends repaid while share · (2 − 1/k) ≤ 1
    (0.875 of the pass at the defaults)."""
    return int(share * target * records)


def max_window_query_ratio(queried: np.ndarray, window: int = 1000) -> float:
    """Largest query ratio over consecutive windows of ``window`` records after the first (NaN if
    the stream has no full window after the first)."""
    k = (queried.size // window) - 1
    if k < 1:
        return math.nan
    counts = np.asarray(queried[window : window * (k + 1)], dtype=np.float64).reshape(k, window).sum(axis=1)
    return float(counts.max() / window)


# -- the compiled steps ------------------------------------------------------------------------
@jit(inline="always")
def _set_knob(cp, qw, s):
    """qw[knob] ← the knob's value at position s ∈ [0, 1] (0 asks least)."""
    if cp[_KNOB] < 0:
        return
    x = s if cp[_UP] > 0 else 1.0 - s
    qw[int(cp[_KNOB])] = math.exp(cp[_LOG_LO] + x * (cp[_LOG_HI] - cp[_LOG_LO]))


@jit
def _mean_q(win, m, qw, qs, probability, u):
    """(1/m) Σ_j min(q(κ; s_j), u) over the window's m scores."""
    total = 0.0
    for j in range(m):
        total += min(probability(win[0, j], win[1, j], win[2, j], qw, qs), u)
    return total / m


@jit
def _knob_mean(cs, cp, win, qw, qs, probability, s):
    """(1/m) Σ_j q(κ(s); s_j) with the knob at position s."""
    _set_knob(cp, qw, s)
    return _mean_q(win, int(cs[_FILLED]), qw, qs, probability, 1.0)


@jit
def _solve_ceiling(cs, cp, win, qw, qs, probability, r):
    """ū with (1/m) Σ_j min(q(κ_lo; s_j), ū) = r, the knob at its lowest (step 1)."""
    _set_knob(cp, qw, 0.0)
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if _mean_q(win, int(cs[_FILLED]), qw, qs, probability, mid) < r:
            lo = mid
        else:
            hi = mid
    cs[_S], cs[_UBAR] = 0.0, 0.5 * (lo + hi)


@jit
def _solve(cs, cp, win, qw, qs, probability, r):
    """Knob position with mean q = r over the window, or the ceiling ū if the knob cannot get there.

    The search starts from the last solution: steps of doubling length bracket the root, then
    bisection refines it, so a knob that moved little costs a few passes over the window.
    """
    if cp[_KNOB] < 0:
        _solve_ceiling(cs, cp, win, qw, qs, probability, r)
        return
    step = _FIRST_STEP
    lo = hi = cs[_S]
    f = _knob_mean(cs, cp, win, qw, qs, probability, lo)
    if f < r:
        while f < r:  # raise the knob until it asks for at least r
            if hi >= 1.0:  # even the knob's top asks for less: keep it there
                cs[_S], cs[_UBAR] = 1.0, 1.0
                _set_knob(cp, qw, 1.0)
                return
            lo, hi = hi, min(1.0, hi + step)
            step *= 2.0
            f = _knob_mean(cs, cp, win, qw, qs, probability, hi)
    else:
        while f >= r:  # lower the knob until it asks for less than r
            if lo <= 0.0:  # even the knob's bottom asks for more: bound the probabilities instead
                _solve_ceiling(cs, cp, win, qw, qs, probability, r)
                return
            lo, hi = max(0.0, lo - step), lo
            step *= 2.0
            f = _knob_mean(cs, cp, win, qw, qs, probability, lo)
    for _ in range(_REFINE):  # mean q(lo) < r ≤ mean q(hi)
        mid = 0.5 * (lo + hi)
        if _knob_mean(cs, cp, win, qw, qs, probability, mid) < r:
            lo = mid
        else:
            hi = mid
    cs[_S], cs[_UBAR] = 0.5 * (lo + hi), 1.0
    _set_knob(cp, qw, cs[_S])


@jit
def _expire(cs, cp, ring, t):
    """Drop the requests that left the cap's window (t − T, t] from the ring."""
    cap = ring.shape[1]
    while cs[_RLEN] > 0 and ring[0, int(cs[_RHEAD])] <= t - cp[_SPAN]:
        cs[_RSUM] -= ring[1, int(cs[_RHEAD])]
        cs[_RHEAD] = (cs[_RHEAD] + 1) % cap
        cs[_RLEN] -= 1
    if cs[_RLEN] == 0:
        cs[_RSUM] = 0.0  # no rounding residue once the window is empty


@jit
def _rate(cs, cp, win, t):
    """r_t: the target, or the cap spread over its window at the recent record rate (step 3)."""
    r = cp[_TARGET]
    if cp[_CAP] < np.inf or cp[_NCAP] < np.inf:
        m = int(cs[_FILLED])
        oldest = win[3, (int(cs[_HEAD]) - m) % win.shape[1]] if m > 0 else t
        span = t - oldest
        # records per window of T at the recent pace; before any time has passed, the records so far
        per_window = max((m + 1) * cp[_SPAN] / span if span > 0 else m + 1.0, 1.0)
        allowed = min(cp[_NCAP], cp[_CAP] / cs[_CHAT])  # requests the tighter cap allows per window
        r = min(r, cp[_PACE] * allowed / per_window)
    return min(r, 1.0)


@jit
def _burst(cs, cp, recent, r):
    """True if the last L records already hold ⌈burst · r · L⌉ requests (step 2's burst brake)."""
    span = recent.size
    while cs[_BLEN] > 0 and recent[int(cs[_BHEAD])] <= cs[_SEEN] - span:
        cs[_BHEAD] = (cs[_BHEAD] + 1) % span
        cs[_BLEN] -= 1
    return cs[_BLEN] >= max(1.0, math.ceil(cp[_BURST] * r * span))


@jit(inline="always")
def _plan(cs, cp, r):
    """The rate ρ_t this record plans for (step 4): k · r (1 without a boost) during the warm-up,
    then r − clip(D, −½ r, ½ r) until the debt D is repaid."""
    cs[_BASE] = r
    if cs[_ASKED] < cp[_WARMUP]:
        return 1.0 if cp[_BOOST] == 0 else min(cp[_BOOST] * r, 1.0)
    pay = min(max(cs[_DEBT], -_REPAY * r), _REPAY * r)
    cs[_DEBT] -= pay
    return r - pay


@jit
def _step(cs, cp, win, ring, recent, qw, qs, probability, p, gap, v, t):
    """This record's probability after the controller: (q_t, q without the hard cap)."""
    t = max(t, cs[_CLOCK])  # the clock never goes back
    cs[_CLOCK] = t
    r = _plan(cs, cp, _rate(cs, cp, win, t))
    cs[_RATE] = r
    w = win.shape[1]
    h = int(cs[_HEAD])
    win[0, h], win[1, h], win[2, h], win[3, h] = p, gap, v, t
    cs[_HEAD] = (h + 1) % w
    cs[_FILLED] = min(cs[_FILLED] + 1, w)
    cs[_SINCE] += 1
    if cp[_QFLOOR_AT] >= 0:  # the strategy's floor, at most a share of the rate (step 5)
        qw[int(cp[_QFLOOR_AT])] = min(cp[_QFLOOR], cp[_QSHARE] * r)
    if cs[_SINCE] >= cp[_EVERY] or cs[_FILLED] <= cp[_EVERY]:
        r_eff = min(max(r + cs[_LEDGER] / cp[_HORIZON], 0.25 * r), 2.0 * r)
        _solve(cs, cp, win, qw, qs, probability, r_eff)
        cs[_SINCE] = 0
    u = min(max(cs[_UBAR] + cs[_LEDGER] / cp[_BRAKE], cp[_FLOOR] * r), 1.0)
    if cp[_BURST] > 0 and _burst(cs, cp, recent, r):
        u = cp[_FLOOR] * r
    q = min(probability(p, gap, v, qw, qs), u)
    if cs[_ASKED] < cp[_WARMUP] and cp[_BOOST] == 0:  # warm-up without a boost: every record (step 4)
        q = 1.0
    if cp[_CAP] < np.inf or cp[_NCAP] < np.inf:
        _expire(cs, cp, ring, t)
        full = cs[_RLEN] >= min(cp[_NCAP], ring.shape[1])
        if full or cs[_RSUM] + cs[_CHAT] > cp[_CAP] * (1.0 + 1e-12):
            return 0.0, q
    return q, q


@jit
def _account(cs, cp, ring, recent, queried, refused):
    """Ledger, burst and cap bookkeeping once the coin has been drawn (steps 2-3)."""
    if queried and cp[_BURST] > 0:
        recent[int(cs[_BHEAD] + cs[_BLEN]) % recent.size] = cs[_SEEN]
        cs[_BLEN] += 1
    cs[_SEEN] += 1
    if cs[_ASKED] < cp[_WARMUP]:  # the warm-up's requests beyond the rate are its debt (step 4)
        cs[_DEBT] += (1.0 if queried else 0.0) - cs[_BASE]
    else:
        cs[_LEDGER] = cp[_FORGET] * cs[_LEDGER] + cs[_RATE] - (1.0 if queried else 0.0)
    if refused:
        cs[_REFUSED] += 1
    if queried:
        cs[_ASKED] += 1
        if cs[_ASKED] == cp[_WARMUP]:  # the burst brake forgets the warm-up's requests, made at k · r
            cs[_BLEN] = 0.0
        if cp[_CAP] < np.inf or cp[_NCAP] < np.inf:
            cap = ring.shape[1]
            tail = int(cs[_RHEAD] + cs[_RLEN]) % cap
            ring[0, tail], ring[1, tail] = cs[_CLOCK], cs[_CHAT]
            cs[_RLEN] += 1
            cs[_RSUM] += cs[_CHAT]


def _book_request(cs: np.ndarray, cp: np.ndarray, n: int) -> None:
    """Count (n = 1) or take back (n = −1) a request made outside :func:`_step`, where
    :func:`_account` books it: in the warm-up's debt while the warm-up lasts, in the ledger after."""
    if n < 0:
        cs[_ASKED] += n
    if cs[_ASKED] < cp[_WARMUP]:
        cs[_DEBT] += n
    else:
        cs[_LEDGER] -= n
    if n > 0:
        cs[_ASKED] += n


@jit
def _forget_scores(cs):
    """Empty the window of recent scores (:meth:`BudgetController.forget_scores`)."""
    cs[_HEAD] = cs[_FILLED] = cs[_SINCE] = 0.0


class BudgetController(Parameterized):
    """Moves a query strategy's :class:`~learners.values.Knob` online so the label budget holds (see the module doc).

    Parameters
    ----------
    target : float in (0, 1] or None, default None
        Fraction of records to ask labels for. None: only the caps set the rate (1 without caps).
    max_requests : int ≥ 1 or None, default None
        At most this many requests in any window of ``window_s`` seconds (a guarantee).
    max_cost : float > 0 or None, default None
        At most this much planned cost in any window of ``window_s`` seconds (a guarantee on the
        cost planned at request time; the realised cost is known only once the labels are back).
    window_s : float > 0, default 3600
        Length of the cap windows, on the controller's clock (:func:`advance_clock`).
    class_costs : sequence of float or None
        Cost of a label of each class, in the learner's class order; planning uses their mean until
        labels come back. None: every label costs 1.
    window : int, default 512
        Recent records whose scores the knob is solved over.
    resolve_every : int, default 64
        Records between two solves of the knob.
    horizon : float, default 250
        Records over which the ledger's debt is repaid by the feed-forward target.
    brake : float, default 50
        Records over which the ledger bounds each probability (small: tight from the first record).
    memory : float, default 20000
        Forgetting horizon of the ledger, in records.
    floor : float in (0, 1], default 0.05
        Lowest ceiling, as a fraction of the rate: keeps every probability > 0.
    pace : float in (0, 1], default 0.9
        Fraction of a cap the paced rate aims at, leaving room for the coins' noise.
    burst : float ≥ 1 or None, default 1.4
        Burst brake: once the last ``burst_span`` records hold ⌈burst · r · burst_span⌉ requests,
        the ceiling drops to ``floor · r``. Any window of 2 · burst_span records then holds about
        2 · burst · r · burst_span requests at most. None: no brake.
    burst_span : int, default 500
        Records the burst brake looks back over.
    warmup : int ≥ 0, default 0
        Requests made before the rate applies (the hard caps still hold). Their excess over the
        rate is a debt, repaid afterwards at half the rate until the total is back on target
        (step 4). :func:`backtest_warmup` gives the warm-up of a stream of known length.
    warmup_boost : float ≥ 1 or None, default None
        During the warm-up, aim at this multiple of the rate through the query strategy, which
        picks the records to ask about. None: ask about every record.
    query_floor : float in [0, 1], default 0.1
        For a strategy with a floor under its probability (:attr:`~learners.values.Knob.floor`): the floor is at
        most this share of the rate, min(q_min, query_floor · r_t) (step 5).

    State
    -----
    ``cs`` (the scalars of ``_STATE_FIELDS``), the recent scores and clock ``win`` (4 × window) and
    the requests in the cap window ``ring`` (2 × capacity: clock, planned cost).

    Examples
    --------
    >>> from learners import make
    >>> from learners.synthetic import synthetic_sparse
    >>> from learners.replay import replay
    >>> learner = make("paa-1", n_features=2**12)
    >>> learner.budget = BudgetController(target=0.05)
    >>> trace = replay(learner, synthetic_sparse(n=20000, d=2**12, seed=1), delay=2000)
    >>> round(float(trace.queried[:2000].mean()), 3) <= 0.06, round(float(trace.queried.mean()), 2)
    (True, 0.05)
    """

    _constraints: ClassVar = {
        "window_s": Interval(0, None, closed="neither"),
        "window": Interval(2, 2**24, integer=True),
        "resolve_every": Interval(1, 2**24, integer=True),
        "horizon": Interval(1, None),
        "brake": Interval(1, None),
        "memory": Interval(1, None),
        "floor": Interval(0, 1, closed="right"),
        "pace": Interval(0, 1, closed="right"),
        "burst_span": Interval(1, 2**24, integer=True),
        "warmup": Interval(0, 2**31, integer=True),
        "query_floor": Interval(0, 1),
    }

    def __init__(
        self,
        *,
        target: float | None = None,
        max_requests: int | None = None,
        max_cost: float | None = None,
        window_s: float = 3600.0,
        class_costs: Sequence[float] | None = None,
        window: int = 512,
        resolve_every: int = 64,
        horizon: float = 250.0,
        brake: float = 50.0,
        memory: float = 20000.0,
        floor: float = 0.05,
        pace: float = 0.9,
        burst: float | None = 1.4,
        burst_span: int = 500,
        warmup: int = 0,
        warmup_boost: float | None = None,
        query_floor: float = 0.1,
    ) -> None:
        self.target, self.max_requests, self.max_cost, self.window_s = target, max_requests, max_cost, window_s
        self.class_costs = None if class_costs is None else tuple(float(c) for c in class_costs)
        self.window, self.resolve_every, self.horizon, self.brake = window, resolve_every, horizon, brake
        self.memory, self.floor, self.pace, self.burst, self.burst_span = memory, floor, pace, burst, burst_span
        self.warmup, self.warmup_boost, self.query_floor = warmup, warmup_boost, query_floor
        self._validate()
        self.knob: Knob | None = None
        self.cs_: np.ndarray | None = None

    def _check_params(self) -> None:
        if self.target is not None:
            Interval(0, 1, closed="right").check("target", self.target)
        if self.max_requests is not None:
            Interval(1, 2**31, integer=True).check("max_requests", self.max_requests)
        if self.max_cost is not None:
            Interval(0, None, closed="neither").check("max_cost", self.max_cost)
        if self.burst is not None:
            Interval(1, None).check("burst", self.burst)
        if self.warmup_boost is not None:
            Interval(1, None).check("warmup_boost", self.warmup_boost)
        if self.class_costs is not None:
            for c in self.class_costs:
                Interval(0, None, closed="neither").check("class_costs", c)

    # -- set-up ------------------------------------------------------------------------------
    def _capacity(self) -> int:
        """Requests the cap window can hold: the request cap, or the cost cap over the cheapest class."""
        unit = min(self.class_costs) if self.class_costs else 1.0
        caps = [2**31]
        if self.max_requests is not None:
            caps.append(int(self.max_requests))
        if self.max_cost is not None:
            caps.append(math.ceil(self.max_cost / unit) + 1)
        return min(caps) if len(caps) > 1 else 1

    def _mean_cost(self) -> float:
        return float(np.mean(self.class_costs)) if self.class_costs else 1.0

    def bind(self, query: Any) -> BudgetController:
        """Attach to ``query`` (a :class:`learners.base.QueryStrategy`): fresh state, its knob at the
        configured value."""
        self.knob = type(query).knob
        self._query = query
        self._qw = np.array(query.kernel_state()[0], dtype=np.float64)
        knob = self.knob
        cp = np.zeros(22)
        cp[_TARGET] = 1.0 if self.target is None else self.target
        cp[_WINDOW], cp[_EVERY], cp[_HORIZON], cp[_BRAKE] = self.window, self.resolve_every, self.horizon, self.brake
        cp[_FORGET], cp[_FLOOR] = 1.0 - 1.0 / self.memory, self.floor
        cp[_KNOB] = -1 if knob is None else knob.index
        cp[_LOG_LO], cp[_LOG_HI] = (0.0, 0.0) if knob is None else (math.log(knob.low), math.log(knob.high))
        cp[_UP] = 1.0 if knob is None or knob.increasing else -1.0
        cp[_CAP] = math.inf if self.max_cost is None else self.max_cost
        cp[_NCAP] = math.inf if self.max_requests is None else self.max_requests
        cp[_SPAN], cp[_PACE] = self.window_s, self.pace
        cp[_BURST], cp[_BSPAN] = (0.0 if self.burst is None else self.burst), self.burst_span
        cp[_WARMUP], cp[_BOOST] = self.warmup, (0.0 if self.warmup_boost is None else self.warmup_boost)
        at = -1 if knob is None or knob.floor is None else knob.floor
        cp[_QFLOOR_AT], cp[_QFLOOR], cp[_QSHARE] = at, (self._qw[at] if at >= 0 else 0.0), self.query_floor
        self.cp_ = cp
        self.cs_ = np.zeros(len(_STATE_FIELDS))
        self.cs_[_UBAR] = cp[_TARGET]  # before any score is seen: ask at the target rate, not more
        self.cs_[_CHAT] = self._mean_cost()
        self.cs_[_CLOCK] = -math.inf
        if knob is not None:
            value = float(self._qw[knob.index])
            s = (math.log(min(max(value, knob.low), knob.high)) - cp[_LOG_LO]) / (cp[_LOG_HI] - cp[_LOG_LO])
            self.cs_[_S] = s if knob.increasing else 1.0 - s
        self.win_ = np.zeros((4, self.window))
        self.ring_ = np.zeros((2, self._capacity()))
        self.recent_ = np.zeros(self.burst_span)  # record numbers of the requests among the last burst_span
        return self

    def set_share(self, share: float) -> None:
        """Hold the hard caps at ``share`` of their configured values, from the next decision on.

        A scorer replica owning that share of the stream's partitions gets that share of the caps,
        so the replicas' caps add up to at most the configured ones whatever the assignment (a
        rate target is a fraction of records and needs no sharing)."""
        Interval(0, 1).check("share", share)
        self.cp_[_CAP] = math.inf if self.max_cost is None else self.max_cost * share
        self.cp_[_NCAP] = math.inf if self.max_requests is None else self.max_requests * share

    def clone(self, **overrides: Any) -> BudgetController:
        return type(self)(**{**self.get_params(), **overrides})

    # -- what the service and the metrics read ------------------------------------------------
    @property
    def knob_value(self) -> float:
        """The knob's current value (NaN for a strategy without one)."""
        return math.nan if self.knob is None else float(self._qw[self.knob.index])

    @property
    def rate(self) -> float:
        """The rate the controller aimed at on the last record."""
        return float(self.cs_[_RATE])

    @property
    def refused(self) -> int:
        """Records whose request a hard cap refused."""
        return int(self.cs_[_REFUSED])

    @property
    def debt(self) -> float:
        """Requests the warm-up made beyond the rate and not yet repaid."""
        return float(self.cs_[_DEBT])

    @property
    def requests(self) -> int:
        return int(self.cs_[_ASKED])

    @property
    def records(self) -> int:
        return int(self.cs_[_SEEN])

    @property
    def clock(self) -> float:
        return float(self.cs_[_CLOCK])

    def remaining(self) -> float:
        """Requests the caps still allow in the window ending now (+inf without a cap)."""
        cs, cp, ring = self.cs_, self.cp_, self.ring_
        at = (int(cs[_RHEAD]) + np.arange(int(cs[_RLEN]))) % ring.shape[1]
        inside = ring[0, at] > cs[_CLOCK] - cp[_SPAN]
        left = [math.inf]
        if self.max_requests is not None:
            left.append(float(math.floor(cp[_NCAP] + 1e-9) - np.count_nonzero(inside)))
        if self.max_cost is not None:
            left.append(math.floor((cp[_CAP] - ring[1, at][inside].sum()) / cs[_CHAT] + 1e-9))
        return max(0.0, min(left))

    def recent_rate(self) -> float:
        """Requests per record over the last ``burst_span`` records (NaN before any record, or
        without the burst brake, which keeps that count)."""
        seen = self.cs_[_SEEN]
        if self.burst is None or seen == 0:
            return math.nan
        return float(self.cs_[_BLEN] / min(seen, self.burst_span))

    def count_request(self) -> None:
        """Count a request made outside :meth:`decide` (one kept from before a restart whose record
        the controller now declined) at the current clock, so the caps and the ledger include it."""
        cs, cp = self.cs_, self.cp_
        _book_request(cs, cp, 1)
        if cp[_BURST] > 0 and cs[_BLEN] < self.recent_.size:
            self.recent_[int(cs[_BHEAD] + cs[_BLEN]) % self.recent_.size] = max(cs[_SEEN] - 1, 0)
            cs[_BLEN] += 1
        if cp[_CAP] < np.inf or cp[_NCAP] < np.inf:
            ring = self.ring_
            if cs[_RLEN] >= ring.shape[1]:  # full: the oldest entry gives way (it is the first to expire)
                cs[_RSUM] -= ring[1, int(cs[_RHEAD])]
                cs[_RHEAD] = (cs[_RHEAD] + 1) % ring.shape[1]
                cs[_RLEN] -= 1
            tail = int(cs[_RHEAD] + cs[_RLEN]) % ring.shape[1]
            ring[0, tail], ring[1, tail] = cs[_CLOCK], cs[_CHAT]
            cs[_RLEN] += 1
            cs[_RSUM] += cs[_CHAT]

    def forget_scores(self) -> None:
        """Empty the window of recent scores, as after the model's first update: a fresh model
        scores every record 0, which asks always at any knob, so a window still holding those
        scores solves the knob to its floor, and the learnt model's records (|p| > 0) then get
        almost no requests until the window has turned over. The next solves use the new scores
        alone, as from the first record; the ledger keeps the requests already made."""
        _forget_scores(self.cs_)

    def uncount_request(self) -> None:
        """Take back a request :meth:`decide` counted but that was not made: the record was decided
        before a restart without a request, and that decision is the one kept. The ledger and the
        counts of requests then hold only the requests made; without this, every such record
        after a restart would be a phantom request, repaid by asking less afterwards. The caps and
        the burst brake drop their newest entry (one of the batch just decided)."""
        cs, cp = self.cs_, self.cp_
        _book_request(cs, cp, -1)
        if cp[_BURST] > 0 and cs[_BLEN] > 0:
            cs[_BLEN] -= 1
        if (cp[_CAP] < np.inf or cp[_NCAP] < np.inf) and cs[_RLEN] > 0:
            tail = int(cs[_RHEAD] + cs[_RLEN] - 1) % self.ring_.shape[1]
            cs[_RSUM] = max(0.0, cs[_RSUM] - self.ring_[1, tail])
            cs[_RLEN] -= 1

    def observe_costs(self, costs: np.ndarray, alpha: float = 0.01) -> None:
        """Fold the costs of returned labels into the expected cost of a request (an exponential
        mean with weight ``alpha`` per label)."""
        for c in np.asarray(costs, dtype=np.float64).ravel():
            self.cs_[_CHAT] += alpha * (c - self.cs_[_CHAT])

    def arrays(self) -> tuple[np.ndarray, ...]:
        """(cs, cp, win, ring, recent, qw) as the compiled drivers take them."""
        return self.cs_, self.cp_, self.win_, self.ring_, self.recent_, self._qw

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        return {"format_version": np.array(FORMAT_VERSION), "scalars": self.cs_.copy(), "window": self.win_.copy(),
                "ring": self.ring_.copy(), "recent": self.recent_.copy(), "query": self._qw.copy()}

    def load_state_dict(self, state: Mapping[str, np.ndarray]) -> None:
        version = int(state["format_version"])
        if version not in (1, FORMAT_VERSION):
            raise ValueError(f"budget state format version {version}, this library reads 1 to {FORMAT_VERSION}")
        if version == 1:  # before the warm-up's debt: none owed (the ledger held it)
            scalars = np.asarray(state["scalars"], dtype=np.float64)
            state = {**state, "scalars": np.append(scalars, [0.0, scalars[_RATE]])}
        arrays = (("scalars", self.cs_), ("window", self.win_), ("ring", self.ring_), ("recent", self.recent_),
                  ("query", self._qw))
        for name, target in arrays:
            source = np.asarray(state[name], dtype=np.float64)
            if source.shape != target.shape:
                raise ValueError(f"budget state {name!r} has shape {source.shape}, this controller needs "
                                 f"{target.shape} (window, caps or query changed)")
            target[...] = source


def backtest_controller(target: float, records: int, *, warmup: int | None = None,
                        boost: float | None = BACKTEST_WARMUP_BOOST) -> BudgetController:
    """The controller a backtest of ``records`` records holds the rate ``target`` with
    (``activestream replay --budget-rate`` and the leaderboard's online entries): a warm-up of
    ``warmup`` requests (default :func:`backtest_warmup`; 0 for none) at ``boost`` times the rate
    (None: every record), repaid afterwards."""
    warmup = backtest_warmup(target, records) if warmup is None else warmup
    return BudgetController(target=target, warmup=warmup, warmup_boost=boost)
