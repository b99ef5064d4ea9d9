"""Texts from files, people and agents as text on PostgreSQL (and durations as bigint)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06

The columns that hold what the runtimes' files, the command line and agents
give (task ids, scopes, skills, priorities as written, workers, trace ids,
recurrence rules, ...) were VARCHAR(255) (a priority VARCHAR(32), an actor
VARCHAR(64)). SQLite stores a longer text all the same; PostgreSQL refused it
with "value too long for type character varying(255)", naming neither the file
nor the field, so a tasks.json with a 300-character skill synced on one backend
and stopped every sync on the other. They are ``text`` on PostgreSQL now, as
long as SQLite lets them be. The two durations a task keeps in seconds
(``check_interval``, ``stale_after``) become bigint there: hb reads durations up
to 100 years, and int4 stops at 68 ("integer out of range"); SQLite's integers
were 64-bit already.

From varchar to text no row is rewritten and no index rebuilt (the two are
binary coercible), but PostgreSQL will not change the type of a column a view
reads: the schema's views are dropped first and made again afterwards from
their own definitions, in the order they were made (the read-only role's
SELECT on them comes back through the default privileges 0004 set). SQLite
changes nothing. A downgrade makes them varchar again, which PostgreSQL refuses
while a longer text is stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# durations in seconds, int4 before: a --check-interval of 3600w (69 years, within the 100 hb
# reads) was "integer out of range" on PostgreSQL; bigint now
SECONDS: tuple[tuple[str, str], ...] = (('tasks', 'check_interval'), ('tasks', 'stale_after'))

# (table, column, its varchar length before)
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ('tasks', 'id', 255),
    ('tasks', 'scope', 255),
    ('tasks', 'external_key', 255),
    ('tasks', 'priority', 32),
    ('tasks', 'skill', 255),
    ('tasks', 'project_id', 255),
    ('tasks', 'agent_id', 255),
    ('tasks', 'user_id', 255),
    ('tasks', 'chat_id', 255),
    ('tasks', 'claimed_by', 255),
    ('tasks', 'idempotency_key', 255),
    ('task_events', 'task_id', 255),
    ('task_events', 'scope', 255),
    ('task_events', 'actor', 64),
    ('recurrences', 'id', 255),
    ('recurrences', 'external_key', 255),
    ('recurrences', 'rule', 255),
    ('recurrences', 'chat_id', 255),
    ('outcomes', 'task_id', 255),
    ('outcomes', 'scope', 255),
    ('outcomes', 'skill', 255),
    ('outcomes', 'worker', 255),
    ('errors', 'task_id', 255),
    ('errors', 'scope', 255),
    ('errors', 'skill', 255),
    ('errors', 'trace_id', 255),
    ('notifications', 'task_id', 255),
    ('runs', 'scope', 255),
    ('runs', 'task_id', 255),
    ('runs', 'worker', 255),
)

_VIEWS = (
    "SELECT c.relname, pg_get_viewdef(c.oid) FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind = 'v' AND n.nspname = current_schema() ORDER BY c.oid"
)


def _retype(kind: dict[tuple[str, str], str]) -> None:
    bind = op.get_bind()
    if bind.dialect.name != 'postgresql':
        return
    views = list(bind.exec_driver_sql(_VIEWS))
    for name, _definition in reversed(views):
        op.execute(f'DROP VIEW IF EXISTS "{name}"')
    for table, column in [(t, c) for t, c, _length in COLUMNS] + list(SECONDS):
        op.execute(f'ALTER TABLE {table} ALTER COLUMN {column} TYPE {kind[(table, column)]}')
    for name, definition in views:
        op.execute(f'CREATE VIEW "{name}" AS {definition}')


def upgrade() -> None:
    _retype({**{(t, c): 'text' for t, c, _length in COLUMNS}, **{key: 'bigint' for key in SECONDS}})


def downgrade() -> None:
    _retype({**{(t, c): f'varchar({length})' for t, c, length in COLUMNS}, **{key: 'integer' for key in SECONDS}})
