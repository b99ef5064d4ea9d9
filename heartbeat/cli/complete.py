"""Shell completion from the ledger: task ids, queue scopes, setting keys.

Enable it as click does (``eval "$(_HB_COMPLETE=bash_source hb)"``; ``zsh_source``,
``fish_source``). Completion runs without the global options' callbacks, so the workspace
and database come from the command line as typed, else ``HB_WORKSPACE`` / ``HB_DATABASE_URL``.
Anything that goes wrong (no ledger yet) completes nothing rather than print an error.
"""

from __future__ import annotations

import os
from typing import Any

import click
from click.shell_completion import CompletionItem

_LIMIT = 200  # candidates offered at most


def _rows(ctx: click.Context, sql: str, incomplete: str) -> list[tuple[Any, ...]]:
    root = ctx.find_root().params
    workspace = root.get("workspace") or os.environ.get("HB_WORKSPACE") or "."
    db = root.get("db") or os.environ.get("HB_DATABASE_URL")
    try:
        from heartbeat.db.plain import Conn
        from heartbeat.ledger import Ledger

        with Ledger.open(workspace=workspace, db=db, create=False) as ledger:
            conn = Conn(ledger.raw, sqlite=ledger.engine_dialect() == "sqlite")
            pattern = incomplete.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            return conn.rows(sql, {"prefix": pattern, "limit": _LIMIT})
    except Exception:  # no ledger, a bad URL: nothing to offer
        return []


def task_ids(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Ids of active tasks starting with what was typed, with their titles as help."""
    rows = _rows(
        ctx,
        "SELECT id, title FROM tasks WHERE id LIKE :prefix ESCAPE '\\' "
        "AND status IN ('todo', 'doing', 'waiting', 'blocked', 'snoozed') ORDER BY id LIMIT :limit",
        incomplete,
    )
    return [CompletionItem(r[0], help=str(r[1])[:60]) for r in rows]


def scopes(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The scoped queues starting with what was typed."""
    rows = _rows(
        ctx,
        "SELECT DISTINCT scope FROM tasks WHERE scope > '' AND scope LIKE :prefix ESCAPE '\\' "
        "ORDER BY scope LIMIT :limit",
        incomplete,
    )
    return [CompletionItem(r[0]) for r in rows]


def setting_keys(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from heartbeat.settings import KEYS

    return [
        CompletionItem(k.name, help=k.description) for k in KEYS.values() if k.name.startswith(incomplete)
    ]
