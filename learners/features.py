"""Random Fourier features: a Gaussian-kernel machine as a linear model on a random feature map.

Rahimi & Recht, "Random Features for Large-Scale Kernel Machines", NIPS 2007, Algorithm 1:

    z(x) = √(2/m) · [cos(ω_1·x + β_1), …, cos(ω_m·x + β_m)],   ω_j ~ N(0, 2γ I),  β_j ~ U[0, 2π)

so that E[z(x)·z(x')] = exp(−γ‖x − x'‖²), the RBF kernel. Any linear rule learning on z(x)
(PA, PAA, SOAL, …) then approximates its kernel counterpart at a fixed O(nnz·m) cost per
record, with no support vectors to store and no budget to manage.

The projection is a pure function of ``(seed, input coordinate, component)``: entry ω_ij comes
from two :func:`learners.coin.draw` uniforms through Box–Muller, and β_j from a third. It is
therefore never stored in a checkpoint: a learner rebuilt with the same ``rff_seed`` has the same
map, on any machine and numpy version. When ``(d + 1) × m`` fits in a quarter of
:data:`learners.memory.MAX_STATE_BYTES`, Ω is materialised on first use. Otherwise (hashed features,
d = 2²⁰) the rows of Ω are materialised for the features the rows actually use, as they first
appear, up to that size; the entries of features past it are recomputed from the seed at each use.
Either way every entry has the same value, so a row maps to the same bits.

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
from learners.jit import jit, kernel, signature
from learners.kernels import ready
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


def _in(dtype: str, ndim: int = 1) -> str:
    """Numba's type of a C-contiguous array a kernel only reads (a writable one is taken as well)."""
    return f"Array({dtype}, {ndim}, 'C', readonly=True)"


# Fixed signatures: the replay runs them compiled ahead of time (learners.aot), with no numba in the
# process, and a call with other types would be misread there, so the callers convert their arguments
@kernel(signature("none", "uint64", _in("int64"), "float64", "float64[:, ::1]"))
def _omega_rows(seed, inputs, sd, out):
    """The rows of Ω for the input coordinates ``inputs``, into ``out``."""
    for r in range(inputs.size):
        for j in range(out.shape[1]):
            out[r, j] = sd * _gaussian(seed, inputs[r], j)


@kernel(signature("none", "uint64", "float64[::1]"))
def _beta(seed, out):
    for j in range(out.size):
        out[j] = _TWO_PI * draw(splitmix64(seed ^ _BETA), np.uint64(j))


@jit(inline="always")
def _add_row(z, v, omega, row, seed, sd, i):
    """z += v · ω_i, from Ω's row ``row`` or, if it is −1, from the seed: the same entries either way."""
    if row >= 0:
        for j in range(z.size):
            z[j] += v * omega[row, j]
    else:
        for j in range(z.size):
            z[j] += v * (sd * _gaussian(seed, i, j))


@kernel(signature("none", _in("int64"), _in("int32"), _in("float64"), _in("int64"), _in("float64", 2),
                  _in("float64"), "uint64", "float64", "float64", "int64", "int64", "int64", _in("int64"),
                  "int32[::1]", "float64[::1]"))
def _project(indptr, indices, data, where, omega, beta, seed, sd, lift, lifted, lifted_row, keep,
             out_indptr, out_indices, out_data):
    """Row r of the output, from ``out_indptr[r]``: its own coordinates if ``keep`` > 0 (then ``keep``
    is d), then z_j = √(2/m) cos(ω_j·u + β_j) at index ``keep`` + j. u is the row x, or with
    ``lift`` = c > 0 the lifted row [x, c]/‖[x, c]‖, whose last coordinate has index ``lifted`` (d).
    ω_i is Ω's row ``where[k]`` for the k-th stored entry (``lifted_row`` for the lift), or the seed's
    where that is −1."""
    m = beta.size
    scale = math.sqrt(2.0 / m)
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
        for j in range(m):  # a loop: an array assignment needs numba's runtime, which kernels go without
            z[j] = beta[j]
        for k in range(lo, hi):
            _add_row(z, data[k] * inv, omega, where[k], seed, sd, indices[k])
        if lift > 0.0:
            _add_row(z, lift * inv, omega, lifted_row, seed, sd, lifted)
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
    O(nnz·m) per row. Memory: (d + 1)·m floats when that fits in a quarter of ``MAX_STATE_BYTES``;
    otherwise m floats per input coordinate seen, up to that size.
    """

    def __init__(self, *, n_components: int, gamma: float, seed: int, n_features: int, lift: float = 0.0,
                 keep: bool = False) -> None:
        self.n_components, self.gamma, self.seed, self.n_features = n_components, gamma, seed, n_features
        self.lift, self.keep = float(lift), bool(keep)
        self._seed = np.uint64(seed & (2**64 - 1))
        self._sd = math.sqrt(2.0 * gamma)
        # made on first use, not when a learner is built: building one compiles nothing
        self._beta: np.ndarray | None = None
        self._omega = np.empty((0, n_components))  # rows of Ω, in the order they were made
        self._inputs = np.empty(0, dtype=np.int64)  # their input coordinates, sorted …
        self._rows = np.empty(0, dtype=np.int64)  # … and where each one's row is in _omega
        self._whole = False  # all of Ω, row i for input coordinate i; _inputs and _rows then unused

    def _ready(self) -> np.ndarray:
        if self._beta is None:
            inputs = self.n_features + (self.lift > 0.0)
            self._whole = inputs <= self._room()
            if self._whole:  # row i is input coordinate i: no lookup to keep
                self._omega = np.empty((inputs, self.n_components))
                ready(_omega_rows)(self._seed, np.arange(inputs, dtype=np.int64), self._sd, self._omega)
            else:
                self._remember(np.arange(self.n_features, inputs))
            self._beta = np.empty(self.n_components)
            ready(_beta)(self._seed, self._beta)
        return self._beta

    def _room(self) -> int:
        """How many rows of Ω may be kept."""
        return int(MAX_STATE_BYTES / 4 // (8 * self.n_components))

    def _remember(self, new: np.ndarray) -> None:
        """Make the rows of Ω for the sorted input coordinates ``new``, as many as there is room for."""
        made = self._rows.size
        new = new[: max(0, self._room() - made)]
        if new.size == 0:
            return
        if made + new.size > self._omega.shape[0]:  # amortised growth, capped at the room
            grown = np.empty((min(self._room(), max(made + new.size, 2 * self._omega.shape[0])), self.n_components))
            grown[:made] = self._omega[:made]
            self._omega = grown
        ready(_omega_rows)(self._seed, np.ascontiguousarray(new, dtype=np.int64), self._sd,
                           self._omega[made : made + new.size])
        at = np.searchsorted(self._inputs, new)
        self._inputs = np.insert(self._inputs, at, new)
        self._rows = np.insert(self._rows, at, np.arange(made, made + new.size))

    def _lookup(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``indices`` have a row of Ω, and where in ``_inputs`` each is or would go."""
        at = np.searchsorted(self._inputs, indices)
        if self._inputs.size == 0:
            return np.zeros(indices.size, dtype=bool), at
        return self._inputs[np.minimum(at, self._inputs.size - 1)] == indices, at

    def _where(self, indices: np.ndarray) -> np.ndarray:
        """For each input coordinate in ``indices``, its row of Ω, made now if there is room; −1 if not."""
        if self._whole:
            return indices.astype(np.int64)
        known, at = self._lookup(indices)
        if not known.all() and self._rows.size < self._room():
            self._remember(np.unique(indices[~known]))
            known, at = self._lookup(indices)
        return np.where(known, self._rows[np.minimum(at, self._rows.size - 1)], -1) if self._rows.size else \
            np.full(indices.size, -1, dtype=np.int64)

    @property
    def omega_(self) -> np.ndarray:
        """The rows of Ω made so far: all of it, (d [+ 1]) × m, when it fits; otherwise those of the input
        coordinates seen (:attr:`inputs_`, in the order they were made), the others recomputed from the seed."""
        self._ready()
        return self._omega if self._whole else self._omega[: self._rows.size]

    @property
    def inputs_(self) -> np.ndarray:
        """The input coordinate of each row of :attr:`omega_`."""
        self._ready()
        if self._whole:
            return np.arange(self._omega.shape[0])
        order = np.empty_like(self._inputs)
        order[self._rows] = self._inputs
        return order

    @property
    def beta_(self) -> np.ndarray:
        """β, m phases in [0, 2π)."""
        return self._ready()

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
        beta = self._ready()
        lo, hi = indptr[0], indptr[-1]
        indices = np.ascontiguousarray(indices[lo:hi], dtype=np.int32)
        where = np.ascontiguousarray(self._where(indices), dtype=np.int64)
        lifted_row = int(self._where(np.array([self.n_features]))[0]) if self.lift > 0.0 else -1
        ready(_project)(np.ascontiguousarray(indptr - lo, dtype=np.int64), indices,
                        np.ascontiguousarray(data[lo:hi], dtype=np.float64), where, self._omega, beta, self._seed,
                        self._sd, self.lift, self.n_features, lifted_row, self.n_features if self.keep else 0,
                        out_indptr, out_indices, out_data)
        return Rows(out_indptr, out_indices, out_data, self.width)

    def transform(self, rows: Rows) -> Rows:
        """The mapped rows: z(x), or [x, z(x)] with ``keep``."""
        return self._map(rows.indptr, rows.indices, rows.data)

    def transform_row(self, idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mapped row of one (indices, values) pair."""
        mapped = self._map(np.array([0, idx.size], dtype=np.int64), idx, val)
        return mapped.indices, mapped.data
