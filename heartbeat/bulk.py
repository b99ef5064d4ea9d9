"""Bulk steps: the cyclic garbage collector paused while a large file becomes objects or rows.

Reading a tasks.json of 20,000 tasks makes about a hundred thousand small objects (its dicts,
records, readings, bound rows) and no reference cycles. With the collector on, every 700 of them
start a young-generation collection, which walks the young objects again, and the older
generations are walked as they fill: a tenth of a large import's time on this machine
(``scripts/bench.py``, section 12). The CLI raises the threshold for the whole process (see
:func:`heartbeat.cli.main.run`); a program that calls the library, or a long-lived ``hb serve``,
keeps the interpreter's own, so the bulk steps pause the collector themselves.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic cyclic collection inside the block (reference counting frees as always); the
    collector is switched back on after it only if it was on before (blocks nest). The switch is
    the process's: in a server, one thread's block may end another's pause early, which costs
    that one speed, never a result."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
