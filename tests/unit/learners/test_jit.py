"""Compiled code declared without numba: made on first use, typed as its dispatcher inside compiled code."""

import json
import subprocess
import sys

import numpy as np
import pytest

from learners.jit import Deferred, jit, kernel, parse_signature, signature
from learners.kernels import ready


def test_importing_the_library_and_building_learners_imports_no_numba():
    probe = """
import json, sys
import consumer.cli, learners.datasets, learners.replay, learners.budget, learners.scaling
from learners import ALGORITHMS, make
learners = [make(name, n_features=8) for name in ALGORITHMS]
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite"))
print(json.dumps({"learners": len(learners), "loaded": loaded}))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    assert got["learners"] > 40 and got["loaded"] == []


@jit
def _twice(x):
    return 2.0 * x


@jit(inline="always")
def _plus_one(x):
    return x + 1.0


@jit
def _sum_of(a):
    s = 0.0
    for v in a:
        s += _plus_one(_twice(v))  # Deferred globals, typed as their dispatchers
    return s


def test_a_deferred_function_is_made_on_first_call_and_compiled_code_calls_others_directly():
    fresh = jit(lambda x: x * 3.0)
    assert isinstance(fresh, Deferred) and "not made yet" in repr(fresh)
    assert fresh(2.0) == 6.0 and "made" in repr(fresh)
    assert _sum_of(np.arange(4.0)) == sum(2.0 * v + 1.0 for v in range(4))
    assert _sum_of.__name__ == "_sum_of" and _sum_of.py_func(np.arange(4.0)) == 16.0


@jit(inline="always", cache=False)
def _element_plus_one(a, i):
    return a[i] + 1.0


@jit(cache=False)
def _element_twice(a, i):
    return 2.0 * a[i]


@jit(cache=False)
def _sum_with_helpers(a):
    s = 0.0
    for i in range(a.size):
        s += _element_plus_one(a, i) + _element_twice(a, i)
    return s


def _calls_to(dispatcher, helper: str) -> int:
    """How many calls to the global ``helper`` numba's typed IR of ``dispatcher`` still makes."""
    text = str(dispatcher.overloads[dispatcher.signatures[0]].type_annotation)
    holders = [line.split("=")[0].strip("# ").strip() for line in text.splitlines() if f"global({helper}:" in line]
    return sum(f"= call {holder}(" in text for holder in holders)


def test_a_helper_declared_inline_always_is_inlined_into_its_deferred_caller():
    from numba import njit

    a = np.arange(4.0)
    assert _sum_with_helpers(a) == sum(3.0 * v + 1.0 for v in range(4))
    made = _sum_with_helpers.target
    assert _calls_to(made, "_element_plus_one") == 0  # its body is the caller's, no call per use
    assert _calls_to(made, "_element_twice") == 1  # a helper not declared inline stays a call
    unresolved = njit(cache=False)(_sum_with_helpers.py_func)  # the Deferred left in the globals
    assert unresolved(a) == _sum_with_helpers(a) and _calls_to(unresolved, "_element_plus_one") == 1


def test_resolved_swaps_only_the_deferred_globals_a_function_names():
    from learners.jit import resolved

    def no_deferred(x):
        return np.sqrt(x)

    assert resolved(no_deferred) is no_deferred
    made = resolved(_sum_of.py_func)
    assert made.__code__ is _sum_of.py_func.__code__ and made.__name__ == "_sum_of"
    assert made.__globals__["_plus_one"] is _plus_one.target and made.__globals__["_twice"] is _twice.target
    assert _sum_of.py_func.__globals__["_plus_one"] is _plus_one  # the module's own globals untouched
    assert made(np.arange(4.0)) == 16.0


@jit(cache=False)
def _factorial(n):
    if n <= 1:
        return 1
    return n * _factorial(n - 1)


def test_a_function_that_calls_itself_is_made_once_and_recurses():
    assert _factorial(10) == 3_628_800


def test_the_ahead_of_time_exports_are_the_resolved_functions():
    from learners import aot, datasets

    function = aot.exports(["paa-1"])["datasets_parse"].function
    assert function.__code__ is datasets._parse.py_func.__code__
    assert function.__globals__["_number_token"] is datasets._number_token.target


def test_code_compiled_by_numba_itself_calls_a_deferred_function():
    from numba import njit

    @njit
    def outer(a):
        return _sum_of(a) + _twice(1.0)

    assert outer(np.ones(3)) == 3 * 3.0 + 2.0


def test_a_kernel_compiles_its_one_signature_and_refuses_others():
    @kernel(signature("float64", "float64[::1]", "int64"))
    def scaled_sum(a, k):
        return a.sum() * k

    compiled = ready(scaled_sum)
    assert compiled(np.ones(4), 3) == 12.0
    assert [str(s) for s in compiled.signatures] == ["(Array(float64, 1, 'C', False, aligned=True), int64)"]
    with pytest.raises(TypeError):
        compiled(np.ones(4, dtype=np.int32), 3)


def test_signature_strings():
    assert signature("none", "int32[::1]", "float64") == "none(int32[::1], float64)"
    sig = parse_signature(signature("UniTuple(int64, 2)", "Array(uint8, 1, 'C', readonly=True)"))
    assert str(sig.return_type) == "UniTuple(int64 x 2)" and sig.args[0].mutable is False


@jit(cache=False)
def _at(a, i):
    return a[i]


def _sum_through_calls(a):
    s = 0.0
    for i in range(a.size):
        s += _at(a, i)  # a call, not inlined: the array's reference count moves around it
    return s


def _refcounts(compiled) -> int:
    return sum(ir.count("NRT_incref") for ir in compiled.inspect_llvm().values())


def test_a_kernel_runs_without_the_runtime_unless_declared_so_counting_no_references_and_computing_the_same(
        monkeypatch):
    from learners import jit as jit_module

    monkeypatch.setattr(jit_module, "_DEFAULTS", {**jit_module._DEFAULTS, "cache": False})  # cached: no IR to read
    sig = signature("float64", "float64[::1]")
    with_runtime, without = ready(kernel(sig, nrt=True)(_sum_through_calls)), ready(kernel(sig)(_sum_through_calls))
    a = np.arange(5.0)
    assert with_runtime(a) == without(a) == 10.0
    assert _refcounts(with_runtime) > 0 and _refcounts(without) == 0


@jit(cache=False)
def _doubled_sum(a):
    scratch = np.empty(a.size)  # allocates: needs numba's runtime
    for i in range(a.size):
        scratch[i] = 2.0 * a[i]
    return scratch.sum()


def _through_an_allocating_helper(a):
    return _doubled_sum(a)


def test_a_helper_that_allocates_is_compiled_with_the_runtime_when_a_kernel_without_it_calls_it_first():
    # numba compiles a callee as its caller unless told otherwise: the helper would not compile
    made = ready(kernel(signature("float64", "float64[::1]"))(_through_an_allocating_helper))
    assert made(np.arange(4.0)) == 12.0


def test_a_kernel_that_allocates_without_declaring_the_runtime_fails_to_compile():
    @kernel(signature("float64", "int64"))
    def allocates(n):
        return np.ones(n).sum()

    from numba.core.errors import TypingError

    with pytest.raises(TypingError, match="Only accept returning of array passed into the function"):
        ready(allocates)


def test_the_ahead_of_time_compiler_compiles_the_kernels_declared_so_without_the_runtime():
    import numba.pycc.compiler as pycc_compiler
    from numba.core.compiler import Flags
    from numba.core.registry import cpu_target

    from learners import aot, datasets, evaluation
    from learners.jit import resolved

    made = aot.exports(["paa-1", "lr-ada-entropy"])
    assert {name for name, export in made.items() if export.nrt} == set()  # the reader's kernels and the drivers
    assert len(made) == len(aot.KERNELS) + 2 * len(aot.DRIVERS)
    assert datasets._parse.nrt is False and evaluation._twice_u.nrt is False
    sig = parse_signature(signature("float64", "float64[::1]"))
    function, other = resolved(_sum_through_calls), resolved(_sum_through_calls)

    def llvm(fn) -> str:
        flags = Flags()
        flags.nrt = flags.no_compile = True  # as pycc compiles every export
        return pycc_compiler.compile_extra(cpu_target.typing_context, cpu_target.target_context, fn, sig.args,
                                           sig.return_type, flags, locals={}).library.get_llvm_str()

    with aot._pycc_flags({function}):
        assert "NRT_incref" not in llvm(function) and "NRT_incref" in llvm(other)
        assert pycc_compiler.Flags().release_gil
    assert "NRT_incref" in llvm(function)  # pycc's compiler is as it was outside
    assert not pycc_compiler.Flags().release_gil
