"""reporting views and the indexes hb report reads through

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29

The views answer the common questions in plain SQL (``hb sql``); they are
written once here, in SQL that SQLite and PostgreSQL both run. The only
dialect difference is the UTC calendar day of a timestamp. Median and p95
durations use window functions: the median is the mean of the middle two
durations, p95 the nearest-rank 95th percentile (the ceil(0.95 n)-th).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Covering indexes: every report is an index scan, its order statistics index seeks.
# (name, table, columns, partial-index condition)
INDEXES: tuple[tuple[str, str, tuple[str, ...], str | None], ...] = (
    ('ix_outcomes_completed_at_duration_s', 'outcomes', ('completed_at', 'duration_s', 'success'), None),
    ('ix_outcomes_skill_duration_s', 'outcomes', ('skill', 'duration_s', 'completed_at', 'success'), None),
    ('ix_outcomes_scope_duration_s', 'outcomes', ('scope', 'duration_s', 'completed_at', 'success'), None),
    ('ix_outcomes_source_duration_s', 'outcomes', ('source', 'duration_s', 'completed_at', 'success'), None),
    (
        'ix_outcomes_scope_task_id_duration_s',
        'outcomes',
        ('scope', 'task_id', 'duration_s', 'completed_at', 'success'),
        None,
    ),
    (
        'ix_outcomes_recurrence_pk_completed_at',
        'outcomes',
        ('recurrence_pk', 'completed_at', 'success'),
        'recurrence_pk IS NOT NULL',
    ),
    ('ix_errors_scope_task_id_at', 'errors', ('scope', 'task_id', 'at'), None),
    ('ix_tasks_scope_status_created_at', 'tasks', ('scope', 'status', 'created_at'), None),
)

_SUCCESSES = 'SUM(CASE WHEN success THEN 1 ELSE 0 END)'


def _outcomes_view(columns: str, keys: str) -> str:
    """Outcome statistics grouped by ``keys``, the names of ``columns`` (SQL expressions)."""
    return f"""
WITH keyed AS (
    SELECT {columns}, success, duration_s, completed_at FROM outcomes
),
ranked AS (
    SELECT {keys}, success, duration_s, completed_at,
           ROW_NUMBER() OVER (
               PARTITION BY {keys}
               ORDER BY CASE WHEN duration_s IS NULL THEN 1 ELSE 0 END, duration_s
           ) AS duration_rank,
           COUNT(duration_s) OVER (PARTITION BY {keys}) AS timed
    FROM keyed
)
SELECT {keys},
       COUNT(*) AS outcomes,
       {_SUCCESSES} AS successes,
       COUNT(*) - {_SUCCESSES} AS failures,
       CAST({_SUCCESSES} AS DOUBLE PRECISION) / COUNT(*) AS success_rate,
       AVG(CASE WHEN duration_rank IN ((timed + 1) / 2, (timed + 2) / 2) THEN duration_s END)
           AS median_duration_s,
       MAX(CASE WHEN duration_rank = (95 * timed + 99) / 100 THEN duration_s END) AS p95_duration_s,
       MIN(completed_at) AS first_completed_at,
       MAX(completed_at) AS last_completed_at
FROM ranked
GROUP BY {keys}
"""


_REASONS = (
    'quiet_hours',
    'repeat_window',
    'daily_cap',
    'min_gap',
    'recent_conversation',
    'no_suggestion',
    'disabled',
    'risk_p2',
)


def views(dialect: str) -> dict[str, str]:
    """The view definitions (SELECT statements) for a dialect, in creation order."""
    utc_day = (
        "to_char(completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
        if dialect == 'postgresql'
        else 'substr(completed_at, 1, 10)'
    )
    reason_counts = ',\n       '.join(
        f"SUM(CASE WHEN reason = '{r}' THEN 1 ELSE 0 END) AS {r}" for r in _REASONS
    )
    known = ', '.join(f"'{r}'" for r in _REASONS)
    return {
        'outcomes_by_task': _outcomes_view('scope, task_id', 'scope, task_id'),
        'outcomes_by_skill': _outcomes_view('skill', 'skill'),
        'outcomes_by_scope': _outcomes_view('scope', 'scope'),
        'outcomes_by_source': _outcomes_view('source', 'source'),
        'outcomes_by_day': _outcomes_view(f'{utc_day} AS day', 'day'),
        'failures_by_task': """
SELECT f.scope, f.task_id, f.failures, f.retries, f.final_failures, f.max_attempt,
       t.status, t.attempts,
       (SELECT e.reason FROM errors e
         WHERE e.scope = f.scope AND e.task_id = f.task_id
         ORDER BY e.at DESC, e.pk DESC LIMIT 1) AS last_reason,
       f.first_failed_at, f.last_failed_at
FROM (
    SELECT scope, task_id,
           COUNT(*) AS failures,
           SUM(CASE WHEN final THEN 0 ELSE 1 END) AS retries,
           SUM(CASE WHEN final THEN 1 ELSE 0 END) AS final_failures,
           MAX(attempt) AS max_attempt,
           MIN(at) AS first_failed_at,
           MAX(at) AS last_failed_at
    FROM errors
    GROUP BY scope, task_id
) f
LEFT JOIN tasks t ON t.scope = f.scope AND t.id = f.task_id
""",
        'failure_reasons': """
SELECT RANK() OVER (ORDER BY COUNT(*) DESC) AS rank,
       reason,
       COUNT(*) AS failures,
       COUNT(DISTINCT task_id) AS tasks,
       SUM(CASE WHEN final THEN 1 ELSE 0 END) AS final_failures,
       MIN(at) AS first_failed_at,
       MAX(at) AS last_failed_at
FROM errors
GROUP BY reason
""",
        'notifications_by_day': f"""
SELECT local_day AS day, kind,
       COUNT(*) AS notifications,
       SUM(CASE WHEN decision = 'sent' THEN 1 ELSE 0 END) AS sent,
       SUM(CASE WHEN decision = 'suppressed' THEN 1 ELSE 0 END) AS suppressed,
       {reason_counts},
       SUM(CASE WHEN decision = 'suppressed' AND (reason IS NULL OR reason NOT IN ({known}))
                THEN 1 ELSE 0 END) AS other_reason
FROM notifications
GROUP BY local_day, kind
""",
        'notification_decisions': """
SELECT local_day AS day, kind, decision, reason, COUNT(*) AS notifications
FROM notifications
GROUP BY local_day, kind, decision, reason
""",
        'queue_depth': """
SELECT scope, status,
       COUNT(*) AS tasks,
       MIN(created_at) AS oldest_created_at,
       MAX(created_at) AS newest_created_at
FROM tasks
GROUP BY scope, status
""",
        'recurrence_runs': """
SELECT r.id, r.source, r.title, r.rule, r.enabled, r.missed_policy, r.run_count, r.last_run_at, r.next_at,
       COUNT(o.pk) AS outcomes,
       SUM(CASE WHEN o.success THEN 1 ELSE 0 END) AS successes,
       SUM(CASE WHEN NOT o.success THEN 1 ELSE 0 END) AS failures,
       MAX(o.completed_at) AS last_outcome_at
FROM recurrences r
LEFT JOIN outcomes o ON o.recurrence_pk = r.pk
GROUP BY r.pk, r.id, r.source, r.title, r.rule, r.enabled, r.missed_policy, r.run_count,
         r.last_run_at, r.next_at
""",
    }


# 0001's indexes that a covering index above starts with (and so replaces)
REPLACED: tuple[tuple[str, str, tuple[str, ...], str | None], ...] = (
    ('ix_outcomes_completed_at', 'outcomes', ('completed_at',), None),
    ('ix_outcomes_recurrence_pk', 'outcomes', ('recurrence_pk',), 'recurrence_pk IS NOT NULL'),
)


def _create(name: str, table: str, columns: tuple[str, ...], where: str | None) -> None:
    partial = {} if where is None else {'sqlite_where': sa.text(where), 'postgresql_where': sa.text(where)}
    op.create_index(name, table, list(columns), unique=False, **partial)


def upgrade() -> None:
    for name, table, _columns, _where in REPLACED:
        op.drop_index(name, table_name=table)
    for name, table, columns, where in INDEXES:
        _create(name, table, columns, where)
    for name, select in views(op.get_bind().dialect.name).items():
        op.execute(f'CREATE VIEW {name} AS {select.strip()}')


def downgrade() -> None:
    for name in reversed(list(views(op.get_bind().dialect.name))):
        op.execute(f'DROP VIEW IF EXISTS {name}')
    for name, table, _columns, _where in reversed(INDEXES):
        op.drop_index(name, table_name=table)
    for replaced in REPLACED:
        _create(*replaced)
