"""Differential tests of qdialect.reference.movement against LiteRT
(BUILTIN_REF for "tflite", the default interpreter for "litert")."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qdialect.qparams import QParams
from qdialect.reference import movement as mv
from tests.tflite_writer import TensorSpec, build_single_op_model, run_tflite

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DTYPES = {"int8": ("i8", np.int8), "uint8": ("u8", np.uint8), "int16": ("i16", np.int16)}


def f32s(lo, hi):
    return st.floats(lo, hi).map(lambda v: float(np.float32(v)))


def assert_exact(ours, expected, what):
    assert ours.shape == expected.shape, f"{what}: shape {ours.shape} != {expected.shape}"
    assert ours.dtype == expected.dtype, f"{what}: dtype {ours.dtype} != {expected.dtype}"
    bad = np.argwhere(ours != expected)
    assert bad.size == 0, (
        f"{what}: {len(bad)}/{expected.size} differ; first at {bad[:5].tolist()}: "
        f"ours {ours[tuple(bad[:5].T)].tolist()} vs litert {expected[tuple(bad[:5].T)].tolist()}"
    )


def random_stored(rng, dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)


def i32(values):
    a = np.asarray(values, dtype=np.int32)
    return TensorSpec(a.shape, "int32", data=a)


@st.composite
def tensor_case(draw, min_rank=1, max_rank=4, max_dim=5, dtypes=("int8", "int8", "uint8", "int16")):
    rank = draw(st.integers(min_rank, max_rank))
    dtype = draw(st.sampled_from(list(dtypes)))
    zp = 0 if dtype == "int16" else draw(st.integers(-100, 100)) + (128 if dtype == "uint8" else 0)
    return dict(
        shape=tuple(draw(st.lists(st.integers(1, max_dim), min_size=rank, max_size=rank))),
        dtype=dtype,
        scale=draw(f32s(0.005, 0.5)),
        zp=zp,
        seed=draw(st.integers(0, 2**32 - 1)),
    )


def setup(case):
    storage, npdt = DTYPES[case["dtype"]]
    rng = np.random.default_rng(case["seed"])
    x = random_stored(rng, npdt, case["shape"])
    q = QParams.make(case["scale"], case["zp"], storage=storage)
    spec = TensorSpec(case["shape"], case["dtype"], case["scale"], case["zp"])
    return rng, x, q, spec


def out_spec(case, shape):
    return TensorSpec(tuple(shape), case["dtype"], case["scale"], case["zp"])


def check_both(model, inputs, ours_fn, what):
    ref = run_tflite(model, inputs)
    lit = run_tflite(model, inputs, reference=False)
    ours_ref = ours_fn("tflite")
    ours_lit = ours_fn("litert")
    if not isinstance(ours_ref, list):
        ours_ref, ours_lit = [ours_ref], [ours_lit]
    assert len(ours_ref) == len(ref)
    for i, (o, r) in enumerate(zip(ours_ref, ref)):
        assert_exact(o, r, f"{what}[{i}] tflite")
    for i, (o, r) in enumerate(zip(ours_lit, lit)):
        assert_exact(o, r, f"{what}[{i}] litert")


# ---------------------------------------------------------------------------


@SETTINGS
@given(tensor_case(), st.data())
def test_pad(case, data):
    rng, x, q, spec = setup(case)
    pads = [(data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))) for _ in case["shape"]]
    out_shape = [d + a + b for d, (a, b) in zip(case["shape"], pads)]
    v2 = data.draw(st.booleans())
    if v2:
        info = np.iinfo(DTYPES[case["dtype"]][1])
        const = data.draw(st.integers(int(info.min), int(info.max)))
        cspec = TensorSpec((), case["dtype"], case["scale"], case["zp"],
                           data=np.array(const, DTYPES[case["dtype"]][1]))
        model = build_single_op_model("PADV2", [spec, i32(pads), cspec], [out_spec(case, out_shape)])
    else:
        const = None
        model = build_single_op_model("PAD", [spec, i32(pads)], [out_spec(case, out_shape)])
    check_both(model, [x], lambda r: mv.pad(x, x_q=q, out_q=q, paddings=pads, constant=const, rounding=r),
               "PADV2" if v2 else "PAD")


@SETTINGS
@given(tensor_case(), st.data())
def test_reshape_squeeze_transpose(case, data):
    rng, x, q, spec = setup(case)
    rank = len(case["shape"])
    # reshape: a random factorization-preserving new shape (flatten then split off a 1)
    new_shape = [int(np.prod(case["shape"]))] + [1] * data.draw(st.integers(0, 2))
    model = build_single_op_model("RESHAPE", [spec, i32(new_shape)], [out_spec(case, new_shape)],
                                  {"new_shape": new_shape})
    check_both(model, [x], lambda r: mv.reshape(x, x_q=q, out_q=q, new_shape=new_shape, rounding=r), "RESHAPE")
    # transpose
    perm = data.draw(st.permutations(list(range(rank))))
    out_shape = [case["shape"][p] for p in perm]
    model = build_single_op_model("TRANSPOSE", [spec, i32(perm)], [out_spec(case, out_shape)])
    check_both(model, [x], lambda r: mv.transpose(x, x_q=q, out_q=q, perm=perm, rounding=r), "TRANSPOSE")
    # squeeze (insert size-1 axes first via the input shape)
    shape1 = list(case["shape"])
    for _ in range(data.draw(st.integers(1, 2))):
        shape1.insert(data.draw(st.integers(0, len(shape1))), 1)
    x1 = x.reshape(shape1)
    ones = [i for i, d in enumerate(shape1) if d == 1]
    dims = data.draw(st.one_of(st.just([]), st.lists(st.sampled_from(ones), min_size=1, unique=True)))
    dims_signed = [d - len(shape1) if data.draw(st.booleans()) else d for d in dims]
    sq = [d for i, d in enumerate(shape1) if (d != 1 if not dims else i not in dims)]
    spec1 = TensorSpec(tuple(shape1), case["dtype"], case["scale"], case["zp"])
    model = build_single_op_model("SQUEEZE", [spec1], [out_spec(case, sq)], {"squeeze_dims": dims_signed})
    check_both(model, [x1], lambda r: mv.squeeze(x1, x_q=q, out_q=q, axes=dims_signed, rounding=r), "SQUEEZE")


@SETTINGS
@given(tensor_case(), st.data())
def test_slice_and_split(case, data):
    rng, x, q, spec = setup(case)
    begin, size = [], []
    for d in case["shape"]:
        b = data.draw(st.integers(0, d - 1))
        s = data.draw(st.one_of(st.just(-1), st.integers(1, d - b)))
        begin.append(b)
        size.append(s)
    out_shape = [d - b if s == -1 else s for d, b, s in zip(case["shape"], begin, size)]
    model = build_single_op_model("SLICE", [spec, i32(begin), i32(size)], [out_spec(case, out_shape)])
    check_both(model, [x], lambda r: mv.slice(x, x_q=q, out_q=q, begin=begin, size=size, rounding=r), "SLICE")
    # split along an axis whose size has a divisor
    rank = len(case["shape"])
    axis = data.draw(st.integers(-rank, rank - 1))
    n = case["shape"][axis % rank]
    k = data.draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
    piece = list(case["shape"])
    piece[axis % rank] = n // k
    model = build_single_op_model("SPLIT", [i32(np.array(axis)), spec], [out_spec(case, piece)] * k,
                                  {"num_splits": k})
    check_both(model, [x], lambda r: mv.split(x, x_q=q, out_q=q, axis=axis, num_splits=k, rounding=r), "SPLIT")


@SETTINGS
@given(tensor_case(max_dim=7), st.data())
def test_strided_slice(case, data):
    rng, x, q, spec = setup(case)
    rank = len(case["shape"])
    begin, end, strides = [], [], []
    for d in case["shape"]:
        begin.append(data.draw(st.integers(-d - 1, d + 1)))
        end.append(data.draw(st.integers(-d - 1, d + 1)))
        strides.append(data.draw(st.sampled_from([1, 1, 2, 3, -1, -2])))
    bm = data.draw(st.integers(0, (1 << rank) - 1))
    em = data.draw(st.integers(0, (1 << rank) - 1))
    sm = data.draw(st.integers(0, (1 << rank) - 1))
    # shrink axes need an in-range begin
    for a in range(rank):
        if sm & (1 << a):
            begin[a] = data.draw(st.integers(-case["shape"][a], case["shape"][a] - 1))
            strides[a] = 1
            bm &= ~(1 << a)
    kw = dict(begin=begin, end=end, strides=strides, begin_mask=bm, end_mask=em, shrink_axis_mask=sm)
    ours = mv.strided_slice(x, x_q=q, out_q=q, **kw)
    model = build_single_op_model(
        "STRIDED_SLICE", [spec, i32(begin), i32(end), i32(strides)], [out_spec(case, ours.shape)],
        {"begin_mask": bm, "end_mask": em, "shrink_axis_mask": sm},
    )
    check_both(model, [x], lambda r: mv.strided_slice(x, x_q=q, out_q=q, rounding=r, **kw), "STRIDED_SLICE")


@SETTINGS
@given(tensor_case(max_dim=6), st.data())
def test_strided_slice_ellipsis_new_axis(case, data):
    """ellipsis_mask / new_axis_mask (as tf.strided_slice spells x[..., None, 1:3]):
    specs with at most one ellipsis, new axes anywhere (also on the ellipsis'
    own bit, where TFLite ignores them), shrink and begin/end masks on the
    named axes."""
    rng, x, q, spec = setup(case)
    rank = len(case["shape"])
    with_ellipsis = data.draw(st.booleans())
    # TFLite's ellipsis must cover at least one axis (see strided_slice_effective)
    named = data.draw(st.integers(0, rank - 1 if with_ellipsis else rank))
    kinds = ["axis"] * named + ["new"] * data.draw(st.integers(0 if with_ellipsis else 1, 2))
    kinds = data.draw(st.permutations(kinds))
    if with_ellipsis:
        kinds.insert(data.draw(st.integers(0, len(kinds))), "ellipsis")
    count = len(kinds)
    ellipsis = sum(1 << k for k, t in enumerate(kinds) if t == "ellipsis")
    new_axis = sum(1 << k for k, t in enumerate(kinds) if t == "new")
    if ellipsis and data.draw(st.booleans()):
        new_axis |= ellipsis
    begin = [data.draw(st.integers(-7, 7)) for _ in kinds]
    end = [data.draw(st.integers(-7, 7)) for _ in kinds]
    strides = [data.draw(st.sampled_from([1, 1, 2, -1, -2])) for _ in kinds]
    bm = data.draw(st.integers(0, (1 << count) - 1))
    em = data.draw(st.integers(0, (1 << count) - 1))
    sm = data.draw(st.integers(0, (1 << count) - 1)) & ~ellipsis
    # which input axis each spec entry lands on (spec k appears as begin 100 + k)
    eff = mv.strided_slice_effective(case["shape"], [100 + k for k in range(count)], end, strides,
                                     ellipsis_mask=ellipsis, new_axis_mask=new_axis)
    for n, b in zip(eff[0], eff[1]):
        k = b - 100
        if k >= 0 and sm & (1 << k):  # a shrunk axis needs an in-range begin
            begin[k] = data.draw(st.integers(-n, n - 1))
            strides[k] = 1
            bm &= ~(1 << k)
    kw = dict(begin=begin, end=end, strides=strides, begin_mask=bm, end_mask=em, shrink_axis_mask=sm,
              ellipsis_mask=ellipsis, new_axis_mask=new_axis)
    ours = mv.strided_slice(x, x_q=q, out_q=q, **kw)
    model = build_single_op_model(
        "STRIDED_SLICE", [spec, i32(begin), i32(end), i32(strides)], [out_spec(case, ours.shape)],
        {"begin_mask": bm, "end_mask": em, "shrink_axis_mask": sm,
         "ellipsis_mask": ellipsis, "new_axis_mask": new_axis},
    )
    check_both(model, [x], lambda r: mv.strided_slice(x, x_q=q, out_q=q, rounding=r, **kw),
               "STRIDED_SLICE")


def test_strided_slice_ellipsis_new_axis_by_hand():
    """x[..., None, 1] and x[None, 1:, ...] on a 2x3x4 tensor, expected values by hand."""
    x = np.arange(24, dtype=np.int8).reshape(2, 3, 4)
    q = QParams.make(0.5, 0, storage="i8")
    # spec: ellipsis, new axis, index 1 (shrink)
    got = mv.strided_slice(x, x_q=q, out_q=q, begin=[0, 0, 1], end=[0, 0, 2], strides=[1, 1, 1],
                           shrink_axis_mask=0b100, ellipsis_mask=0b001, new_axis_mask=0b010)
    assert got.shape == (2, 3, 1)
    assert got.reshape(-1).tolist() == [1, 5, 9, 13, 17, 21]
    # spec: new axis, 1: on axis 0, ellipsis
    got = mv.strided_slice(x, x_q=q, out_q=q, begin=[0, 1, 0], end=[0, 0, 0], strides=[1, 1, 1],
                           end_mask=0b010, ellipsis_mask=0b100, new_axis_mask=0b001)
    assert got.shape == (1, 1, 3, 4)
    assert got.reshape(-1).tolist() == list(range(12, 24))


@SETTINGS
@given(tensor_case(), st.data())
def test_gather(case, data):
    rng, x, q, spec = setup(case)
    rank = len(case["shape"])
    axis = data.draw(st.integers(-rank, rank - 1))
    n = case["shape"][axis % rank]
    idx_shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=0, max_size=2)))
    idx = rng.integers(0, n, size=idx_shape).astype(np.int32)
    ax = axis % rank
    out_shape = case["shape"][:ax] + idx_shape + case["shape"][ax + 1:]
    model = build_single_op_model("GATHER", [spec, i32(idx)], [out_spec(case, out_shape)],
                                  {"axis": axis, "batch_dims": 0})
    check_both(model, [x], lambda r: mv.gather(x, idx, x_q=q, out_q=q, axis=axis, rounding=r), "GATHER")


@SETTINGS
@given(tensor_case(min_rank=2, max_rank=4), st.data())
def test_gather_batch_dims(case, data):
    """batch_dims b >= 1 (also spelled negatively, from the indices' rank):
    params and indices share their first b dimensions."""
    rng, x, q, spec = setup(case)
    rank = len(case["shape"])
    ax = data.draw(st.integers(1, rank - 1))
    b = data.draw(st.integers(1, ax))
    extra = tuple(data.draw(st.lists(st.integers(1, 4), min_size=0, max_size=2)))
    idx_shape = case["shape"][:b] + extra
    idx = rng.integers(0, case["shape"][ax], size=idx_shape).astype(np.int32)
    axis = ax - rank if data.draw(st.booleans()) else ax
    batch_dims = b - len(idx_shape) if data.draw(st.booleans()) else b
    out_shape = case["shape"][:ax] + extra + case["shape"][ax + 1:]
    model = build_single_op_model("GATHER", [spec, i32(idx)], [out_spec(case, out_shape)],
                                  {"axis": axis, "batch_dims": batch_dims})
    check_both(model, [x], lambda r: mv.gather(x, idx, x_q=q, out_q=q, axis=axis,
                                               batch_dims=batch_dims, rounding=r), "GATHER")


@SETTINGS
@given(tensor_case(min_rank=4, max_rank=4, max_dim=4, dtypes=("int8", "uint8")), st.integers(2, 3), st.booleans())
def test_space_depth_shuffles(case, bs, to_depth):
    storage, npdt = DTYPES[case["dtype"]]
    rng = np.random.default_rng(case["seed"])
    n, h, w, c = case["shape"]
    q = QParams.make(case["scale"], case["zp"], storage=storage)
    if to_depth:
        shape = (n, h * bs, w * bs, c)
        out_shape = (n, h, w, c * bs * bs)
        op, fn = "SPACE_TO_DEPTH", mv.space_to_depth
    else:
        shape = (n, h, w, c * bs * bs)
        out_shape = (n, h * bs, w * bs, c)
        op, fn = "DEPTH_TO_SPACE", mv.depth_to_space
    x = random_stored(rng, npdt, shape)
    model = build_single_op_model(op, [TensorSpec(shape, case["dtype"], case["scale"], case["zp"])],
                                  [out_spec(case, out_shape)], {"block_size": bs})
    check_both(model, [x], lambda r: fn(x, x_q=q, out_q=q, block_size=bs, rounding=r), op)


@st.composite
def resize_case(draw):
    case = draw(tensor_case(min_rank=4, max_rank=4, max_dim=6))
    mode = draw(st.sampled_from(["legacy", "align_corners", "half_pixel"]))
    return dict(case, size=(draw(st.integers(1, 13)), draw(st.integers(1, 13))),
                align_corners=mode == "align_corners", half_pixel=mode == "half_pixel")


@SETTINGS
@given(resize_case(), st.sampled_from(["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"]))
def test_resize(case, op):
    rng, x, q, spec = setup(case)
    n, h, w, c = case["shape"]
    oh, ow = case["size"]
    model = build_single_op_model(
        op, [spec, i32([oh, ow])], [out_spec(case, (n, oh, ow, c))],
        {"align_corners": case["align_corners"], "half_pixel_centers": case["half_pixel"]},
    )
    fn = mv.resize_bilinear if op == "RESIZE_BILINEAR" else mv.resize_nearest_neighbor
    check_both(model, [x], lambda r: fn(x, x_q=q, out_q=q, size=(oh, ow), align_corners=case["align_corners"],
                                        half_pixel_centers=case["half_pixel"], rounding=r), op)


@SETTINGS
@given(tensor_case(dtypes=("int8", "uint8", "int16")), st.data())
def test_concatenation(case, data):
    """int8 / int16: TFLite requires equal parameters; uint8 inputs may differ
    (ConcatenationWithScaling rescales them)."""
    storage, npdt = DTYPES[case["dtype"]]
    rng = np.random.default_rng(case["seed"])
    rank = len(case["shape"])
    axis = data.draw(st.integers(-rank, rank - 1))
    k = data.draw(st.integers(1, 4))
    xs, specs, qs = [], [], []
    for _ in range(k):
        shape = list(case["shape"])
        shape[axis % rank] = data.draw(st.integers(1, 4))
        if case["dtype"] == "uint8" and data.draw(st.booleans()):
            s, z = data.draw(f32s(0.005, 0.5)), data.draw(st.integers(0, 255))
        else:
            s, z = case["scale"], case["zp"]
        xs.append(random_stored(rng, npdt, shape))
        specs.append(TensorSpec(tuple(shape), case["dtype"], s, z))
        qs.append(QParams.make(s, z, storage=storage))
    out_shape = list(case["shape"])
    out_shape[axis % rank] = sum(x.shape[axis % rank] for x in xs)
    q = QParams.make(case["scale"], case["zp"], storage=storage)
    model = build_single_op_model("CONCATENATION", specs, [out_spec(case, out_shape)], {"axis": axis})
    check_both(model, xs, lambda r: mv.concatenation(xs, xs_q=qs, out_q=q, axis=axis, rounding=r), "CONCATENATION")


def test_resize_bilinear_int8_hand_computed():
    # 1x1x2x1 -> 1x1x3x1 legacy mode: width scale_10 = (1024*2 + 1) // 3 = 683
    # x = 0: pos 0 -> value 10 exactly.  x = 1: pos 683, x0 = 0, x1 = 1, dx = 683:
    #   (10 * (1024 - 683) + 20 * 683) * 1024 = 17070 * 1024 = 17479680; + 2^19 -> // 2^20 = 17.17 -> 17
    # x = 2: pos 1366, x0 = 1, x1 = min(2, 1) = 1 -> 20
    q = QParams.make(0.1, 0)
    x = np.array([10, 20], np.int8).reshape(1, 1, 2, 1)
    out = mv.resize_bilinear(x, x_q=q, out_q=q, size=(1, 3))
    assert out.ravel().tolist() == [10, 17, 20]


def test_move_requantizes_when_params_differ():
    # reshape from (0.5, zp 0) to (0.25, zp 1): real 2 -> stored 2*v + 1
    x = np.array([[1, -2]], np.int8)
    out = mv.reshape(x, x_q=QParams.make(0.5, 0), out_q=QParams.make(0.25, 1), new_shape=[2])
    assert out.tolist() == [3, -3]
