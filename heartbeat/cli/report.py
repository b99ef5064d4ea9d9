"""Reporting: hb report KIND and read-only hb sql (SPEC.md section 8)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from heartbeat.cli.base import LIMIT_MAX, info, json_option, read_text_arg, state

F = TypeVar("F", bound=Callable[..., Any])

# Kept in step with heartbeat.reporting.reports.BY (a test checks); listed here so that
# `hb report --help` does not import the reporting package.
BY: dict[str, tuple[str, ...]] = {
    "outcomes": ("day", "skill", "task", "scope", "source"),
    "failures": ("reason", "task", "skill", "scope", "day"),
    "notifications": ("day", "kind", "reason", "task"),
    "queue": ("scope", "status"),
    "recurrences": ("recurrence", "source"),
}
FORMATS = ("table", "json", "csv")


def format_option(fn: F) -> F:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=None,
        help="table for people (default), json (one document) or csv (a header row) for programs.",
    )(fn)


def _format(fmt: str | None) -> str:
    return "json" if state().json else (fmt or "table")


def _report_command(kind: str, summary: str, example: str) -> click.Command:
    choices = BY[kind]

    @click.command(
        name=kind,
        help=f"{summary}\n\n\b\nExample:\n{example}",
        short_help=summary.split("\n")[0].rstrip("."),
    )
    @click.option(
        "--since",
        metavar="WHEN",
        help="From this time on (inclusive): ISO date/time (naive = workspace timezone) or a duration "
        "back from now like 7d.",
    )
    @click.option("--until", metavar="WHEN", help="Before this time (exclusive); same forms as --since.")
    @click.option(
        "--by",
        type=click.Choice(choices),
        default=choices[0],
        show_default=True,
        help="Grouping.",
    )
    @click.option(
        "--limit", type=click.IntRange(min=1, max=LIMIT_MAX), metavar="N", help="Only the first N rows."
    )
    @format_option
    @json_option
    def command(since: str | None, until: str | None, by: str, limit: int | None, fmt: str | None) -> None:
        from heartbeat.reporting import output

        out = _format(fmt)
        ledger = state().ledger(create=False)
        if out != "table":  # the rows go out as they are read
            with ledger.report_stream(kind, since=since, until=until, by=by, limit=limit) as report:
                if out == "csv":
                    output.write_csv(report.names, report.rows, report.zone, _write)
                else:
                    output.write_document(report, _write)
            return
        table = ledger.report_table(kind, since=since, until=until, by=by, limit=limit)
        meta = table.meta
        span = f"{meta['since'] or 'start'} .. {meta['until'] or 'now'}"
        info(f"{kind} by {by}, {span} ({meta['timezone']}): {len(table.rows)} row(s)")
        click.echo(output.render_text(table))

    return command


@click.group()
def report() -> None:
    """Reports on what the agents did, what failed, what they said and held back.

    Days are local days in the workspace timezone. Durations are seconds from
    claim to completion: median, and p95 by nearest rank.

    \b
    Example:
      hb report outcomes --by skill --since 7d
      hb report failures --format csv > failures.csv
      hb report notifications --since 2026-05-01 --format json
    """


for _kind, _summary, _example in (
    (
        "outcomes",
        "Outcomes per day, skill, task, scope or source: count, successes, failures, success rate, "
        "median and p95 duration.",
        "  hb report outcomes\n  hb report outcomes --by skill --since 7d --format json",
    ),
    (
        "failures",
        "Failures and retries: reasons ranked, or per task (attempts, last reason), skill, scope or day.",
        "  hb report failures\n  hb report failures --by task --limit 20",
    ),
    (
        "notifications",
        "Reminder and proactive decisions: sent vs each suppression reason, per day, kind, reason or task.",
        "  hb report notifications --since 30d\n  hb report notifications --by reason --format csv",
    ),
    (
        "queue",
        "Queue depth per scope and status, with the age of active tasks.",
        "  hb report queue\n  hb report queue --by status --json",
    ),
    (
        "recurrences",
        "Recurrences: run count, last run, the next (or overdue) period, periods missed, outcomes recorded.",
        "  hb report recurrences\n  hb report recurrences --since 7d --format csv",
    ),
):
    report.add_command(_report_command(_kind, _summary, _example))


@click.command()
@click.argument("query", metavar="QUERY|-")
@click.option(
    "--timeout",
    metavar="DURATION",
    help="Cancel the query if it runs longer (default: setting sql.timeout, 30s).",
)
@format_option
@json_option
def sql(query: str, timeout: str | None, fmt: str | None) -> None:
    """Run one read-only SQL statement on the ledger (QUERY, or - for standard input).

    The database refuses writes: SQLite opened read-only; PostgreSQL as the role
    hb_reader, which can only read hb's tables, in a READ ONLY transaction. A
    query running past --timeout is cancelled (exit 1), as on Ctrl-C (exit 130).
    docs/sql.md lists the tables, views and example questions.

    \b
    Example:
      hb sql "SELECT * FROM outcomes_by_skill ORDER BY outcomes DESC"
      hb sql - --format csv --timeout 2m < question.sql
    """
    from heartbeat.reporting import output

    text = read_text_arg(query)
    if not text.strip():
        raise click.UsageError("QUERY is empty")
    out = _format(fmt)
    # the rows go out as they are read (csv, json): an answer of any size in flat memory
    try:
        with state().ledger(create=False).sql_stream(text, timeout=timeout) as answer:
            if out == "json":
                output.write_records(answer.names, answer.rows, answer.zone, _write)
            elif not answer.columns:  # a statement without a result set prints nothing
                return
            elif out == "csv":
                output.write_csv(answer.names, answer.rows, answer.zone, _write)
            else:
                click.echo(output.render_text(answer.table(), null="NULL"))
    except RecursionError:
        raise output.nested_too_deep() from None


def _write(text: str) -> None:
    click.echo(text, nl=False)


COMMANDS: list[click.Command] = [report, sql]
