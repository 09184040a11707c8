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

__all__ = ["attr", "data_attr", "data_attrs", "int_attr", "tensor_type"]


_PARAMETER_NAMES: dict[type, tuple[str, ...]] = {}


def attr(cls: type[ParametrizedAttribute], *params) -> ParametrizedAttribute:
    """What `cls.new(params)` makes, without its `__post_init__` (the verifier)."""
    names = _PARAMETER_NAMES.get(cls)
    if names is None:
        names = _PARAMETER_NAMES[cls] = tuple(name for name, _ in cls.get_irdl_definition().parameters)
    made = cls.__new__(cls)
    for name, param in zip(names, params, strict=True):
        object.__setattr__(made, name, param)
    return made


def data_attr(cls: type[Data], data) -> Data:
    """What `cls(data)` makes for a `Data` attribute (one field, `data`), without its
    `__post_init__` (the verifier): `data` must already be what the verifier accepts."""
    made = cls.__new__(cls)
    object.__setattr__(made, "data", data)
    return made


def data_attrs(cls: type[Data], values) -> tuple:
    """`tuple(data_attr(cls, v) for v in values)`, without a call per value."""
    new, set_field = cls.__new__, object.__setattr__
    made = []
    for data in values:
        one = new(cls)
        set_field(one, "data", data)
        made.append(one)
    return tuple(made)


_NONE = NoneAttr()
_TENSORS: dict[tuple, TensorType] = {}
_DIMS: dict[int, IntAttr] = {}  # IntAttr(d) by d: see int_attr


def int_attr(d: int) -> IntAttr:
    """IntAttr(d), built (and verified) once per value: dimensions, zero points, widths and
    bounds recur, and an IntAttr is immutable."""
    made = _DIMS.get(d)
    if made is None:
        if len(_DIMS) >= 4096:
            _DIMS.clear()
        made = _DIMS[d] = IntAttr(d)
    return made


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
    # a tuple of IntAttrs is what ArrayAttr's verifier accepts
    made = _TENSORS[key] = attr(TensorType, data_attr(ArrayAttr, tuple([int_attr(d) for d in key[1]])), element, _NONE)
    return made
