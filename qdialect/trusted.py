"""Attributes built from parameters already known to be valid, without xDSL's checks.

Constructing an xDSL attribute runs its IRDL verifier (every parameter against
its constraint, recursively) and converts its arguments: a `TensorType` or an
`IntegerType` costs about 15 us, a per-axis `!quant.uniform` about 30 us, for
objects of a few fields.  Parsing and lowering build the same few shapes of
attribute again and again from parts they have just checked themselves (a type
text that matched the printed form, a container type for raw bytes of the right
length).  These helpers fill the fields directly.

Only for parameters that would pass the attribute's own verifier: nothing is
checked here.  Whatever comes from user input goes through the normal
constructors (or is checked before, as `quant._printed_parameters` does).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, IntAttr, NoneAttr, TensorType
from xdsl.ir import Data, ParametrizedAttribute

__all__ = ["attr", "data_attr", "tensor_type"]


def attr(cls: type[ParametrizedAttribute], *params) -> ParametrizedAttribute:
    """What `cls.new(params)` makes, without its `__post_init__` (the verifier)."""
    made = cls.__new__(cls)
    for (name, _), param in zip(cls.get_irdl_definition().parameters, params, strict=True):
        object.__setattr__(made, name, param)
    return made


def data_attr(cls: type[Data], data) -> Data:
    """What `cls(data)` makes for a `Data` attribute (one field, `data`), without its
    `__post_init__` (the verifier): `data` must already be what the verifier accepts."""
    made = cls.__new__(cls)
    object.__setattr__(made, "data", data)
    return made


_NONE = NoneAttr()
_TENSORS: dict[tuple, TensorType] = {}


def tensor_type(element, dims) -> TensorType:
    """`TensorType(element, dims)` for a valid element type and dimensions (ints, -1 for a
    dynamic one, as in a valid type); one shared object per (element object, dims) while
    that element is alive."""
    key = (id(element), tuple(dims))
    hit = _TENSORS.get(key)
    if hit is not None and hit.element_type is element:
        return hit
    if len(_TENSORS) >= 4096:
        _TENSORS.clear()
    made = _TENSORS[key] = attr(TensorType, ArrayAttr(tuple(IntAttr(d) for d in key[1])), element, _NONE)
    return made
