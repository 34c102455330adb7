"""Asking the cache for the model's coordinates of a row before the row is scored.

A stream's rows name coordinates all over a wide model (2²⁰ weights are 8 MB, past the core's
cache), so each score waits on memory for its row's weights. The replay drivers ask for the
weights of the row :data:`AHEAD` rounds on while they score this one (LLVM's ``prefetch``, a hint
that changes no value), so that row's loads find them in the cache.
"""

from __future__ import annotations

from learners.jit import intrinsic, jit

__all__ = ["AHEAD", "ROWS", "prefetch", "prefetch_row"]

AHEAD = 2  # rounds between a row's prefetch and its score
ROWS = 4  # of the state's rows: w (or μ and Σ's diagonal, or the first classes' weights)


@intrinsic
def prefetch(typingctx, state, r, c):
    """A hint that ``state[r, c]`` will be read soon (``llvm.prefetch``: read, kept in every cache
    level); no value changes and nothing is checked."""
    from llvmlite import ir
    from numba.core import cgutils, types

    sig = types.none(state, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        at = cgutils.get_item_pointer2(context, builder, array.data, cgutils.unpack_tuple(builder, array.shape),
                                       cgutils.unpack_tuple(builder, array.strides), signature.args[0].layout,
                                       [args[1], args[2]], wraparound=False)
        byte = ir.IntType(8).as_pointer()
        hint = ir.FunctionType(ir.VoidType(), [byte, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        call = cgutils.get_or_insert_function(builder.module, hint, "llvm.prefetch.p0i8")
        flag = ir.IntType(32)
        builder.call(call, [builder.bitcast(at, byte), flag(0), flag(3), flag(1)])  # read, keep, data
        return context.get_dummy_value()

    return sig, codegen


@jit(inline="always")
def prefetch_row(S, indptr, indices, i):
    """Prefetch the coordinates of row ``i`` in the first :data:`ROWS` rows of the state ``S``."""
    rows = min(S.shape[0], ROWS)
    for k in range(indptr[i], indptr[i + 1]):
        c = indices[k]
        for r in range(rows):
            prefetch(S, r, c)
