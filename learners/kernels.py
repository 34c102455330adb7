"""The compiled-kernel contract shared by every update rule and query strategy.

A rule is compiled to two numba functions with fixed signatures, a query to three; the drivers in
:mod:`learners.drivers` take them as first-class function arguments. Because the signatures are
fixed, a driver is compiled once for all rules and cached on disk, and a new rule costs nothing
but its own two kernels.

State layout
------------
``S``  float64[n_rows, D], C-contiguous: every per-coordinate array of the rule (w; μ and Σ; one row
       per class; a full d×d matrix is d rows). D = number of features (+1 with an intercept).
``a``  float64[k]: the rule's scalar state (counters, running sums); may be empty.
``P``  float64[m]: the rule's hyper-parameters, packed by the rule class; read-only in kernels.
``qp`` / ``qs``: a query's packed hyper-parameters and its mutable scalar state.

A row of input is ``idx`` (int32, the non-zero coordinates) and ``val`` (float64, their values).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

from learners import compiled
from learners.jit import Deferred, jit, kernel, parse_signature

__all__ = [
    "IDX",
    "LABEL_SIG",
    "PROB_SIG",
    "ROUND_SIG",
    "SCORE_SIG",
    "STATE",
    "UPDATE_SIG",
    "VAL",
    "VEC",
    "Lazy",
    "axpy",
    "kernel",
    "no_label",
    "no_round",
    "ready",
    "sparse_dot",
    "sq_norm",
]

# numba's signature strings (learners.jit), parsed when a kernel is first compiled
IDX = "int32[::1]"
VAL = "float64[::1]"
VEC = "float64[::1]"
STATE = "float64[:, ::1]"

# score(S, a, P, idx, val) -> (p, gap, v, top)
#   p    signed margin (binary) or top-1 score (multiclass)
#   gap  top-1 minus top-2 score (multiclass), NaN otherwise
#   v    confidence term xᵀΣx / xᵀH⁻¹x, NaN when the rule has none
#   top  index of the highest-scoring class (multiclass), -1 for binary rules
SCORE_SIG = f"Tuple((float64, float64, float64, int64))({STATE}, {VEC}, {VEC}, {IDX}, {VAL})"
# update(S, a, P, idx, val, y, weight) -> changed; y is ±1 (binary) or a class index (multiclass);
#   weight is the label's importance weight, 1/q under an importance-weighted query, else 1. A rule
#   whose ``importance_weights`` is True applies it; the others are never given another value
UPDATE_SIG = f"boolean({STATE}, {VEC}, {VEC}, {IDX}, {VAL}, int64, float64)"
# probability(p, gap, v, qp, qs) -> query probability in [0, 1]
PROB_SIG = f"float64(float64, float64, float64, {VEC}, {VEC})"
# after_round(qp, qs): called once per scored record, after its probability is computed
ROUND_SIG = f"none({VEC}, {VEC})"
# after_label(qp, qs, mistake, weight): called once per applied label; mistake = the prediction was
#   wrong, weight = the label's importance weight (as the update's)
LABEL_SIG = f"none({VEC}, {VEC}, boolean, float64)"

SCORE_FN = f"FunctionType({SCORE_SIG})"
UPDATE_FN = f"FunctionType({UPDATE_SIG})"
PROB_FN = f"FunctionType({PROB_SIG})"
ROUND_FN = f"FunctionType({ROUND_SIG})"
LABEL_FN = f"FunctionType({LABEL_SIG})"


def _defer_numba_blas_probe() -> None:
    """Let numba set up its CPU target without importing ``scipy.linalg`` first.

    On first use numba imports its array implementations, which probe for BLAS by importing
    ``scipy.linalg.cython_blas``: a quarter of a second of a replay's start-up, for code none of
    our kernels calls. SciPy is a dependency, so the probe's answer is known; the probe is answered
    yes without the import, and numba's own ``ensure_blas`` still imports SciPy when it compiles
    code that calls BLAS. Nothing changes if numba's array implementations are already imported
    or laid out differently.
    """
    if "numba.np.arraymath" in sys.modules:
        return
    try:
        from numba.np import linalg
    except ImportError:
        return
    probe = getattr(linalg, "ensure_blas", None)
    if probe is None:
        return
    linalg.ensure_blas = lambda: None  # read once, by numba.np.arraymath's import-time probe
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        linalg.ensure_blas = probe


def ready(kernel: Deferred):
    """The kernel's numba dispatcher, compiled for its one signature (from the on-disk cache after
    the first time ever), which it then keeps: a call with wrongly typed arguments raises instead of
    silently compiling a second specialisation. Nothing is compiled at import, and numba is not
    imported (:mod:`learners.jit`): a process pays only for the kernels it runs. A kernel compiled
    ahead of time (:mod:`learners.aot`) is its compiled twin (:mod:`learners.compiled`), and needs no
    numba at all."""
    twin = compiled.kernel(kernel)  # compiled ahead of time: no numba in the process
    if twin is not None:
        return twin
    dispatcher = kernel.target
    if not dispatcher.signatures:
        _defer_numba_blas_probe()
        dispatcher.compile(parse_signature(kernel.signature))
        dispatcher.disable_compile()
        dispatcher.kernel = kernel  # passed to a driver, it stands for the kernel (_as_argument)
    return dispatcher


@functools.cache
def _address_type() -> type:
    """:class:`_Address`'s class, made with numba's protocol when numba is first needed."""
    from numba.core.types import FunctionType, WrapperAddressProtocol
    from numba.core.typing.typeof import typeof_impl

    class _Address(WrapperAddressProtocol):
        """A ready kernel as a first-class function argument, its address looked up once: numba
        looks up a dispatcher's address again on every call."""

        def __init__(self, kernel: Deferred) -> None:
            self._signature = parse_signature(kernel.signature)
            self.numba_type = FunctionType(self._signature)
            dispatcher = ready(kernel)
            result = dispatcher.get_compile_result(self._signature)
            self._address = result.library.get_pointer_to_function(result.fndesc.llvm_cfunc_wrapper_name)
            self.dispatcher = dispatcher  # keeps the compiled code alive

        def __wrapper_address__(self) -> int:
            return self._address

        def signature(self):
            return self._signature

    @typeof_impl.register(_Address)
    def _typeof_address(value: _Address, context) -> FunctionType:
        # numba's own typeof for the protocol builds a FunctionType, hashed and interned, for every
        # argument of every call; the type of a kernel never changes
        return value.numba_type

    return _Address


def _as_argument(value: Any) -> Any:
    """``value``, or, for a kernel or its ready dispatcher, the kernel's cached address as a
    first-class function."""
    kernel = value if isinstance(value, Deferred) else getattr(value, "kernel", None)
    if not isinstance(kernel, Deferred) or kernel.signature is None:
        return value
    address = kernel.__dict__.get("_address")
    if address is None:
        address = kernel._address = _address_type()(kernel)
    return address


class Lazy:
    """A compiled loop whose fixed signature takes kernels as first-class functions, compiled on
    its first call (so importing the library compiles nothing); ``nrt`` as for :func:`kernel`."""

    def __init__(self, fn, signature: str, *, nrt: bool = False) -> None:
        self._kernel = kernel(signature, nrt=nrt)(fn)
        self._ready = None
        self.__doc__, self.__name__ = fn.__doc__, fn.__name__

    def __call__(self, *args):
        if self._ready is None:
            self._ready = ready(self._kernel)
        return self._ready(*[_as_argument(a) for a in args])


@jit(inline="always")
def sparse_dot(w: np.ndarray, idx: np.ndarray, val: np.ndarray) -> float:
    """w · x for a sparse row x = (idx, val). O(nnz)."""
    s = 0.0
    for j in range(idx.size):
        s += w[idx[j]] * val[j]
    return s


@jit(inline="always")
def sq_norm(val: np.ndarray) -> float:
    """‖x‖² of a sparse row from its non-zero values. O(nnz)."""
    s = 0.0
    for j in range(val.size):
        s += val[j] * val[j]
    return s


@jit(inline="always")
def axpy(w: np.ndarray, alpha: float, idx: np.ndarray, val: np.ndarray) -> None:
    """w ← w + α x for a sparse row x, touching only idx. O(nnz)."""
    for j in range(idx.size):
        w[idx[j]] += alpha * val[j]


@kernel(ROUND_SIG)
def no_round(qp, qs):
    """after_round of a query without per-round state."""


@kernel(LABEL_SIG)
def no_label(qp, qs, mistake, weight):
    """after_label of a query without per-label state."""
