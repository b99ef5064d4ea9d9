"""Alembic environment for hb.

hb runs migrations in-process and hands Alembic its open connection through
``config.attributes["connection"]`` (the Alembic cookbook's "sharing a
connection" recipe). Run from a checkout with the ``alembic`` command, the
database comes from ``-x db=PATH_OR_URL`` or ``HB_DATABASE_URL``.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy.engine import Connection

from heartbeat.db.models import Base
from heartbeat.db.views import include_object

config = context.config
target_metadata = Base.metadata


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        transaction_per_migration=True,
        compare_type=True,
        compare_server_default=False,
        include_object=include_object,  # the reporting views are not tables
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    from heartbeat.db.engine import make_engine

    url = context.get_x_argument(as_dictionary=True).get("db") or os.environ.get("HB_DATABASE_URL")
    if not url:
        raise SystemExit("pass -x db=PATH_OR_URL (or set HB_DATABASE_URL)")
    engine = make_engine(url)
    with engine.connect() as conn:
        _configure(conn)
        conn.commit()


if context.is_offline_mode():
    raise SystemExit("hb's migrations run online only (they share hb's connection)")
run_migrations_online()
