"""Ledger operations for reporting: hb report and read-only hb sql (SPEC.md section 8)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING

from heartbeat.context import Context
from heartbeat.ops import checked_limit

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from heartbeat.reporting.table import Stream, Table


def report_table(
    ctx: Context,
    kind: str,
    *,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    by: str | None = None,
    limit: int | None = None,
) -> Table:
    """One report (``hb report KIND``), held: see :meth:`heartbeat.Ledger.report_table`."""
    with report_stream(ctx, kind, since=since, until=until, by=by, limit=limit) as report:
        return report.table()


@contextmanager
def report_stream(
    ctx: Context,
    kind: str,
    *,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    by: str | None = None,
    limit: int | None = None,
) -> Iterator[Stream]:
    """One report, its rows read (from one snapshot) as the block iterates them."""
    from heartbeat.clock import isoformat
    from heartbeat.errors import InvalidInput
    from heartbeat.ops import recur
    from heartbeat.reporting import reports
    from heartbeat.reporting.db import snapshot
    from heartbeat.reporting.table import Stream

    if kind not in reports.BY:
        raise InvalidInput(f"unknown report {kind!r} (expected one of: {', '.join(reports.KINDS)})")
    limit = checked_limit(limit)
    grouping = by or reports.BY[kind][0]
    now = ctx.now()
    zone = ctx.zone
    window = reports.Window(_bound(since, zone, now, "--since"), _bound(until, zone, now, "--until"))
    if window.since and window.until and window.since >= window.until:
        raise InvalidInput("--since must be before --until")
    # the PROACTIVE.md tasks due now, as `hb recur due` judges their periods
    due_now = set()
    if kind == "recurrences":  # (a report only reads: the files are not synced for it)
        due_now = {r["id"] for r in recur.due(ctx, read_files=False) if r["source"] == "proactive"}
    with snapshot(ctx.raw, "sqlite" if ctx.sqlite else "postgresql") as reader:
        built = reports.build(kind, grouping, reports.Context(reader, window, zone, now, limit, due_now))
        report = built if isinstance(built, Stream) else Stream.of(built)
        report.meta = {
            "report": kind,
            "by": grouping,
            "since": isoformat(window.since, zone),
            "until": isoformat(window.until, zone),
            "timezone": zone.key,
            "now": isoformat(now, zone),
        }
        yield report


@contextmanager
def sql_stream(ctx: Context, query: str, *, timeout: str | float | None = None) -> Iterator[Stream]:
    """One read-only statement (``hb sql``), its rows read as the block iterates them; see
    :meth:`heartbeat.Ledger.sql_table` for what holds it read-only and in time."""
    from heartbeat.db import sqlite
    from heartbeat.reporting import sql
    from heartbeat.reporting.table import Column, Stream

    seconds = _timeout_seconds(timeout if timeout is not None else ctx.settings.sql_timeout)
    zone = ctx.zone
    if not ctx.sqlite:
        with sql.postgresql_answer(ctx.url, query, timeout=seconds) as answer:
            yield Stream([Column(n) for n in answer.names], answer.rows, zone)
        return
    path = sqlite.file_of(ctx.url)
    con = ctx.raw if path is None else sql.open_readonly(path)  # in-memory: the guarded ledger connection
    try:
        with sql.sqlite_answer(con, query, timeout=seconds) as answer:
            yield Stream([Column(n) for n in answer.names], answer.rows, zone)
    finally:
        if path is not None:
            con.close()


def _timeout_seconds(value: str | float) -> float:
    from heartbeat.clock import parse_duration
    from heartbeat.errors import InvalidInput

    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        seconds = parse_duration(str(value), what="sql timeout").total_seconds()
    if not seconds > 0:
        raise InvalidInput(f"sql timeout must be positive, not {value!r}")
    return seconds


def _bound(value: str | datetime | None, zone: ZoneInfo, now: datetime, what: str) -> datetime | None:
    """A report bound from the API or the CLI, as an aware UTC instant."""
    from heartbeat.clock import parse_when, to_utc
    from heartbeat.reporting.reports import parse_bound

    if value is None:
        return None
    if isinstance(value, datetime):
        return to_utc(value) if value.tzinfo else parse_when(value.isoformat(), zone, what=what)
    return parse_bound(value, zone, now, what)
