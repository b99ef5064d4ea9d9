"""The reports behind ``hb report``: each is a few indexed queries in one read snapshot.

Designed for ledgers with millions of outcomes (the indexes of migrations 0002
and 0003), while keeping the indexes a queue operation writes to few:

- outcomes per local day (daylight saving included) are ranges of
  ``ix_outcomes_completed_at_duration_s``; per skill, scope or source, the
  (scope, skill, source) groups of ``ix_outcomes_scope_skill_source_duration_s``
  combined; medians and p95 are exact order statistics that read only a
  short range of durations around each (:mod:`heartbeat.reporting.order`);
- per task (many small groups), one query: the tasks ranked (and limited) in SQL, their
  outcomes in that order by duration, streamed;
- the queue report reads idle tasks from ``ix_tasks_scope_status_created_at``
  and ready / claimed ones from the queue's own indexes.

The numbers agree with the views of migration 0002 (same median and p95).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta, tzinfo
from itertools import islice, takewhile
from typing import Any
from zoneinfo import ZoneInfo

from heartbeat.errors import InvalidInput
from heartbeat.reporting import order, stats
from heartbeat.reporting.db import Reader
from heartbeat.reporting.table import Column, Stream, Table

# Each kind's --by choices; the first is the default.
BY: dict[str, tuple[str, ...]] = {
    "outcomes": ("day", "skill", "task", "scope", "source"),
    "failures": ("reason", "task", "skill", "scope", "day"),
    "notifications": ("day", "kind", "reason", "task"),
    "queue": ("scope", "status"),
    "recurrences": ("recurrence", "source"),
}
KINDS = tuple(BY)

STATUSES = ("todo", "doing", "waiting", "blocked", "snoozed", "done", "cancelled", "failed")
ACTIVE = STATUSES[:5]
REASONS = (
    "quiet_hours",
    "repeat_window",
    "daily_cap",
    "min_gap",
    "recent_conversation",
    "no_suggestion",
    "disabled",
    "risk_p2",
)
MISSED_CAP = 10_000  # open periods are counted up to this many
OUT_BATCH = 1_000  # rows of a streamed report read at a time (the rest is not held)
HORIZON = timedelta(days=3660)  # how far ahead a rule's next period is looked for
_SUCCESS = "SUM(CASE WHEN success THEN 1 ELSE 0 END)"


@dataclass(frozen=True)
class Window:
    """The instants a report covers: ``since`` inclusive, ``until`` exclusive (aware UTC)."""

    since: datetime | None = None
    until: datetime | None = None

    def sql(self, column: str, r: Reader, *, prefix: str = "AND") -> tuple[str, dict[str, Any]]:
        parts, params = [], {}
        if self.since is not None:
            parts.append(f"{column} >= :since")
            params["since"] = r.time(self.since)
        if self.until is not None:
            parts.append(f"{column} < :until")
            params["until"] = r.time(self.until)
        return (f" {prefix} " + " AND ".join(parts) if parts else ""), params


def parse_bound(text: str, zone: tzinfo, now: datetime, what: str) -> datetime:
    """``7d`` (= now - 7 days), or an ISO date/time (naive = workspace zone)."""
    from heartbeat.clock import parse_duration, parse_when

    try:
        return now - parse_duration(text, what=what)
    except InvalidInput as exc:
        as_duration = exc
    try:
        return parse_when(text, zone, what=what)
    except InvalidInput as exc:
        as_time = exc
    # the reason of the reading the text was meant for (a duration's "longer than 100 years", a
    # date's "outside the years hb handles"), else what either may look like
    if _DURATION_LIKE.fullmatch(text):
        raise as_duration from None
    if _DATE_LIKE.match(text):
        raise as_time from None
    raise InvalidInput(
        f"bad {what} {text!r} (expected an ISO date or time like 2026-05-01 or 2026-05-01T09:00, "
        "or a duration like 7d)"
    ) from None


_DURATION_LIKE = re.compile(r"\s*\d+(?:\.\d+)?\s*[A-Za-z]+\s*")
_DATE_LIKE = re.compile(r"\s*\d{4}-\d{2}-\d{2}")


@dataclass
class Context:
    r: Reader
    window: Window
    zone: ZoneInfo
    now: datetime
    limit: int | None = None
    due_now: set[str] = field(default_factory=set)  # PROACTIVE.md tasks `hb recur due` hands out now


def build(kind: str, by: str, ctx: Context) -> Table | Stream:
    """Run one report: its rows held, or (the groupings with a row per task) read as they come
    while ``ctx``'s snapshot is open."""
    if kind not in BY:
        raise InvalidInput(f"unknown report {kind!r} (expected one of: {', '.join(KINDS)})")
    if by not in BY[kind]:
        raise InvalidInput(f"report {kind} cannot group by {by!r} (expected one of: {', '.join(BY[kind])})")
    builders: dict[str, Callable[[str, Context], Table | Stream]] = {
        "outcomes": outcomes,
        "failures": failures,
        "notifications": notifications,
        "queue": queue,
        "recurrences": recurrences,
    }
    table = builders[kind](by, ctx)
    if ctx.limit is not None:
        if isinstance(table, Stream):
            table.rows = islice(table.rows, ctx.limit)
        else:
            table.rows = table.rows[: ctx.limit]
    return table


def _table(ctx: Context, columns: Sequence[tuple[str, str]], rows: list[tuple[Any, ...]]) -> Table:
    return Table([Column(n, k) for n, k in columns], rows, ctx.zone)


def _key_order(value: Any) -> tuple[bool, Any]:
    """Sort keys with NULL last."""
    return (value is None, "" if value is None else value)


# --- local days ---------------------------------------------------------------------------------


def local_days(first: datetime, last: datetime, zone: ZoneInfo) -> list[tuple[str, datetime, datetime]]:
    """(YYYY-MM-DD, start, end) of every local day from ``first``'s to ``last``'s, inclusive."""
    from heartbeat.rules.recurrence import resolve_local

    day = first.astimezone(zone).date()
    end_day = last.astimezone(zone).date()
    out = []
    start = resolve_local(datetime.combine(day, time()), zone)
    while day <= end_day:
        following = day + timedelta(days=1)
        end = resolve_local(datetime.combine(following, time()), zone)
        out.append((day.isoformat(), start, end))
        day, start = following, end
    return out


def _day_span(ctx: Context, table: str, column: str) -> list[tuple[str, datetime, datetime]]:
    """The local days a per-day report lists: the window, or the data's first to last day."""
    where, params = ctx.window.sql(column, ctx.r, prefix="WHERE")
    # two statements: SQLite answers a lone MIN() or MAX() with one index seek
    lo = ctx.r.one(f"SELECT MIN({column}) FROM {table}{where}", params)[0]
    hi = ctx.r.one(f"SELECT MAX({column}) FROM {table}{where}", params)[0]
    first = ctx.window.since or ctx.r.read_time(lo)
    if first is None:
        return []
    if ctx.window.until is not None:
        last = ctx.window.until - timedelta(microseconds=1)
    elif ctx.window.since is not None:
        last = max(ctx.now, ctx.r.read_time(hi) or ctx.now)
    else:
        last = ctx.r.read_time(hi) or first
    if last < first:
        return []
    days = local_days(first, last, ctx.zone)
    lo_bound, hi_bound = ctx.window.since, ctx.window.until
    return [
        (
            name,
            max(start, lo_bound) if lo_bound else start,
            min(end, hi_bound) if hi_bound else end,
        )
        for name, start, end in days
    ]


def _day_ranges(ctx: Context, table: str, column: str) -> list[tuple[str, dict[str, Any]]]:
    """Each local day of :func:`_day_span` with its bounds as parameters ``a`` and ``b``."""
    return [
        (name, {"a": ctx.r.time(start), "b": ctx.r.time(end)})
        for name, start, end in _day_span(ctx, table, column)
    ]


# --- outcomes -------------------------------------------------------------------------------------

_OUTCOME_COLUMNS = (
    ("outcomes", "int"),
    ("successes", "int"),
    ("failures", "int"),
    ("success_rate", "rate"),
    ("median_duration_s", "duration"),
    ("p95_duration_s", "duration"),
)
_OUTCOME_KEYS = {
    "task": ("scope", "task_id"),
    "skill": ("skill",),
    "scope": ("scope",),
    "source": ("source",),
}


def _outcome_row(
    key: tuple[Any, ...], n: int, ok: int, med: float | None, p95: float | None
) -> tuple[Any, ...]:
    return (*key, n, ok, n - ok, stats.rate(ok, n), med, p95)


def outcomes(by: str, ctx: Context) -> Table | Stream:
    """Outcomes per group: count, successes, failures, success rate, median and p95 duration."""
    if by == "day":
        return _outcomes_by_day(ctx)
    if by == "task":
        return _outcomes_by_task(ctx)
    return _outcomes_by_dimension(by, ctx)


def _outcomes_table(ctx: Context, keys: Sequence[str], rows: list[tuple[Any, ...]]) -> Table:
    columns = [(k, "scope" if k == "scope" else "key") for k in keys]
    return _table(ctx, [*columns, *_OUTCOME_COLUMNS], rows)


def _outcomes_by_dimension(by: str, ctx: Context) -> Table:
    """Per skill, scope or source: the (scope, skill, source) groups of the grouped index, combined."""
    position = _CELL_COLUMNS.index(by)
    groups: dict[tuple[Any, ...], order.Group] = {}
    for cell in order.cells(ctx.r):
        key = (cell[position],)
        groups.setdefault(key, order.Group(key, [])).parts.append(order.match(_CELL_COLUMNS, cell))
    window, params = ctx.window.sql("completed_at", ctx.r)
    in_window = ctx.window.sql("completed_at", ctx.r, prefix="")[0].strip()
    order.sample(ctx.r, list(groups.values()), by, lambda value: groups.get((value,)), in_window, params)
    order.compute(ctx.r, groups.values(), window, params, ordered=True)
    found = [g for g in groups.values() if g.n]
    # biggest groups first, then by key (NULL last) in code-point order
    found.sort(key=lambda g: (-g.n, *(_key_order(k) for k in g.key)))
    if ctx.limit is not None:
        found = found[: ctx.limit]
    return _outcomes_table(ctx, (by,), [_outcome_row(g.key, g.n, g.ok, g.median, g.p95) for g in found])


_CELL_COLUMNS = ("scope", "skill", "source")  # ix_outcomes_scope_skill_source_duration_s


def _outcomes_by_task(ctx: Context) -> Stream:
    """Per task (many small groups), biggest first: one ordered query, streamed.

    The tasks are ranked (and ``--limit`` applied) in SQL; the outcomes of the tasks ranked come
    in that order, each task's by duration (the database sorts them, spilling to disk as it
    needs), so only one task's durations are held here, however many tasks the report lists.
    On SQLite the outcomes are the outer loop and the ranking is looked up through an automatic
    index (the other way round, each task would search the scope index).
    """
    where, params = ctx.window.sql("completed_at", ctx.r, prefix="WHERE")
    window, _ = ctx.window.sql("o.completed_at", ctx.r)
    limit = ""
    if ctx.limit is not None:
        limit, params["limit"] = " LIMIT :limit", ctx.limit
    # biggest groups first, then by key in code-point order (scope and task_id are never NULL)
    found = ctx.r.stream(
        "SELECT g.scope, g.task_id, o.success, o.duration_s FROM outcomes o CROSS JOIN "
        f"(SELECT scope, task_id, COUNT(*) AS n FROM outcomes{where} GROUP BY scope, task_id "
        "ORDER BY COUNT(*) DESC, scope {binary}, task_id {binary}" + limit + ") g "
        f"WHERE o.scope = g.scope AND o.task_id = g.task_id{window} "
        "ORDER BY g.n DESC, g.scope {binary}, g.task_id {binary}, o.duration_s",
        params,
        OUT_BATCH,
    )

    def rows() -> Iterator[tuple[Any, ...]]:
        key: tuple[Any, ...] | None = None
        n = ok = 0
        durations: list[float] = []
        for scope, task_id, success, duration in found:
            if (scope, task_id) != key:
                if key is not None:
                    yield _outcome_row(key, n, ok, stats.median(durations), stats.p95(durations))
                key, n, ok, durations = (scope, task_id), 0, 0, []
            n += 1
            ok += 1 if success else 0
            if duration is not None:
                durations.append(duration)  # ascending within the task (NULLs sort apart)
        if key is not None:
            yield _outcome_row(key, n, ok, stats.median(durations), stats.p95(durations))

    columns = [("scope", "scope"), ("task_id", "key"), *_OUTCOME_COLUMNS]
    return Stream([Column(n, k) for n, k in columns], rows(), ctx.zone)


def _outcomes_by_day(ctx: Context) -> Table:
    days = _day_span(ctx, "outcomes", "completed_at")
    bounds = [(ctx.r.time(start), ctx.r.time(end)) for _name, start, end in days]
    groups = [
        order.Group((name,), [order.Part("completed_at >= :a AND completed_at < :b", {"a": a, "b": b})])
        for (name, _start, _end), (a, b) in zip(days, bounds, strict=True)
    ]
    if groups:
        span = {"first": bounds[0][0], "last": bounds[-1][1]}
        condition = "completed_at >= :first AND completed_at < :last"
        order.sample(ctx.r, groups, "completed_at", order.range_finder(bounds, groups), condition, span)
    order.compute(ctx.r, groups)
    rows = [_outcome_row(g.key, g.n, g.ok, g.median, g.p95) for g in groups]
    return _table(ctx, [("day", "text"), *_OUTCOME_COLUMNS], rows)


# --- failures -------------------------------------------------------------------------------------


# failures per task (scope and id: one id in two queues is two tasks) within a grouping's keys;
# a grouping counts its tasks as COUNT(task_id) over these rows (failures without a task are none)
_PER_TASK = (
    "SELECT {keys}scope, task_id, COUNT(*) AS n, SUM(CASE WHEN final THEN 1 ELSE 0 END) AS finals, "
    "MIN(at) AS first_at, MAX(at) AS last_at FROM errors{where} GROUP BY {keys}scope, task_id"
)


def failures(by: str, ctx: Context) -> Table | Stream:
    """Failures (error rows) and retries: reasons ranked, or per task / skill / scope / day."""
    where, params = ctx.window.sql("at", ctx.r, prefix="WHERE")
    if by == "reason":
        groups = ctx.r.rows(
            "SELECT reason, SUM(n), COUNT(task_id), SUM(finals), MIN(first_at), MAX(last_at) "
            f"FROM ({_PER_TASK.format(keys='reason, ', where=where)}) per_task GROUP BY reason",
            params,
        )
        groups.sort(key=lambda g: (-g[1], g[0]))
        ranked = stats.ranks([g[1] for g in groups])
        ranked_rows: list[tuple[Any, ...]] = [
            (rank, g[0], int(g[1]), int(g[2]), int(g[3] or 0), ctx.r.read_time(g[4]), ctx.r.read_time(g[5]))
            for rank, g in zip(ranked, groups, strict=True)
        ]
        columns = [
            ("rank", "int"),
            ("reason", "text"),
            ("failures", "int"),
            ("tasks", "int"),
            ("final_failures", "int"),
            ("first_failed_at", "time"),
            ("last_failed_at", "time"),
        ]
        return _table(ctx, columns, ranked_rows)
    counts = [("failures", "int"), ("tasks", "int"), ("retries", "int"), ("final_failures", "int")]
    rows: list[tuple[Any, ...]]
    if by == "day":
        rows = []
        for name, span in _day_ranges(ctx, "errors", "at"):
            n, tasks, retry, fin = ctx.r.one(
                "SELECT SUM(n), COUNT(task_id), SUM(n) - SUM(finals), SUM(finals) "
                f"FROM ({_PER_TASK.format(keys='', where=' WHERE at >= :a AND at < :b')}) per_task",
                span,
            )
            rows.append((name, int(n or 0), int(tasks), int(retry or 0), int(fin or 0)))
        return _table(ctx, [("day", "text"), *counts], rows)
    if by in ("skill", "scope"):
        keys = "skill, " if by == "skill" else ""
        groups = ctx.r.rows(
            f"SELECT {by}, SUM(n), COUNT(task_id), SUM(n) - SUM(finals), SUM(finals), MAX(last_at) "
            f"FROM ({_PER_TASK.format(keys=keys, where=where)}) per_task GROUP BY {by}",
            params,
        )
        groups.sort(key=lambda g: (-g[1], _key_order(g[0])))
        rows = [
            (g[0], int(g[1]), int(g[2]), int(g[3] or 0), int(g[4] or 0), ctx.r.read_time(g[5]))
            for g in groups
        ]
        return _table(
            ctx, [(by, "scope" if by == "scope" else "key"), *counts, ("last_failed_at", "time")], rows
        )
    return _failures_by_task(ctx)


def _failures_by_task(ctx: Context) -> Stream:
    where, params = ctx.window.sql("at", ctx.r, prefix="WHERE")
    inner_window, _ = ctx.window.sql("e.at", ctx.r)
    limit = ""
    if ctx.limit is not None:
        limit, params["limit"] = " LIMIT :limit", ctx.limit

    def last_reason(task: str) -> str:
        # one seek of ix_errors_scope_task_id_at per task: an OR of the two task conditions
        # made it a search on the scope alone, every error of the queue read and sorted per task
        return (
            f"(SELECT e.reason FROM errors e WHERE e.scope = g.scope AND {task}{inner_window} "
            "ORDER BY e.at DESC, e.pk DESC LIMIT 1)"
        )

    rows = ctx.r.stream(
        "SELECT g.scope, g.task_id, g.failures, g.retries, g.final_failures, g.max_attempt, "
        "t.attempts, t.status, "
        f"CASE WHEN g.task_id IS NULL THEN {last_reason('e.task_id IS NULL')} "
        f"ELSE {last_reason('e.task_id = g.task_id')} END, g.last_failed_at "
        "FROM (SELECT scope, task_id, COUNT(*) AS failures, "
        "SUM(CASE WHEN final THEN 0 ELSE 1 END) AS retries, "
        "SUM(CASE WHEN final THEN 1 ELSE 0 END) AS final_failures, "
        f"MAX(attempt) AS max_attempt, MAX(at) AS last_failed_at FROM errors{where} GROUP BY scope, task_id "
        "ORDER BY COUNT(*) DESC, MAX(at) DESC, scope {binary}, "
        f"CASE WHEN task_id IS NULL THEN 1 ELSE 0 END, task_id {{binary}}{limit}) g "
        "LEFT JOIN tasks t ON t.scope = g.scope AND t.id = g.task_id "
        "ORDER BY g.failures DESC, g.last_failed_at DESC, g.scope {binary}, "
        "CASE WHEN g.task_id IS NULL THEN 1 ELSE 0 END, g.task_id {binary}",
        params,
        OUT_BATCH,
    )
    columns = [
        ("scope", "scope"),
        ("task_id", "key"),
        ("failures", "int"),
        ("retries", "int"),
        ("final_failures", "int"),
        ("max_attempt", "int"),
        ("attempts", "int"),
        ("status", "text"),
        ("last_reason", "text"),
        ("last_failed_at", "time"),
    ]
    out = ((*row[:2], *(int(v or 0) for v in row[2:5]), *row[5:9], ctx.r.read_time(row[9])) for row in rows)
    return Stream([Column(n, k) for n, k in columns], out, ctx.zone)


# --- notifications --------------------------------------------------------------------------------

_DECISION_COLUMNS = (
    ("notifications", "int"),
    ("sent", "int"),
    ("suppressed", "int"),
    *((reason, "int") for reason in REASONS),
    ("other_reason", "int"),
)


# one local day's decisions: a range of ix_notifications_at
_DAY_DECISIONS = (
    "SELECT decision, reason, COUNT(*) FROM notifications WHERE at >= :a AND at < :b "
    "GROUP BY decision, reason"
)


def _decision_counts(found: Iterable[tuple[Any, Any, int]]) -> tuple[int, ...]:
    """(decision, reason, count) rows -> notifications, sent, suppressed, each reason, other."""
    by_reason = dict.fromkeys(REASONS, 0)
    total = sent = other = 0
    for decision, reason, count in found:
        total += count
        if decision == "sent":
            sent += count
        elif reason in by_reason:
            by_reason[reason] += count
        else:
            other += count
    return (total, sent, total - sent, *by_reason.values(), other)


def notifications(by: str, ctx: Context) -> Table | Stream:
    """Reminder and proactive decisions: sent vs each suppression reason."""
    where, params = ctx.window.sql("at", ctx.r, prefix="WHERE")
    if by in ("day", "kind"):
        if by == "day":  # the local days of the workspace's zone now, as the other reports' days
            rows = [
                (name, *_decision_counts(ctx.r.rows(_DAY_DECISIONS, span)))
                for name, span in _day_ranges(ctx, "notifications", "at")
            ]
        else:
            grouped: dict[Any, list[tuple[Any, Any, int]]] = {}
            for key, decision, reason, count in ctx.r.rows(
                f"SELECT kind, decision, reason, COUNT(*) FROM notifications{where} "
                "GROUP BY kind, decision, reason",
                params,
            ):
                grouped.setdefault(key, []).append((decision, reason, int(count)))
            rows = [(key, *_decision_counts(grouped[key])) for key in sorted(grouped, key=_key_order)]
        table = _table(ctx, [(by, "key"), *_DECISION_COLUMNS], rows)
        table.sparse = frozenset((*REASONS, "other_reason"))
        return table
    if by == "reason":
        found = ctx.r.rows(
            f"SELECT kind, decision, reason, COUNT(*) FROM notifications{where} "
            "GROUP BY kind, decision, reason",
            params,
        )
        totals: dict[Any, int] = {}
        for kind, _d, _r, count in found:
            totals[kind] = totals.get(kind, 0) + int(count)
        found.sort(key=lambda g: (_key_order(g[0]), -g[3], g[1] != "sent", _key_order(g[2])))
        rows = [(k, d, r, int(c), stats.rate(int(c), totals[k])) for k, d, r, c in found]
        columns = [
            ("kind", "text"),
            ("decision", "text"),
            ("reason", "text"),
            ("notifications", "int"),
            ("share", "rate"),
        ]
        return _table(ctx, columns, rows)
    limit = ""
    if ctx.limit is not None:
        limit, params["limit"] = " LIMIT :limit", ctx.limit
    # a task is its row (task_pk; one id in two queues is two tasks), named by its scope and id;
    # a decision whose task is gone (or that had none) is kept with the others of its id.
    # Biggest groups first, then by task id and scope (NULL last) in code-point order.
    per_task = ctx.r.stream(
        "SELECT t.scope, g.task_id, g.n, g.sent, g.last_sent_at, g.last_at FROM "
        "(SELECT task_pk, task_id, COUNT(*) AS n, "
        "SUM(CASE WHEN decision = 'sent' THEN 1 ELSE 0 END) AS sent, "
        "MAX(CASE WHEN decision = 'sent' THEN at END) AS last_sent_at, MAX(at) AS last_at "
        f"FROM notifications{where} GROUP BY task_pk, task_id) g "
        "LEFT JOIN tasks t ON t.pk = g.task_pk "
        "ORDER BY g.n DESC, CASE WHEN g.task_id IS NULL THEN 1 ELSE 0 END, g.task_id {binary}, "
        "CASE WHEN t.scope IS NULL THEN 1 ELSE 0 END, t.scope {binary}" + limit,
        params,
        OUT_BATCH,
    )
    task_rows = (
        (scope, t, int(n), int(s or 0), int(n) - int(s or 0), ctx.r.read_time(sent_at), ctx.r.read_time(at))
        for scope, t, n, s, sent_at, at in per_task
    )
    columns = [
        ("scope", "scope"),
        ("task_id", "key"),
        ("notifications", "int"),
        ("sent", "int"),
        ("suppressed", "int"),
        ("last_sent_at", "time"),
        ("last_decided_at", "time"),
    ]
    return Stream([Column(n, k) for n, k in columns], task_rows, ctx.zone)


# --- queue ----------------------------------------------------------------------------------------

# the partial-index conditions of ix_tasks_ready and ix_tasks_scope_status_created_at (0003)
TASKS_READY = "status = 'todo' AND blocked_by IS NULL AND source <> 'todo'"
TASKS_IDLE = f"status <> 'doing' AND NOT ({TASKS_READY})"


def queue(by: str, ctx: Context) -> Table:
    """Queue depth per scope and status; the age of active tasks (now - created_at)."""
    window_sql, params = ctx.window.sql("created_at", ctx.r)
    # idle tasks (neither ready nor claimed): counted on their index, in (scope, status) order
    found = ctx.r.rows(
        f"SELECT scope, status, COUNT(*), MIN(created_at), MAX(created_at) FROM tasks "
        f"WHERE {TASKS_IDLE}{window_sql} GROUP BY scope, status",
        params,
    )
    created = [
        (scope, status, at)
        for scope, status, *_rest in found
        if status in ACTIVE
        for (at,) in ctx.r.rows(  # an index seek per active (scope, status)
            f"SELECT created_at FROM tasks WHERE scope = :scope AND status = :status AND {TASKS_IDLE}"
            f"{window_sql}",
            {**params, "scope": scope, "status": status},
        )
    ]
    # ready and claimed tasks: through the queue's own indexes (ix_tasks_ready, ix_tasks_claimed)
    busy: dict[tuple[str, str], list[Any]] = {}
    for status, condition in (("todo", TASKS_READY), ("doing", "status = 'doing'")):
        for scope, at in ctx.r.rows(
            f"SELECT scope, created_at FROM tasks WHERE {condition}{window_sql}", params
        ):
            busy.setdefault((scope, status), []).append(at)
    for (scope, status), times in busy.items():
        found.append((scope, status, len(times), min(times), max(times)))
        created.extend((scope, status, at) for at in times)

    def group(scope: str, status: str) -> tuple[str, ...]:
        return (scope, status) if by == "scope" else (status,)

    counts: dict[tuple[str, ...], list[Any]] = {}
    for scope, status, n, oldest, newest in found:
        first, last = ctx.r.read_time(oldest), ctx.r.read_time(newest)
        g = counts.get(group(scope, status))
        if g is None:
            counts[group(scope, status)] = [int(n), first, last]
        else:  # --by status: the same status in another scope
            g[0] += int(n)
            g[1], g[2] = min(g[1], first), max(g[2], last)
    created_at: dict[tuple[str, ...], list[Any]] = {}
    for scope, status, at in created:
        if at is not None:
            created_at.setdefault(group(scope, status), []).append(at)
    rank = {s: i for i, s in enumerate(STATUSES)}
    rows = []
    for key in sorted(counts, key=lambda k: (*k[:-1], rank.get(k[-1], len(rank)), k[-1])):
        n, first, last = counts[key]
        rows.append((*key, n, first, last, *_ages(ctx, sorted(created_at.get(key, [])))))
    columns = [
        *([("scope", "scope")] if by == "scope" else []),
        ("status", "text"),
        ("tasks", "int"),
        ("oldest_created_at", "time"),
        ("newest_created_at", "time"),
        ("median_age_s", "duration"),
        ("max_age_s", "duration"),
    ]
    return _table(ctx, columns, rows)


def _ages(ctx: Context, created: list[Any]) -> tuple[float | None, float | None]:
    """Median and largest age (now - created_at) from the stored creation times, oldest first.

    Ages fall as creation times rise, so only the ages at the middle and at
    the oldest end are computed (exactly as sorting every age would give them).
    """
    if not created:
        return None, None
    n = len(created)

    def age(i: int) -> float:  # the i-th smallest age
        stamp = ctx.r.read_time(created[n - 1 - i])
        assert stamp is not None
        return (ctx.now - stamp).total_seconds()

    lo, hi = stats.median_positions(n)
    return ((age(lo) + age(hi)) / 2 if lo != hi else age(lo)), age(n - 1)


# --- recurrences ----------------------------------------------------------------------------------


def open_periods(
    rule: str,
    next_local: str | None,
    claimed_period: str | None,
    zone: ZoneInfo,
    now: datetime,
    next_at: datetime | None = None,
) -> tuple[int, datetime | None] | None:
    """A repeat rule's periods not handed out yet, up to now, and the first of them (or the next one).

    As ``hb recur due`` counts them: the occurrences from ``Next`` (or after the
    last period handed out) to now; all but the latest were missed. None when
    the rule is not a repeat rule hb can read.
    """
    from heartbeat.formats.repeat import parse_repeat
    from heartbeat.formats.timestamps import parse_timestamp
    from heartbeat.rules.recurrence import occurrences, resolve_next

    if not next_local:
        return None
    try:
        repeat = parse_repeat(rule)
        anchor = datetime.fromisoformat(next_local)
    except (InvalidInput, ValueError):
        return None
    first_at = resolve_next(anchor, zone, next_at)  # the stored instant, on a repeated local time
    after = first_at - timedelta(microseconds=1)
    try:
        claimed = parse_timestamp(claimed_period) if claimed_period else None
    except ValueError:
        claimed = None
    if claimed is not None and claimed > after:
        after = claimed
    upcoming = occurrences(repeat, anchor, zone, after, now + HORIZON, first=first_at)
    first = next(upcoming, None)
    if first is None or first > now:
        return 0, first
    return 1 + sum(1 for _ in islice(takewhile(lambda at: at <= now, upcoming), MISSED_CAP)), first


def recurrences(by: str, ctx: Context) -> Table:
    """Recurrences: run count, last and next run, due and periods missed now, outcomes in the window."""
    from heartbeat.formats.todo import rule_zone

    where, params = ctx.window.sql("completed_at", ctx.r)
    done = {
        pk: (int(n), int(ok or 0), ctx.r.read_time(last))
        for pk, n, ok, last in ctx.r.rows(
            f"SELECT recurrence_pk, COUNT(*), {_SUCCESS}, MAX(completed_at) FROM outcomes "
            f"WHERE recurrence_pk IS NOT NULL{where} GROUP BY recurrence_pk",
            params,
        )
    }
    found = ctx.r.rows(
        "SELECT pk, id, source, title, rule, tz, next_local, claimed_period, enabled, missed_policy, "
        "run_count, last_run_at, next_at "
        "FROM recurrences ORDER BY CASE WHEN source = 'proactive' THEN 1 ELSE 0 END, position, pk"
    )
    rows = []
    for row in found:
        pk, rid, source, title, rule, tz, next_local, claimed, enabled, policy, runs, last_run, next_at = row
        due, missed, upcoming = False, None, ctx.r.read_time(next_at)
        if source == "proactive":  # PROACTIVE.md periods do not pile up: due or not
            due = rid in ctx.due_now
        elif enabled:
            try:
                zone = rule_zone(tz, ctx.zone)
            except InvalidInput:
                zone = ctx.zone
            periods = open_periods(rule, next_local, claimed, zone, ctx.now, upcoming)
            if periods is not None:
                pending, upcoming = periods
                due, missed = pending > 0, max(0, pending - 1)
        n, ok, last = done.get(pk, (0, 0, None))
        rows.append(
            (
                rid,
                source,
                title,
                rule,
                bool(enabled),
                policy if source != "proactive" else None,
                int(runs or 0),
                ctx.r.read_time(last_run),
                upcoming,
                due,
                missed,
                n,
                ok,
                n - ok,
                last,
            )
        )
    columns = [
        ("id", "text"),
        ("source", "text"),
        ("title", "text"),
        ("rule", "text"),
        ("enabled", "bool"),
        ("missed_policy", "text"),
        ("run_count", "int"),
        ("last_run_at", "time"),
        ("next_at", "time"),
        ("due", "bool"),
        ("missed", "int"),
        ("outcomes", "int"),
        ("successes", "int"),
        ("failures", "int"),
        ("last_outcome_at", "time"),
    ]
    if by == "recurrence":
        return _table(ctx, columns, rows)
    per: dict[Any, list[Any]] = {}
    for row in rows:
        g = per.setdefault(row[1], [0, 0, 0, 0, 0, 0, None])
        g[0] += 1
        g[1] += row[6]
        g[2] += row[10] or 0
        g[3] += row[11]
        g[4] += row[12]
        g[5] += row[13]
        if row[7] is not None and (g[6] is None or row[7] > g[6]):
            g[6] = row[7]
    summary = [(source, *g) for source, g in sorted(per.items(), key=lambda kv: _key_order(kv[0]))]
    return _table(
        ctx,
        [
            ("source", "key"),
            ("recurrences", "int"),
            ("run_count", "int"),
            ("missed", "int"),
            ("outcomes", "int"),
            ("successes", "int"),
            ("failures", "int"),
            ("last_run_at", "time"),
        ],
        summary,
    )


def describe_window(window: Window, zone: tzinfo) -> dict[str, Any]:
    from heartbeat.clock import isoformat

    return {"since": isoformat(window.since, zone), "until": isoformat(window.until, zone)}


__all__ = ["BY", "KINDS", "Context", "Window", "build", "local_days", "parse_bound"]
