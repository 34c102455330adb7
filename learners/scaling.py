"""Online per-feature scaling: the learner sees x̃_i = x_i / s_i, with s_i learnt from the stream.

Ross, Mineiro & Langford, "Normalized online learning", UAI 2013 (NAG, Algorithm 1) keep, per
feature, the largest magnitude seen so far and, when it grows, rescale that feature's weight so the
prediction stays the same (Algorithm 1, the line w_i ← w_i s_i²/|x_i|² of their raw-space
weights). We keep the model in the scaled coordinates x̃ = x/s instead, so the same idea reads:
when s_i becomes s'_i (ratio r_i = s'_i/s_i), every piece of the rule's state that is expressed in
feature i's units is moved to the new units, so that scores of raw rows do not change:

    w_i      → r_i w_i                  first-order weights, one per class row (x̃_i → x̃_i/r_i)
    Σ_ii     → r_i² Σ_ii                diagonal covariance of the weights (Σ' = DΣD, D = diag(r))
    Σ        → D Σ D                    full covariance / inverse correlation matrix
    Σg_i, √G_i → Σg_i/r_i, √G_i/r_i     sums of gradients g = −y x̃ (AdaGrad's accumulator)
    A_ii     → A_ii / r_i²              diagonal correlation matrix (second-order Perceptron)

Scales (``scale``):

* ``"maxabs"``: s_i = max_t |x_{t,i}|, NAG's scale (Ross et al. 2013, Sect. 3): x̃_i ∈ [−1, 1].
* ``"rms"``: s_i = √(mean of x_{t,i}² over the rows where x_{t,i} ≠ 0). Never centred: centring
  would turn a row's zeros into non-zeros (densify a sparse row) and a one-hot flag into a constant.
  Dividing by the standard deviation without centring is not a unit scale either (a column at
  1000 ± 1 becomes 1000 ± 1 σ-units), so the uncentred second moment is the scale.
* ``"standard"``: online standardisation, x̃_i = (x_i − μ_i)/σ_i with the running mean and standard
  deviation of feature i over every row observed, zeros included (n counts rows, not non-zeros):
  μ_i = Σx_i/n, σ_i = √(Σx_i²/n − μ_i²), σ_i = 0 read as 1 so a constant column maps to 0 (the sums
  are kept around the feature's first value, so an offset far above the spread, or a constant
  column, does not cancel in floating point). This is the offline preparation of a file (columns
  standardised) done as the stream goes, and the only mode invariant to an offset (x_i → a x_i + b,
  a > 0, leaves x̃ unchanged). x̃ is dense: every
  coordinate below ``n_features`` is (0 − μ_i)/σ_i on a zero, so each row costs O(n_features) and
  the mode is refused above :data:`STANDARD_LIMIT` features (use ``"rms"`` for sparse, wide data:
  centring must never densify a sparse row silently). The rule's state is *not* moved when μ or σ
  change: a shift of the mean is not a change of units (no per-coordinate map of the weights keeps
  every score), the statistics settle within the first rows, and measured this way the stream
  reaches the F1 of the offline-standardised file (docs/raw-features.md). The statistics come
  from every row the learner scores, whatever ``scale_from`` says (a labelled row that was scored
  first is not counted twice; rows labelled without being scored, ``learn_many(scored=False)``,
  are counted when learnt): a mean and deviation from the labelled rows alone, a tenth of the
  stream at 10 % labels, were measured further from the offline file than those of every row.

Until a labelled row has changed the rule's state at a coordinate, that state is the rule's prior
(w_i = 0, Σ_ii = 1, A_ii = a, ...), which means the same in any units: a change of scale then moves
nothing, so the prior stays the prior in the current units instead of being inflated by the ratio
between an early, poor estimate of s_i and a later one. A coordinate never seen is divided by |x_i|,
the scale its first observation gives under either rule. Zeros cost nothing: statistics,
rescaling and the division touch only a row's non-zeros, plus O(D) per changed coordinate for
full-matrix rules (row and column i of the D×D block). The intercept coordinate is never scaled.

Where the scale is learnt from (``scale_from``): ``"labelled"`` (the default) updates it only with
rows whose label is applied; ``"scored"`` with every record the learner decides on
(:meth:`learners.base.Learner.decide`, :meth:`~learners.base.Learner.ask`, replay's rounds), and on
labelled rows only for coordinates never seen. ``score``/``predict`` never change it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from learners.jit import jit, signature
from learners.kernels import IDX, STATE, VAL, VEC, kernel
from learners.loop_parts import widest

__all__ = [
    "AUTO_ROWS",
    "MODES",
    "MOVE_FACTOR",
    "OBSERVE_ALL",
    "OBSERVE_NONE",
    "RESCALE_SIG",
    "SOURCES",
    "SPARSE_DENSITY",
    "SPREAD",
    "STANDARD_LIMIT",
    "WARMUP",
    "check_width",
    "choose_mode",
    "rescale_dual_averaging",
    "rescale_full",
    "rescale_lasec_diag",
    "rescale_lasec_full",
    "rescale_rows",
]

MODES = {"none": 0.0, "maxabs": 1.0, "rms": 2.0, "standard": 3.0, "sparse-standard": 4.0}
_STANDARD, _PRESENT = MODES["standard"], MODES["sparse-standard"]
# the modes that standardise (a running mean and deviation, no state moved) rather than divide by a scale
_CENTRED = ("standard", "sparse-standard")
# Widest input "standard" accepts: it makes every row dense (O(n_features) per row and per update),
# which is the cost of a prepared dense file, not of a hashed or one-hot sparse stream.
STANDARD_LIMIT = 4096
# Below this share of non-zero entries a batch is sparse for ``scale="auto"`` (:func:`choose_mode`).
SPARSE_DENSITY = 0.5
# Rows decided on before ``scale="auto"`` chooses its mode (unless a label comes first).
AUTO_ROWS = 64
# Column scales this many times apart make a stream raw for ``scale="auto"``: it needs a scale per feature.
SPREAD = 100.0
# A variance below this fraction of the mean square (around the first value) is the rounding of
# Σx²/n − μ², not a spread: the feature is constant so far (σ read as 1: x̃ = x − μ ≈ 0, not noise/noise).
_CANCELLED = 1e-10
SOURCES = {"scored": 0.0, "labelled": 1.0}
# A feature "moved" in a window when its scale left [s_ref/10, 10·s_ref], s_ref its scale when the
# window first saw it change: an order of magnitude is a unit change (cents → euros), not noise.
MOVE_FACTOR = 10.0
# Values of a feature after which a change of its scale moves the rule's state (before: the state
# stays in x̃'s units, as if the scale had been known). One value is a poor estimate of a scale, and
# consistency would carry its error into the state for good (a prior variance ×(s_final/s_first)²).
WARMUP = 10
# "sparse-standard" centres a column that is non-zero in at least this fraction of the rows (a
# table's column); a sparser one is only divided by its scale (docs/raw-features.md, "auto").
DENSE_COLUMN = 0.5

# How much of a row the statistics read: nothing (pure scoring), the coordinates never seen, all.
_OBSERVE_NONE, _OBSERVE_UNSEEN, _OBSERVE_ALL = 0, 1, 2
OBSERVE_NONE, OBSERVE_ALL = _OBSERVE_NONE, _OBSERVE_ALL

# rescale(S, a, P, R, idx, ratio): move the rule's state of coordinates idx to new units,
# r = s'/s per coordinate; R is the rule's packed description of its layout (powers of r).
RESCALE_SIG = signature("none", STATE, VEC, VEC, VEC, IDX, VAL)
RESCALE_FN = f"FunctionType({RESCALE_SIG})"

# rows of the scaler's state Z: count of non-zeros (rms; rows observed for standard), max |x| or Σx²
# (the statistic), the scale a window started from, that window's number (+1; negative once the move
# was counted), 1 once a labelled row changed the rule's state at the coordinate (before that the
# state is the rule's prior), and, for "standard" only, Σx and the first value x₀ (Σx, Σx² are then
# sums of x − x₀: an offset far above the spread, or a constant column, would cancel in Σx²/n − μ²)
_COUNT, _STAT, _REF, _MARK, _LEARNT, _SUM, _SHIFT = 0, 1, 2, 3, 4, 5, 6
_ROWS = 5


# -- the rules' rescaling, one kernel per state family -------------------------------------------
@jit(inline="always")
def _power(r, k):
    """r^k for the small integer powers of the state families, without a pow() call."""
    if k == 1.0:
        return r
    if k == 2.0:
        return r * r
    if k == -1.0:
        return 1.0 / r
    if k == -2.0:
        return 1.0 / (r * r)
    return r**k


@kernel(RESCALE_SIG)
def rescale_rows(S, a, P, R, idx, ratio):
    """Per-coordinate state: S[k, i] ← S[k, i] · r_i^R[k] for every row k. O(rows · |idx|).

    R[k] = 1 for weights (w, μ, one row per class), 2 for a diagonal covariance, −1 for sums of
    gradients and AdaGrad accumulators, −2 for a diagonal correlation matrix, 0 for bookkeeping.
    """
    for k in range(S.shape[0]):
        power = R[k]
        if power == 0.0:
            continue
        row = S[k]
        for j in range(idx.size):
            row[idx[j]] *= _power(ratio[j], power)


@kernel(RESCALE_SIG)
def rescale_full(S, a, P, R, idx, ratio):
    """Leading per-coordinate rows as :func:`rescale_rows`, then the trailing D×D block
    M ← D^q M D^q (rows and columns i scaled by r_i^q, q = R[-1]). O(|idx| · D)."""
    n_lead = S.shape[0] - S.shape[1]
    for k in range(n_lead):
        row = S[k]
        for j in range(idx.size):
            row[idx[j]] *= _power(ratio[j], R[k])
    q = R[n_lead]
    for j in range(idx.size):
        i = idx[j]
        f = _power(ratio[j], q)
        row = S[n_lead + i]  # row i of M
        for m in range(row.size):
            row[m] *= f
        for m in range(n_lead, S.shape[0]):
            S[m, i] *= f  # column i of M


@kernel(RESCALE_SIG)
def rescale_dual_averaging(S, a, P, R, idx, ratio):
    """Dual averaging (k class rows of Σg, then k rows of s; P = (δ, η, ...)). O(k · |idx|).

    s_i = √G_i → s_i/r_i (past gradients in the new units); Σg_i is set so that the weight it
    stands for, w_i = −η Σg_i/(δ + s_i), becomes r_i w_i: Σg_i ← r_i Σg_i (δ + s_i/r_i)/(δ + s_i).
    """
    delta = P[0]
    k = S.shape[0] // 2
    for c in range(k):
        g_sum, s = S[c], S[k + c]
        for j in range(idx.size):
            i, r = idx[j], ratio[j]
            s_new = s[i] / r
            g_sum[i] *= r * (delta + s_new) / (delta + s[i])
            s[i] = s_new


@kernel(RESCALE_SIG)
def rescale_lasec_full(S, a, P, R, idx, ratio):
    """Full LASEC (μ, then Σ; P[1] = 1/c): μ → Dμ and Σ → DΣD + c⁻¹(D² − I), so that the drifted
    covariance every score reads, Σ̃ = Σ + c⁻¹I, moves exactly to DΣ̃D. O(|idx| · D)."""
    rescale_full(S, a, P, R, idx, ratio)
    n_lead = S.shape[0] - S.shape[1]
    for j in range(idx.size):
        i = idx[j]
        S[n_lead + i, i] += P[1] * (ratio[j] * ratio[j] - 1.0)


@kernel(RESCALE_SIG)
def rescale_lasec_diag(S, a, P, R, idx, ratio):
    """Diagonal LASEC (rows μ, σ, ℓ; a[0] = K updates, P[1] = 1/c). O(|idx|).

    The drifted Σ̃_i = σ_i + (K + 1 − ℓ_i)/c that the next score reads moves to r_i² Σ̃_i: stored as
    σ_i ← r_i² Σ̃_i − 1/c with ℓ_i ← K (the lazy drift settled); μ_i ← r_i μ_i.
    """
    mu, sigma, last = S[0], S[1], S[2]
    K, c_inv = a[0], P[1]
    for j in range(idx.size):
        i, r = idx[j], ratio[j]
        sigma[i] = (sigma[i] + (K + 1.0 - last[i]) * c_inv) * r * r - c_inv
        last[i] = K
        mu[i] *= r


# -- the scale itself ----------------------------------------------------------------------------
@jit(inline="always")
def _scale_of(Z, i, mode):
    """s_i from the statistics; 0 while coordinate i has never been non-zero."""
    if mode == 1.0:
        return Z[_STAT, i]
    n = Z[_COUNT, i]
    return math.sqrt(Z[_STAT, i] / n) if n > 0.0 else 0.0


@jit(inline="always")
def _track_move(Z, zs, i, old, new):
    """Count coordinate i once per window when its scale leaves [s_ref/10, 10 s_ref]."""
    mark = zs[0] + 1.0
    if Z[_MARK, i] != mark and Z[_MARK, i] != -mark:  # first change of i in this window
        Z[_REF, i] = old
        Z[_MARK, i] = mark
    ref = Z[_REF, i]
    if Z[_MARK, i] > 0.0 and (new > MOVE_FACTOR * ref or new * MOVE_FACTOR < ref):
        zs[1] += 1.0
        Z[_MARK, i] = -mark


@jit
def observe(Z, zs, zp, level, idx, val, changed, ratio):
    """Update the statistics with a row's non-zeros; returns m, with the m coordinates whose
    (already set) scale changed in ``changed[:m]`` and their r = s'/s in ``ratio[:m]``. O(nnz)."""
    mode, n_scaled = zp[0], zp[1]
    m = 0
    if level == _OBSERVE_NONE:
        return m
    for j in range(idx.size):
        i = idx[j]
        x = abs(val[j])
        if i >= n_scaled or x == 0.0:
            continue  # the intercept, an explicit zero
        old = _scale_of(Z, i, mode)
        if old > 0.0 and level == _OBSERVE_UNSEEN:
            continue
        Z[_COUNT, i] += 1.0
        if mode == 1.0:
            Z[_STAT, i] = max(Z[_STAT, i], x)  # NAG: s_i = max |x_i|
        else:
            Z[_STAT, i] += x * x  # s_i = √(Σx_i² / n_i)
        new = _scale_of(Z, i, mode)
        if old > 0.0 and new != old and Z[_COUNT, i] > zp[3]:  # a warm-up's settling is not a move
            _track_move(Z, zs, i, old, new)
            # a prior is the prior in any units, and a scale from fewer than zp[3] values is a guess:
            # until both, the state stays in x̃'s units rather than carry an early guess forward
            if Z[_LEARNT, i] != 0.0:
                changed[m] = i
                ratio[m] = new / old
                m += 1
    return m


@jit
def mark_learnt(Z, zp, idx):
    """Record that an update changed the rule's state at a row's coordinates. O(nnz)."""
    for j in range(idx.size):
        if idx[j] < zp[1]:
            Z[_LEARNT, idx[j]] = 1.0


@jit
def scale_values(Z, zp, idx, val, out):
    """out ← x̃ = x/s on the scaled coordinates (then unit L2 norm over them if zp[2]), the
    intercept copied; an unseen coordinate is divided by |x_i|, the scale it would get. O(nnz)."""
    mode, n_scaled, normalize = zp[0], zp[1], zp[2]
    sq = 0.0
    for j in range(idx.size):
        x = val[j]
        if idx[j] >= n_scaled:
            out[j] = x
            continue
        s = _scale_of(Z, idx[j], mode)
        if s == 0.0:
            s = abs(x)
        out[j] = x / s if s > 0.0 else 0.0
        sq += out[j] * out[j]
    if normalize != 0.0 and sq > 0.0:
        norm = math.sqrt(sq)
        for j in range(idx.size):
            if idx[j] < n_scaled:
                out[j] /= norm


@jit(inline="always")
def _prepare(Z, zs, zp, level, idx, val, S, a, P, R, rescale, changed, ratio, out):
    """One row through the scaler: statistics, the rule's state moved to the new units, x̃."""
    m = observe(Z, zs, zp, level, idx, val, changed, ratio)
    if m > 0:
        rescale(S, a, P, R, changed[:m], ratio[:m])
    scale_values(Z, zp, idx, val, out)


@jit(inline="always")
def _spread(Z, i):
    """σ_i of "standard" from n, Σ(x − x₀), Σ(x − x₀)²; 0 before any row and while the column is
    constant."""
    n = Z[_COUNT, i]
    if n == 0.0:
        return 0.0
    mu = Z[_SUM, i] / n
    mean_sq = Z[_STAT, i] / n
    var = mean_sq - mu * mu
    return math.sqrt(var) if var > _CANCELLED * mean_sq else 0.0


@jit(inline="always")
def _mean(Z, i):
    """μ_i of "standard": x₀ + Σ(x − x₀)/n; 0 before any row."""
    n = Z[_COUNT, i]
    return Z[_SHIFT, i] + Z[_SUM, i] / n if n > 0.0 else 0.0


@jit(inline="always")
def _count_value(Z, zs, zp, i, x):
    """Add x to feature i's running n, Σ(x − x₀), Σ(x − x₀)² (the centred modes); returns its σ, whose
    moves the drift metric counts (σ is the unit those modes divide by)."""
    old = _spread(Z, i)
    if Z[_COUNT, i] == 0.0:
        Z[_SHIFT, i] = x
    Z[_COUNT, i] += 1.0
    Z[_SUM, i] += x - Z[_SHIFT, i]
    Z[_STAT, i] += (x - Z[_SHIFT, i]) ** 2
    sigma = _spread(Z, i)
    if old > 0.0 and sigma != old and Z[_COUNT, i] > zp[3]:
        _track_move(Z, zs, i, old, sigma)
    return sigma


@jit
def standardise(Z, zs, zp, level, idx, val, out):
    """"standard": observe the row (if ``level`` is all) with its zeros, then the dense x̃ in
    ``out``: out[i] = (x_i − μ_i)/σ_i for every i < n_features (unit L2 norm over them if zp[2]),
    out[n_features] = the intercept's value if the row has one. Returns how many of ``out`` are
    x̃: the row's coordinates are then 0, 1, …, that − 1. O(n_features)."""
    n_scaled = int(zp[1])
    width = n_scaled
    for i in range(n_scaled):
        out[i] = 0.0
    for j in range(idx.size):
        if idx[j] >= n_scaled:
            out[n_scaled] = val[j]  # the intercept, never scaled
            width = n_scaled + 1
        else:
            out[idx[j]] = val[j]
    observing = level == _OBSERVE_ALL
    sq = 0.0
    for i in range(n_scaled):
        x = out[i]
        sigma = _count_value(Z, zs, zp, i, x) if observing else _spread(Z, i)
        mu = _mean(Z, i)
        out[i] = (x - mu) / sigma if sigma > 0.0 else x - mu
        sq += out[i] * out[i]
    if zp[2] != 0.0 and sq > 0.0:
        norm = math.sqrt(sq)
        for i in range(n_scaled):
            out[i] /= norm
    return width


@jit
def standardise_present(Z, zs, zp, level, idx, val, out):
    """"sparse-standard": observe the row's non-zeros (if ``level`` is all), then x̃ on them in
    ``out``, so that absent features stay absent (zeros cost nothing). μ_i and σ_i are over the
    rows where feature i was non-zero. A column non-zero in at least :data:`DENSE_COLUMN` of the
    rows observed (an amount, an age) is standardised, (x_i − μ_i)/σ_i, and its rare absences read
    as its mean; a sparser one (a word count, a rate that is mostly 0) is divided by its root mean
    square where present, √(σ_i² + μ_i²), so that its zeros stay below its values (centring only
    the values present would invert them). A feature constant where present so far (a one-hot
    flag, or a feature seen once) is divided by its value: a flag stays 1. The intercept is
    copied. O(nnz)."""
    n_scaled = zp[1]
    observing = level == _OBSERVE_ALL
    if observing:
        zs[2] += 1.0
    sq = 0.0
    for j in range(idx.size):
        i, x = idx[j], val[j]
        if i >= n_scaled or x == 0.0:
            out[j] = x  # the intercept, an explicit zero
            continue
        sigma = _count_value(Z, zs, zp, i, x) if observing else _spread(Z, i)
        if sigma == 0.0:
            out[j] = x / abs(Z[_SHIFT, i] if Z[_COUNT, i] > 0.0 else x)
        elif Z[_COUNT, i] >= DENSE_COLUMN * zs[2]:
            out[j] = (x - _mean(Z, i)) / sigma
        else:
            mu = _mean(Z, i)
            out[j] = x / math.sqrt(sigma * sigma + mu * mu)
        sq += out[j] * out[j]
    if zp[2] != 0.0 and sq > 0.0:
        norm = math.sqrt(sq)
        for j in range(idx.size):
            if idx[j] < n_scaled:
                out[j] /= norm


@jit(inline="always")
def _scaled(Z, zs, zp, level, idx, val, S, a, P, R, rescale, changed, ratio, out, dense):
    """One row through the scaler, as (coordinates, x̃) for the rule: the row's own coordinates
    (sparse modes) or ``dense``'s leading ones ("standard")."""
    if zp[0] == _STANDARD:
        width = standardise(Z, zs, zp, level, idx, val, out)
        return dense[:width], out[:width]
    x = out[: idx.size]
    if zp[0] == _PRESENT:
        standardise_present(Z, zs, zp, level, idx, val, x)
        return idx, x
    _prepare(Z, zs, zp, level, idx, val, S, a, P, R, rescale, changed, ratio, x)
    return idx, x


@jit
def dense_buffers(zp, width):
    """Row buffers of a driver: x̃ (room for ``width`` values, or every coordinate and the intercept
    under "standard"), and the dense coordinates 0 … n_features (empty in the sparse modes)."""
    n_dense = int(zp[1]) + 1 if zp[0] == _STANDARD else 0
    dense = np.empty(n_dense, dtype=np.int32)
    for i in range(n_dense):
        dense[i] = i
    return np.empty(max(width, n_dense)), dense


@jit
def scale_batch(indptr, indices, data, order, level, Z, zs, zp, out_indptr, out_indices, out_data):
    """x̃ of every row, the rows observed at ``level`` in ``order`` (each scaled with the statistics of
    the rows before it in that order and its own), into CSR arrays whose ``out_indptr`` is set: the
    row's own coordinates (sparse modes) or every coordinate ("standard"). Scaling before a random
    feature map: no rule state is bound, so nothing is moved. O(nnz) a row, O(n_features) "standard"."""
    width = widest(indptr) + 1
    changed, ratio = np.empty(width, dtype=np.int32), np.empty(width)
    for t in range(order.size):
        i = order[t]
        lo, hi, at = indptr[i], indptr[i + 1], out_indptr[i]
        idx, val = indices[lo:hi], data[lo:hi]
        if zp[0] == _STANDARD:
            n = standardise(Z, zs, zp, level, idx, val, out_data[at : out_indptr[i + 1]])
            for j in range(n):
                out_indices[at + j] = j
        else:
            if zp[0] == _PRESENT:
                standardise_present(Z, zs, zp, level, idx, val, out_data[at : at + hi - lo])
            else:
                observe(Z, zs, zp, level, idx, val, changed, ratio)
                scale_values(Z, zp, idx, val, out_data[at : at + hi - lo])
            out_indices[at : at + hi - lo] = idx


def choose_mode(rows: Any) -> str:
    """``scale="auto"``: the mode for a stream whose first rows are ``rows`` (docs/raw-features.md,
    "auto"), from their shape, measured on the leaderboard's sets raw and prepared and on named
    tabular streams:

    * rows that carry most of the columns they use between them (a table, named features
      included: :data:`SPARSE_DENSITY` of the columns seen, on 2 rows or more): standardised,
      "standard" up to :data:`STANDARD_LIMIT` features, "sparse-standard" (over the rows where a
      feature is present, so that hashed rows stay sparse) above;
    * sparse rows whose columns' scales differ by :data:`SPREAD` or more (amounts beside rates, run
      lengths beside frequencies): "standard", or "rms" above :data:`STANDARD_LIMIT` features
      (centring would make the rows dense, and centring only the values present inverts counts);
    * sparse rows on one scale (term counts, one-hot flags, a file scaled offline): "none": a
      per-feature scale there re-weights the terms, and measured worse than the rows as they are.
    """
    if rows.nnz == 0:
        return "none"
    column = rows.indices.astype(np.int64)
    count = np.bincount(column, minlength=rows.n_features)
    seen = count > 0
    rms = np.sqrt(np.bincount(column, weights=rows.data * rows.data, minlength=rows.n_features)[seen] / count[seen])
    rms = rms[rms > 0.0]
    spread = rms.size > 0 and rms.max() >= SPREAD * rms.min()
    table = rows.n >= 2 and rows.nnz >= SPARSE_DENSITY * rows.n * int(seen.sum())
    if rows.n_features > STANDARD_LIMIT:
        return "sparse-standard" if table else "rms" if spread else "none"
    return "standard" if table or spread else "none"


# -- what a learner checks before it makes its Scaler ----------------------------------------------
def check_width(scale: str, n_features: int) -> None:
    """Refuse "standard" on inputs too wide to make dense (:data:`STANDARD_LIMIT`)."""
    if scale == "standard" and n_features > STANDARD_LIMIT:
        raise ValueError(f"scale='standard' centres every feature, which makes each row dense: n_features="
                         f"{n_features} is above {STANDARD_LIMIT}; use scale='rms' for sparse high-dimensional "
                         "data (or reduce the features)")


def rescale_powers(rule: Any, n_features: int, n_classes: int) -> np.ndarray:
    """R for the rule's rescale kernel: the power of r per row of S (per-coordinate rules), or per
    leading row followed by the side power of the trailing D×D block (full-matrix rules)."""
    powers = rule.scaling
    layout = rule.layout(n_features, n_classes)
    if getattr(rule, "is_full_matrix", False):
        *lead, matrix = layout
        return np.array([float(powers[k]) for k in lead for _ in range(layout[k])] + [float(powers[matrix])])
    return np.array([float(powers[k]) for k, rows in layout.items() for _ in range(rows)])
