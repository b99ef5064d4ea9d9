"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('recurrences',
    sa.Column('pk', sa.Integer(), nullable=False),
    sa.Column('id', sa.String(length=255), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('external_key', sa.String(length=255), nullable=True),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('rule', sa.String(length=255), nullable=False),
    sa.Column('tz', sa.String(length=64), nullable=True),
    sa.Column('next_local', sa.String(length=16), nullable=True),
    sa.Column('next_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('time_of_day', sa.String(length=5), nullable=True),
    sa.Column('day', sa.String(length=16), nullable=True),
    sa.Column('enabled', sa.Boolean(), server_default=sa.text('(true)'), nullable=False),
    sa.Column('priority', sa.Integer(), nullable=True),
    sa.Column('permission_tier', sa.Integer(), nullable=True),
    sa.Column('conditions', sa.JSON(), nullable=True),
    sa.Column('instruction', sa.Text(), nullable=True),
    sa.Column('chat_id', sa.String(length=255), nullable=True),
    sa.Column('missed_policy', sa.String(length=8), server_default='once', nullable=False),
    sa.Column('run_count', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('last_run_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('claimed_period', sa.String(length=32), nullable=True),
    sa.Column('claimed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('evaluation', sa.JSON(), nullable=True),
    sa.Column('position', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=True),
    sa.Column('synced_hash', sa.String(length=64), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("missed_policy IN ('skip', 'once', 'all')", name=op.f('ck_recurrences_missed_policy')),
    sa.PrimaryKeyConstraint('pk', name=op.f('pk_recurrences')),
    sa.UniqueConstraint('id', name=op.f('uq_recurrences_id'))
    )
    with op.batch_alter_table('recurrences', schema=None) as batch_op:
        batch_op.create_index('ix_recurrences_enabled_next_at', ['enabled', 'next_at'], unique=False)

    op.create_table('runs',
    sa.Column('pk', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=24), nullable=False),
    sa.Column('scope', sa.String(length=255), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('task_id', sa.String(length=255), nullable=True),
    sa.Column('worker', sa.String(length=255), nullable=True),
    sa.Column('pid', sa.Integer(), nullable=True),
    sa.Column('guard', sa.String(length=64), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('record', sa.JSON(), nullable=True),
    sa.Column('detail', sa.JSON(), nullable=True),
    sa.PrimaryKeyConstraint('pk', name=op.f('pk_runs'))
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index('ix_runs_kind_started_at', ['kind', 'started_at'], unique=False)
        batch_op.create_index('uq_runs_guard', ['guard'], unique=True, sqlite_where=sa.text('guard IS NOT NULL'), postgresql_where=sa.text('guard IS NOT NULL'))

    op.create_table('settings',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('value', sa.JSON(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_settings'))
    )
    op.create_table('sync_state',
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=True),
    sa.Column('size', sa.Integer(), nullable=True),
    sa.Column('mtime_ns', sa.Integer(), nullable=True),
    sa.Column('synced_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('skeleton', sa.JSON(), nullable=True),
    sa.PrimaryKeyConstraint('kind', name=op.f('pk_sync_state'))
    )
    op.create_table('tasks',
    sa.Column('pk', sa.Integer(), nullable=False),
    sa.Column('id', sa.String(length=255), nullable=False),
    sa.Column('scope', sa.String(length=255), server_default='', nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('external_key', sa.String(length=255), nullable=True),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('status', sa.Enum('todo', 'doing', 'waiting', 'blocked', 'snoozed', 'done', 'cancelled', 'failed', name='status', native_enum=False, create_constraint=True, length=16), nullable=False),
    sa.Column('priority', sa.String(length=32), nullable=True),
    sa.Column('priority_rank', sa.Integer(), server_default=sa.text('2'), nullable=False),
    sa.Column('position', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('risk', sa.String(length=2), nullable=True),
    sa.Column('blocked_by', sa.Text(), nullable=True),
    sa.Column('due_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('next_check_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('check_interval', sa.Integer(), nullable=True),
    sa.Column('stale_after', sa.Integer(), nullable=True),
    sa.Column('last_update_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_checked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_progress_note', sa.Text(), nullable=True),
    sa.Column('next_action', sa.Text(), nullable=True),
    sa.Column('fallback_action', sa.Text(), nullable=True),
    sa.Column('blocker', sa.Text(), nullable=True),
    sa.Column('follow_up', sa.Boolean(), server_default=sa.text('(false)'), nullable=False),
    sa.Column('skill', sa.String(length=255), nullable=True),
    sa.Column('project_id', sa.String(length=255), nullable=True),
    sa.Column('agent_id', sa.String(length=255), nullable=True),
    sa.Column('user_id', sa.String(length=255), nullable=True),
    sa.Column('chat_id', sa.String(length=255), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('completed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('claimed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('claimed_by', sa.String(length=255), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('attempts', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('version', sa.Integer(), server_default=sa.text('1'), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=True),
    sa.Column('synced_hash', sa.String(length=64), nullable=True),
    sa.CheckConstraint("risk IS NULL OR risk IN ('P0', 'P1', 'P2')", name=op.f('ck_tasks_risk')),
    sa.CheckConstraint('attempts >= 0', name=op.f('ck_tasks_attempts')),
    sa.PrimaryKeyConstraint('pk', name=op.f('pk_tasks')),
    sa.UniqueConstraint('scope', 'id', name=op.f('uq_tasks_scope_id'))
    )
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.create_index('ix_tasks_claimed', ['scope', 'lease_expires_at'], unique=False, sqlite_where=sa.text("status = 'doing'"), postgresql_where=sa.text("status = 'doing'"))
        batch_op.create_index('ix_tasks_ready', ['scope', 'priority_rank', 'position', 'pk'], unique=False, sqlite_where=sa.text("status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"), postgresql_where=sa.text("status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"))
        batch_op.create_index('ix_tasks_source_external_key', ['source', 'external_key'], unique=False)
        batch_op.create_index('ix_tasks_id', ['id'], unique=False)
        batch_op.create_index('ix_tasks_status_next_check_at', ['status', 'next_check_at'], unique=False, sqlite_where=sa.text('next_check_at IS NOT NULL'), postgresql_where=sa.text('next_check_at IS NOT NULL'))

    op.create_table('errors',
    sa.Column('pk', sa.Integer(), nullable=False),
    sa.Column('task_pk', sa.Integer(), nullable=True),
    sa.Column('task_id', sa.String(length=255), nullable=True),
    sa.Column('scope', sa.String(length=255), server_default='', nullable=False),
    sa.Column('skill', sa.String(length=255), nullable=True),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('trace_id', sa.String(length=255), nullable=True),
    sa.Column('decision_log', sa.JSON(), nullable=True),
    sa.Column('resolved', sa.Boolean(), server_default=sa.text('(false)'), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=True),
    sa.Column('final', sa.Boolean(), server_default=sa.text('(false)'), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['task_pk'], ['tasks.pk'], name=op.f('fk_errors_task_pk_tasks'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('pk', name=op.f('pk_errors'))
    )
    with op.batch_alter_table('errors', schema=None) as batch_op:
        batch_op.create_index('ix_errors_at', ['at'], unique=False)
        batch_op.create_index('ix_errors_task_pk', ['task_pk'], unique=False)

    op.create_table('notifications',
    sa.Column('pk', sa.Integer(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('local_day', sa.String(length=10), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('task_pk', sa.Integer(), nullable=True),
    sa.Column('task_id', sa.String(length=255), nullable=True),
    sa.Column('topic', sa.Text(), nullable=True),
    sa.Column('risk', sa.String(length=2), nullable=True),
    sa.Column('decision', sa.String(length=12), nullable=False),
    sa.Column('reason', sa.String(length=32), nullable=True),
    sa.Column('blocker', sa.Text(), nullable=True),
    sa.Column('suggestion', sa.Text(), nullable=True),
    sa.Column('message', sa.Text(), nullable=True),
    sa.Column('run_pk', sa.Integer(), nullable=True),
    sa.CheckConstraint("decision IN ('sent', 'suppressed')", name=op.f('ck_notifications_decision')),
    sa.ForeignKeyConstraint(['run_pk'], ['runs.pk'], name=op.f('fk_notifications_run_pk_runs'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['task_pk'], ['tasks.pk'], name=op.f('fk_notifications_task_pk_tasks'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('pk', name=op.f('pk_notifications'))
    )
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.create_index('ix_notifications_at', ['at'], unique=False)
        batch_op.create_index('ix_notifications_kind_decision_at', ['kind', 'decision', 'at'], unique=False)
        batch_op.create_index('ix_notifications_task_id_at', ['task_id', 'at'], unique=False)

    op.create_table('outcomes',
    sa.Column('pk', sa.Integer(), nullable=False),
    sa.Column('task_pk', sa.Integer(), nullable=True),
    sa.Column('recurrence_pk', sa.Integer(), nullable=True),
    sa.Column('task_id', sa.String(length=255), nullable=False),
    sa.Column('scope', sa.String(length=255), server_default='', nullable=False),
    sa.Column('source', sa.String(length=16), nullable=True),
    sa.Column('skill', sa.String(length=255), nullable=True),
    sa.Column('success', sa.Boolean(), nullable=False),
    sa.Column('result', sa.JSON(), nullable=True),
    sa.Column('claimed_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('completed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('duration_s', sa.Float(), nullable=True),
    sa.Column('attempt', sa.Integer(), nullable=True),
    sa.Column('worker', sa.String(length=255), nullable=True),
    sa.ForeignKeyConstraint(['recurrence_pk'], ['recurrences.pk'], name=op.f('fk_outcomes_recurrence_pk_recurrences'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['task_pk'], ['tasks.pk'], name=op.f('fk_outcomes_task_pk_tasks'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('pk', name=op.f('pk_outcomes'))
    )
    with op.batch_alter_table('outcomes', schema=None) as batch_op:
        batch_op.create_index('ix_outcomes_completed_at', ['completed_at'], unique=False)
        batch_op.create_index('ix_outcomes_recurrence_pk', ['recurrence_pk'], unique=False, sqlite_where=sa.text('recurrence_pk IS NOT NULL'), postgresql_where=sa.text('recurrence_pk IS NOT NULL'))
        batch_op.create_index('ix_outcomes_task_pk', ['task_pk'], unique=False)

    op.create_table('task_events',
    sa.Column('pk', sa.Integer(), nullable=False),
    sa.Column('task_pk', sa.Integer(), nullable=True),
    sa.Column('task_id', sa.String(length=255), nullable=False),
    sa.Column('scope', sa.String(length=255), server_default='', nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('kind', sa.String(length=24), nullable=False),
    sa.Column('actor', sa.String(length=64), nullable=True),
    sa.Column('before', sa.JSON(), nullable=True),
    sa.Column('detail', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['task_pk'], ['tasks.pk'], name=op.f('fk_task_events_task_pk_tasks'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('pk', name=op.f('pk_task_events'))
    )
    with op.batch_alter_table('task_events', schema=None) as batch_op:
        batch_op.create_index('ix_task_events_task_id', ['task_id'], unique=False)
        batch_op.create_index('ix_task_events_task_pk_at', ['task_pk', 'at'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('task_events', schema=None) as batch_op:
        batch_op.drop_index('ix_task_events_task_pk_at')
        batch_op.drop_index('ix_task_events_task_id')

    op.drop_table('task_events')
    with op.batch_alter_table('outcomes', schema=None) as batch_op:
        batch_op.drop_index('ix_outcomes_task_pk')
        batch_op.drop_index('ix_outcomes_recurrence_pk')
        batch_op.drop_index('ix_outcomes_completed_at')

    op.drop_table('outcomes')
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_index('ix_notifications_task_id_at')
        batch_op.drop_index('ix_notifications_kind_decision_at')
        batch_op.drop_index('ix_notifications_at')

    op.drop_table('notifications')
    with op.batch_alter_table('errors', schema=None) as batch_op:
        batch_op.drop_index('ix_errors_task_pk')
        batch_op.drop_index('ix_errors_at')

    op.drop_table('errors')
    with op.batch_alter_table('tasks', schema=None) as batch_op:
        batch_op.drop_index('ix_tasks_status_next_check_at')
        batch_op.drop_index('ix_tasks_id')
        batch_op.drop_index('ix_tasks_source_external_key')
        batch_op.drop_index('ix_tasks_ready', sqlite_where=sa.text("status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"), postgresql_where=sa.text("status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"))
        batch_op.drop_index('ix_tasks_claimed', sqlite_where=sa.text("status = 'doing'"), postgresql_where=sa.text("status = 'doing'"))

    op.drop_table('tasks')
    op.drop_table('sync_state')
    op.drop_table('settings')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('uq_runs_guard')
        batch_op.drop_index('ix_runs_kind_started_at')

    op.drop_table('runs')
    with op.batch_alter_table('recurrences', schema=None) as batch_op:
        batch_op.drop_index('ix_recurrences_enabled_next_at')

    op.drop_table('recurrences')
