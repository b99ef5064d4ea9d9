"""hb_reader reads hb's own tables and views only (PostgreSQL)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07

0004 granted ``hb_reader`` SELECT on every table of the schema and, by default
privileges, on every table the migrating role would create there later: a table
of another application made by the same role in the same schema (an agent's own
``app_secrets``) was readable through ``hb sql`` and the MCP ``sql`` tool. The
role now holds SELECT on hb's tables and views by name, and the default
privileges are taken back. A later revision that adds or recreates a table or a
view grants the role SELECT on it itself (as this one does, by name). A downgrade
gives back 0004's grants. Without the right to grant, nothing fails (as 0004).
SQLite needs none of this.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0013'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ROLE = 'hb_reader'

# hb's tables and views at this revision (tests/migrations checks the list against the schema)
OBJECTS = (
    'alembic_version',
    'errors',
    'notifications',
    'outcomes',
    'recurrences',
    'runs',
    'settings',
    'sync_state',
    'task_dependencies',
    'task_events',
    'tasks',
    'errors_utc',
    'failure_reasons',
    'failures_by_task',
    'notification_decisions',
    'notifications_by_day',
    'notifications_utc',
    'outcomes_by_day',
    'outcomes_by_scope',
    'outcomes_by_skill',
    'outcomes_by_source',
    'outcomes_by_task',
    'outcomes_utc',
    'queue_depth',
    'recurrence_runs',
    'recurrences_utc',
    'runs_utc',
    'tasks_utc',
)

_NAMES = ', '.join(f"'{name}'" for name in OBJECTS)

UPGRADE = f"""
DO $hb$
DECLARE
    name text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
        RETURN;
    END IF;
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE SELECT ON TABLES FROM {ROLE}', current_schema());
    EXECUTE format('REVOKE SELECT ON ALL TABLES IN SCHEMA %I FROM {ROLE}', current_schema());
    FOREACH name IN ARRAY ARRAY[{_NAMES}] LOOP
        IF to_regclass(format('%I.%I', current_schema(), name)) IS NOT NULL THEN
            EXECUTE format('GRANT SELECT ON %I.%I TO {ROLE}', current_schema(), name);
        END IF;
    END LOOP;
EXCEPTION
    WHEN insufficient_privilege THEN
        RAISE NOTICE 'hb: cannot grant {ROLE} read access; hb sql needs an administrator to grant it';
END
$hb$;
"""

DOWNGRADE = f"""
DO $hb$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
        EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO {ROLE}', current_schema());
        EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO {ROLE}', current_schema());
    END IF;
EXCEPTION
    WHEN insufficient_privilege THEN NULL;
END
$hb$;
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(UPGRADE)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(DOWNGRADE)
