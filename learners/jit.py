"""Compiled code declared without importing numba.

:func:`jit`, :func:`kernel` and :func:`intrinsic` stand for numba's ``njit`` (with this library's
defaults: cached on disk, the GIL released) and ``numba.extending.intrinsic``. Each returns a
:class:`Deferred`: the Python function with its options, made into numba's object on first use.
Numba is imported then, not when a module of :mod:`learners` is: importing the library, building
learners and reading their parameters costs no numba.

Inside a compiled function a :class:`Deferred` is typed as the numba object it stands for (numba
reads an object's ``_numba_type_``), so compiled code calls the dispatcher directly, inlines it
where its options say so, and numba's on-disk cache works as for any dispatcher. Signatures are
numba's signature strings (``"float64(int32[::1], float64[::1])"``), parsed when first needed.
"""

from __future__ import annotations

import functools
import importlib
import threading
import types
from collections.abc import Callable
from typing import Any

__all__ = ["Deferred", "external", "intrinsic", "jit", "kernel", "parse_signature", "resolved", "signature"]

# every compiled function of the library: on-disk cache (a process loads, not compiles, what an
# earlier one compiled) and the GIL released (the LIBSVM reader parses beside the replay)
_DEFAULTS = {"cache": True, "nogil": True}
_lock = threading.RLock()


def _numba() -> Any:
    import numba

    return numba


class Deferred:
    """A numba object (a dispatcher, an intrinsic) declared now and made on first use.

    Called from Python it calls that object. ``signature``: a kernel's one signature, as numba's
    signature string (:func:`learners.kernels.ready` compiles exactly it).
    """

    def __init__(self, make: Callable[[], Any], py_func: Callable | None, signature: str | None = None,
                 name: str = "") -> None:
        self._make = make
        self._target: Any = None
        self.py_func = py_func
        self.signature = signature
        self.nrt = True  # compiled with numba's runtime (see kernel)
        if py_func is not None:
            functools.update_wrapper(self, py_func)
        else:
            self.__name__ = self.__qualname__ = name

    @property
    def target(self) -> Any:
        """The numba object, made (numba imported) on first use."""
        if self._target is None:
            with _lock:
                if self._target is None:
                    _numba()
                    self._target = self._make()
        return self._target

    def __call__(self, *args: Any) -> Any:
        return self.target(*args)

    @property
    def _numba_type_(self) -> Any:
        """Numba's type for this object, which is its target's: numba reads it when compiled code
        refers to a :class:`Deferred` (whoever imported numba)."""
        from numba.core.dispatcher import Dispatcher
        from numba.core.registry import cpu_target

        target = self.target
        typing = cpu_target.typing_context
        if not isinstance(target, Dispatcher):  # an intrinsic registers its typing when made
            typing.refresh()
        return typing.resolve_value_type(target)

    def __repr__(self) -> str:
        state = "made" if self._target is not None else "not made yet"
        return f"<Deferred {getattr(self, '__module__', '?')}.{self.__name__} ({state})>"


def jit(fn: Callable | None = None, /, **options: Any) -> Any:
    """``numba.njit`` with this library's defaults, deferred: ``@jit`` or ``@jit(inline="always")``.

    Compiled with numba's runtime (it may allocate) unless ``_nrt=False``, whoever calls it first:
    left unset, numba would compile it as its first caller is, so a helper first called by a
    :func:`kernel` could not allocate and would be cached on disk so. Inlined, it is its caller's
    code."""

    def wrap(f: Callable) -> Deferred:
        settings = {**_DEFAULTS, "_nrt": True, **options}
        return Deferred(lambda: _numba().njit(**settings)(resolved(f)), f)

    return wrap if fn is None else wrap(fn)


def kernel(signature: str, *, nrt: bool = False) -> Callable[[Callable], Deferred]:
    """A compiled function with one fixed signature (numba's signature string), deferred.

    Compiled without numba's runtime: each array it is handed, sliced or passed on is not
    reference-counted (an atomic add and subtract wherever numba moves it), a large share of the
    LIBSVM parser's time and of a replay loop's. A kernel that allocates fails to compile so,
    and says ``nrt=True``. The helpers it calls are compiled as they are declared, so one that
    allocates a scratch array of its own still may, as long as it returns none.
    """

    def wrap(f: Callable) -> Deferred:
        options = {**_DEFAULTS, "_nrt": nrt}
        made = Deferred(lambda: _numba().njit(**options)(resolved(f)), f, signature)
        made.nrt = nrt
        return made

    return wrap


def resolved(f: Callable) -> Callable:
    """``f`` as numba must see it: the same code, with each :class:`Deferred` it names replaced by
    its numba object (made now). Numba inlines a helper declared ``inline="always"`` only when its
    inlining pass, which runs before typing, finds the dispatcher itself among the caller's globals:
    left a :class:`Deferred`, the helper is compiled as a call, paying a call and the reference
    counts of its array arguments each time (a third of the LIBSVM parser's time)."""
    made = {name: value.target for name in _global_names(f.__code__)
            if isinstance(value := f.__globals__.get(name), Deferred) and value.py_func is not f}  # not itself:
    # a recursive function is being made now, and numba types its call to itself as for any Deferred
    if not made:
        return f
    out = types.FunctionType(f.__code__, {**f.__globals__, **made}, f.__name__, f.__defaults__, f.__closure__)
    out.__kwdefaults__, out.__doc__ = f.__kwdefaults__, f.__doc__
    return out


def _global_names(code: types.CodeType) -> set[str]:
    """The names ``code`` (and any code nested in it) may look up among its globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def intrinsic(fn: Callable) -> Deferred:
    """``numba.extending.intrinsic``, deferred: ``fn`` imports what it uses of numba itself."""
    return Deferred(lambda: importlib.import_module("numba.extending").intrinsic(fn), fn)


def external(module: str, name: str) -> Deferred:
    """Numba's own compiled function ``module.name``, imported on first use."""
    return Deferred(lambda: getattr(importlib.import_module(module), name), None, name=name)


def signature(result: str, *args: str) -> str:
    """Numba's signature string of a function of ``args`` returning ``result``."""
    return f"{result}({', '.join(args)})"


@functools.cache
def parse_signature(text: str) -> Any:
    """Numba's signature object for a signature string."""
    from numba.core import sigutils, typing

    args, result = sigutils.normalize_signature(text)
    return typing.signature(result, *args)
