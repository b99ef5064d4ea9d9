"""CHECK constraints without IN lists (SQLite)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06

SQLite evaluates a CHECK on every insert, and on every update of a column it
names. For a constant ``IN (...)`` list it builds a temporary B-tree of the
values each time, about 3.5 µs a row: every claim and completion changes
``tasks.status``, and a first sync of 10,000 TODO.md entries spent about 50 ms
on it. The four such checks are written here as comparisons joined by OR,
which accept exactly the same values:

- ``ck_tasks_status`` (the eight statuses) and ``ck_tasks_risk``;
- ``ck_recurrences_missed_policy``;
- ``ck_notifications_decision``.

A constraint's text is all that changes: no row is read or written, and the
rows already there satisfy the new text because it is the same rule. SQLite
cannot alter a CHECK, and rebuilding the tables would copy every row, so the
table definitions are edited in place as SQLite documents for changes that do
not touch the stored content (``writable_schema``, then a new schema version so
that every open connection reads the new definitions). A database that refuses
that edit (a build in defensive mode) keeps its IN lists: the same rule,
only slower. A definition whose text is not the one hb wrote is left as it is.

PostgreSQL evaluates ``= ANY (ARRAY[...])`` without building anything, so its
constraints stay as they are (re-adding them would lock and scan the tables).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, the constraint as 0001 wrote it, the constraint without IN)
CHECKS: tuple[tuple[str, str, str], ...] = (
    (
        'tasks',
        "CONSTRAINT ck_tasks_risk CHECK (risk IS NULL OR risk IN ('P0', 'P1', 'P2'))",
        "CONSTRAINT ck_tasks_risk CHECK (risk IS NULL OR risk = 'P0' OR risk = 'P1' OR risk = 'P2')",
    ),
    (
        'tasks',
        "CONSTRAINT ck_tasks_status CHECK (status IN ('todo', 'doing', 'waiting', 'blocked', 'snoozed', "
        "'done', 'cancelled', 'failed'))",
        "CONSTRAINT ck_tasks_status CHECK (status = 'todo' OR status = 'doing' OR status = 'waiting' "
        "OR status = 'blocked' OR status = 'snoozed' OR status = 'done' OR status = 'cancelled' "
        "OR status = 'failed')",
    ),
    (
        'recurrences',
        "CONSTRAINT ck_recurrences_missed_policy CHECK (missed_policy IN ('skip', 'once', 'all'))",
        "CONSTRAINT ck_recurrences_missed_policy CHECK (missed_policy = 'skip' OR missed_policy = 'once' "
        "OR missed_policy = 'all')",
    ),
    (
        'notifications',
        "CONSTRAINT ck_notifications_decision CHECK (decision IN ('sent', 'suppressed'))",
        "CONSTRAINT ck_notifications_decision CHECK (decision = 'sent' OR decision = 'suppressed')",
    ),
)


def _rewrite(pairs: Sequence[tuple[str, str, str]]) -> None:
    """Replace each (table, old, new) constraint text in its table's definition (SQLite only)."""
    bind = op.get_bind()
    if bind.dialect.name != 'sqlite':
        return
    tables = sorted({table for table, _, _ in pairs})
    found = {
        name: sql
        for name, sql in bind.execute(
            sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN :names").bindparams(
                sa.bindparam('names', expanding=True)
            ),
            {'names': tables},
        )
    }
    changed: dict[str, str] = {}
    for table, old, new in pairs:
        sql = changed.get(table, found.get(table))
        if sql is not None and sql.count(old) == 1:
            changed[table] = sql.replace(old, new)
    if not changed:
        return
    version = bind.exec_driver_sql('PRAGMA schema_version').scalar_one()
    try:
        bind.exec_driver_sql('PRAGMA writable_schema = ON')
        for table, sql in changed.items():
            bind.execute(
                sa.text("UPDATE sqlite_master SET sql = :sql WHERE type = 'table' AND name = :name"),
                {'sql': sql, 'name': table},
            )
        bind.exec_driver_sql(f'PRAGMA schema_version = {int(version) + 1}')
    except sa.exc.OperationalError:
        return  # defensive mode: the IN lists stay (the same rule)
    finally:
        bind.exec_driver_sql('PRAGMA writable_schema = OFF')


def upgrade() -> None:
    _rewrite(CHECKS)


def downgrade() -> None:
    _rewrite([(table, new, old) for table, old, new in CHECKS])
