"""hb init, hb db ..., hb config ...: the database and the settings."""

from __future__ import annotations

import json
from typing import Any

import click

from heartbeat.cli import complete as completion
from heartbeat.cli.base import emit, info, json_option, state, table


@click.command()
@click.option("--timezone", metavar="ZONE", help="Set the workspace timezone (IANA name).")
@json_option
def init(timezone: str | None) -> None:
    """Create the workspace database at the current schema (idempotent).

    \b
    Example:
      hb init --timezone Asia/Tokyo
    """
    zone: Any = None
    if timezone is not None:  # checked before anything is created: a failed init leaves nothing
        from heartbeat import settings

        zone = settings.parse_value("timezone", timezone)
    ledger = state().ledger()
    if timezone is not None:
        ledger.config_set("timezone", zone, from_text=False)
    report = ledger.init()
    emit(
        report,
        lambda r: f"hb ledger ready: {r['database']} (schema {r['revision']}, timezone {r['timezone']})",
    )


@click.group()
def db() -> None:
    """The schema (Alembic): upgrade, downgrade, current, history, check.

    \b
    Example:
      hb db current
    """


def _engine(*, create: bool = False) -> Any:
    """The ledger's engine, its URL checked as every command checks it (a libpq ``key=value``
    string, an in-memory database refused); None for a SQLite file that is not there, unless
    ``create`` (`hb db current` of a mistyped path made an empty file of that name)."""
    from pathlib import Path

    from heartbeat.db.engine import make_engine
    from heartbeat.ledger import ledger_url

    st = state()
    workspace = Path(st.workspace or ".").expanduser().resolve()
    url, path = ledger_url(workspace, st.db, create=True)
    if path is not None and not create and not path.exists():
        return None
    return make_engine(url)


def _no_schema() -> Any:
    from heartbeat.db import migrate
    from heartbeat.errors import SchemaError

    return SchemaError(f"the database has no hb schema; this hb's schema is revision {migrate.HEAD}")


def _hb_revision(engine: Any, *, known: bool) -> str | None:
    """The database's revision, refusing one that is not hb's (another application's tables:
    an upgrade wrote hb's next to them) and, when ``known``, one newer than this hb."""
    from heartbeat.db import migrate

    with engine.connect() as conn:
        rev = migrate.hb_revision(conn)
    if known and rev is not None and rev not in migrate.REVISIONS:
        raise migrate.newer_than_this_hb(rev)
    return rev


@db.command()
@click.argument("revision", default="head")
def upgrade(revision: str) -> None:
    """Upgrade the database to REVISION (default: head).

    \b
    Example:
      hb db upgrade
    """
    from heartbeat.db import migrate

    engine = _engine(create=True)
    try:
        _hb_revision(engine, known=True)
        _alembic(lambda: migrate.upgrade(engine, revision))
        with engine.connect() as conn:
            info(f"database at revision {migrate.current_revision(conn)}")
    finally:
        engine.dispose()


@db.command(context_settings={"ignore_unknown_options": True})  # -1 is a revision, not an option
@click.argument("revision")
def downgrade(revision: str) -> None:
    """Downgrade the database to REVISION (a revision id, -1, or base).

    \b
    Example:
      hb db downgrade -1
      hb db downgrade base
    """
    from heartbeat.db import migrate

    engine = _engine()
    if engine is None:
        raise _no_schema()
    try:
        _hb_revision(engine, known=True)
        _alembic(lambda: migrate.downgrade(engine, revision))
        with engine.connect() as conn:
            info(f"database at revision {migrate.current_revision(conn) or 'base (empty)'}")
    finally:
        engine.dispose()


def _alembic(fn: Any) -> None:
    from alembic.util.exc import CommandError

    from heartbeat.errors import HbError

    try:
        fn()
    except CommandError as exc:
        raise HbError(f"alembic: {str(exc).splitlines()[0]}") from None


@db.command()
@json_option
def current() -> None:
    """Print the database's schema revision and this hb's head.

    \b
    Example:
      hb db current --json
    """
    from heartbeat.db import migrate

    engine = _engine()
    rev = None
    if engine is not None:  # (no file: empty, and none is made)
        try:
            rev = _hb_revision(engine, known=False)
        finally:
            engine.dispose()
    status = (
        "current" if rev == migrate.HEAD else ("ahead" if rev and rev not in migrate.REVISIONS else "behind")
    )
    if rev is None:
        status = "empty"
    emit(
        {"revision": rev, "head": migrate.HEAD, "status": status},
        lambda d: f"{d['revision'] or '(none)'} (head {d['head']}: {d['status']})",
    )


@db.command()
@json_option
def history() -> None:
    """List the schema revisions, oldest first.

    \b
    Example:
      hb db history
    """
    from heartbeat.db import migrate

    rows = [{"revision": r, "down_revision": d, "message": m} for r, d, m in migrate.history()]
    emit(
        rows,
        lambda rs: "\n".join(
            f"{r['down_revision'] or 'base'} -> {r['revision']}  {r['message']}" for r in rs
        ),
    )


@db.command()
@json_option
def check() -> None:
    """Exit 1 if the database schema differs from this hb's models.

    \b
    Example:
      hb db check
    """
    from heartbeat.db import migrate
    from heartbeat.errors import SchemaError

    engine = _engine()
    if engine is None:
        raise _no_schema()
    try:
        rev = _hb_revision(engine, known=False)
        if rev is None:
            raise _no_schema()
        if rev != migrate.HEAD:
            raise SchemaError(f"the database has revision {rev}; this hb's schema is revision {migrate.HEAD}")
        diffs = migrate.check(engine)
    finally:
        engine.dispose()
    if diffs:
        raise SchemaError(f"schema differs from the models: {'; '.join(diffs)}")
    emit({"ok": True, "differences": []}, "schema matches the models")


@click.group()
def config() -> None:
    """Workspace settings: get, set, unset, list.

    \b
    Example:
      hb config set quiet_hours 22:30-07:30
      hb config list
    """


@config.command("get")
@click.argument("key", shell_complete=completion.setting_keys)
@json_option
def config_get(key: str) -> None:
    """Print one setting's value.

    \b
    Example:
      hb config get queue.lease
    """
    value = state().ledger().config_get(key)
    emit({"key": key, "value": value}, lambda d: _show(d["value"]))


@config.command(
    "set", context_settings={"ignore_unknown_options": True, "help_option_names": ["--help"]}
)  # VALUE may be "-1" or "-1h": no -h here
@click.argument("key", shell_complete=completion.setting_keys)
@click.argument("value")
@json_option
def config_set(key: str, value: str) -> None:
    """Validate and store a setting.

    \b
    Example:
      hb config set timezone Asia/Tokyo
    """
    stored = state().ledger().config_set(key, value)
    emit({"key": key, "value": stored}, lambda d: f"{key} = {_show(d['value'])}")


@config.command("unset")
@click.argument("key", shell_complete=completion.setting_keys)
def config_unset(key: str) -> None:
    """Return a setting to its default.

    \b
    Example:
      hb config unset quiet_hours
    """
    state().ledger().config_unset(key)
    info(f"{key} reset to its default")


@config.command("list")
@json_option
def config_list() -> None:
    """Every setting with its value and default.

    \b
    Example:
      hb config list --json
    """
    items = state().ledger().config_list()
    emit(
        items,
        lambda d: table(
            [(k, _show(v["value"]), "" if v["set"] else "(default)", v["description"]) for k, v in d.items()],
            ["key", "value", "", "description"],
        ),
    )


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


COMMANDS = [init, db, config]
