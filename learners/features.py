"""Random Fourier features: a Gaussian-kernel machine as a linear model on a random feature map.

Rahimi & Recht, "Random Features for Large-Scale Kernel Machines", NIPS 2007, Algorithm 1:

    z(x) = √(2/m) · [cos(ω_1·x + β_1), …, cos(ω_m·x + β_m)],   ω_j ~ N(0, 2γ I),  β_j ~ U[0, 2π)

so that E[z(x)·z(x')] = exp(−γ‖x − x'‖²), the RBF kernel. Any linear rule learning on z(x)
(PA, PAA, SOAL, …) then approximates its kernel counterpart at a fixed O(nnz·m) cost per
record, with no support vectors to store and no budget to manage.

The projection is a pure function of ``(seed, input coordinate, component)``: entry ω_ij comes
from two :func:`learners.coin.draw` uniforms through Box–Muller, and β_j from a third. It is
therefore never stored in a checkpoint: a learner rebuilt with the same ``rff_seed`` has the same
map, on any machine and numpy version. When ``d × m`` fits (:data:`learners.memory.MAX_STATE_BYTES`),
Ω is materialised once for speed; otherwise its entries are recomputed from the seed per use.

Examples
--------
>>> import numpy as np
>>> from learners.inputs import as_rows
>>> rff = RandomFourierFeatures(n_components=4000, gamma=0.5, seed=1, n_features=3)
>>> z = rff.transform(as_rows(np.array([[1.0, 0.0, 2.0], [0.5, 0.0, 1.0]]))).to_csr().toarray()
>>> approx, exact = float(z[0] @ z[1]), float(np.exp(-0.5 * (0.5**2 + 1.0**2)))
>>> abs(approx - exact) < 0.03
True
"""

from __future__ import annotations

import math

import numpy as np

from learners.coin import draw, splitmix64
from learners.inputs import Rows
from learners.jit import jit
from learners.memory import MAX_STATE_BYTES

__all__ = ["RandomFourierFeatures"]

_OMEGA_A, _OMEGA_B, _BETA = np.uint64(0x5EED0001), np.uint64(0x5EED0002), np.uint64(0x5EED0003)
_TWO_PI = 2.0 * math.pi


@jit
def _gaussian(seed, i, j):
    """A standard normal for entry (i, j): Box–Muller on two coin draws keyed by (i << 32) | j."""
    key = (np.uint64(i) << np.uint64(32)) | np.uint64(j)
    u1 = draw(splitmix64(seed ^ _OMEGA_A), key)
    u2 = draw(splitmix64(seed ^ _OMEGA_B), key)
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(_TWO_PI * u2)


@jit
def _omega(seed, n_features, m, sd):
    out = np.empty((n_features, m))
    for i in range(n_features):
        for j in range(m):
            out[i, j] = sd * _gaussian(seed, i, j)
    return out


@jit
def _beta(seed, m):
    out = np.empty(m)
    for j in range(m):
        out[j] = _TWO_PI * draw(splitmix64(seed ^ _BETA), np.uint64(j))
    return out


@jit
def _project(indptr, indices, data, omega, beta, seed, sd, lift, lifted, keep, out_indptr, out_indices, out_data):
    """Row r of the output, from ``out_indptr[r]``: its own coordinates if ``keep`` > 0 (then ``keep``
    is d), then z_j = √(2/m) cos(ω_j·u + β_j) at index ``keep`` + j. u is the row x, or with
    ``lift`` = c > 0 the lifted row [x, c]/‖[x, c]‖, whose last coordinate has index ``lifted`` (d).
    Ω from ``omega`` or, if it is empty, the seed."""
    m = beta.size
    scale = math.sqrt(2.0 / m)
    stored = omega.shape[0] > 0
    for r in range(indptr.size - 1):
        lo, hi, at = indptr[r], indptr[r + 1], out_indptr[r]
        if keep > 0:
            for k in range(lo, hi):
                out_indices[at] = indices[k]
                out_data[at] = data[k]
                at += 1
        inv = 1.0
        if lift > 0.0:
            sq = lift * lift
            for k in range(lo, hi):
                sq += data[k] * data[k]
            inv = 1.0 / math.sqrt(sq)
        z = out_data[at : at + m]
        z[:] = beta
        for k in range(lo, hi):
            i, v = indices[k], data[k] * inv
            if stored:
                for j in range(m):
                    z[j] += v * omega[i, j]
            else:
                for j in range(m):
                    z[j] += v * sd * _gaussian(seed, i, j)
        if lift > 0.0:
            v = lift * inv
            for j in range(m):
                z[j] += v * (omega[lifted, j] if stored else sd * _gaussian(seed, lifted, j))
        for j in range(m):
            z[j] = scale * math.cos(z[j])
            out_indices[at + j] = keep + j


class RandomFourierFeatures:
    """The map x ↦ z(x) ∈ R^m approximating the kernel exp(−γ‖x − x'‖²).

    Parameters
    ----------
    n_components : int ≥ 1
        m, the number of random features.
    gamma : float > 0
        γ of the RBF kernel; ω_j ~ N(0, 2γ I).
    seed : int ≥ 0
        Everything random in the map derives from it.
    n_features : int ≥ 1
        d, the input dimension.
    lift : float ≥ 0, default 0
        c > 0 maps the row lifted onto the unit sphere of R^(d+1), u = [x, c]/‖[x, c]‖, instead of x.
        The lift is one-to-one, so the kernel exp(−γ‖u − u'‖²) still tells every two rows apart,
        and ‖u − u'‖ ≤ 2 whatever the scale of the features: one γ suits rows of any norm.
    keep : bool, default False
        The output is [x, z] (d + m coordinates), the row's own features beside the map, so a
        linear rule on it holds every linear model of x as well as the kernel's.

    Complexity
    ----------
    O(nnz·m) per row; memory (d + 1)·m floats when Ω is materialised, O(m) otherwise.
    """

    def __init__(self, *, n_components: int, gamma: float, seed: int, n_features: int, lift: float = 0.0,
                 keep: bool = False) -> None:
        self.n_components, self.gamma, self.seed, self.n_features = n_components, gamma, seed, n_features
        self.lift, self.keep = float(lift), bool(keep)
        self._seed = np.uint64(seed & (2**64 - 1))
        self._sd = math.sqrt(2.0 * gamma)
        self._made: tuple[np.ndarray, np.ndarray] | None = None

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        # made on first use, not when a learner is built: building one compiles nothing
        if self._made is None:
            m, inputs = self.n_components, self.n_features + (self.lift > 0.0)
            fits = 8.0 * inputs * m <= MAX_STATE_BYTES / 4
            self._made = (_omega(self._seed, inputs, m, self._sd) if fits else np.empty((0, m)),
                          _beta(self._seed, m))
        return self._made

    @property
    def omega_(self) -> np.ndarray:
        """Ω, (d [+ 1]) × m; empty when it does not fit, its entries then recomputed from the seed."""
        return self._arrays()[0]

    @property
    def beta_(self) -> np.ndarray:
        """β, m phases in [0, 2π)."""
        return self._arrays()[1]

    @property
    def width(self) -> int:
        """Coordinates of a mapped row: m, or d + m with ``keep``."""
        return self.n_components + (self.n_features if self.keep else 0)

    def _map(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> Rows:
        n, m = indptr.size - 1, self.n_components
        out_indptr = np.arange(n + 1, dtype=np.int64) * m
        if self.keep:
            out_indptr += indptr - indptr[0]
        out_indices = np.empty(out_indptr[-1], dtype=np.int32)
        out_data = np.empty(out_indptr[-1])
        _project(indptr, indices, data, self.omega_, self.beta_, self._seed, self._sd, self.lift, self.n_features,
                 self.n_features if self.keep else 0, out_indptr, out_indices, out_data)
        return Rows(out_indptr, out_indices, out_data, self.width)

    def transform(self, rows: Rows) -> Rows:
        """The mapped rows: z(x), or [x, z(x)] with ``keep``."""
        return self._map(rows.indptr, rows.indices, rows.data)

    def transform_row(self, idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mapped row of one (indices, values) pair."""
        mapped = self._map(np.array([0, idx.size], dtype=np.int64), idx, val)
        return mapped.indices, mapped.data
