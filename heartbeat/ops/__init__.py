"""hb's operations: each a function of a :class:`heartbeat.context.Context`, one transaction each.

The :class:`heartbeat.Ledger` is their facade; nothing here imports it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from heartbeat.errors import InvalidInput


class Deferred:
    """An operations module imported when one of its names is first asked for: the Ledger holds
    one per module, so that a command loads the operations it calls and no others. Each access
    asks ``sys.modules`` (through importlib) and reads the name from the module itself, so a
    name patched on the module is the one used."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        module: ModuleType = importlib.import_module(self.name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<deferred module {self.name!r}>"


def deferred(name: str) -> Any:
    """The module ``name`` (one of this package's), imported on its first use (:class:`Deferred`)."""
    return Deferred(name)


# The largest limit: a row count both backends take (a 64-bit integer), as ``--limit``'s.
LIMIT_MAX = 2**63 - 1


def checked_limit(limit: Any) -> int | None:
    """``limit`` of a listing (``list``, ``ready``, ``report``): None for all, else a whole number
    from 1 to :data:`LIMIT_MAX`, as ``--limit`` takes it; anything else is InvalidInput."""
    if limit is None:
        return None
    if isinstance(limit, int) and not isinstance(limit, bool):
        if 1 <= limit <= LIMIT_MAX:
            return limit
        shown = str(limit) if -LIMIT_MAX <= limit <= LIMIT_MAX else "past a 64-bit integer"
    else:
        shown = repr(limit)[:40]
    raise InvalidInput(f"--limit {shown}: give a positive whole number of rows (at most {LIMIT_MAX})")
