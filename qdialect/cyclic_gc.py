"""Python's cyclic garbage collector paused while a compile step runs.

Parsing, the passes and the Relax translation allocate hundreds of thousands of
objects that stay alive (ops, their results and uses, attributes): every
700 allocations CPython's collector scans the young ones, promotes them, and
now and then traverses the whole heap -- the IR of the model included -- only
to find almost nothing to free.  That is about a third of the compile time of
a model.  The IR is full of reference cycles (an op and its results, a block
and its ops), so erased ops are only freed by the collector; while it is
paused they wait, and the first collection after the step frees them.

`paused()` is a context manager and a decorator.  It nests: only the
outermost pause turns the collector back on, and a collector the caller had
already disabled stays disabled.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused():
    """Run the block with the cyclic collector off; restore its state afterwards."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
