"""claims that hold under real agents: tokens, defer, idempotent adds, dependencies

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03

- ``tasks.claim``: the token of the task's current (or last) claim, new for
  every pop and takeover; ``complete`` / ``fail`` / ``renew --claim`` refuse a
  token that is no longer the task's. ``outcomes.claim`` and ``errors.claim``
  record which claim a completion or failure closed.
- ``tasks.not_before``: a deferred task is neither popped nor due before it.
- ``tasks.idempotency_key`` with a unique index (partial: where a key is set,
  per scope): ``hb add --key`` twice, or from two racing processes, makes one
  task.
- ``task_dependencies``: ``hb add/update --after``; a task is not popped before
  every task it waits for is done. The rows go with either task.

Every new column is nullable and empty for the rows already there: their
claims have no token (``complete`` without ``--claim`` still finishes them,
and a takeover gives them one).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEYED = 'idempotency_key IS NOT NULL'
# (table, column, type)
COLUMNS: tuple[tuple[str, str, sa.types.TypeEngine], ...] = (
    ('tasks', 'claim', sa.String(length=32)),
    ('tasks', 'not_before', sa.DateTime(timezone=True)),
    ('tasks', 'idempotency_key', sa.String(length=255)),
    ('outcomes', 'claim', sa.String(length=32)),
    ('errors', 'claim', sa.String(length=32)),
)


def upgrade() -> None:
    for table, column, type_ in COLUMNS:
        op.add_column(table, sa.Column(column, type_, nullable=True))
    op.create_index(
        'uq_tasks_scope_idempotency_key',
        'tasks',
        ['scope', 'idempotency_key'],
        unique=True,
        sqlite_where=sa.text(KEYED),
        postgresql_where=sa.text(KEYED),
    )
    op.create_table(
        'task_dependencies',
        sa.Column('task_pk', sa.Integer(), nullable=False),
        sa.Column('depends_on_pk', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ['task_pk'], ['tasks.pk'], name=op.f('fk_task_dependencies_task_pk_tasks'), ondelete='CASCADE'
        ),
        sa.ForeignKeyConstraint(
            ['depends_on_pk'],
            ['tasks.pk'],
            name=op.f('fk_task_dependencies_depends_on_pk_tasks'),
            ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('task_pk', 'depends_on_pk', name=op.f('pk_task_dependencies')),
    )
    op.create_index('ix_task_dependencies_depends_on_pk', 'task_dependencies', ['depends_on_pk'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_task_dependencies_depends_on_pk', table_name='task_dependencies')
    op.drop_table('task_dependencies')
    op.drop_index('uq_tasks_scope_idempotency_key', table_name='tasks')
    for table, column, _type in reversed(COLUMNS):
        if op.get_bind().dialect.name == 'sqlite':
            # SQLite (3.35+) drops a column in place; a batch copy of the table is not needed
            op.execute(f'ALTER TABLE {table} DROP COLUMN {column}')
        else:
            op.drop_column(table, column)
