"""a completion is its outcome row: no runs row of its own

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04

- ``outcomes.after_run``: set on the completions hb records as last-run.json
  records (``hb complete`` and the Python, MCP and HTTP APIs), which no longer
  write a ``runs`` row: the newest runs row when the completion was written.
  last-run.json is the newest of the runs rows with a record (failures, the
  heartbeat.py drop-in's records, a hand edit taken in) and these completions;
  a completion is newer than a run when it saw it (``after_run >= runs.pk``).
  ``ix_outcomes_last_run`` holds just those completions, so the newest is one
  index step away however many other outcomes there are.
- ``ix_tasks_source_external_key`` holds only the tasks with a key (the
  Markdown TODO entries, whose sync looks them up by it): on PostgreSQL every
  claim and completion of a queue task wrote an entry of it.

Downgrading writes the newest such completion back as a runs row when it is
newer than every run with a record, so that an older hb still shows the same
last-run.json.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op


revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RECORDED = 'after_run IS NOT NULL'
KEYED = 'external_key IS NOT NULL'


def upgrade() -> None:
    op.add_column('outcomes', sa.Column('after_run', sa.Integer(), nullable=True))
    op.create_index(
        'ix_outcomes_last_run',
        'outcomes',
        ['pk'],
        unique=False,
        sqlite_where=sa.text(RECORDED),
        postgresql_where=sa.text(RECORDED),
    )
    op.drop_index('ix_tasks_source_external_key', table_name='tasks')
    op.create_index(
        'ix_tasks_source_external_key',
        'tasks',
        ['source', 'external_key'],
        unique=False,
        sqlite_where=sa.text(KEYED),
        postgresql_where=sa.text(KEYED),
    )


def downgrade() -> None:
    bind = op.get_bind()
    _record_the_last_completion(bind)
    op.drop_index('ix_tasks_source_external_key', table_name='tasks')
    op.create_index('ix_tasks_source_external_key', 'tasks', ['source', 'external_key'], unique=False)
    op.drop_index('ix_outcomes_last_run', table_name='outcomes')
    if bind.dialect.name == 'sqlite':
        op.execute('ALTER TABLE outcomes DROP COLUMN after_run')  # SQLite 3.35+: in place
    else:
        op.drop_column('outcomes', 'after_run')


def _record_the_last_completion(bind: sa.Connection) -> None:
    """The newest completion without a runs row, written as one (as revision 0007 records it)
    when no run with a record came after it."""
    found = bind.execute(
        sa.text(
            'SELECT o.after_run, o.task_id, o.scope, o.skill, o.result, o.completed_at, o.worker, '
            't.title, t.project_id, t.agent_id, t.user_id, t.extra FROM outcomes o '
            'LEFT JOIN tasks t ON t.pk = o.task_pk WHERE o.after_run IS NOT NULL ORDER BY o.pk DESC LIMIT 1'
        )
    ).first()
    if found is None:
        return
    newest = bind.execute(sa.text('SELECT max(pk) FROM runs WHERE record IS NOT NULL')).scalar()
    if newest is not None and found.after_run < newest:
        return
    completed_at = _utc(found.completed_at)
    extra = _json(found.extra) or {}
    record = {
        'timestamp': _stamp(completed_at),
        'task_id': found.task_id,
        'status': 'completed',
        'description': found.title,
        'assigned_skill': found.skill,
        'project_id': found.project_id,
        'agent_id': found.agent_id,
        'user_id': found.user_id,
        'outcome': _json(found.result),
        'trace_id': extra.get('trace_id'),
        'decision_log': extra.get('decision_log'),
        'scope': found.scope or None,
    }
    at = completed_at.replace(tzinfo=None) if bind.dialect.name == 'sqlite' else completed_at
    record_json = json.dumps(record, ensure_ascii=False)
    value = "CAST(:record AS json)" if bind.dialect.name == 'postgresql' else ':record'
    bind.execute(
        sa.text(
            'INSERT INTO runs (kind, scope, status, started_at, finished_at, task_id, worker, record) '
            f"VALUES ('complete', :scope, 'ok', :at, :at, :task_id, :worker, {value})"
        ),
        {
            'scope': found.scope or None,
            'at': at.isoformat(' ', 'microseconds') if bind.dialect.name == 'sqlite' else at,
            'task_id': found.task_id,
            'worker': found.worker,
            'record': record_json,
        },
    )


def _utc(value: datetime | str) -> datetime:
    if isinstance(value, str):  # SQLite: the naive UTC text hb stores
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _stamp(value: datetime) -> str:
    spec = 'microseconds' if value.microsecond else 'seconds'
    return value.astimezone(UTC).isoformat(timespec=spec)[:-6] + 'Z'


def _json(value: object) -> object:
    return json.loads(value) if isinstance(value, str) else value
