"""Fuzz the textual IR: mutated L0..L3 modules fed to `qd-opt` (and the valid ones to `qd-run`).

    python -m tests.fuzz.ir                       # short mode: 2,500 cases, seed 0
    python -m tests.fuzz.ir --cases 100000        # long mode (random seed, printed)
    QD_FUZZ_CASES=100000 python -m tests.fuzz.ir  # the same through the environment

Corpus: every chunk of `filecheck/**/*.mlir` (split at `// -----`), the
hand-written seeds in `tests/fuzz/seeds/`, the zoo models as printed by
`qd-import`, and one small function per compute op of each zoo model.
Mutations (one to three per case): token swaps, deletions, duplications and
replacements; truncation; numeric literals replaced by extremes (0, -0.0,
NaN, inf, 1e-45, 2^31, 2^63, 2^64, 30-digit integers ...); targeted edits
of `!quant.uniform` types (scale 0 / NaN / inf / subnormal, zero point at
and past the storage bounds, storage widths i1..i64, expressed types, axis
out of range, per-axis lists one too long or short); tensor shapes (0,
999999999, 2^31, 2^63, `?`, rank 0, rank 40); attribute values (arrays,
knob strings, clamp bounds); hex constants (odd length, bad digits, wrong
byte count); type swaps and line splices between seeds.

Targets, in this process for speed (`transforms.opt.main(argv)` with stdin
redirected): plain `qd-opt` (parse, verify, print); on success the printed
text must parse back to the same text; a share of the valid cases also goes
through `qd-opt -p qnn-overflow-check` and one other pass in turn (canonicalize,
decompose, lower-to-float, raise, partition, to-l3), and through `qd-run --backend interp`
(the reference interpreter on seeded random inputs).  A third of the cases
are generated instead of mutated (`tests/fuzz/gen.py`: small valid graphs
with extreme quantization parameters, half of them mutated once more), and
every accepted generated case runs on the interpreter too.  Every
`--subprocess-every` cases one goes through the real `qd-opt` executable.
See `tests/fuzz/harness.py` for the contract and the report.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from tests.fuzz.gen import random_module
from tests.fuzz.harness import (
    CASE_TIMEOUT,
    ROOT,
    RSS_GROWTH_LIMIT,
    CaseTimeout,
    Finding,
    Report,
    common_arguments,
    contract_violation,
    finish,
    fuzz_limits,
    frame_signature,
    limit_address_space,
    peak_rss,
    pick_seed,
    run_main,
    time_limit,
)

SHORT_CASES = 2500
SEEDS_DIR = Path(__file__).resolve().parent / "seeds"
ZOO = ROOT / "models" / "zoo"

# ----- corpus ---------------------------------------------------------------------------------


def filecheck_chunks() -> list[tuple[str, str]]:
    out = []
    for path in sorted((ROOT / "filecheck").rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for i, chunk in enumerate(text.split("// -----")):
            body = "\n".join(ln for ln in chunk.splitlines() if not ln.lstrip().startswith("//"))
            if body.strip():
                out.append((f"{path.relative_to(ROOT)}#{i}", body))
    return out


def seed_files() -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted(SEEDS_DIR.glob("*.mlir"))]


_OP_LINE = re.compile(r"^\s*(%[\w.$-]+(?:, %[\w.$-]+)*|%[\w.$-]+:\d+) = (qnn\.[a-z_0-9]+) (.*)$")
_SSA = re.compile(r"%[\w.$-]+")


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def per_op_functions(text: str, stem: str) -> list[tuple[str, str]]:
    """One small function per compute op of a printed module: its non-constant
    operands become arguments, its constants come along."""
    consts: dict[str, str] = {}
    out = []
    for line in text.splitlines():
        m = _OP_LINE.match(line)
        if m is None:
            continue
        results, name, rest = m.groups()
        if name == "qnn.constant":
            consts[results] = line.strip()
            continue
        # operands: up to the attribute dict or the colon of the signature
        head = re.split(r" \{| : \(", rest, maxsplit=1)[0]
        operands = _SSA.findall(head)
        sig = rest.rsplit(" : (", 1)
        if len(sig) != 2:
            continue
        in_types = _split_top_level(sig[1].split(") -> ", 1)[0])
        if len(in_types) != len(operands):
            continue
        args, body = [], []
        for v, t in zip(operands, in_types):
            if v in consts:
                body.append("  " + consts[v])
            elif f"{v}: " not in " ".join(args):
                args.append(f"{v}: {t}")
        out.append((f"zoo:{stem}:{name}", "func.func @main(" + ", ".join(args) + ") {\n"
                    + "\n".join(dict.fromkeys(body)) + ("\n" if body else "") + f"  {line.strip()}\n  func.return\n}}\n"))
    return out


def zoo_texts() -> list[tuple[str, str]]:
    from qdialect.importer.cli import module_text
    from qdialect.importer.tflite import TFLiteImportError, import_tflite

    out = []
    for path in sorted(ZOO.glob("*.tflite")):
        try:
            text = module_text(import_tflite(path.read_bytes(), name=path.stem))
        except TFLiteImportError:
            continue
        out.append((f"zoo:{path.stem}", text))
        out.extend(per_op_functions(text, path.stem))
    return out


def corpus() -> list[tuple[str, str]]:
    return filecheck_chunks() + seed_files() + zoo_texts()


# ----- mutations ------------------------------------------------------------------------------

_TOKEN = re.compile(
    r'\s+|"(?:[^"\\]|\\.)*"|%[\w.$-]+|@[\w.$-]+|![\w.]+|\^[\w.$-]+|#[\w.$-]+'
    r"|0x[0-9a-fA-F]+|[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+|[0-9]+"
    r"|[A-Za-z_][\w.$]*|->|::|.",
    re.S,
)
_FLOATS = [
    "0.0", "-0.0", "nan", "inf", "-inf", "0x7FF8000000000000", "0x7FF0000000000000", "0xFFF0000000000000",
    "0x0000000000000001", "0x0000000000000000", "0xFFFFFFFFFFFFFFFFFF", "1e-45", "1.0e-45", "1.4e-45", "7.0e-46",
    "1.17549435e-38", "5.0e-324", "1.0e-320", "3.4028235e38", "3.4028236e38", "3.5e38", "1.0e308",
    "1.7976931348623157e308", "1.0e309", "65504.0", "65520.0", "6.0e-8", "2.0e-8", "1.0", "-1.0", "0.5",
    "1.0e-10", "4.6566128730773926e-10", "2147483648.0", "1.0e38",
]
_INTS = [
    "0", "-1", "1", "2", "3", "7", "8", "-8", "-9", "127", "128", "-128", "-129", "255", "256", "32767", "32768",
    "-32768", "-32769", "65535", "65536", "2147483647", "2147483648", "-2147483648", "-2147483649",
    "4294967295", "4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "99999999999999999999999999999",
]
_DIMS = ["0", "1", "2", "3", "999999999", "2147483647", "2147483648", "4294967296",
         "9223372036854775807", "9223372036854775808", "?", "65536"]
_STORAGE = ["i1", "i2", "i4", "i8", "i16", "i31", "i32", "i33", "i64", "u1", "u2", "u4", "u8", "u16", "u32",
            "u33", "u64", "si8", "ui8", "f32", "i0", "i999999999999"]
_EXPRESSED = ["f16", "bf16", "f32", "f64", "i8", "index", "f8E4M3FN", "tf32"]
_STRINGS = ['"tflite"', '"single"', '"half_even"', '"half_up"', '"litert"', '"nearest"', '"accumulator"',
            '"output"', '"i16"', '"i32"', '"i64"', '"i8"', '"wrap"', '"saturate"', '""', '"\\00"',
            '"' + "x" * 300 + '"']
_ATTR_NAMES = ["strides", "dilations", "padding", "kernel", "axes", "axis", "perm", "paddings", "begin", "end",
               "act_min", "act_max", "rounding", "bias", "acc", "acc_overflow", "beta", "alpha", "keep_dims",
               "block_size", "pad_value", "adj_x", "adj_y", "align_corners", "half_pixel_centers", "bogus"]
_ATTR_VALUES = ["array<i64: 1, 1>", "array<i64: 0, 0>", "array<i64: -1, -1>", "array<i64>",
                "array<i64: 1, 1, 1, 1>", "array<i64: 9223372036854775807, 1>", "array<i64: 999999999, 999999999>",
                "array<i32: 1, 1>", "array<i64: 0, 1, 2, 3>", "array<i64: 3, 2, 1, 0, 0>", "array<i64: 1, 2, 3>",
                "0 : i64", "-1 : i64", "1 : i64", "2 : i64", "-9223372036854775808 : i64",
                "9223372036854775807 : i64", "5 : i32", "true", "false", "1.0 : f64", "0.0 : f64",
                "nan : f64", "-1.0e300 : f64", '"tflite"', '"i16"', '"saturate"', "unit", "[1, 2]", "{}"]


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _nonspace(toks: list[str]) -> list[int]:
    return [i for i, t in enumerate(toks) if not t.isspace()]


def m_token_swap(rng: random.Random, text: str, ctx) -> str:
    toks = tokens(text)
    idx = _nonspace(toks)
    if len(idx) < 2:
        return text
    a, b = rng.sample(idx, 2)
    toks[a], toks[b] = toks[b], toks[a]
    return "".join(toks)


def m_token_delete(rng, text, ctx):
    toks = tokens(text)
    idx = _nonspace(toks)
    if not idx:
        return text
    i = rng.choice(idx)
    n = rng.choice([1, 1, 1, 2, 3, 8])
    del toks[i : i + n]
    return "".join(toks)


def m_token_duplicate(rng, text, ctx):
    toks = tokens(text)
    idx = _nonspace(toks)
    if not idx:
        return text
    i = rng.choice(idx)
    n = rng.choice([1, 2, 5])
    toks[i:i] = toks[i : i + n]
    return "".join(toks)


def m_token_replace(rng, text, ctx):
    toks = tokens(text)
    idx = _nonspace(toks)
    if not idx:
        return text
    i = rng.choice(idx)
    toks[i] = rng.choice(ctx["vocab"])
    return "".join(toks)


def m_truncate(rng, text, ctx):
    if not text:
        return text
    return text[: rng.randrange(len(text))]


def m_char(rng, text, ctx):
    if not text:
        return text
    i = rng.randrange(len(text))
    ch = rng.choice(["\x00", "\xff", "\u2028", "{", "}", "<", ">", "(", ")", ",", ":", '"', "\\", "\n", "%", "!",
                     "#", "^", "@", "é", "\ud800"])
    if rng.random() < 0.5:
        return text[:i] + ch + text[i:]
    return text[:i] + ch + text[i + 1 :]


def m_numeric(rng, text, ctx):
    toks = tokens(text)
    nums = [i for i, t in enumerate(toks) if t[:1].isdigit()]
    if not nums:
        return text
    for _ in range(rng.choice([1, 1, 2, 3])):
        i = rng.choice(nums)
        floaty = "." in toks[i] or "e" in toks[i].lower() and not toks[i].lower().startswith("0x")
        pool = _FLOATS if (floaty and rng.random() < 0.8) else _INTS
        toks[i] = rng.choice(pool)
        if rng.random() < 0.2 and i > 0 and toks[i - 1] != "-":
            toks[i] = "-" + toks[i]
    return "".join(toks)


def _find_close(text: str, start: int) -> int:
    """Index just past the '>' closing the '<' at text[start]."""
    depth = 0
    for j in range(start, min(len(text), start + 20000)):
        if text[j] == "<":
            depth += 1
        elif text[j] == ">" and text[j - 1] != "-":
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


_QTYPE = re.compile(r"^(?P<st>[iu]\d+)(?P<rng><-?\d+:-?\d+>)?:(?P<ex>[a-z0-9]+)(?::(?P<ax>-?\d+))?, (?P<params>.*)$", re.S)


def random_qtype(rng: random.Random) -> str:
    st = rng.choice(_STORAGE[:17])
    rngtxt = ""
    if rng.random() < 0.3:
        rngtxt = f"<{rng.choice(_INTS)}:{rng.choice(_INTS)}>"
    ex = rng.choice(_EXPRESSED)
    def pair():
        s = rng.choice(_FLOATS)
        return s if rng.random() < 0.3 else f"{s}:{rng.choice(_INTS)}"
    if rng.random() < 0.5:
        return f"!quant.uniform<{st}{rngtxt}:{ex}, {pair()}>"
    ax = rng.choice(["0", "1", "2", "3", "4", "-1", "9999999999"])
    n = rng.choice([0, 1, 2, 3, 4, 16])
    return f"!quant.uniform<{st}{rngtxt}:{ex}:{ax}, {{{', '.join(pair() for _ in range(n))}}}>"


def m_qtype(rng, text, ctx):
    starts = [m.start() for m in re.finditer(r"!quant\.uniform<", text)]
    if not starts:
        return text
    s = rng.choice(starts)
    open_at = s + len("!quant.uniform")
    e = _find_close(text, open_at)
    if e < 0:
        return text
    inner = text[open_at + 1 : e - 1]
    m = _QTYPE.match(inner)
    if m is None or rng.random() < 0.15:
        return text[:s] + random_qtype(rng) + text[e:]
    st, rtxt, ex, ax, params = m.group("st"), m.group("rng") or "", m.group("ex"), m.group("ax"), m.group("params")
    what = rng.choice(["storage", "range", "expressed", "axis", "scale", "zp", "zp_bound", "len", "per_axis"])
    if what == "storage":
        st = rng.choice(_STORAGE)
    elif what == "range":
        rtxt = rng.choice(["", f"<{rng.choice(_INTS)}:{rng.choice(_INTS)}>", "<-127:127>", "<0:0>", "<1:0>"])
    elif what == "expressed":
        ex = rng.choice(_EXPRESSED)
    elif what == "axis":
        ax = rng.choice([None, "0", "1", "2", "3", "4", "7", "-1", "-2", "2147483648", "99999999999999999999"])
        if ax is not None and not params.startswith("{"):
            params = "{" + params + "}"
        elif ax is None and params.startswith("{"):
            params = params[1:-1].split(",")[0]
    elif what in ("scale", "zp", "zp_bound"):
        pairs = params.strip("{}").split(",")
        k = rng.randrange(len(pairs))
        sc, _, zp = pairs[k].strip().partition(":")
        if what == "scale":
            sc = rng.choice(_FLOATS)
        elif what == "zp":
            zp = rng.choice(_INTS)
        else:
            from qdialect.qparams import storage_bounds
            try:
                width = int(st[1:])
                lo, hi = storage_bounds(width, st[0] == "i") if 1 <= width <= 64 else (0, 0)
            except ValueError:
                lo, hi = -128, 127
            if rtxt:
                lo, hi = (int(v) for v in rtxt.strip("<>").split(":"))
            zp = str(rng.choice([lo - 1, lo, hi, hi + 1]))
        pairs[k] = f" {sc}:{zp}" if zp else f" {sc}"
        params = ",".join(pairs).strip()
        if ax is not None:
            params = "{" + params.strip("{}").strip() + "}"
    elif what == "len" and params.startswith("{"):
        pairs = params.strip("{}").split(",")
        if rng.random() < 0.5 and len(pairs) > 1:
            pairs.pop(rng.randrange(len(pairs)))
        else:
            pairs.append(pairs[-1])
        params = "{" + ",".join(pairs) + "}"
    elif what == "per_axis" and not params.startswith("{"):
        ax = rng.choice(["0", "1", "3"])
        params = "{" + ", ".join([params] * rng.choice([1, 2, 3, 4])) + "}"
    new = f"!quant.uniform<{st}{rtxt}:{ex}{':' + ax if ax is not None else ''}, {params}>"
    return text[:s] + new + text[e:]


_TENSOR_DIMS = re.compile(r"tensor<((?:(?:[0-9]+|\?)x)*)")


def m_shape(rng, text, ctx):
    spans = list(_TENSOR_DIMS.finditer(text))
    if not spans:
        return text
    m = rng.choice(spans)
    dims = [d for d in m.group(1).split("x") if d]
    what = rng.choice(["one", "one", "one", "add", "drop", "rank0", "rank40", "all_huge", "zero"])
    if what == "one" and dims:
        dims[rng.randrange(len(dims))] = rng.choice(_DIMS)
    elif what == "add":
        dims.insert(rng.randrange(len(dims) + 1), rng.choice(["1", "2", "0", "999999999"]))
    elif what == "drop" and dims:
        dims.pop(rng.randrange(len(dims)))
    elif what == "rank0":
        dims = []
    elif what == "rank40":
        dims = [rng.choice(["1", "2"]) for _ in range(rng.choice([33, 40, 64]))]
    elif what == "all_huge":
        dims = [rng.choice(["999999999", "2147483648", "9223372036854775807"]) for _ in dims or [0, 0]]
    elif what == "zero" and dims:
        dims = ["0" if rng.random() < 0.5 else d for d in dims]
    new = "tensor<" + "".join(d + "x" for d in dims)
    return text[: m.start()] + new + text[m.end() :]


_ATTR_DICT = re.compile(r" \{([a-z_]+ = [^{}]*)\} :")


def m_attr(rng, text, ctx):
    spans = list(_ATTR_DICT.finditer(text))
    what = rng.random()
    if not spans or what < 0.25:
        # add an attribute dict to a qnn op that has none
        ops = [m for m in re.finditer(r"(= qnn\.[a-z_0-9]+ [^:{\n]*?) : \(", text)]
        if not ops:
            return text
        m = rng.choice(ops)
        attr = f"{rng.choice(_ATTR_NAMES)} = {rng.choice(_ATTR_VALUES)}"
        return text[: m.end(1)] + " {" + attr + "}" + text[m.end(1) :]
    m = rng.choice(spans)
    items = _split_top_level(m.group(1))
    if not items:
        return text
    k = rng.randrange(len(items))
    name, _, value = items[k].partition(" = ")
    choice = rng.random()
    if choice < 0.4:
        items[k] = f"{name} = {rng.choice(_ATTR_VALUES)}"
    elif choice < 0.6 and value.startswith("array<"):
        vals = [rng.choice(_INTS[:12] + ["999999999", "-999999999", "9223372036854775807"])
                for _ in range(rng.choice([0, 1, 2, 3, 4, 5, 8]))]
        items[k] = f"{name} = array<i64{': ' + ', '.join(vals) if vals else ''}>"
    elif choice < 0.7 and value.startswith('"'):
        items[k] = f"{name} = {rng.choice(_STRINGS)}"
    elif choice < 0.8:
        items.pop(k)
    elif choice < 0.9:
        items.append(f"{rng.choice(_ATTR_NAMES)} = {rng.choice(_ATTR_VALUES)}")
    else:
        items[k] = f"{rng.choice(_ATTR_NAMES)} = {value}"
    return text[: m.start(1)] + ", ".join(items) + text[m.end(1) :]


_HEX = re.compile(r'dense<"0x([0-9A-Fa-f]*)">')


def m_hex(rng, text, ctx):
    spans = list(_HEX.finditer(text))
    if not spans:
        return text
    m = rng.choice(spans)
    h = m.group(1)
    what = rng.choice(["drop_byte", "add_byte", "odd", "bad_digit", "empty", "double", "extreme"])
    if what == "drop_byte":
        h = h[:-2]
    elif what == "add_byte":
        h = h + "7F"
    elif what == "odd":
        h = h + "F"
    elif what == "bad_digit" and h:
        i = rng.randrange(len(h))
        h = h[:i] + rng.choice("GZ- ") + h[i + 1 :]
    elif what == "empty":
        h = ""
    elif what == "double":
        h = h * 2
    elif what == "extreme" and h:
        i = rng.randrange(0, len(h) // 2) * 2
        h = h[:i] + rng.choice(["80", "7F", "FF", "00"]) + h[i + 2 :]
        if rng.random() < 0.5:
            h = rng.choice(["80", "FF", "7F"]) * (len(h) // 2)
    return text[: m.start(1)] + h + text[m.end(1) :]


def m_type_swap(rng, text, ctx):
    spans = []
    for m in re.finditer(r"tensor<", text):
        e = _find_close(text, m.start() + len("tensor"))
        if e > 0:
            spans.append((m.start(), e))
    if len(spans) < 2:
        return text
    (a0, a1), (b0, b1) = sorted(rng.sample(spans, 2))
    if a1 > b0:
        return text
    return text[:a0] + text[b0:b1] + text[a1:b0] + text[a0:a1] + text[b1:]


def m_splice(rng, text, ctx):
    other = rng.choice(ctx["seeds"])[1].splitlines()
    lines = text.splitlines()
    if not other or not lines:
        return text
    a = rng.randrange(len(other))
    n = rng.choice([1, 1, 2, 5])
    at = rng.randrange(len(lines) + 1)
    lines[at:at] = other[a : a + n]
    return "\n".join(lines)


def m_line_delete(rng, text, ctx):
    lines = text.splitlines()
    if not lines:
        return text
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


MUTATORS = [
    (m_token_swap, 3), (m_token_delete, 2), (m_token_duplicate, 1), (m_token_replace, 3), (m_truncate, 2),
    (m_char, 1), (m_numeric, 5), (m_qtype, 8), (m_shape, 6), (m_attr, 6), (m_hex, 3), (m_type_swap, 2),
    (m_splice, 1), (m_line_delete, 1),
]


MILD_MUTATORS = [m_numeric, m_qtype, m_qtype, m_attr, m_shape, m_hex]


def mutate(rng: random.Random, text: str, ctx) -> tuple[str, list[str]]:
    fns, weights = zip(*MUTATORS)
    names = []
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        fn = rng.choices(fns, weights)[0]
        text = fn(rng, text, ctx)
        names.append(fn.__name__[2:])
    return text, names


# ----- targets --------------------------------------------------------------------------------


def _qd_opt_main():
    from transforms.opt import main

    return main


def _roundtrip(text: str) -> str | None:
    """Problem text when printed output does not parse back to itself."""
    from qdialect.diagnostics import parse_module
    from qdialect.importer.cli import module_text
    from transforms.opt import QdOptMain

    ctx = _roundtrip.ctx if hasattr(_roundtrip, "ctx") else QdOptMain(args=[]).ctx
    _roundtrip.ctx = ctx
    try:
        again = module_text(parse_module(ctx, text, "printed"))
    except Exception as e:  # noqa: BLE001
        return f"printed output does not parse back: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    if again.strip() != text.strip():
        a, b = again.strip().splitlines(), text.strip().splitlines()
        for x, y in zip(a, b):
            if x != y:
                return f"printing is not stable: {y[:150]!r} -> {x[:150]!r}"
        return "printing is not stable (line count)"
    return None


def _diagnose_internal(argv: list[str], text: str):
    """Re-run a case that ended in an internal error without qd-opt's catch-all, for its traceback."""
    from transforms.opt import QdOptMain

    cap = run_main(lambda a: QdOptMain(description="", args=a).run(), argv, text.encode("utf-8", "surrogatepass"))
    return cap


def _diagnose_qd_run(text: str):
    """Re-run a qd-run case that ended in an internal error without its catch-all, for the traceback."""
    import numpy as np

    from tvm_bridge.run_cli import _run, build_parser

    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False, encoding="utf-8",
                                     errors="surrogatepass") as f:
        f.write(text)
        path = f.name

    def run(argv):
        args = build_parser().parse_args(argv)
        args.argv = argv
        with np.errstate(all="ignore"):
            return _run(args)

    try:
        return run_main(run, [path, "--backend", "interp", "--compare", "none"])
    finally:
        os.unlink(path)


def _has_pass(name: str) -> bool:
    from transforms.universe import PASSES

    return name in PASSES


def run_case(text: str, report: Report, save: Path | None, *, extra: dict, case_no: int,
             generated: bool = False) -> None:
    data = text.encode("utf-8", "surrogatepass")
    main = _qd_opt_main()
    rss0 = peak_rss()

    def record(kind, target, detail, where="?"):
        report.outcome("finding")
        report.add(Finding(kind, target, detail, where), save, data, ".mlir")

    try:
        with time_limit(CASE_TIMEOUT):
            cap = run_main(main, [], data)
            bad = contract_violation(cap, "qd-opt")
            if bad is not None:
                where = "?"
                if bad[0] in ("internal-error", "exit-3"):
                    again = _diagnose_internal([], text)
                    where = frame_signature(again.escaped)
                elif cap.escaped is not None:
                    where = frame_signature(cap.escaped)
                record(bad[0], "qd-opt", bad[1], where)
                return
            if cap.rc != 0:
                report.outcome("rejected")
                report.message(cap.stderr.strip(), {"tool": "qd-opt", "argv": [], "text": text, "size": len(data)})
                return
            report.outcome("accepted")
            problem = _roundtrip(cap.stdout)
            if problem is not None:
                record("roundtrip", "qd-opt", problem)
                return
            # the first pipeline on every pass_every-th accepted case, the others in turn beside it
            pipelines = extra["pipelines"][:1]
            if len(extra["pipelines"]) > 1:
                others = extra["pipelines"][1:]
                pipelines.append(others[(case_no // max(1, extra["pass_every"])) % len(others)])
            for pipeline in pipelines:
                if case_no % extra["pass_every"]:
                    break
                cap = run_main(main, ["-p", pipeline], data)
                bad = contract_violation(cap, "qd-opt")
                if bad is not None:
                    where = "?"
                    if bad[0] in ("internal-error", "exit-3"):
                        where = frame_signature(_diagnose_internal(["-p", pipeline], text).escaped)
                    record(bad[0], f"qd-opt -p {pipeline}", bad[1], where)
                    return
                report.outcome(f"pass {pipeline}: {'ok' if cap.rc == 0 else 'rejected'}")
                if cap.rc != 0:
                    diagnostic = "\n".join(ln for ln in cap.stderr.strip().splitlines() if not ln.startswith("remark: "))
                    report.message(diagnostic,
                                   {"tool": "qd-opt", "argv": ["-p", pipeline], "text": text, "size": len(data)})
            if (generated or case_no % extra["run_every"] == 0) and "func.func" in text:
                _run_interp(text, report, record)
    except CaseTimeout as e:
        record("hang", "qd-opt", str(e))
    except MemoryError as e:
        record("memory", "qd-opt", f"MemoryError: {e}")
    grown = peak_rss() - rss0
    if grown > RSS_GROWTH_LIMIT:
        record("memory", "qd-opt", f"peak RSS grew by {grown >> 20} MB")


def _run_interp(text: str, report: Report, record) -> None:
    from tvm_bridge.run_cli import main as qd_run

    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False, encoding="utf-8",
                                     errors="surrogatepass") as f:
        f.write(text)
        path = f.name
    try:
        cap = run_main(qd_run, [path, "--backend", "interp", "--compare", "none"])
    finally:
        os.unlink(path)
    # qd-run's progress lines ("  .. ") precede its report or its one diagnostic line
    cap.stderr = "\n".join(ln for ln in cap.stderr.splitlines() if not ln.startswith("  .. "))
    bad = contract_violation(cap, "qd-run")
    if bad is not None:
        where = frame_signature(cap.escaped)
        if bad[0] in ("internal-error", "exit-3"):
            where = frame_signature(_diagnose_qd_run(text).escaped)
        record(bad[0], "qd-run --backend interp", bad[1], where)
        return
    report.outcome(f"qd-run: {'ran' if cap.rc == 0 else 'rejected'}")
    if cap.rc != 0:
        report.message(cap.stderr.strip().replace(path, "MODEL.mlir"),
                       {"tool": "qd-run", "text": text, "size": len(text)})


def run_subprocess_case(text: str, report: Report, save: Path | None) -> None:
    """The real `qd-opt` executable: the same contract, and the same verdict as in-process."""
    exe = Path(sys.executable).parent / "qd-opt"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "transforms.opt"]
    data = text.encode("utf-8", "surrogatepass")
    try:
        proc = subprocess.run(cmd, input=data, capture_output=True, timeout=60, cwd=ROOT)
    except subprocess.TimeoutExpired:
        report.add(Finding("hang", "qd-opt (subprocess)", "more than 60 s"), save, data, ".mlir")
        return
    from tests.fuzz.harness import Captured

    cap = Captured(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"))
    bad = contract_violation(cap, "qd-opt")
    report.outcome("subprocess")
    if bad is not None:
        report.add(Finding(bad[0], "qd-opt (subprocess)", bad[1]), save, data, ".mlir")


# ----- driver ---------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.ir", description=__doc__.split("\n\n")[0])
    common_arguments(p, SHORT_CASES)
    p.add_argument("--passes", default=None,
                   help="comma-separated pipelines to also run on accepted cases: the first on every "
                        "--pass-every-th, the others in turn beside it (default: qnn-overflow-check, then "
                        "every other registered pass)")
    p.add_argument("--pass-every", type=int, default=3, help="run the pipelines on every N-th accepted case")
    p.add_argument("--run-every", type=int, default=4, help="run qd-run on every N-th accepted mutated case")
    p.add_argument("--gen-share", type=float, default=0.35,
                   help="share of cases that are generated valid graphs (tests/fuzz/gen.py), half of "
                        "them with one more mutation; all accepted ones also run on the interpreter")
    args = p.parse_args(argv)
    short = args.cases <= SHORT_CASES and args.time_budget is None
    seed = pick_seed(args, short)
    if args.subprocess_every is None:
        args.subprocess_every = 250 if short else 1000
    limit_address_space()
    fuzz_limits()
    warnings.simplefilter("ignore")  # numpy's overflow warnings from extreme scales; stderr is checked per case
    started = time.perf_counter()
    rng = random.Random(seed)
    seeds = corpus()
    vocab = sorted({t for _, s in seeds for t in tokens(s) if not t.isspace() and len(t) < 80})
    weights = [1.0 / math.sqrt(max(200, len(s))) for _, s in seeds]
    if args.passes is None:
        pipelines = [p for p in ("qnn-overflow-check", "qnn-canonicalize", "qnn-decompose", "qnn-lower-to-float",
                                 "qnn-raise", "qnn-partition{target=ethos-u}", "qnn-partition{target=cmsis-nn}",
                                 "qnn-to-l3") if _has_pass(p.split("{")[0])]
    else:
        pipelines = [p for p in args.passes.split(",") if p]
    ctx = {"vocab": vocab, "seeds": seeds}
    extra = {"pipelines": pipelines, "pass_every": args.pass_every, "run_every": args.run_every}
    report = Report("ir", seed)
    if not args.quiet:
        print(f"ir: {len(seeds)} seeds, {args.cases} cases, seed {seed}", flush=True)
    for case_no in range(args.cases):
        if args.time_budget is not None and time.perf_counter() - started > args.time_budget:
            break
        generated = rng.random() < args.gen_share
        if generated:
            try:
                text = random_module(rng)
            except Exception:  # noqa: BLE001 - parameters the builder itself refuses
                report.outcome("generator refused")
                continue
            if rng.random() < 0.5:
                fn = rng.choice(MILD_MUTATORS)
                text = fn(rng, text, ctx)
        else:
            name, base = rng.choices(seeds, weights)[0]
            text, _ = mutate(rng, base, ctx)
        report.cases += 1
        run_case(text, report, args.save, extra=extra, case_no=case_no, generated=generated)
        if args.subprocess_every and case_no % args.subprocess_every == 0:
            run_subprocess_case(text, report, args.save)
        if not args.quiet and case_no and case_no % 5000 == 0:
            print(f"  {case_no} cases, {time.perf_counter() - started:.0f} s, "
                  f"{len(report.findings)} distinct findings", flush=True)
    return finish(report, args, started)


if __name__ == "__main__":
    sys.exit(main())
