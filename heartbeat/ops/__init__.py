"""hb's operations: each a function of a :class:`heartbeat.context.Context`, one transaction each.

The :class:`heartbeat.Ledger` is their facade; nothing here imports it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


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
