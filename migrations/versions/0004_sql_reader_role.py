"""a read-only role for hb sql (PostgreSQL)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

``hb sql`` on PostgreSQL connects as the role ``hb_reader``, which may log in
but can only read hb's tables and views: it is no superuser and holds none of
the server-file or program roles, so ``COPY ... TO``, ``pg_read_file``,
``pg_ls_dir``, ``lo_import`` and a ``SET ROLE`` back to the connecting user are
refused by the server, whoever runs ``hb sql``. A read-only transaction of a
superuser connection is not enough: the session user may set any role again.

The role is cluster-wide and shared by every hb database on the server; each
database grants it ``CONNECT``, ``USAGE`` on hb's schema and ``SELECT`` on
hb's tables and views, now and (default privileges) for the objects later
revisions create. A user that may not create roles gets no error here:
``hb sql`` then says which statements an administrator must run. SQLite needs
none of this (``hb sql`` opens the file read-only).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op


revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ROLE = 'hb_reader'

# Create the role when it is missing and the migrating user may (a concurrent migration of another
# database may create it first), then grant it what hb sql reads; without CREATEROLE nothing fails.
UPGRADE = f"""
DO $hb$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
        BEGIN
            CREATE ROLE {ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
            ALTER ROLE {ROLE} SET default_transaction_read_only = on;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'hb: cannot create role {ROLE}; hb sql needs an administrator to create it';
                RETURN;
        END;
    END IF;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO {ROLE}', current_database());
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO {ROLE}', current_schema());
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO {ROLE}', current_schema());
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO {ROLE}', current_schema());
EXCEPTION
    WHEN insufficient_privilege THEN
        RAISE NOTICE 'hb: cannot grant {ROLE} read access; hb sql needs an administrator to grant it';
END
$hb$;
"""

DOWNGRADE = f"""
DO $hb$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
        EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE SELECT ON TABLES FROM {ROLE}', current_schema());
        EXECUTE format('REVOKE SELECT ON ALL TABLES IN SCHEMA %I FROM {ROLE}', current_schema());
        EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM {ROLE}', current_schema());
        EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM {ROLE}', current_database());
    END IF;
EXCEPTION
    WHEN insufficient_privilege THEN NULL;
END
$hb$;
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(UPGRADE)


def downgrade() -> None:
    # the role itself stays: other hb databases on the server may grant it too
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(DOWNGRADE)
