"""The element types a model declares at its edges, kept through the lowering.

MLIR's storage type of a quantized tensor is a signless integer (`!quant.uniform<u8:f32, ...>`
stores `i8`), and L2 / L3 compute on those signless bits.  At the model's edges the
signedness still matters: a uint8 model takes and returns values 0..255, which the
same eight bits read as int8 would turn negative.  So when `qnn-decompose` turns a public
function's unsigned quantized argument or result into its storage integers, it records
the model's element type on that argument / result:

    func.func @main(%0: tensor<1x32x32x3xi8> {qnn.element_type = ui8}) -> (tensor<1x10xi8> {qnn.element_type = ui8})

The body is unchanged (signless bits), the text stays valid for mlir-opt (a discardable
attribute holding a builtin type), and every runner of the module (the interpreter,
`qd-run`'s input reading, `tvm_bridge.compile.CompiledModel`) takes and returns arrays of
the declared dtype.  Signed (i8, i16, i32) and float edges need no mark: their L3 types
are the model's own.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerType, Signedness

from qdialect.dialects.quant import quantized_element_type
from qdialect.qparams import storage_dtype

#: the argument / result attribute naming the element type the model declares there
ELEMENT_TYPE = "qnn.element_type"


def _unsigned_edge(t) -> IntegerType | None:
    """`uiN` for a (tensor of) unsigned quantized type of N-bit storage, else None."""
    q = quantized_element_type(t)
    if q is None or q.signed:
        return None
    return IntegerType(q.storage_width.data, Signedness.UNSIGNED)


def _with(attrs: ArrayAttr | None, n: int, marks: list[IntegerType | None]) -> ArrayAttr | None:
    """`attrs` (one dictionary per position, or None) with ELEMENT_TYPE set where marked."""
    if not any(marks):
        return attrs
    old = list(attrs.data) if attrs is not None else [DictionaryAttr({}) for _ in range(n)]
    new = []
    for d, mark in zip(old, marks):
        if mark is not None:
            d = DictionaryAttr({**d.data, ELEMENT_TYPE: mark})
        new.append(d)
    return ArrayAttr(new)


def public(fn: func.FuncOp) -> bool:
    """Whether `fn` is an edge of the model (public: the entry, or one a user may call)."""
    return fn.sym_visibility is None or fn.sym_visibility.data == "public"


def mark_unsigned_edges(fn: func.FuncOp) -> None:
    """Record on a public `fn` (still with its quantized signature) the unsigned element type
    of each argument and result whose quantized storage is unsigned, before the signature
    becomes signless storage integers."""
    if not public(fn):
        return
    ins = [_unsigned_edge(t) for t in fn.function_type.inputs.data]
    outs = [_unsigned_edge(t) for t in fn.function_type.outputs.data]
    fn.arg_attrs = _with(fn.arg_attrs, len(ins), ins)
    fn.res_attrs = _with(fn.res_attrs, len(outs), outs)


class EdgeTypeError(ValueError):
    """A `qnn.element_type` mark that cannot describe its value (one line, for people)."""


def _marks(fn: func.FuncOp, attrs: ArrayAttr | None, types, what: str) -> list[np.dtype | None]:
    out: list[np.dtype | None] = []
    for i, t in enumerate(types):
        d = attrs.data[i] if attrs is not None and i < len(attrs.data) else None
        mark = d.data.get(ELEMENT_TYPE) if isinstance(d, DictionaryAttr) else None
        if mark is None:
            out.append(None)
            continue
        element = getattr(t, "element_type", t)
        if not (isinstance(mark, IntegerType) and isinstance(element, IntegerType)
                and mark.width.data == element.width.data and element.signedness.data == Signedness.SIGNLESS):
            raise EdgeTypeError(f"@{fn.sym_name.data} {what} {i}: {ELEMENT_TYPE} {mark} cannot describe its type "
                                f"{t} (it names the signed or unsigned integer type of the same width)")
        out.append(element_dtype(mark))
    return out


def element_dtype(t) -> np.dtype | None:
    """The numpy dtype holding values of the integer element type `t` (`ui8` -> uint8,
    `ui4` -> uint8, `i16` -> int16); None for anything else."""
    if not isinstance(t, IntegerType):
        return None
    width = t.width.data
    if not 1 <= width <= 64:
        return None
    return storage_dtype(width, t.signedness.data != Signedness.UNSIGNED)


def declared_dtypes(fn: func.FuncOp) -> tuple[list[np.dtype | None], list[np.dtype | None]]:
    """(per argument, per result) the dtype `fn`'s `qnn.element_type` marks declare, None
    where there is no mark (the value's own type is the model's).  EdgeTypeError for a mark
    that is not an integer type of its value's width (on a signless integer value)."""
    return (_marks(fn, fn.arg_attrs, fn.function_type.inputs.data, "argument"),
            _marks(fn, fn.res_attrs, fn.function_type.outputs.data, "result"))


def as_declared(arrays, dtypes) -> list[np.ndarray]:
    """`arrays` reinterpreted (same bits) as the declared dtypes, where one is declared."""
    out = []
    for a, d in zip(arrays, dtypes):
        if d is not None and a.dtype != d and a.dtype.itemsize == d.itemsize:
            a = a.view(d)
        out.append(a)
    return out
