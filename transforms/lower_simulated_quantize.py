"""`qnn-lower-simulated-quantize`: qnn.simulated_quantize -> the casts it stands for.

    %y = qnn.simulated_quantize %x {qtype = !q} : (tensor<8xf32>) -> tensor<8xf32>

becomes

    %q = quant.qcast %x : tensor<8xf32> to tensor<8x!q>
    %y = quant.dcast %q : tensor<8x!q> to tensor<8xf32>

(`qnn.quantize {rounding = P}` in the qcast's place when the rounding is
not `tflite`, so the integers are those the op's profile gives).  A
`passthrough` op is its operand.  A simulated accumulator that saturates
(`acc = i16 | i32`, `acc_overflow = "saturate"`) is the same pair through the
type with the accumulator's width as storage.  Ops that wrap (the default
for `acc`) or simulate an i64 accumulator have no cast spelling and stay,
each reported as a remark on stderr (`remarks=false` silences them); the
interpreter runs them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from qdialect.dialects import qnn
from qdialect.dialects.quant import DequantizeCastOp, QuantizeCastOp, UniformQuantizedType


@dataclass
class LowerSimulatedQuantize(RewritePattern):
    remarks: list[str] = field(default_factory=list)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: qnn.SimulatedQuantizeOp, rewriter: PatternRewriter, /):
        x = op.operands[0]
        if op.attr("mode", "quantize") == "passthrough":
            rewriter.replace(op, [], [x])
            return
        q = op.qtype
        acc = op.attr("acc", None)
        if acc is not None:
            if op.attr("acc_overflow", "wrap") != "saturate" or acc == "i64":
                self.remarks.append(
                    f"qnn.simulated_quantize with acc = {acc}, acc_overflow = {op.attr('acc_overflow', 'wrap')} "
                    "has no quant.qcast spelling; left for the interpreter"
                )
                return
            q = UniformQuantizedType(acc, q.expressed_type, np.atleast_1d(q.scale_array()).tolist(),
                                     np.atleast_1d(q.zero_point_array()).tolist(), q.axis)
        qtype = TensorType(q, list(x.type.get_shape()))
        rounding = op.attr("rounding", "tflite")
        if rounding == "tflite":
            cast = QuantizeCastOp(x, qtype)
        else:
            cast = qnn.QuantizeOp([x], [qtype], {"rounding": rounding})
        back = DequantizeCastOp(cast.results[0], x.type)
        rewriter.replace(op, [cast, back])


@dataclass(frozen=True)
class QnnLowerSimulatedQuantizePass(ModulePass):
    """Rewrites qnn.simulated_quantize into quant.qcast / quant.dcast (see the module docstring)."""

    name = "qnn-lower-simulated-quantize"

    remarks: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = LowerSimulatedQuantize()
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
        if self.remarks:
            for remark in pattern.remarks:
                print(f"remark: qnn-lower-simulated-quantize: {remark}", file=sys.stderr)
