"""Ledger operations for recurrences and proactive tasks (SPEC.md section 6).

One ``recurrences`` table holds two kinds of rule:

- **repeat rules**: TODO.RECUR.md entries (source ``recur``) and rules added with
  ``hb recur add`` (source ``cli``). A Repeat rule (``daily``, ``weekly``,
  ``every N days``, ``every N hours``, ``cron <expr>``) and ``Next``, a
  wall-clock time in the rule's zone that is both the next occurrence and the
  phase. Due when ``Next <= now``; the missed-run policy decides how many of
  the due occurrences run.
- **proactive tasks**: PROACTIVE.md (source ``proactive``). A frequency with an
  optional time and day; due once per period (hour, day, week from Monday,
  month), inside ``[time, time + 30 minutes]`` when a time is set, as CraftBot's
  manager decides it: a run recorded anywhere in the period (``last_run``, from
  hb's outcomes or from CraftBot's own in the file) uses the period up.

Handing a rule out (``recur_due(claim=True)``) records the period it was handed
out for in ``claimed_period`` (proactive: the period key; repeat rules: the
latest occurrence handed out, as a UTC timestamp), so the next heartbeat in the
same period does not hand it out again, outcome recorded or not.

Choices the contract leaves open, made here:

- A PROACTIVE.md time window is CraftBot's: 30 minutes, both ends included (its
  heartbeat ticks on :00 and :30), whatever ``check_interval`` says.
- ``user_available``: the user spoke (``hb seen``) within the last 4 hours.
- Handing out a repeat rule does not move its ``Next`` (TODO.RECUR.md keeps the
  runtime's view); ``recur_materialize`` does.
- An outcome that answers no open hand-out closes the rule's current period
  (a PROACTIVE.md task's: the period it falls in, also before its time).
- A PROACTIVE.md task whose block stopped being a task CraftBot runs (see
  ``sync.proactive_files``) keeps its row, dormant: never handed out until its
  block reads again.
- The missed-run policy applies to repeat rules; a PROACTIVE.md task follows
  its periods, so a window missed while the agent was down is not caught up.
  Policy ``all`` hands out at most ``MAX_CATCH_UP`` occurrences at once.
- ``hb recur add`` without ``--next`` starts now; a cron rule starts at its
  first match at or after ``--next``.
- PROACTIVE.md tasks are defined by their file: ``recur_update`` only enables
  or disables them and ``recur_remove`` refuses (remove the block instead).
- With ``sync.auto_export``, an operation that changes what a runtime's file says writes
  that file after its commit, as ``hb sync`` of that file would (:func:`_export`): an
  outcome or an enable/disable PROACTIVE.md (CraftBot's own manager saves the file with
  each, and decides due-ness from ``last_run``), an added, updated or removed repeat rule
  TODO.RECUR.md, a materialize run TODO.md and TODO.RECUR.md (mistermorph would otherwise
  materialize the same occurrence again from the file's old ``Next``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo

from heartbeat.clock import isoformat, load_zone
from heartbeat.context import Context
from heartbeat.db.plain import read_time
from heartbeat.db.rows import OutcomeRow, RecurrenceRow, RunRow, TaskRow
from heartbeat.db.store import Db, statements
from heartbeat.errors import HbError, InvalidInput, InvalidState, NotFound, one_line

if TYPE_CHECKING:
    from heartbeat.formats.repeat import Repeat

SQL = statements("recur")

PROACTIVE = "proactive"  # source of PROACTIVE.md tasks
REPEAT_SOURCES = ("recur", "cli")  # TODO.RECUR.md entries and `hb recur add` rules
MISSED_POLICIES = ("skip", "once", "all")
USER_AVAILABLE_HOURS = 4.0  # `user_available`: the user spoke within this many hours
MAX_CATCH_UP = 100  # missed policy `all` hands out at most this many occurrences at once
DEFAULT_PRIORITY = 50  # PROACTIVE.md's default; repeat rules sort with it
NEXT_LAYOUT = "%Y-%m-%d %H:%M"  # TODO.RECUR.md `Next`
_JUST_BEFORE = timedelta(microseconds=1)
# next_at was resolved in the zone of its time; a workspace timezone changed since can put it
# up to 26 hours off, so the scans look that far ahead and judge each rule by its Next.
_ZONE_SLACK = timedelta(hours=27)
_CLEAR = ("", "none", "null")
DORMANT_KEY = "hb:dormant"  # in a PROACTIVE.md row's extra: why its block is no task now


@dataclass(frozen=True)
class _Due:
    """Why a rule is due now."""

    period: str  # what to record as handed out (claimed_period)
    runs: list[datetime]  # repeat rules: the occurrences to run (missed policy applied)
    pending: int  # repeat rules: due occurrences not handed out yet (1 = none missed)
    first: datetime | None = None  # repeat rules: the oldest of them


def rule_dict(row: RecurrenceRow, zone: ZoneInfo) -> dict[str, Any]:
    """A recurrence as ``hb recur list --json`` prints it (times in the workspace zone)."""
    proactive = row.source == PROACTIVE
    return {
        "id": row.id,
        "source": row.source,
        "kind": "proactive" if proactive else "repeat",
        "title": row.title,
        "rule": row.rule,
        "tz": row.tz,
        "next": row.next_local,
        "next_at": isoformat(row.next_at, zone),
        "time": row.time_of_day,
        "day": row.day,
        "enabled": row.enabled,
        "priority": row.priority,
        "permission_tier": row.permission_tier,
        "conditions": list(row.conditions or []),
        "instruction": row.instruction,
        "chat_id": row.chat_id,
        "missed_policy": None if proactive else row.missed_policy,
        "dormant": dormant_reason(row),
        "run_count": row.run_count,
        "last_run_at": isoformat(row.last_run_at, zone),
        "claimed_period": row.claimed_period,
        "claimed_at": isoformat(row.claimed_at, zone),
        "evaluation": row.evaluation,
        "created_at": isoformat(row.created_at, zone),
        "updated_at": isoformat(row.updated_at, zone),
    }


# --- reading rule fields ----------------------------------------------------------------------


def parse_rule(text: str) -> Repeat:
    """A repeat rule as ``hb recur add --repeat`` takes it (InvalidInput when it is not one)."""
    from heartbeat.formats.repeat import parse_repeat

    try:
        return parse_repeat(text)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


def parse_next(value: str | datetime, zone: ZoneInfo) -> datetime:
    """A ``Next`` time as a naive wall-clock time in ``zone``, minute precision.

    Takes ``YYYY-MM-DD HH:MM`` or ISO 8601; a time with an offset is converted
    to ``zone``'s wall clock, its ``fold`` saying which of a repeated local time it
    is (:func:`_set_next` keeps that instant).
    """
    from heartbeat.clock import YEARS

    if isinstance(value, datetime):
        when = value
    else:
        try:
            when = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInput(f"bad --next time {value!r} (expected YYYY-MM-DD HH:MM or ISO 8601)") from None
    # (checked before a conversion to the zone, which fails past year 1 or 9999)
    if not YEARS[0] <= when.year <= YEARS[1] or (
        when.tzinfo is not None and not YEARS[0] <= (when := when.astimezone(zone)).year <= YEARS[1]
    ):
        raise InvalidInput(f"--next {value!s} is outside the years {YEARS[0]} to {YEARS[1]} that hb handles")
    aware = when.tzinfo is not None
    if aware:
        when = when.replace(tzinfo=None)
    if when.second or when.microsecond:
        raise InvalidInput(f"--next {value!s}: Next has minute precision (YYYY-MM-DD HH:MM)")
    return when if aware else when.replace(fold=0)


def _stored_next(row: RecurrenceRow) -> datetime | None:
    if row.next_local is None:
        return None
    try:
        return datetime.fromisoformat(row.next_local)
    except ValueError:
        raise InvalidInput(f"recurrence {row.id!r}: bad Next {row.next_local!r}") from None


def _one_line(value: str, what: str) -> str:
    text = value.strip()
    if not text:
        raise InvalidInput(f"{what} must not be empty")
    if "\n" in text or "\r" in text:
        raise InvalidInput(f"{what} must fit on one line")
    return text


def _chat_id(value: str | None) -> str | None:
    """A ChatID as mistermorph normalises it (``TG:5`` -> ``tg:5``); InvalidInput for one it refuses."""
    from heartbeat.formats.todo import normalize_chat_id

    if value is None or value.strip().lower() in _CLEAR:
        return None
    text = value.strip()
    # a TODO.RECUR.md metadata value holds no comma, no parenthesis
    if any(ch in text for ch in ",()\n\r"):
        raise InvalidInput(f"chat id {value!r} must not contain a comma, a parenthesis or a line break")
    try:
        return normalize_chat_id(text)
    except ValueError as exc:
        raise InvalidInput(
            f"chat id {value!r} is not a protocol:id reference like tg:-100123: {exc}"
        ) from None


def _rule_title(value: str) -> str:
    """A repeat rule's title: one line, and no link mistermorph refuses in TODO.RECUR.md."""
    from heartbeat.formats.todo import link_problem
    from heartbeat.ops.sync.markdown import todo_title_problem

    text = _one_line(value, "a recurrence title")
    problem = link_problem(text)
    if problem is not None:
        raise InvalidInput(
            f"recurrence title refused: {problem} (mistermorph's recurring materialize "
            "fails on TODO.RECUR.md while such a link is there)"
        )
    problem = todo_title_problem(text)  # its line in TODO.RECUR.md, and the TODO.md tasks it makes
    if problem is not None:
        raise InvalidInput(f"recurrence title refused: {problem}")
    return text


def _check_rule_lines(row: RecurrenceRow) -> None:
    """InvalidInput naming the rule when a line it makes would stop mistermorph's reader: its
    TODO.RECUR.md line, or an occurrence's in TODO.md / TODO.DONE.md (``Next (TZ) title``). The
    title alone fits (:func:`_rule_title`); a long chat id, Repeat or TZ can still push it over."""
    from heartbeat.formats import todo as fmt
    from heartbeat.formats.todo import Entry, TodoKind
    from heartbeat.ops.sync.markdown import todo_title_problem
    from heartbeat.ops.sync.markdown.merge import line_size_problem

    # any wall time of Next's width: the line's size is in question
    next_local = fmt._parse_stamp(row.next_local or "")
    if next_local is None:
        next_local = datetime.fromisoformat("2000-01-01T00:00")
    entry = Entry(TodoKind.RECUR, row.title, next=next_local, repeat=row.rule, tz=row.tz, chat_id=row.chat_id)
    try:
        problem = line_size_problem(fmt.render_entry(entry), " in TODO.RECUR.md")
    except InvalidInput:
        problem = None  # a line hb cannot write at all: the sync says why
    if problem is not None:
        raise InvalidInput(f"{row.id}: recurrence refused: {problem}")
    problem = todo_title_problem(_occurrence_title(row, next_local), row.chat_id)
    if problem is not None:
        raise InvalidInput(f"{row.id}: recurrence refused: an occurrence's entry: {problem}")


def _occurrence_title(row: RecurrenceRow, at: datetime) -> str:
    """The title of the TODO.md task an occurrence at wall time ``at`` makes (as mistermorph's)."""
    label = f" ({row.tz})" if row.tz else ""
    return f"{at:{NEXT_LAYOUT}}{label} {row.title}"


def _missed(value: str) -> str:
    policy = value.strip().lower()
    if policy not in MISSED_POLICIES:
        raise InvalidInput(f"missed-run policy {value!r}: expected skip, once or all")
    return policy


def _zone_of(row: RecurrenceRow, workspace_zone: ZoneInfo) -> ZoneInfo:
    from heartbeat.formats.todo import rule_zone

    return rule_zone(row.tz, workspace_zone)  # none or "Local" (TODO.RECUR.md): the workspace's


def _first_occurrence(repeat: Repeat, anchor: datetime, zone: ZoneInfo) -> datetime:
    """The first occurrence at or after ``anchor`` (a cron expression may not match it)."""
    from heartbeat.rules.recurrence import next_local_after, resolve_local

    if repeat.cron is None:
        return anchor
    return next_local_after(repeat, anchor, zone, resolve_local(anchor, zone) - _JUST_BEFORE)


def _set_next(row: RecurrenceRow, local: datetime, zone: ZoneInfo) -> None:
    """Set the rule's Next to the wall time ``local``: the text, and the instant it stands for
    (:func:`resolve_local`'s; the second of a repeated local time when ``local`` has ``fold``
    set: a Next given with its offset, or a rule added now, during the repeated hour)."""
    from heartbeat.rules.recurrence import resolve_local
    from heartbeat.rules.wallclock import wall_clock

    row.next_local = local.strftime(NEXT_LAYOUT)
    row.next_at = resolve_local(local, zone)
    if local.fold:
        second = local.replace(tzinfo=zone).astimezone(UTC)
        if wall_clock(second, zone) == local.replace(fold=0):
            row.next_at = second


# --- when a rule is due -----------------------------------------------------------------------


def _claimed_instant(row: RecurrenceRow) -> datetime | None:
    from heartbeat.formats.timestamps import parse_timestamp

    if row.claimed_period is None:
        return None
    try:
        return parse_timestamp(row.claimed_period)
    except ValueError:
        return None


def _next_instant(row: RecurrenceRow, anchor: datetime, zone: ZoneInfo) -> datetime:
    """The instant the row's Next stands for (the stored one, on a repeated local time)."""
    from heartbeat.rules.recurrence import resolve_next

    return resolve_next(anchor, zone, row.next_at)


def _repeat_due(row: RecurrenceRow, workspace_zone: ZoneInfo, now: datetime) -> _Due | None:
    from heartbeat.formats.timestamps import format_timestamp
    from heartbeat.rules.recurrence import MissedPolicy, pending_occurrences, runs_for

    anchor = _stored_next(row)
    if anchor is None:
        return None
    zone = _zone_of(row, workspace_zone)
    first = _next_instant(row, anchor, zone)
    if first > now:
        return None
    after = first - _JUST_BEFORE
    claimed = _claimed_instant(row)
    if claimed is not None and claimed >= first:
        after = claimed
    # the occurrences counted, not listed: a Next typed decades back is millions of them
    due = pending_occurrences(parse_rule(row.rule), anchor, zone, after, now, first=first, keep=MAX_CATCH_UP)
    if due is None:
        return None
    # the latest MAX_CATCH_UP decide as all would: the newest (once), those (all), one alone (skip)
    runs = runs_for(MissedPolicy(row.missed_policy), due.latest)[-MAX_CATCH_UP:]
    return _Due(period=format_timestamp(due.latest[-1]), runs=runs, pending=due.count, first=due.first)


class KeptFields(Protocol):
    """What :func:`dormant_reason` reads of a recurrence (a row, or the sync's model object)."""

    @property
    def source(self) -> str: ...

    @property
    def extra(self) -> dict[str, Any] | None: ...


def dormant_reason(row: KeptFields) -> str | None:
    """Why a PROACTIVE.md task is not handed out now: its block is no task CraftBot runs (None:
    it is one). Kept in ``extra``, the file's fields, under a key no yaml block of the file set."""
    reason = (row.extra or {}).get(DORMANT_KEY) if row.source == PROACTIVE else None
    return reason if isinstance(reason, str) else None


def _proactive_due(row: RecurrenceRow, now_local: datetime) -> _Due | None:
    from heartbeat.rules.recurrence import Frequency, due_period, period_before

    if dormant_reason(row) is not None:
        return None  # its block is no task CraftBot runs now (import reported it)
    last_run = None
    if row.last_run_at is not None and row.claimed_at != row.last_run_at:
        # a run not recorded by hb's outcome (CraftBot's own, read from the file) uses up its period;
        # hb's outcome used up claimed_period, the one it answered (see outcome)
        last_run = row.last_run_at.astimezone(now_local.tzinfo)
    try:
        period = due_period(
            Frequency(row.rule),
            time=row.time_of_day,
            day=row.day,
            last_period=row.claimed_period,
            now_local=now_local,
            last_run=last_run,
        )
    except (ValueError, InvalidInput):
        return None  # a schedule hb cannot read never fires (import reported it)
    if period is None or (row.claimed_period is not None and period_before(period, row.claimed_period)):
        return None  # none, or one before the period handed out last (the clock went back)
    return _Due(period=period, runs=[], pending=1)


def _run_period(row: RecurrenceRow, now_local: datetime) -> str | None:
    """The period a PROACTIVE.md task's run at ``now_local`` uses up (None: a schedule hb cannot read)."""
    from heartbeat.rules.recurrence import Frequency, outcome_period

    try:
        return outcome_period(Frequency(row.rule), time=row.time_of_day, day=row.day, when_local=now_local)
    except (ValueError, InvalidInput):
        return None


def _open_claim(row: RecurrenceRow) -> bool:
    """Handed out and no outcome recorded since."""
    if row.claimed_period is None or row.claimed_at is None:
        return False
    return row.last_run_at is None or row.claimed_at > row.last_run_at


def _find(db: Db, rule_id: str, *, lock: bool = False) -> RecurrenceRow:
    row = db.first(RecurrenceRow, SQL.find_locked if lock else SQL.find, {"id": rule_id})
    if row is None:
        raise NotFound(f"no recurrence with id {rule_id!r}")
    return row


def _new_rule_id(db: Db) -> str:
    while True:
        candidate = "recur-" + _token()
        if db.value(SQL.id_taken, {"id": candidate}) is None:
            return candidate


def _new_todo_id(db: Db) -> str:
    while True:
        candidate = "todo-" + _token()
        if db.value(SQL.todo_id_taken, {"id": candidate}) is None:
            return candidate


def _rule_due(zone: ZoneInfo, row: RecurrenceRow, now: datetime) -> _Due | None:
    if row.source == PROACTIVE:
        return _proactive_due(row, now.astimezone(zone))
    try:
        return _repeat_due(row, zone, now)
    except InvalidInput:
        return None  # a rule or Next hb cannot read never fires (its import reported it)


def _reschedule(
    workspace_zone: ZoneInfo,
    now: datetime,
    row: RecurrenceRow,
    repeat: str | None,
    next: str | datetime | None,
    tz: str | None,
) -> None:
    if tz is not None:
        row.tz = None if tz.strip().lower() in _CLEAR else load_zone(tz).key
    rule = parse_rule(repeat if repeat is not None else row.rule)
    row.rule = rule.render()
    zone = _zone_of(row, workspace_zone)
    anchor = parse_next(next, zone) if next is not None else _stored_next(row)
    if anchor is None:
        anchor = now.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0)
    _set_next(row, _first_occurrence(rule, anchor, zone), zone)
    row.claimed_period = None
    row.claimed_at = None


def _materialize_rule(
    db: Db,
    workspace_zone: ZoneInfo,
    row: RecurrenceRow,
    now: datetime,
    created: list[dict[str, Any]],
    advanced: list[dict[str, Any]],
    made: list[tuple[dict[str, Any], RecurrenceRow]],
    skipped: list[dict[str, Any]],
    *,
    dry_run: bool,
) -> None:
    from heartbeat.rules.recurrence import materialize as move_next

    anchor = _stored_next(row)
    if anchor is None:
        return
    zone = _zone_of(row, workspace_zone)
    rule = parse_rule(row.rule)
    first = _next_instant(row, anchor, zone)
    moved = move_next(rule, anchor, zone, row.tz, row.title, now, first=first)
    if moved is None:
        return
    due = _repeat_due(row, workspace_zone, now)
    entries: list[datetime] = []
    if due is not None and due.first is not None:
        entries = [due.first] if row.missed_policy == "once" else due.runs
    # Next keeps its text as written (also when it fell in a daylight-saving gap)
    titles = [moved.text if at == first else _occurrence_title(row, at.astimezone(zone)) for at in entries]
    problem = next(filter(None, (_occurrence_problem(t, row.chat_id) for t in titles)), None)
    if problem is not None:
        # left as it is, as a rule with a link: the ledger keeps it, and no TODO.md line it
        # makes stops mistermorph's reader
        skipped.append({"id": row.id, "reason": f"{row.id} not materialised: its TODO.md entry: {problem}"})
        return
    for title in titles:
        entry = {"id": None, "title": title, "recurrence": row.id, "chat_id": row.chat_id}
        if not dry_run:
            made.append((entry, row))
        created.append(entry)
    advanced.append(
        {
            "id": row.id,
            "next": row.next_local,
            "new_next": f"{moved.new_next_local:{NEXT_LAYOUT}}",
            "missed": moved.missed,
            "entries": len(entries),
        }
    )
    if not dry_run:
        row.next_local = f"{moved.new_next_local:{NEXT_LAYOUT}}"
        row.next_at = moved.new_next_at
        row.updated_at = now


def _occurrence_problem(title: str, chat_id: str | None) -> str | None:
    """Why an occurrence's TODO.md line (or its TODO.DONE.md line once done) would be too long
    for mistermorph's reader (None: it would not)."""
    from heartbeat.formats.todo import Entry, TodoKind, render_entry
    from heartbeat.ops.sync.markdown import ANY_STAMP, todo_done_problem
    from heartbeat.ops.sync.markdown.base import content_of
    from heartbeat.ops.sync.markdown.merge import line_size_problem

    entry = Entry(TodoKind.TODO, content_of(title), created=ANY_STAMP, chat_id=chat_id)
    try:
        problem = line_size_problem(render_entry(entry))
    except InvalidInput:
        return None  # a line hb cannot write at all: the sync says why
    return problem or todo_done_problem(title, chat_id)


def _add_todo_entries(db: Db, made: list[tuple[dict[str, Any], RecurrenceRow]], now: datetime) -> None:
    """The TODO.md tasks of one materialize, as one block on top of TODO.md in the order they were
    made (the rules' file order), as mistermorph puts its generated entries above the list."""
    top = db.value(SQL.first_todo_position)
    first = (top if top is not None else 0) - len(made)
    for offset, (entry, row) in enumerate(made):
        entry["id"] = _add_todo_entry(db, row, entry["title"], now, first + offset)


def _add_todo_entry(db: Db, row: RecurrenceRow, title: str, now: datetime, position: int) -> str:
    from heartbeat.db.status import TaskStatus
    from heartbeat.db.tasks import record_event
    from heartbeat.formats.tasks_json import priority_rank

    task = db.add(
        TaskRow(
            id=_new_todo_id(db),
            scope="",
            source="todo",
            title=title,
            status=TaskStatus.TODO,
            priority_rank=priority_rank(None),
            position=position,
            chat_id=row.chat_id,
            follow_up=False,
            attempts=0,
            version=1,
            created_at=now,
            updated_at=now,
            last_update_at=now,
        )
    )
    record_event(db, task, "created", now, actor="recur", detail={"recurrence": row.id})
    return task.id


def _record_materialize_run(
    db: Db,
    now: datetime,
    created: list[dict[str, Any]],
    advanced: list[dict[str, Any]],
) -> None:
    db.add(
        RunRow(
            kind="materialize",
            status="ok" if advanced else "empty",
            started_at=now,
            finished_at=now,
            detail={
                "created": [e["id"] for e in created],
                "advanced": [{k: a[k] for k in ("id", "next", "new_next")} for a in advanced],
            },
        )
    )


# --- the operations (the Ledger's recur_* methods say what each promises) ------------------------


def rules(ctx: Context, *, source: str | None = None) -> list[dict[str, Any]]:
    """``hb recur list``."""
    zone = ctx.zone
    with ctx.read() as db:
        return [rule_dict(row, zone) for row in db.load(RecurrenceRow, SQL.list, {"source": source})]


def get(ctx: Context, rule_id: str) -> dict[str, Any]:
    """One recurrence by its id."""
    zone = ctx.zone
    with ctx.read() as db:
        return rule_dict(_find(db, rule_id), zone)


def due(ctx: Context, *, claim: bool = False, read_files: bool = True) -> list[dict[str, Any]]:
    """``hb recur due [--claim]``. ``read_files``: TODO.RECUR.md and PROACTIVE.md edited since the
    last sync are synced first (:func:`_read_rule_files`); False: the caller only reads."""
    from heartbeat.rules.recurrence import check_conditions

    if read_files:
        _read_rule_files(ctx, ["recur", "proactive"])
    now = ctx.now()
    zone = ctx.zone
    out: list[dict[str, Any]] = []
    with ctx.write() if claim else ctx.read() as db:
        last_seen = read_time(db.value(SQL.last_seen))
        query = SQL.due_locked if claim else SQL.due
        for row in db.load(RecurrenceRow, query, {"horizon": db.time(now + _ZONE_SLACK)}):
            rule_due = _rule_due(zone, row, now)
            if rule_due is None:
                continue
            verdict = check_conditions(
                [str(c) for c in row.conditions or []],
                now_local=now.astimezone(zone),
                last_conversation_at=last_seen,
                now=now,
                available_hours=USER_AVAILABLE_HOURS,
            )
            if not verdict.ok:
                continue  # not this tick; the period stays open
            if claim:
                row.claimed_period = rule_due.period
                row.claimed_at = now
            if row.source != PROACTIVE and not rule_due.runs:
                continue  # skip policy: periods were missed, none runs
            item = rule_dict(row, zone)
            item.update(
                period=rule_due.period,
                runs=len(rule_due.runs) or 1,
                occurrences=[isoformat(at, zone) for at in rule_due.runs],
                missed=max(0, rule_due.pending - 1),
                conditions_to_check=verdict.passed_through,
                claimed=claim,
            )
            out.append(item)
    out.sort(key=lambda r: DEFAULT_PRIORITY if r["priority"] is None else r["priority"])
    return out


def add(
    ctx: Context,
    title: str,
    *,
    repeat: str,
    next: str | datetime | None = None,
    tz: str | None = None,
    chat_id: str | None = None,
    missed: str = "once",
    enabled: bool = True,
) -> dict[str, Any]:
    """``hb recur add``."""
    content = _rule_title(title)
    rule = parse_rule(repeat)
    zone = load_zone(tz) if tz and tz.strip().lower() not in _CLEAR else None
    workspace_zone = ctx.zone
    rule_zone = zone or workspace_zone
    now = ctx.now()
    anchor = (
        parse_next(next, rule_zone)
        if next is not None
        else now.astimezone(rule_zone).replace(tzinfo=None, second=0, microsecond=0)
    )
    first = _first_occurrence(rule, anchor, rule_zone)
    chat = _chat_id(chat_id)
    policy = _missed(missed)
    from heartbeat.ops.sync.markdown.base import on_top

    with ctx.write() as db:
        top = db.value(SQL.first_repeat_position)
        row = RecurrenceRow(
            id=_new_rule_id(db),
            source="cli",
            title=content,
            rule=rule.render(),
            tz=zone.key if zone else None,
            chat_id=chat,
            enabled=enabled,
            missed_policy=policy,
            run_count=0,
            position=on_top(top),
            created_at=now,
            updated_at=now,
        )
        _set_next(row, first, rule_zone)
        _check_rule_lines(row)
        db.add(row)
        out = rule_dict(row, workspace_zone)
    _export(ctx, "recur")
    return out


def update(
    ctx: Context,
    rule_id: str,
    *,
    title: str | None = None,
    repeat: str | None = None,
    next: str | datetime | None = None,
    tz: str | None = None,
    chat_id: str | None = None,
    missed: str | None = None,
    enabled: bool | None = None,
) -> dict[str, Any]:
    """``hb recur update``."""
    changes = {
        "title": title,
        "repeat": repeat,
        "next": next,
        "tz": tz,
        "chat_id": chat_id,
        "missed": missed,
        "enabled": enabled,
    }
    given = {k for k, v in changes.items() if v is not None}
    if not given:
        raise InvalidInput("nothing to update: pass at least one option")
    now = ctx.now()
    zone = ctx.zone
    with ctx.write() as db:
        row = _find(db, rule_id, lock=True)
        if row.source == PROACTIVE and given - {"enabled"}:
            raise InvalidState(
                f"{rule_id!r} is a PROACTIVE.md task: edit it in PROACTIVE.md "
                "(here only --enable/--disable apply)"
            )
        if enabled is not None:
            row.enabled = enabled
        if title is not None:
            row.title = (
                _one_line(title, "a recurrence title") if row.source == PROACTIVE else _rule_title(title)
            )
        if chat_id is not None:
            row.chat_id = _chat_id(chat_id)
        if missed is not None:
            row.missed_policy = _missed(missed)
        if given & {"repeat", "next", "tz"}:
            _reschedule(zone, now, row, repeat, next, tz)
        if row.source != PROACTIVE and given & {"title", "repeat", "tz", "chat_id"}:
            _check_rule_lines(row)  # raised in the transaction: nothing changes
        row.updated_at = now
        out = rule_dict(row, zone)
    _export(ctx, _kind(row))
    return out


def remove(ctx: Context, rule_id: str) -> dict[str, Any]:
    """``hb recur remove``."""
    zone = ctx.zone
    with ctx.write() as db:
        row = _find(db, rule_id, lock=True)
        if row.source == PROACTIVE:
            raise InvalidState(
                f"{rule_id!r} is a PROACTIVE.md task: remove its block from PROACTIVE.md "
                f"or `hb recur update {rule_id} --disable`"
            )
        out = rule_dict(row, zone)
        db.delete(row)
        if row.synced_hash and (row.extra or {}).get("file") == "recur":
            # its line in TODO.RECUR.md: the next sync drops it rather than read it as a new rule
            from heartbeat.ops.sync import bookmarks

            bookmarks.note_removed(db, "recur", row.id, row.synced_hash)
    _export(ctx, "recur")
    return out


def outcome(ctx: Context, rule_id: str, *, result: str, success: bool = True) -> dict[str, Any]:
    """``hb recur outcome``."""
    from heartbeat.formats.timestamps import format_timestamp
    from heartbeat.rules.recurrence import period_before

    if not isinstance(result, str):
        raise InvalidInput("an outcome's result is a text (it may be empty, as CraftBot's default is)")
    now = ctx.now()
    zone = ctx.zone
    with ctx.write() as db:
        row = _find(db, rule_id, lock=True)
        claimed_at = row.claimed_at if _open_claim(row) else None
        if row.source == PROACTIVE:
            # the period this run uses up: the one handed out, when it answers that (an outcome
            # just past midnight answers the day it was handed out for, and uses up no other),
            # else the one it falls in (never one before the period handed out last)
            period = row.claimed_period if claimed_at is not None else _run_period(row, now.astimezone(zone))
            last = row.claimed_period
            if period is not None and (last is None or not period_before(period, last)):
                row.claimed_period = period
            row.claimed_at = now  # = last_run_at: the run is hb's, its period claimed_period
        elif claimed_at is None:
            rule_due = _rule_due(zone, row, now)
            if rule_due is not None:
                row.claimed_period = rule_due.period
                row.claimed_at = now
        db.add(
            OutcomeRow(
                recurrence_pk=row.pk,
                task_id=row.id,
                scope="",
                source=row.source,
                success=success,
                result={"result": result},
                claimed_at=claimed_at,
                completed_at=now,
                duration_s=(now - claimed_at).total_seconds() if claimed_at else None,
            )
        )
        row.run_count += 1
        row.last_run_at = now
        out = rule_dict(row, zone)
        out["outcome"] = {"timestamp": format_timestamp(now), "result": result, "success": success}
    _export(ctx, _kind(row))
    return out


def evaluate(
    ctx: Context,
    rule_id: str,
    *,
    impact: int,
    risk: int,
    cost: int,
    urgency: int,
    confidence: int,
    long_running: bool = False,
) -> dict[str, Any]:
    """``hb recur evaluate``."""
    from heartbeat.rules.rubric import evaluate as score

    scores = {"impact": impact, "risk": risk, "cost": cost, "urgency": urgency, "confidence": confidence}
    now = ctx.now()
    zone = ctx.zone
    with ctx.write() as db:
        row = _find(db, rule_id, lock=True)
        tier = 1 if row.permission_tier is None else row.permission_tier
        verdict = score(**scores, permission_tier=tier, long_running=long_running)
        record = {
            "scores": scores,
            "total": verdict.total,
            "decision": verdict.decision.value,
            "execution": verdict.execution.value,
            "permission_tier": tier,
            "long_running": long_running,
            "at": isoformat(now),
        }
        row.evaluation = record
        return {"id": row.id, **record, "at": isoformat(now, zone)}


def materialize(
    ctx: Context, *, dry_run: bool = False, export: bool = True, read_files: bool = True
) -> dict[str, Any]:
    """``hb recur materialize`` (and the heartbeat's, with setting ``recur.materialize``; the
    heartbeat syncs and writes the files itself: ``export=False, read_files=False``).
    ``read_files``: TODO.RECUR.md and TODO.md edited since the last sync are synced first
    (:func:`_read_rule_files`); a dry run writes nothing and reads the ledger as it is."""
    from heartbeat.formats.todo import link_problem

    if read_files and not dry_run:
        _read_rule_files(ctx, ["recur", "todo"])
    now = ctx.now()
    zone = ctx.zone
    created: list[dict[str, Any]] = []
    advanced: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    made: list[tuple[dict[str, Any], RecurrenceRow]] = []
    with ctx.read() if dry_run else ctx.write() as db:
        query = SQL.to_materialize if dry_run else SQL.to_materialize_locked
        for row in db.load(RecurrenceRow, query, {"horizon": db.time(now + _ZONE_SLACK)}):
            problem = link_problem(row.title)
            if problem is not None:
                with contextlib.suppress(InvalidInput):
                    if _repeat_due(row, zone, now) is not None:
                        why = "mistermorph's add and complete fail on such a TODO.md entry"
                        skipped.append(
                            {
                                "id": row.id,
                                "reason": f"{row.id} not materialised: {problem} in its title ({why})",
                            }
                        )
                continue
            with contextlib.suppress(InvalidInput):  # an unreadable rule is left alone
                _materialize_rule(db, zone, row, now, created, advanced, made, skipped, dry_run=dry_run)
        if not dry_run:
            _add_todo_entries(db, made, now)
            _record_materialize_run(db, now, created, advanced)
    if export and not dry_run and (created or advanced):
        _export(ctx, "todo", "recur")
    return {"dry_run": dry_run, "created": created, "advanced": advanced, "skipped": skipped}


def _read_rule_files(ctx: Context, kinds: list[str]) -> None:
    """Sync first the files of ``kinds`` edited since hb last read or wrote them, as the heartbeat
    syncs before it decides: a rule removed from TODO.RECUR.md, a Next moved on by hand or by
    mistermorph's own materialize must not fire from the ledger's older copy (SPEC.md section 6:
    an occurrence fires once)."""
    from heartbeat.ops.sync.engine import sync_edited

    sync_edited(ctx, kinds)


def _kind(row: RecurrenceRow) -> str:
    """The sync kind of the file that holds ``row``: PROACTIVE.md or TODO.RECUR.md."""
    return "proactive" if row.source == PROACTIVE else "recur"


def _export(ctx: Context, *kinds: str) -> None:
    """With ``sync.auto_export``: after the operation's commit, sync the files of ``kinds``, as
    ``hb sync`` of them would (hand edits in first, then the ledger's change written), so the
    runtime reading them sees it at once. The operation stands whatever the writing does: a
    failure is a notice, and the next ``hb sync`` writes the file."""
    if not ctx.settings.sync_auto_export:
        return
    from heartbeat.ops.sync.engine import run

    try:
        run(ctx, only=list(kinds))
    except (HbError, OSError) as exc:
        ctx.notices.append(f"the recurrence files were not written ({one_line(exc)}); hb sync retries")


def _token() -> str:
    import secrets  # not at import time: every hb command loads this module

    return secrets.token_hex(4)
