"""Turns that hb_reader cannot take: a locks table (and sync_state's sizes as bigint on PostgreSQL)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07

On PostgreSQL, two ``hb proactive`` rounds (which share the day's one message)
and two dependency edits (which together could close a cycle) took turns on a
transaction-level advisory lock of a fixed key. Any role that can connect can
take an advisory lock, ``hb_reader`` included, in a READ ONLY transaction:
``SELECT pg_advisory_xact_lock(...), pg_sleep(...)`` through ``hb sql`` or the
MCP ``sql`` tool held every proactive round and dependency edit waiting, then
exiting 75, for as long as the statement timeout let it run. The turns are now
row locks on ``locks`` (one row per kind of transaction, made by the first one
to need it): a row lock needs UPDATE on the table, which the reader does not
hold, and PostgreSQL refuses row locks in a read-only transaction anyway. The
reader is granted SELECT on the new table by name, as 0013 requires of a later
revision. SQLite gets the table too (the models are one schema for both) and
never locks it: its write lock makes writers take turns.

``sync_state.size`` (a file's size in bytes) and ``mtime_ns`` become bigint on
PostgreSQL, where int4 stopped at 2 GiB; SQLite's integers were 64-bit already.
A downgrade drops the table and makes the two columns integer again, which
PostgreSQL refuses while a larger value is stored.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ROLE = 'hb_reader'
BIG = (('sync_state', 'size'), ('sync_state', 'mtime_ns'))

GRANT = f"""
DO $hb$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
        EXECUTE format('GRANT SELECT ON %I.locks TO {ROLE}', current_schema());
    END IF;
EXCEPTION
    WHEN insufficient_privilege THEN
        RAISE NOTICE 'hb: cannot grant {ROLE} read access; hb sql needs an administrator to grant it';
END
$hb$;
"""


def upgrade() -> None:
    op.create_table(
        'locks',
        sa.Column('name', sa.String(length=32).with_variant(sa.Text(), 'postgresql'), nullable=False),
        sa.PrimaryKeyConstraint('name', name=op.f('pk_locks')),
    )
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(GRANT)
        for table, column in BIG:
            op.alter_column(table, column, type_=sa.BigInteger(), existing_type=sa.Integer(), existing_nullable=True)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        for table, column in BIG:
            op.alter_column(table, column, type_=sa.Integer(), existing_type=sa.BigInteger(), existing_nullable=True)
    op.drop_table('locks')
