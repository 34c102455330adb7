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
def _project(indptr, indices, data, omega, beta, seed, sd, out):
    """out[r] = √(2/m) cos(Ωᵀx_r + β) for every row r; Ω from ``omega`` or, if it is empty, the seed."""
    m = beta.size
    scale = math.sqrt(2.0 / m)
    stored = omega.shape[0] > 0
    for r in range(indptr.size - 1):
        z = out[r * m : (r + 1) * m]
        z[:] = beta
        for k in range(indptr[r], indptr[r + 1]):
            i, v = indices[k], data[k]
            if stored:
                for j in range(m):
                    z[j] += v * omega[i, j]
            else:
                for j in range(m):
                    z[j] += v * sd * _gaussian(seed, i, j)
        for j in range(m):
            z[j] = scale * math.cos(z[j])


class RandomFourierFeatures:
    """The map x ↦ z(x) ∈ R^m approximating the kernel exp(−γ‖x − x'‖²).

    Parameters
    ----------
    n_components : int ≥ 1
        m, the number of random features (the linear model's dimension).
    gamma : float > 0
        γ of the RBF kernel; ω_j ~ N(0, 2γ I).
    seed : int ≥ 0
        Everything random in the map derives from it.
    n_features : int ≥ 1
        d, the input dimension.

    Complexity
    ----------
    O(nnz·m) per row; memory d·m floats when Ω is materialised, O(m) otherwise.
    """

    def __init__(self, *, n_components: int, gamma: float, seed: int, n_features: int) -> None:
        self.n_components, self.gamma, self.seed, self.n_features = n_components, gamma, seed, n_features
        self._seed = np.uint64(seed & (2**64 - 1))
        self._sd = math.sqrt(2.0 * gamma)
        self.beta_ = _beta(self._seed, n_components)
        fits = 8.0 * n_features * n_components <= MAX_STATE_BYTES / 4
        self.omega_ = _omega(self._seed, n_features, n_components, self._sd) if fits else np.empty((0, n_components))

    def transform(self, rows: Rows) -> Rows:
        """z(x) of every row, as dense rows over ``n_components`` coordinates."""
        m = self.n_components
        out = np.empty(rows.n * m)
        _project(rows.indptr, rows.indices, rows.data, self.omega_, self.beta_, self._seed, self._sd, out)
        indptr = np.arange(rows.n + 1, dtype=np.int64) * m
        indices = np.tile(np.arange(m, dtype=np.int32), rows.n)
        return Rows(indptr, indices, out, m)

    def transform_row(self, idx: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """z(x) of one row (indices, values)."""
        out = np.empty(self.n_components)
        indptr = np.array([0, idx.size], dtype=np.int64)
        _project(indptr, idx, val, self.omega_, self.beta_, self._seed, self._sd, out)
        return np.arange(self.n_components, dtype=np.int32), out
