"""Which module reads and renders each kind of workspace file."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from heartbeat.errors import InvalidInput

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger

Importer = Callable[[Session, str, Path, datetime], Any]
Renderer = Callable[["Ledger", Session], str | None]

KINDS = ("todo", "done", "recur", "tasks-json", "errors-json", "last-run", "proactive", "state")


def _unknown(kind: str) -> InvalidInput:
    return InvalidInput(f"unknown file kind {kind!r} (expected one of: {', '.join(KINDS)})")


def importer(kind: str) -> Importer:
    from heartbeat.sync import queue_files

    table: dict[str, Importer] = dict(queue_files.IMPORTERS)
    if kind in table:
        return table[kind]
    raise _unknown(kind)


def renderer(kind: str) -> Renderer:
    from heartbeat.sync import queue_files

    def wrap(fn: Callable[[Session], str | None]) -> Renderer:
        return lambda _ledger, session: fn(session)

    table: dict[str, Renderer] = {k: wrap(fn) for k, fn in queue_files.RENDERERS.items()}
    if kind in table:
        return table[kind]
    raise _unknown(kind)
