"""Which module reads, renders and syncs each kind of workspace file.

Every kind lives in one module of :mod:`heartbeat.ops.sync` that exposes three
dicts keyed by kind:

``IMPORTERS[kind](ledger, db, text, path, now) -> Report``
    one-way ``hb import``: read ``text`` (the file at ``path``) into the
    ledger inside the transaction ``db`` (a :class:`heartbeat.db.store.Db`),
    raise FileFormatError (with the path) when the file cannot be read at all.
    ``Report.as_dict()`` is printed.

``RENDERERS[kind](ledger, db, path) -> str | None``
    one-way ``hb export``: the file at ``path`` (None: the workspace's) as the
    ledger has it now, laid over that file's own text where the format keeps
    what hb does not own (comments, unreadable lines, unknown keys); None:
    nothing to write, e.g. last-run.json before any run.

``SYNCERS[kind](ledger, db, path, text, now) -> tuple[SyncReport, str | None]``
    one step of ``hb sync``: ``text`` is the file's current content (None if
    it does not exist). Import what changed in the file since the last sync,
    then return the report and the text to write back (None: leave the file
    alone). No file I/O: the engine writes after the transaction commits.

A module that syncs several kinds together defines ``SYNC_GROUPS``:
``{(kind, ...): run(ledger, db, files, now, *, sealed) -> {kind: (report, text)}}``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.errors import InvalidInput

if TYPE_CHECKING:
    from heartbeat.context import Context
    from heartbeat.db.plain import Conn
    from heartbeat.db.store import Db
    from heartbeat.ops.sync.report import SyncReport

Importer = Callable[["Context", "Db", str, Path, datetime], Any]
Renderer = Callable[["Context", "Db", "Path | None"], str | None]
Syncer = Callable[["Context", "Db", Path, str | None, datetime], "tuple[SyncReport, str | None]"]

# kind -> module; the order is the order hb sync visits them
MODULES: dict[str, str] = {
    "tasks-json": "heartbeat.ops.sync.queue_files",
    "errors-json": "heartbeat.ops.sync.queue_files",
    "last-run": "heartbeat.ops.sync.queue_files",
    "todo": "heartbeat.ops.sync.markdown",
    "done": "heartbeat.ops.sync.markdown",
    "recur": "heartbeat.ops.sync.markdown",
    "proactive": "heartbeat.ops.sync.proactive_files",
    "state": "heartbeat.ops.sync.state_files",
}
KINDS = tuple(MODULES)

# The runs rows a workspace file is rendered from: last-run.json's records (a completion's record
# is its outcome row) and heartbeat-state.json's times (state_files._facts). Every other run (a
# heartbeat's, a poke's, a materialize run, a pop that took nothing) is in no file.
RECORD_RUNS = "record IS NOT NULL"
FACT_RUNS = "kind IN ('seen', 'hygiene', 'check')"
# The settings heartbeat-state.json holds (formats.state.SETTING_PATHS, named here so the checks
# do not load that module); every other setting may change how any file is written.
STATE_SETTINGS = (
    "'proactive.enabled', 'proactive.max_per_day', 'proactive.min_hours_between', "
    "'proactive.min_hours_since_conversation', 'hygiene.enabled', 'hygiene.every_hours'"
)

# kind -> one statement that returns a row when the ledger holds something the kind's file
# shows. With no such row and no file, the kind's syncer changes nothing and writes nothing
# (tests/sync/test_idle_kinds.py holds every syncer to that), so hb sync can leave the kind
# out without loading its module. Kinds missing here are always synced.
_HOLDS: dict[str, str] = {
    # queue_files.sql tasks_json_tasks: every queue task
    "tasks-json": "SELECT 1 FROM tasks WHERE scope <> '' OR source <> 'todo' LIMIT 1",
    "errors-json": "SELECT 1 FROM errors LIMIT 1",
    # queue_files.logs.render_last_run(): a run with a record, or a completion that is one
    "last-run": (
        "SELECT 1 FROM runs WHERE record IS NOT NULL "
        "UNION ALL SELECT 1 FROM outcomes WHERE after_run IS NOT NULL LIMIT 1"
    ),
    "proactive": "SELECT 1 FROM recurrences WHERE source = 'proactive' LIMIT 1",
    # state_files._has_anything(): a setting the file holds (formats.state.SETTING_PATHS, named
    # here so the check does not load that module), or one of the facts it records
    "state": (
        f"SELECT 1 FROM settings WHERE key IN ({STATE_SETTINGS}) "
        "UNION ALL SELECT 1 FROM runs WHERE kind IN ('seen', 'hygiene', 'check') "
        "UNION ALL SELECT 1 FROM notifications WHERE kind = 'proactive' AND decision = 'sent' "
        "LIMIT 1"
    ),
}


def holds_sql(kind: str) -> str | None:
    """The statement telling whether the ledger holds anything of ``kind`` (see ``_HOLDS``)."""
    return _HOLDS.get(kind)


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


def hook(kind: str, name: str) -> Any:
    """What the module syncing ``kind`` offers under ``name`` for it (``BASELINE_TEXT``,
    ``REBASERS``: a dict by kind), or None."""
    return getattr(importlib.import_module(MODULES[kind]), name, {}).get(kind)


def baseline_text(ctx: Context, db: Conn, kind: str) -> str | None:
    """The text the last sync left as the kind's baseline (what it wrote, or meant to)."""
    own = hook(kind, "BASELINE_TEXT")
    if own is not None:
        text: str | None = own(ctx, db)
        return text
    from heartbeat.ops.sync.writeback import remembered_text

    return remembered_text(db, kind)


_JSON_KINDS = frozenset(("tasks-json", "errors-json", "last-run", "state"))


def validator(kind: str) -> Callable[[str], bool] | None:
    """A check a line-merged text of ``kind`` must pass to be written (JSON must parse)."""
    from heartbeat.formats.tasks_json import is_json

    return is_json if kind in _JSON_KINDS else None
