"""the dashboard's index: heartbeat ticks and pokes by time

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02

``runs`` holds a row per queue operation (each pop, completion and failure)
besides the heartbeat ticks and pokes, so it grows with the outcomes. The
dashboard's Runs page, its Decisions page (the heartbeats that ran each hour)
and its Now page (the last heartbeat) read ticks and pokes by time; this
partial index holds just those rows, so a queue operation writes no page of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# an OR of equalities, so that `kind = 'heartbeat'` can use the index
TICKS = "kind = 'heartbeat' OR kind = 'poke'"


def upgrade() -> None:
    op.create_index(
        'ix_runs_tick_started_at',
        'runs',
        ['kind', 'started_at'],
        unique=False,
        sqlite_where=sa.text(TICKS),
        postgresql_where=sa.text(TICKS),
    )


def downgrade() -> None:
    op.drop_index('ix_runs_tick_started_at', table_name='runs')
