"""failure_reasons counts a task by its scope and id

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07

0002's ``failure_reasons`` counted the tasks of a reason as ``COUNT(DISTINCT
task_id)``: a task ``same`` of the legacy lists and a task ``same`` of a scoped
queue, each failing for one reason, were one task (an id is told apart by its
scope, SPEC 2.1). The view now groups the failures per (reason, scope, task_id)
first and counts those groups, as ``hb report failures`` does; failures recorded
without a task still count as none. Same columns, in the same order and of the
same types; the other views are unchanged. A downgrade restores 0002's definition.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FAILURE_REASONS = """
SELECT RANK() OVER (ORDER BY SUM(failures) DESC) AS rank,
       reason,
       CAST(SUM(failures) AS BIGINT) AS failures,
       COUNT(task_id) AS tasks,
       CAST(SUM(final_failures) AS BIGINT) AS final_failures,
       MIN(first_failed_at) AS first_failed_at,
       MAX(last_failed_at) AS last_failed_at
FROM (
    SELECT reason, scope, task_id,
           COUNT(*) AS failures,
           SUM(CASE WHEN final THEN 1 ELSE 0 END) AS final_failures,
           MIN(at) AS first_failed_at,
           MAX(at) AS last_failed_at
    FROM errors
    GROUP BY reason, scope, task_id
) per_task
GROUP BY reason
"""


def _previous() -> str:
    """0002's definition, read from its file beside this one."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location('_hb_0002', Path(__file__).with_name('0002_reporting_views.py'))
    assert spec is not None and spec.loader is not None
    previous = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(previous)
    definition: str = previous.views(op.get_bind().dialect.name)['failure_reasons']
    return definition


def _replace(select: str) -> None:
    op.execute('DROP VIEW IF EXISTS failure_reasons')
    op.execute(f'CREATE VIEW failure_reasons AS {select.strip()}')


def upgrade() -> None:
    _replace(FAILURE_REASONS)


def downgrade() -> None:
    _replace(_previous())
