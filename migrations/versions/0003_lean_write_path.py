"""fewer index writes per queue operation

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29

Every index a queue operation touches is one more page written per commit.
This revision keeps what pop / complete / fail and the reports read, and
drops what they do not:

- outcomes: the four per-group covering indexes of 0002 (skill, scope,
  source, scope + task_id) become one, grouped by (scope, skill, source) and
  ordered by duration within each group: ``hb report outcomes --by
  skill|scope|source`` combines those groups;
- tasks: ``ix_tasks_scope_status_created_at`` no longer holds the tasks that
  are ready or claimed (``hb report queue`` reads those through
  ``ix_tasks_ready`` and ``ix_tasks_claimed``), so a pop does not move it
  and a completion adds one entry;
- runs: ``ix_runs_kind_started_at`` holds only the kinds the heartbeat
  looks up by kind (its latest ``seen``, ``hygiene`` and ``check`` runs),
  not the runs row every queue operation writes.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# tasks neither ready to pop (ix_tasks_ready) nor claimed (ix_tasks_claimed)
IDLE = "status <> 'doing' AND NOT (status = 'todo' AND blocked_by IS NULL AND source <> 'todo')"
# the run kinds looked up by kind (an OR of equalities, so that `kind = ?` can use the index)
LOOKED_UP = "kind = 'seen' OR kind = 'hygiene' OR kind = 'check'"

# (name, table, columns, partial-index condition)
Spec = tuple[str, str, tuple[str, ...], str | None]

BEFORE: tuple[Spec, ...] = (
    ('ix_outcomes_skill_duration_s', 'outcomes', ('skill', 'duration_s', 'completed_at', 'success'), None),
    ('ix_outcomes_scope_duration_s', 'outcomes', ('scope', 'duration_s', 'completed_at', 'success'), None),
    ('ix_outcomes_source_duration_s', 'outcomes', ('source', 'duration_s', 'completed_at', 'success'), None),
    (
        'ix_outcomes_scope_task_id_duration_s',
        'outcomes',
        ('scope', 'task_id', 'duration_s', 'completed_at', 'success'),
        None,
    ),
    ('ix_tasks_scope_status_created_at', 'tasks', ('scope', 'status', 'created_at'), None),
    ('ix_runs_kind_started_at', 'runs', ('kind', 'started_at'), None),
)

AFTER: tuple[Spec, ...] = (
    (
        'ix_outcomes_scope_skill_source_duration_s',
        'outcomes',
        ('scope', 'skill', 'source', 'duration_s', 'completed_at', 'success'),
        None,
    ),
    ('ix_tasks_scope_status_created_at', 'tasks', ('scope', 'status', 'created_at'), IDLE),
    ('ix_runs_kind_started_at', 'runs', ('kind', 'started_at'), LOOKED_UP),
)


def _create(name: str, table: str, columns: tuple[str, ...], where: str | None) -> None:
    partial = {} if where is None else {'sqlite_where': sa.text(where), 'postgresql_where': sa.text(where)}
    op.create_index(name, table, list(columns), unique=False, **partial)


def upgrade() -> None:
    for name, table, _columns, _where in BEFORE:
        op.drop_index(name, table_name=table)
    for spec in AFTER:
        _create(*spec)


def downgrade() -> None:
    for name, table, _columns, _where in reversed(AFTER):
        op.drop_index(name, table_name=table)
    for spec in BEFORE:
        _create(*spec)
