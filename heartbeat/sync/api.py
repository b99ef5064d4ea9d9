"""Ledger operations for hb sync and the Markdown TODO files (SPEC.md section 4)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger


class SyncAPI:
    """Mixed into :class:`heartbeat.Ledger`; each method is one transaction."""

    def sync(self, *, dry_run: bool = False, only: Iterable[str] | None = None) -> dict[str, Any]:
        """Two-way sync of the workspace files with the ledger, all or nothing.

        Returns ``{"dry_run", "changed", "reports", "skipped"}``: one report per
        file kind (added, updated, completed, removed, conflicts, preserved,
        written). ``only`` restricts the kinds (TODO.md and TODO.DONE.md always
        go together); ``dry_run`` changes nothing and reports the same.
        Raises FileFormatError (path:line) when a file cannot be read at all.
        """
        from heartbeat.sync.engine import run

        return run(cast("Ledger", self), dry_run=dry_run, only=only)

    def add_todo(self, title: str, *, chat_id: str | None = None, **fields: Any) -> dict[str, Any]:
        """Create a TODO.md task in the ledger (``hb add --source todo``); ``hb sync`` writes it.

        Its id is ``todo-`` + 8 hex digits; ``fields`` are those of :meth:`add`.
        """
        from heartbeat.sync.markdown import add_todo

        ledger = cast("Ledger", self)
        now = ledger.now()
        with ledger.ctx.write() as db:
            task = add_todo(ledger, db, title, now, chat_id=chat_id, **fields)
            return ledger._dict(task)
