"""`func.call` across the L1 -> L2 boundary: calls on quantized tensors become calls on
their stored integers.

`qnn-partition` outlines regions into functions called from `main`; when
`qnn-decompose` converts every function's signature to storage integers, each
call must follow.  `ConvertCallToStorage` rewrites a call whose operands or
results are quantized into the same call on storage integer types, bridged by
`quant.scast` on both sides (the casts cancel against the decomposed
producers and consumers).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from qdialect.dialects.quant import StorageCastOp, quantized_element_type


def storage_of(t):
    """The integer tensor type holding a quantized tensor type's stored values (others unchanged)."""
    q = quantized_element_type(t)
    if q is None:
        return t
    return TensorType(q.storage_type, t.get_shape())


class ConvertCallToStorage(RewritePattern):
    """func.call on quantized tensors -> func.call on their storage integers."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter, /):
        types = [v.type for v in (*op.arguments, *op.res)]
        if all(quantized_element_type(t) is None for t in types):
            return
        new_ops = []
        args = []
        for v in op.arguments:
            st = storage_of(v.type)
            if st == v.type:
                args.append(v)
                continue
            cast = StorageCastOp(v, st)
            new_ops.append(cast)
            args.append(cast.result)
        call = func.CallOp(op.callee, args, [storage_of(r.type) for r in op.res])
        new_ops.append(call)
        results = []
        for old, new in zip(op.res, call.res):
            if old.type == new.type:
                results.append(new)
                continue
            back = StorageCastOp(new, old.type)
            new_ops.append(back)
            results.append(back.result)
        rewriter.replace(op, new_ops, results)
