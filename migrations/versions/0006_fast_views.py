"""outcome views that avoid sorting every outcome; time-stamped views for browsing tools

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02

The ``outcomes_by_*`` views of 0002 ranked every outcome with two window sorts,
5-10 s at a million outcomes. They are redefined here, with the same columns
and the same numbers:

- SQLite: one grouped pass counts each group's outcomes per whole second of
  duration (a histogram); the ranks of the median and p95 are located in it;
  only the outcomes of the seconds that hold those ranks are read again and
  ranked. Exact, and it sorts a few thousand durations instead of a million.
  ``outcomes_by_task`` (groups of a handful of outcomes) ranks with one window
  sort instead of two.
- PostgreSQL: the ordered-set aggregate ``percentile_disc``: the middle value
  counted from either end (their mean is the median, as hb report computes it)
  and the nearest rank for p95 (the ``ceil(0.95 n)``-th smallest).

Browsing tools (Datasette, sqlite-utils) show SQLite's stored times
(``2026-05-01 09:30:00.000000``) without a zone. The ``*_utc`` views show each
table hb's users browse with every time as ISO 8601 in UTC, ``Z`` included.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SUCCESSES = 'SUM(CASE WHEN success THEN 1 ELSE 0 END)'

# view -> (key expressions, key names)
_GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    'outcomes_by_skill': (('skill',), ('skill',)),
    'outcomes_by_scope': (('scope',), ('scope',)),
    'outcomes_by_source': (('source',), ('source',)),
    'outcomes_by_day': (('substr(completed_at, 1, 10)',), ('day',)),
}


def _histogram_view(exprs: tuple[str, ...], keys: tuple[str, ...]) -> str:
    """SQLite: exact statistics per group, reading the durations near the wanted ranks only."""
    sel = ', '.join(e if e == k else f'{e} AS {k}' for e, k in zip(exprs, keys, strict=True))
    kn = ', '.join(keys)

    def on(a: str, b: str) -> str:
        return ' AND '.join(f'{a}.{k} IS {b}.{k}' for k in keys)

    def of(alias: str) -> str:
        return ', '.join(f'{alias}.{k}' for k in keys)

    return f"""
WITH histogram AS (
    SELECT {sel}, CAST(duration_s AS INTEGER) AS second, COUNT(*) AS n, {_SUCCESSES} AS ok,
           COUNT(duration_s) AS timed, MIN(completed_at) AS first_at, MAX(completed_at) AS last_at
    FROM outcomes GROUP BY {kn}, second
),
grouped AS (
    SELECT {kn}, SUM(n) AS n, SUM(ok) AS ok, SUM(timed) AS timed,
           MIN(first_at) AS first_at, MAX(last_at) AS last_at
    FROM histogram GROUP BY {kn}
),
cumulative AS (
    SELECT {kn}, second, timed,
           SUM(timed) OVER (PARTITION BY {kn} ORDER BY second ROWS UNBOUNDED PRECEDING) - timed AS below
    FROM histogram WHERE timed > 0
),
wanted AS (
    SELECT {kn}, (timed + 1) / 2 AS r FROM grouped WHERE timed > 0
    UNION SELECT {kn}, (timed + 2) / 2 FROM grouped WHERE timed > 0
    UNION SELECT {kn}, (95 * timed + 99) / 100 FROM grouped WHERE timed > 0
),
located AS (
    SELECT {of('w')}, w.r, c.second, w.r - c.below AS position
    FROM wanted w JOIN cumulative c ON {on('c', 'w')} AND w.r > c.below AND w.r <= c.below + c.timed
),
near AS (
    SELECT {sel}, CAST(duration_s AS INTEGER) AS second, duration_s FROM outcomes
    WHERE CAST(duration_s AS INTEGER) IN (SELECT second FROM located)
),
ranked AS (
    SELECT {of('x')}, x.second, x.duration_s,
           ROW_NUMBER() OVER (PARTITION BY {of('x')}, x.second ORDER BY x.duration_s) AS position
    FROM near x WHERE EXISTS (SELECT 1 FROM located l WHERE {on('l', 'x')} AND l.second = x.second)
),
at_rank AS (
    SELECT {of('l')}, l.r, x.duration_s FROM located l
    JOIN ranked x ON {on('x', 'l')} AND x.second = l.second AND x.position = l.position
)
SELECT {of('g')}, g.n AS outcomes, g.ok AS successes, g.n - g.ok AS failures,
       CAST(g.ok AS DOUBLE PRECISION) / g.n AS success_rate,
       (SELECT AVG(v.duration_s) FROM at_rank v
         WHERE {on('v', 'g')} AND v.r IN ((g.timed + 1) / 2, (g.timed + 2) / 2)) AS median_duration_s,
       (SELECT v.duration_s FROM at_rank v WHERE {on('v', 'g')} AND v.r = (95 * g.timed + 99) / 100)
           AS p95_duration_s,
       g.first_at AS first_completed_at, g.last_at AS last_completed_at
FROM grouped g
"""


def _window_view(keys: str) -> str:
    """SQLite, for many small groups: one window sort (rank and count share its definition)."""
    return f"""
WITH ranked AS (
    SELECT {keys}, success, duration_s, completed_at,
           ROW_NUMBER() OVER w AS duration_rank, COUNT(duration_s) OVER w AS timed
    FROM outcomes
    WINDOW w AS (PARTITION BY {keys} ORDER BY CASE WHEN duration_s IS NULL THEN 1 ELSE 0 END, duration_s
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
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


def _percentile_view(exprs: tuple[str, ...], keys: tuple[str, ...]) -> str:
    """PostgreSQL: ordered-set aggregates, one sort per group's durations."""
    sel = ', '.join(e if e == k else f'{e} AS {k}' for e, k in zip(exprs, keys, strict=True))
    kn = ', '.join(keys)
    return f"""
SELECT {kn},
       COUNT(*) AS outcomes,
       {_SUCCESSES} AS successes,
       COUNT(*) - {_SUCCESSES} AS failures,
       CAST({_SUCCESSES} AS DOUBLE PRECISION) / COUNT(*) AS success_rate,
       (percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_s)
        + percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_s DESC)) / 2 AS median_duration_s,
       percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_s) AS p95_duration_s,
       MIN(completed_at) AS first_completed_at,
       MAX(completed_at) AS last_completed_at
FROM (SELECT {sel}, success, duration_s, completed_at FROM outcomes) keyed
GROUP BY {kn}
"""


def outcome_views(dialect: str) -> dict[str, str]:
    """The outcomes_by_* views of this revision for a dialect."""
    if dialect == 'postgresql':
        day = ("to_char(completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')",)
        groups = {name: (day if keys == ('day',) else exprs, keys) for name, (exprs, keys) in _GROUPS.items()}
        out = {'outcomes_by_task': _percentile_view(('scope', 'task_id'), ('scope', 'task_id'))}
        out.update({name: _percentile_view(*spec) for name, spec in groups.items()})
        return out
    out = {'outcomes_by_task': _window_view('scope, task_id')}
    out.update({name: _histogram_view(*spec) for name, spec in _GROUPS.items()})
    return out


# table -> (columns in order, the time columns)
_BROWSED: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    'tasks': (
        (
            'pk', 'id', 'scope', 'source', 'title', 'status', 'priority', 'risk', 'blocked_by', 'due_at',
            'next_check_at', 'check_interval', 'stale_after', 'last_update_at', 'last_checked_at',
            'last_progress_note', 'next_action', 'fallback_action', 'blocker', 'follow_up', 'skill',
            'project_id', 'agent_id', 'user_id', 'chat_id', 'created_at', 'updated_at', 'completed_at',
            'claimed_at', 'claimed_by', 'lease_expires_at', 'attempts', 'claim', 'not_before',
            'idempotency_key', 'version',
        ),
        frozenset({
            'due_at', 'next_check_at', 'last_update_at', 'last_checked_at', 'created_at', 'updated_at',
            'completed_at', 'claimed_at', 'lease_expires_at', 'not_before',
        }),
    ),
    'outcomes': (
        (
            'pk', 'task_pk', 'recurrence_pk', 'task_id', 'scope', 'source', 'skill', 'success', 'result',
            'claimed_at', 'completed_at', 'duration_s', 'attempt', 'worker', 'claim',
        ),
        frozenset({'claimed_at', 'completed_at'}),
    ),
    'errors': (
        (
            'pk', 'task_pk', 'task_id', 'scope', 'skill', 'at', 'reason', 'trace_id', 'decision_log',
            'resolved', 'attempt', 'final', 'claim',
        ),
        frozenset({'at'}),
    ),
    'notifications': (
        (
            'pk', 'at', 'local_day', 'kind', 'task_pk', 'task_id', 'topic', 'risk', 'decision', 'reason',
            'blocker', 'suggestion', 'message', 'run_pk',
        ),
        frozenset({'at'}),
    ),
    'runs': (
        (
            'pk', 'kind', 'scope', 'status', 'started_at', 'finished_at', 'task_id', 'worker', 'pid',
            'expires_at', 'record', 'detail',
        ),
        frozenset({'started_at', 'finished_at', 'expires_at'}),
    ),
    'recurrences': (
        (
            'pk', 'id', 'source', 'title', 'rule', 'tz', 'next_local', 'next_at', 'time_of_day', 'day',
            'enabled', 'priority', 'permission_tier', 'conditions', 'instruction', 'chat_id',
            'missed_policy', 'run_count', 'last_run_at', 'claimed_period', 'claimed_at', 'evaluation',
            'created_at', 'updated_at',
        ),
        frozenset({'next_at', 'last_run_at', 'claimed_at', 'created_at', 'updated_at'}),
    ),
}


def browse_views(dialect: str) -> dict[str, str]:
    """``<table>_utc``: the table's columns, every time as ISO 8601 UTC text ending in Z."""

    def utc(column: str) -> str:
        if dialect == 'postgresql':
            return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS {column}"""
        return f"replace({column}, ' ', 'T') || 'Z' AS {column}"

    return {
        f'{table}_utc': 'SELECT ' + ', '.join(utc(c) if c in times else c for c in columns) + f' FROM {table}'
        for table, (columns, times) in _BROWSED.items()
    }


def _previous_outcome_views(dialect: str) -> dict[str, str]:
    """0002's definitions, read from its file beside this one."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location('_hb_0002', Path(__file__).with_name('0002_reporting_views.py'))
    assert spec is not None and spec.loader is not None
    previous = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(previous)
    return {k: v for k, v in previous.views(dialect).items() if k.startswith('outcomes_by_')}


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    for name, select in outcome_views(dialect).items():
        op.execute(f'DROP VIEW IF EXISTS {name}')
        op.execute(f'CREATE VIEW {name} AS {select.strip()}')
    for name, select in browse_views(dialect).items():
        op.execute(f'CREATE VIEW {name} AS {select}')


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for name in reversed(list(browse_views(dialect))):
        op.execute(f'DROP VIEW IF EXISTS {name}')
    for name, select in _previous_outcome_views(dialect).items():
        op.execute(f'DROP VIEW IF EXISTS {name}')
        op.execute(f'CREATE VIEW {name} AS {select.strip()}')
