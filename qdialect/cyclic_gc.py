"""Python's cyclic garbage collector paused while a compile step runs.

Parsing, the passes and the Relax translation allocate hundreds of thousands of
objects that stay alive (ops, their results and uses, attributes): every
700 allocations CPython's collector scans the young ones, promotes them, and
now and then traverses the whole heap -- the IR of the model included -- only
to find almost nothing to free.  That is about a third of the compile time of
a model.  The IR is full of reference cycles (an op and its results, a block
and its ops), so erased ops are only freed by the collector; while it is
paused they wait, and the collection at the end of the step frees them.

That collection is of generations 0 and 1 together, run as the pause ends: left
to the collector, the first allocation after the step starts a generation-0
collection of everything the step allocated, and some collections later a
generation-1 collection traverses the survivors (the IR) all over again (about
0.1 ms per op of a lowered model, a quarter of the Relax translation's time
when it followed the lowering).

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
        if gc.get_count()[0] > gc.get_threshold()[0]:
            # a collection is due: make it of the two young generations at once, so the
            # step's survivors (the IR it built) go straight to the old generation instead
            # of being traversed again by the next generation-1 collection
            gc.collect(1)
