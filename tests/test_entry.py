"""One rule picks the model's function in every tool (qdialect/entry.py): the named function,
else @main, else the only public function with a body.  The interpreter, the TVM translation,
the quantizer and the TFLite exporter must agree on it and refuse the same modules."""

from __future__ import annotations

import numpy as np
import pytest

from qdialect.diagnostics import parse_module
from qdialect.entry import EntryError, entry_function
from qdialect.interpreter import Interpreter, InterpreterError
from transforms.opt import QdOptMain

BODY = "(%x: tensor<2xi8>) -> tensor<2xi8> {\n  %y = arith.addi %x, %x : tensor<2xi8>\n  func.return %y : tensor<2xi8>\n}\n"
IDENT = "(%x: tensor<2xi8>) -> tensor<2xi8> {\n  func.return %x : tensor<2xi8>\n}\n"


def _module(text: str):
    return parse_module(QdOptMain(args=[]).ctx, text)


def _names(module):
    return entry_function(module).sym_name.data


def test_main_wins_over_other_public_functions():
    m = _module(f"func.func @other{IDENT}func.func @main{BODY}")
    assert _names(m) == "main"
    assert Interpreter(m).run([np.array([3, 4], np.int8)])[0].tolist() == [6, 8]


def test_only_public_function_with_body_is_the_model():
    m = _module(f"func.func private @helper{IDENT}func.func private @ext(tensor<2xi8>) -> tensor<2xi8>\n"
                f"func.func @model{BODY}")
    assert _names(m) == "model"
    assert Interpreter(m).entry().sym_name.data == "model"


def test_named_function_and_refusals_name_the_problem():
    m = _module(f"func.func @a{IDENT}func.func @b{BODY}")
    assert entry_function(m, "b").sym_name.data == "b"
    with pytest.raises(EntryError, match=r"several public functions \(@a, @b\)"):
        entry_function(m)
    with pytest.raises(EntryError, match="no function @c"):
        entry_function(m, "c")
    with pytest.raises(InterpreterError, match="several public functions"):
        Interpreter(m).entry()
    d = _module("func.func @main(tensor<2xi8>) -> tensor<2xi8>\n")
    with pytest.raises(EntryError, match="@main is a declaration"):
        entry_function(d)


def test_tvm_translation_and_exporter_follow_the_same_rule():
    from qdialect.exporter.tflite import TFLiteExportError, _entry
    from tvm_bridge.translate import TranslationError, Translator

    m = _module(f"func.func private @helper{IDENT}func.func @model{BODY}")
    assert Translator(m).entry(None).sym_name.data == "model"
    assert _entry(m).sym_name.data == "model"
    two = _module(f"func.func @a{IDENT}func.func @b{BODY}")
    for call, error in ((lambda: Translator(two).entry(None), TranslationError), (lambda: _entry(two), TFLiteExportError)):
        with pytest.raises(error, match="several public functions"):
            call()
