"""The lowering passes depend on shared pieces, not on each other (issue 25, part 7b).

`qnn-decompose` (transforms/decompose.py), its float-edge decompositions
(transforms/float_edges.py) and `qnn-lower-to-linalg` (transforms/lower_to_linalg.py)
used to import each other in a circle (some imports inside functions).  Now each
builds on transforms/emit.py (Emitter and IR helpers), transforms/linalg_build.py
(Lowering, Scalar, affine maps) and transforms/decompositions.py (the registry), and
none of the three imports another: checked on the source (every import, at any
depth) and by importing each in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PASSES = ("transforms.decompose", "transforms.float_edges", "transforms.lower_to_linalg")
SHARED = ("transforms.emit", "transforms.linalg_build", "transforms.decompositions")


def imported_modules(module: str) -> set[str]:
    """Every `transforms.*` module `module`'s source imports, at module level or inside functions."""
    tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("transforms.")}
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "transforms":
                found |= {f"transforms.{a.name}" for a in node.names}
            elif node.module.startswith("transforms."):
                found.add(node.module)
    return found


@pytest.mark.parametrize("module", PASSES)
def test_no_pass_imports_another(module):
    others = set(PASSES) - {module}
    assert not imported_modules(module) & others, f"{module} imports {sorted(imported_modules(module) & others)}"


@pytest.mark.parametrize("module", SHARED)
def test_shared_pieces_import_no_pass(module):
    assert not imported_modules(module) & set(PASSES), f"{module} imports {sorted(imported_modules(module) & set(PASSES))}"


def test_the_six_modules_import_without_a_cycle():
    graph = {m: imported_modules(m) & set(PASSES + SHARED) for m in PASSES + SHARED}
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> None:
        assert m not in path, "import cycle: " + " -> ".join([*path[path.index(m):], m])
        if m in done:
            return
        for n in sorted(graph[m]):
            visit(n, [*path, m])
        done.add(m)

    for m in graph:
        visit(m, [])


@pytest.mark.parametrize("module, absent", [
    ("transforms.float_edges", ("transforms.decompose", "transforms.lower_to_linalg")),
    ("transforms.lower_to_linalg", ("transforms.decompose", "transforms.float_edges")),
    ("transforms.emit", PASSES),
    ("transforms.linalg_build", PASSES),
])
def test_importing_one_loads_no_other_pass(module, absent):
    code = (f"import sys, {module}\n"
            f"print(' '.join(m for m in {list(absent)!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "", f"importing {module} loads {proc.stdout.strip()}"


def test_the_old_names_are_the_shared_objects():
    """Code that reads the helpers through the passes' modules gets the same objects."""
    from qdialect.dialects.quant import DequantizeCastOp, QuantizeCastOp
    from transforms import decompose, decompositions, emit, float_edges, linalg_build, lower_to_linalg

    for name in ("Emitter", "Unsupported", "int_tensor", "storage_type", "pad_op", "scalar_constant", "dense_constant"):
        assert getattr(decompose, name) is getattr(emit, name), name
    for name in ("Lowering", "Scalar", "amap", "dim", "identity", "broadcast_map", "I64", "reduce", "signed_max"):
        assert getattr(lower_to_linalg, name) is getattr(linalg_build, name), name
    assert decompose.DECOMPOSITIONS is decompositions.DECOMPOSITIONS
    decompositions.load_extensions()
    assert decompositions.DECOMPOSITIONS[QuantizeCastOp] is float_edges._qcast
    assert decompositions.DECOMPOSITIONS[DequantizeCastOp] is float_edges._dcast
