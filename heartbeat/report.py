"""Ledger operations for reporting: hb report and read-only hb sql (SPEC.md section 8)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from heartbeat.ledger import Ledger
    from heartbeat.reporting.table import Table


class ReportAPI:
    """Mixed into :class:`heartbeat.Ledger`; each method is one transaction."""

    def report_table(
        self,
        kind: str,
        *,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        by: str | None = None,
        limit: int | None = None,
    ) -> Table:
        """One report (outcomes, failures, notifications, queue, recurrences) as a typed table.

        ``since`` (inclusive) and ``until`` (exclusive) take a datetime (naive =
        workspace zone), an ISO date or time, or a duration back from now
        (``7d``). ``by`` picks the grouping (default: the kind's first, see
        :data:`heartbeat.reporting.reports.BY`); ``limit`` keeps the first rows.
        """
        from heartbeat.clock import isoformat
        from heartbeat.errors import InvalidInput
        from heartbeat.reporting import reports
        from heartbeat.reporting.db import snapshot

        if kind not in reports.BY:
            raise InvalidInput(f"unknown report {kind!r} (expected one of: {', '.join(reports.KINDS)})")
        if limit is not None and limit < 1:
            raise InvalidInput(f"bad limit {limit} (expected a positive number of rows)")
        ledger = _ledger(self)
        grouping = by or reports.BY[kind][0]
        now = ledger.now()
        zone = ledger.zone
        window = reports.Window(_bound(since, zone, now, "--since"), _bound(until, zone, now, "--until"))
        if window.since and window.until and window.since >= window.until:
            raise InvalidInput("--since must be before --until")
        # the PROACTIVE.md tasks due now, as `hb recur due` judges their periods
        due_now = (
            {r["id"] for r in ledger.recur_due() if r["source"] == "proactive"}
            if kind == "recurrences"
            else set()
        )
        with snapshot(ledger.raw, ledger.engine_dialect()) as reader:
            ctx = reports.Context(reader, window, zone, now, limit, due_now)
            table = reports.build(kind, grouping, ctx)
        table.meta = {
            "report": kind,
            "by": grouping,
            "since": isoformat(window.since, zone),
            "until": isoformat(window.until, zone),
            "timezone": zone.key,
            "now": isoformat(now, zone),
        }
        return table

    def report(
        self,
        kind: str,
        *,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        by: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """A report as ``hb report KIND --format json`` prints it: metadata, columns, rows."""
        return self.report_table(kind, since=since, until=until, by=by, limit=limit).as_dict()

    def sql_table(self, query: str, *, timeout: str | float | None = None) -> Table:
        """Run one read-only SQL statement; the database refuses any write (QueryFailed).

        ``timeout``: seconds, or a duration like ``30s`` (default: setting ``sql.timeout``); a
        query still running then is cancelled (QueryFailed), as on Ctrl-C (Interrupted, 130).
        """
        from heartbeat.db import sqlite
        from heartbeat.reporting import sql
        from heartbeat.reporting.table import Column, Table

        ledger = _ledger(self)
        seconds = _timeout_seconds(timeout if timeout is not None else ledger.settings.sql_timeout)
        if ledger.engine_dialect() == "sqlite":
            path = sqlite.file_of(ledger.url)
            if path is None:  # in-memory: the guarded ledger connection itself
                names, rows = sql.run_sqlite(ledger.raw, query, timeout=seconds)
            else:
                con = sql.open_readonly(path)
                try:
                    names, rows = sql.run_sqlite(con, query, timeout=seconds)
                finally:
                    con.close()
        else:
            names, rows = sql.run_postgresql(ledger.url, query, timeout=seconds)
        return Table([Column(n) for n in names], rows, ledger.zone)

    def sql(self, query: str, *, timeout: str | float | None = None) -> list[dict[str, Any]]:
        """Rows of one read-only statement as ``hb sql --format json`` prints them."""
        return self.sql_table(query, timeout=timeout).records()


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


def _ledger(api: ReportAPI) -> Ledger:
    """The ledger this mixin is part of (typed: the mixin cannot name its subclass)."""
    return cast("Ledger", api)


def _bound(value: str | datetime | None, zone: ZoneInfo, now: datetime, what: str) -> datetime | None:
    """A report bound from the API or the CLI, as an aware UTC instant."""
    from heartbeat.clock import parse_when, to_utc
    from heartbeat.reporting.reports import parse_bound

    if value is None:
        return None
    if isinstance(value, datetime):
        return to_utc(value) if value.tzinfo else parse_when(value.isoformat(), zone, what=what)
    return parse_bound(value, zone, now, what)
