"""The compile steps pause Python's cyclic collector and give it back as they found it."""

import gc

import pytest

from qdialect import cyclic_gc
from qdialect.diagnostics import parse_module
from transforms.opt import QdOptMain


def test_paused_nests_and_restores():
    assert gc.isenabled()
    with cyclic_gc.paused():
        assert not gc.isenabled()
        with cyclic_gc.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # only the outermost pause turns it back on
    assert gc.isenabled()


def test_paused_restores_after_an_error():
    with pytest.raises(ValueError):
        with cyclic_gc.paused():
            raise ValueError("x")
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        with cyclic_gc.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_parse_leaves_the_collector_on():
    ctx = QdOptMain(args=[]).ctx
    parse_module(ctx, "func.func @f(%x: tensor<2xi8>) -> tensor<2xi8> {\n  func.return %x : tensor<2xi8>\n}\n")
    assert gc.isenabled()
