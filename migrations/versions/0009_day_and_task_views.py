"""outcomes_by_day and outcomes_by_task without sorting every outcome (SQLite)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04

Revision 0006's SQLite ``outcomes_by_day`` sorted every outcome by (day,
second) for its histogram (1.2 s at a million outcomes), and its
``outcomes_by_task`` ranked every outcome in a window that the planner served
from the per-scope index, one table lookup per outcome, and then sorted them
all again to group them (7.8 s). Redefined here, with the same columns and the
same numbers:

- ``outcomes_by_day`` walks the days on ``ix_outcomes_completed_at_duration_s``:
  the next day is one index step from the last, and each day's counts, first
  and last completion are ranges of that index. The histogram of whole seconds
  is made per day (small sorts that stay in memory), its cumulative counts
  locate the median's and p95's seconds, and only the outcomes of those
  seconds are ranked.
- ``outcomes_by_task`` groups the outcomes in one sort of the table (not the
  per-scope index). A task with at most two timed outcomes, nearly every queue
  task, takes its median and p95 from its shortest and longest duration; only
  the outcomes of tasks with more are ranked.

PostgreSQL keeps 0006's ordered-set aggregates: this revision changes nothing
there.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SUCCESSES = 'SUM(CASE WHEN success THEN 1 ELSE 0 END)'
_MIDDLE = 'IN ((total + 1) / 2, (total + 2) / 2)'  # the median: the mean of these ranks' values
_P95 = '(95 * total + 99) / 100'  # p95: the nearest rank, ceil(0.95 n)

OUTCOMES_BY_DAY = f"""
WITH RECURSIVE days(day) AS (
    SELECT substr(MIN(completed_at), 1, 10) FROM outcomes
    UNION ALL
    SELECT (SELECT substr(MIN(completed_at), 1, 10) FROM outcomes WHERE completed_at >= date(day, '+1 day'))
    FROM days WHERE day IS NOT NULL
),
grouped AS (
    SELECT day, lo, hi,
        (SELECT COUNT(*) FROM outcomes WHERE completed_at >= lo AND completed_at < hi) AS n,
        (SELECT COUNT(*) FROM outcomes WHERE completed_at >= lo AND completed_at < hi AND success) AS ok,
        (SELECT MIN(completed_at) FROM outcomes WHERE completed_at >= lo) AS first_at,
        (SELECT MAX(completed_at) FROM outcomes WHERE completed_at < hi) AS last_at,
        (SELECT json_group_array(json_array(second, timed)) FROM (
            SELECT CAST(duration_s AS INTEGER) AS second, COUNT(*) AS timed FROM outcomes
            WHERE completed_at >= lo AND completed_at < hi AND duration_s IS NOT NULL
            GROUP BY second ORDER BY second)) AS histogram
    FROM (SELECT day, day AS lo, date(day, '+1 day') AS hi FROM days WHERE day IS NOT NULL)
),
cumulative AS (
    SELECT day, lo, hi, second, timed,
           SUM(timed) OVER (PARTITION BY day ORDER BY second ROWS UNBOUNDED PRECEDING) - timed AS below,
           SUM(timed) OVER (PARTITION BY day) AS total
    FROM (SELECT g.day, g.lo, g.hi, json_extract(h.value, '$[0]') AS second, json_extract(h.value, '$[1]') AS timed
          FROM grouped g, json_each(g.histogram) h)
),
located AS (
    SELECT day, lo, hi, second, below, total FROM cumulative
    WHERE (total + 1) / 2 BETWEEN below + 1 AND below + timed
       OR (total + 2) / 2 BETWEEN below + 1 AND below + timed
       OR {_P95} BETWEEN below + 1 AND below + timed
),
ranked AS (
    SELECT l.day, l.total, o.duration_s,
           l.below + ROW_NUMBER() OVER (PARTITION BY l.day, l.second ORDER BY o.duration_s) AS r
    FROM located l JOIN outcomes o
      ON o.completed_at >= l.lo AND o.completed_at < l.hi AND CAST(o.duration_s AS INTEGER) = l.second
),
percentiles AS (
    SELECT day, AVG(CASE WHEN r {_MIDDLE} THEN duration_s END) AS median,
           MAX(CASE WHEN r = {_P95} THEN duration_s END) AS p95
    FROM ranked GROUP BY day
)
SELECT g.day, g.n AS outcomes, g.ok AS successes, g.n - g.ok AS failures,
       CAST(g.ok AS DOUBLE PRECISION) / g.n AS success_rate,
       p.median AS median_duration_s, p.p95 AS p95_duration_s,
       g.first_at AS first_completed_at, g.last_at AS last_completed_at
FROM grouped g LEFT JOIN percentiles p ON p.day = g.day
"""

OUTCOMES_BY_TASK = f"""
WITH grouped AS (
    SELECT scope, task_id, COUNT(*) AS n, {_SUCCESSES} AS ok, COUNT(duration_s) AS timed,
           MIN(duration_s) AS shortest, MAX(duration_s) AS longest,
           MIN(completed_at) AS first_at, MAX(completed_at) AS last_at
    FROM outcomes NOT INDEXED GROUP BY scope, task_id
),
ranked AS (
    SELECT o.scope, o.task_id, m.timed AS total, o.duration_s,
           ROW_NUMBER() OVER (PARTITION BY o.scope, o.task_id ORDER BY o.duration_s) AS r
    FROM outcomes o NOT INDEXED
    CROSS JOIN (SELECT scope, task_id, timed FROM grouped WHERE timed > 2) m
      ON m.scope = o.scope AND m.task_id = o.task_id
    WHERE o.duration_s IS NOT NULL
),
percentiles AS (
    SELECT scope, task_id, AVG(CASE WHEN r {_MIDDLE} THEN duration_s END) AS median,
           MAX(CASE WHEN r = {_P95} THEN duration_s END) AS p95
    FROM ranked GROUP BY scope, task_id
)
SELECT g.scope, g.task_id, g.n AS outcomes, g.ok AS successes, g.n - g.ok AS failures,
       CAST(g.ok AS DOUBLE PRECISION) / g.n AS success_rate,
       CASE WHEN g.timed < 2 THEN g.shortest
            WHEN g.timed = 2 THEN (g.shortest + g.longest) / 2
            ELSE (SELECT p.median FROM percentiles p WHERE p.scope = g.scope AND p.task_id = g.task_id) END
           AS median_duration_s,
       CASE WHEN g.timed <= 2 THEN g.longest
            ELSE (SELECT p.p95 FROM percentiles p WHERE p.scope = g.scope AND p.task_id = g.task_id) END
           AS p95_duration_s,
       g.first_at AS first_completed_at, g.last_at AS last_completed_at
FROM grouped g
"""

VIEWS = {'outcomes_by_day': OUTCOMES_BY_DAY, 'outcomes_by_task': OUTCOMES_BY_TASK}


def _previous_views() -> dict[str, str]:
    """0006's SQLite definitions of these views, read from its file beside this one."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location('_hb_0006', Path(__file__).with_name('0006_fast_views.py'))
    assert spec is not None and spec.loader is not None
    previous = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(previous)
    return {k: v for k, v in previous.outcome_views('sqlite').items() if k in VIEWS}


def _replace(views: dict[str, str]) -> None:
    for name, select in views.items():
        op.execute(f'DROP VIEW IF EXISTS {name}')
        op.execute(f'CREATE VIEW {name} AS {select.strip()}')


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        _replace(VIEWS)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        _replace(_previous_views())
