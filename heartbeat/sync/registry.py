"""Which module reads, renders and syncs each kind of workspace file.

Every kind lives in one module of :mod:`heartbeat.sync` that exposes three
dicts keyed by kind:

``IMPORTERS[kind](ledger, session, text, path, now) -> Report``
    one-way ``hb import``: read ``text`` (the file at ``path``) into the
    ledger inside ``session``; raise FileFormatError (with the path) when the
    file cannot be read at all. ``Report.as_dict()`` is printed.

``RENDERERS[kind](ledger, session) -> str | None``
    one-way ``hb export``: the file as the ledger has it now (None: nothing
    to write, e.g. last-run.json before any run).

``SYNCERS[kind](ledger, session, path, text, now) -> tuple[SyncReport, str | None]``
    one step of ``hb sync``: ``text`` is the file's current content (None if
    it does not exist). Import what changed in the file since the last sync,
    then return the report and the text to write back (None: leave the file
    alone). No file I/O: the engine writes after the transaction commits.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.errors import InvalidInput

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from heartbeat.ledger import Ledger
    from heartbeat.sync.report import SyncReport

Importer = Callable[["Ledger", "Session", str, Path, datetime], Any]
Renderer = Callable[["Ledger", "Session"], str | None]
Syncer = Callable[["Ledger", "Session", Path, str | None, datetime], "tuple[SyncReport, str | None]"]

# kind -> module; the order is the order hb sync visits them
MODULES: dict[str, str] = {
    "tasks-json": "heartbeat.sync.queue_files",
    "errors-json": "heartbeat.sync.queue_files",
    "last-run": "heartbeat.sync.queue_files",
    "todo": "heartbeat.sync.markdown",
    "done": "heartbeat.sync.markdown",
    "recur": "heartbeat.sync.markdown",
    "proactive": "heartbeat.sync.proactive_files",
    "state": "heartbeat.sync.state_files",
}
KINDS = tuple(MODULES)


def _table(kind: str, name: str) -> Any:
    if kind not in MODULES:
        raise InvalidInput(f"unknown file kind {kind!r} (expected one of: {', '.join(KINDS)})")
    module = importlib.import_module(MODULES[kind])
    table = getattr(module, name, {})
    if kind not in table:
        raise InvalidInput(f"hb cannot {name.lower().rstrip('s')} {kind} files yet")
    return table[kind]


def importer(kind: str) -> Importer:
    fn: Importer = _table(kind, "IMPORTERS")
    return fn


def renderer(kind: str) -> Renderer:
    fn: Renderer = _table(kind, "RENDERERS")
    return fn


def syncer(kind: str) -> Syncer:
    fn: Syncer = _table(kind, "SYNCERS")
    return fn
