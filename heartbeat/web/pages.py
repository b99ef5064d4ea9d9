"""The dashboard's pages as data: each is a JSON-ready dict, rendered to HTML by the templates.

Every page reads; none writes (:func:`heartbeat.web.queries.snapshot`). Times
are ISO 8601 in the workspace zone with their offset. A window of ``days=N``
is the last N days up to now, as ``hb report --since Nd`` reads it, and each
page bounds what it reads by its window or by a row limit, so that a page
over a million outcomes answers in well under 200 ms (``scripts/bench.py``).

- **Now**: the queues (ready / claimed with lease left / stale / held / done
  today), what ``hb due`` would list with reasons and risk, the next fire time
  of every recurrence and PROACTIVE.md task, the workspace guard.
- **Decisions**: reminders and proactive messages sent and held back, per day
  (or per hour of one day) and per reason, and the list; filters by task,
  reason, kind, day and hour.
- **Task**: one task's fields, history, claims, outcomes, errors, decisions.
- **Outcomes**: the ``hb report outcomes`` numbers per day, skill, scope or source.
- **Runs**: heartbeat ticks and pokes, and how each ended.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from heartbeat.clock import YEARS, isoformat
from heartbeat.errors import NUL, InvalidInput, nul_reason
from heartbeat.web import queries

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger

MAX_DAYS = 90  # the widest window a page reads
DECISION_DAYS = 7
RUN_DAYS = 7
# windows that keep a page under 200 ms at a million outcomes a month (exact medians read each one)
OUTCOME_DAYS = {"day": 3, "skill": 1, "scope": 1, "source": 1}
LIST_LIMIT = 100  # rows a list shows unless ?limit= says otherwise
MAX_LIMIT = 1000
NEXT_READY = 10  # ready tasks shown per queue
CLAIM_ROWS = 50  # claims shown per queue
TASK_ROWS = 200  # history, outcomes, errors and decisions shown for one task
PROACTIVE_WINDOW = timedelta(minutes=30)  # a PROACTIVE.md task's time window (CraftBot's tick)
PROACTIVE_SCAN_DAYS = 400
THROUGH = timedelta(microseconds=1)  # a window ends just after now: what happened at now is in it
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
OTHER_REASON = "other"
REASON_LABELS = {
    "sent": "sent",
    "quiet_hours": "quiet hours",
    "repeat_window": "repeat window",
    "daily_cap": "daily cap",
    "min_gap": "min gap",
    "recent_conversation": "recent conversation",
    "no_suggestion": "no suggestion",
    "disabled": "disabled",
    "risk_p2": "routine (P2)",
    OTHER_REASON: "other",
}
DECISION_KINDS = ("reminder", "proactive")
RUN_KINDS = queries.TICK_KINDS


# --- query parameters ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Params:
    """A page's query parameters (the first value of each); InvalidInput names a bad one."""

    values: Mapping[str, str]

    @classmethod
    def parse(cls, query: str) -> Params:
        from urllib.parse import parse_qsl

        try:
            pairs = parse_qsl(query, keep_blank_values=True, max_num_fields=50, errors="strict")
        except (ValueError, UnicodeDecodeError):
            raise InvalidInput("the query string is not readable (at most 50 fields, UTF-8)") from None
        values: dict[str, str] = {}
        for name, value in pairs:
            if NUL in name:
                raise InvalidInput(nul_reason("a query parameter's name", name))
            if NUL in value:  # %00: no id, scope or filter value the ledger holds has one
                raise InvalidInput(nul_reason(f"query parameter {name}", value))
            values.setdefault(name, value)
        return cls(values)

    def text(self, name: str) -> str | None:
        """The value as given; None when absent or blank (except where blank means something)."""
        value = self.values.get(name)
        return value.strip() if value is not None and value.strip() else None

    def raw(self, name: str) -> str | None:
        return self.values.get(name)

    def number(self, name: str, default: int | None, low: int, high: int) -> int | None:
        """A whole number in ASCII digits from ``low`` to ``high`` (``²`` is a digit to
        ``str.isdigit`` and not to ``int``; ``٥`` is a five to both, and a typo here)."""
        text = self.text(name)
        if text is None:
            return default
        digits = text.lstrip("0") or "0"  # no more digits than the bound: int() stops at 4,300
        if (
            not (text.isascii() and text.isdigit())
            or len(digits) > len(str(high))
            or not low <= int(digits) <= high
        ):
            raise InvalidInput(f"{name}={_shown(text)}: expected a whole number from {low} to {high}")
        return int(digits)

    def choice(self, name: str, choices: Sequence[str], default: str | None = None) -> str | None:
        text = self.text(name)
        if text is None:
            return default
        if text not in choices:
            raise InvalidInput(f"{name}={_shown(text)}: expected one of {', '.join(choices)}")
        return text

    def day(self, name: str) -> date | None:
        """A day as YYYY-MM-DD in the years hb handles (:data:`heartbeat.clock.YEARS`): the
        pages count to the next midnight, which 9999-12-31 does not have."""
        text = self.text(name)
        if text is None:
            return None
        try:
            if len(text) != 10:
                raise ValueError(text)
            day = date.fromisoformat(text)
        except ValueError:
            raise InvalidInput(f"{name}={_shown(text)}: expected a day as YYYY-MM-DD") from None
        if not YEARS[0] <= day.year <= YEARS[1]:
            years = f"{YEARS[0]} to {YEARS[1]}"
            raise InvalidInput(f"{name}={_shown(text)}: outside the years {years} that hb handles")
        return day


def _shown(text: str) -> str:
    """A parameter's value as a refusal quotes it: its first 40 characters."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


# --- shared pieces ----------------------------------------------------------------------------


def _iso(value: datetime | None, zone: ZoneInfo) -> str | None:
    return isoformat(value, zone)


def _header(ledger: Ledger, page: str, now: datetime) -> dict[str, Any]:
    return {
        "page": page,
        "now": _iso(now, ledger.zone),
        "timezone": ledger.zone.key,
        "workspace": str(ledger.workspace),
    }


def local_midnight(day: date, zone: ZoneInfo) -> datetime:
    """When a local day begins (daylight saving included), as an aware UTC instant."""
    from heartbeat.rules.recurrence import resolve_local

    return resolve_local(datetime.combine(day, time()), zone)


def local_hour(day: date, hour: int, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The instants a local hour of ``day`` covers; empty when it does not exist (spring forward)
    and both readings when it happens twice (fall back)."""
    from heartbeat.rules.recurrence import resolve_local

    start = resolve_local(datetime.combine(day, time(hour)), zone)
    end = (
        local_midnight(day + timedelta(days=1), zone)
        if hour == 23
        else resolve_local(datetime.combine(day, time(hour + 1)), zone)
    )
    return start, end


def day_names(since: datetime, until: datetime, zone: ZoneInfo) -> list[str]:
    """Every local day from ``since``'s to the day of the last instant before ``until``."""
    first = since.astimezone(zone).date()
    last = (until - THROUGH).astimezone(zone).date()
    return [(first + timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


def _window(now: datetime, days: int) -> tuple[datetime, datetime]:
    return now - timedelta(days=days), now + THROUGH


def _describe_window(since: datetime, until: datetime, zone: ZoneInfo, days: int | None) -> dict[str, Any]:
    return {"days": days, "since": _iso(since, zone), "until": _iso(until - THROUGH, zone)}


# --- Now ------------------------------------------------------------------------------------


def now_page(ledger: Ledger, params: Params) -> dict[str, Any]:
    """The queues, what enters the next round, what recurs next, and whether a heartbeat runs."""
    now = ledger.now()
    zone = ledger.zone
    max_attempts = ledger.settings.queue_max_attempts
    holder = ledger.guard_holder()
    rules = ledger.recur_list()
    # from the ledger as of the last sync: a page only reads (syncing TODO.RECUR.md or
    # PROACTIVE.md edited since would take the files' lock and write)
    due_rules = {r["id"]: r for r in ledger.recur_due(read_files=False)}
    today = local_midnight(now.astimezone(zone).date(), zone)
    with queries.snapshot(ledger) as db:
        names = queries.scopes(db)
        done = queries.done_between(db, today, now + THROUGH)
        queues = []
        for scope in names:
            ready, indexed = queries.ready_count(db, scope, now)
            claimed, stale = queries.claim_counts(db, scope, now)
            held = queries.held_count(db, scope) + (indexed - ready)
            done_today = done.get(scope, 0)
            if not (ready or claimed or held or done_today):
                continue  # a queue with nothing in it now
            queues.append(
                {
                    "scope": scope or None,
                    "ready": ready,
                    "claimed": claimed - stale,
                    "stale": stale,
                    "held": held,
                    "done_today": done_today,
                    "claims": [
                        _claim(row, now, zone)
                        for row in (queries.claims(db, scope, CLAIM_ROWS) if claimed else [])
                    ],
                    "next_ready": [
                        {
                            "id": row["id"],
                            "title": row["title"],
                            "priority": row["priority"],
                            "skill": row["skill"],
                            "created_at": _iso(row["created_at"], zone),
                        }
                        for row in (queries.next_ready(db, scope, now, NEXT_READY) if ready else [])
                    ],
                }
            )
        candidates = queries.round_candidates(db, now, names)
        failed = queries.failed_since_success(db, [row["pk"] for row in candidates])
        last_heartbeat = queries.last_tick(db, "heartbeat")
    due = entering_round(candidates, failed, now, zone, max_attempts)
    return {
        **_header(ledger, "now", now),
        "guard": _guard(holder),
        "last_heartbeat": _run(last_heartbeat, zone) if last_heartbeat else None,
        "queues": queues,
        "due": {"total": len(due), "shown": min(len(due), LIST_LIMIT), "tasks": due[:LIST_LIMIT]},
        "recurrences": next_fires(rules, due_rules, now, zone),
    }


def _guard(holder: Mapping[str, Any] | None) -> dict[str, Any]:
    if holder is None:
        return {"running": False, "held": False}
    return {"running": not holder["expired"], "held": True, **holder}


def _claim(row: Mapping[str, Any], now: datetime, zone: ZoneInfo) -> dict[str, Any]:
    lease = row["lease_expires_at"]
    return {
        "id": row["id"],
        "title": row["title"],
        "worker": row["claimed_by"],
        "claimed_at": _iso(row["claimed_at"], zone),
        "lease_expires_at": _iso(lease, zone),
        "lease_left_s": None if lease is None else round((lease - now).total_seconds(), 3),
        "stale": lease is None or lease <= now,
        "attempts": row["attempts"],
    }


def entering_round(
    candidates: Iterable[Mapping[str, Any]],
    failed: set[int],
    now: datetime,
    zone: ZoneInfo,
    max_attempts: int,
) -> list[dict[str, Any]]:
    """What ``hb due`` lists, from the candidate rows (queue order): the round's own rules decide
    each task's reasons and risk; the most urgent first, ties in queue order."""
    from heartbeat.rules.round import TaskState, assess_risk, entry_reasons

    def span(seconds: int | None) -> timedelta | None:
        return timedelta(seconds=seconds) if seconds else None

    entries = []
    for row in candidates:
        state = TaskState(
            id=row["id"],
            title=row["title"],
            status=row["status"],
            priority=row["priority"],
            risk=row["risk"],
            due_at=row["due_at"],
            next_check_at=row["next_check_at"],
            last_update_at=row["last_update_at"] or row["created_at"],
            last_checked_at=row["last_checked_at"],
            check_interval=span(row["check_interval"]),
            stale_after=span(row["stale_after"]),
            blocker=row["blocker"],
            next_action=row["next_action"],
            fallback_action=row["fallback_action"],
            last_progress_note=row["last_progress_note"],
            follow_up=bool(row["follow_up"]),
            attempts=row["attempts"] or 0,
            max_attempts=max_attempts,
            not_before=row["not_before"],
        )
        reasons = [str(r) for r in entry_reasons(state, now)]
        if not reasons:
            continue
        if row["pk"] in failed:
            state = replace(state, failed_recently=True)
        risk = assess_risk(state, reasons, now)
        entries.append((risk.severity, row, reasons, risk.value))
    entries.sort(key=lambda e: -e[0])
    return [
        {
            "id": row["id"],
            "title": row["title"],
            "scope": row["scope"] or None,
            "status": row["status"],
            "risk": risk,
            "reasons": reasons,
            "due_at": _iso(row["due_at"], zone),
            "next_check_at": _iso(row["next_check_at"], zone),
            "last_checked_at": _iso(row["last_checked_at"], zone),
            "blocker": row["blocker"],
            "next_action": row["next_action"],
        }
        for _severity, row, reasons, risk in entries
    ]


def next_fires(
    rules: Sequence[Mapping[str, Any]], due: Mapping[str, Mapping[str, Any]], now: datetime, zone: ZoneInfo
) -> list[dict[str, Any]]:
    """Each recurrence with its state and next fire time, due ones first, then by that time.

    States: ``due`` (``hb recur due`` hands it out now), ``held`` (periods are open but not
    handed out: its conditions fail, or the skip policy drops them), ``scheduled``, ``never``
    (a rule hb cannot read), ``dormant`` (a PROACTIVE.md block CraftBot would not run) and
    ``disabled``."""
    from heartbeat.clock import parse_when
    from heartbeat.formats.todo import rule_zone as zone_of_rule
    from heartbeat.reporting.reports import open_periods

    out = []
    for rule in rules:
        proactive = rule["kind"] == "proactive"
        entry = {
            "id": rule["id"],
            "kind": rule["kind"],
            "source": rule["source"],
            "title": rule["title"],
            "rule": rule["rule"],
            "time": rule["time"],
            "day": rule["day"],
            "enabled": rule["enabled"],
            "run_count": rule["run_count"],
            "last_run_at": rule["last_run_at"],
            "state": "scheduled",
            "next_at": None,
            "missed": 0,
        }
        handed = due.get(rule["id"])
        if handed is not None:
            first = (handed.get("occurrences") or [None])[0]
            entry.update(state="due", next_at=first or _iso(now, zone), missed=handed["missed"])
        elif not rule["enabled"]:
            entry["state"] = "disabled"
        elif rule.get("dormant"):
            entry["state"] = "dormant"
        elif proactive:
            last_run = parse_when(rule["last_run_at"], zone) if rule["last_run_at"] else None
            fire = next_proactive(rule, last_run, now, zone)
            entry.update(state="scheduled" if fire else "never", next_at=_iso(fire, zone))
        else:
            try:
                rule_zone = zone_of_rule(rule["tz"], zone)
            except InvalidInput:
                rule_zone = zone
            stored = parse_when(rule["next_at"], zone) if rule["next_at"] else None
            periods = open_periods(rule["rule"], rule["next"], rule["claimed_period"], rule_zone, now, stored)
            if periods is None:
                entry["state"] = "never"
            else:
                pending, first_at = periods
                # open periods hb due does not hand out now: its conditions fail, or the skip policy
                entry.update(state="held" if pending else "scheduled", next_at=_iso(first_at, zone))
                entry["missed"] = max(0, pending - 1)
        out.append(entry)
    order = {"due": 0, "held": 1, "scheduled": 2, "never": 3, "dormant": 4, "disabled": 5}
    far = "9999"
    out.sort(key=lambda e: (order[str(e["state"])], _sort_instant(e["next_at"]) or far))
    return out


def _sort_instant(text: str | None) -> str | None:
    """An ISO time with offset as UTC text that sorts as time."""
    if text is None:
        return None
    from heartbeat.clock import to_utc

    return to_utc(datetime.fromisoformat(text)).isoformat()


def next_proactive(
    rule: Mapping[str, Any], last_run: datetime | None, now: datetime, zone: ZoneInfo
) -> datetime | None:
    """When a PROACTIVE.md task not due now next falls due (its time window opening on its day,
    the period not used up), ignoring its conditions; None when it never does."""
    from heartbeat.rules.recurrence import Frequency, due_period, resolve_local

    try:
        freq = Frequency(rule["rule"])
    except ValueError:
        return None
    local_run = last_run.astimezone(zone) if last_run is not None else None

    def due_at(moment: datetime) -> bool:
        try:
            period = due_period(
                freq,
                time=rule["time"],
                day=rule["day"],
                last_period=rule["claimed_period"],
                now_local=moment.astimezone(zone),
                last_run=local_run,
                tick=PROACTIVE_WINDOW,
            )
        except InvalidInput:
            return False
        return period is not None

    if freq is Frequency.HOURLY:
        hour = now.astimezone(zone).replace(minute=0, second=0, microsecond=0)
        for step in range(1, 3):
            candidate = (hour + timedelta(hours=step)).astimezone(zone)
            if due_at(candidate):
                return candidate
        return None
    try:
        at = time.fromisoformat(rule["time"]) if rule["time"] else time()
    except ValueError:
        return None
    today = now.astimezone(zone).date()
    for step in range(PROACTIVE_SCAN_DAYS):
        day = today + timedelta(days=step)
        opens_at = resolve_local(datetime.combine(day, at), zone)
        if opens_at + PROACTIVE_WINDOW < now:
            continue
        moment = max(opens_at, now)
        if due_at(moment):
            return moment
    return None


# --- Decisions ---------------------------------------------------------------------------


def reason_texts(ledger: Ledger) -> dict[str, str]:
    """What each suppression reason means, with this workspace's settings."""
    s = ledger.settings
    return {
        "quiet_hours": f"quiet hours ({s.quiet_hours}, {ledger.zone.key}): only P0 goes out",
        "repeat_window": (
            f"the same task was reminded within {s.reminder_repeat_hours:g} h "
            "(and its risk did not rise, no new blocker)"
        ),
        "daily_cap": f"the daily proactive cap ({s.proactive_max_per_day} a day) was reached",
        "min_gap": f"less than {s.proactive_min_hours_between:g} h since the last proactive message",
        "recent_conversation": (
            f"the user spoke within the last {s.proactive_min_hours_since_conversation:g} h"
        ),
        "no_suggestion": "no concrete suggestion: no message",
        "disabled": "proactive chat is off (proactive.enabled)",
        "risk_p2": "routine (P2): a state update, never a message",
        OTHER_REASON: "held back for a reason hb did not record by name",
    }


def _tally(found: Iterable[tuple[str, str | None, int]]) -> dict[str, Any]:
    """(decision, reason, count) rows -> decisions, sent, suppressed and per reason."""
    reasons = dict.fromkeys((*REASONS, OTHER_REASON), 0)
    sent = total = 0
    for decision, reason, n in found:
        total += n
        if decision == "sent":
            sent += n
        else:
            reasons[reason if reason in reasons else OTHER_REASON] += n
    return {"decisions": total, "sent": sent, "suppressed": total - sent, "reasons": reasons}


def decisions_page(ledger: Ledger, params: Params) -> dict[str, Any]:
    """Reminders and proactive messages sent and held back: per day (or per hour of one day),
    per reason, and the newest decisions, filtered."""
    now = ledger.now()
    zone = ledger.zone
    days = params.number("days", DECISION_DAYS, 1, MAX_DAYS)
    assert days is not None
    day = params.day("day")
    hour = params.number("hour", None, 0, 23)
    limit = params.number("limit", LIST_LIMIT, 1, MAX_LIMIT)
    assert limit is not None
    filters = {
        "task": params.text("task"),
        "reason": params.choice("reason", (*REASONS, "sent")),
        "kind": params.choice("kind", DECISION_KINDS),
    }
    if day is not None:
        since, until = local_midnight(day, zone), local_midnight(day + timedelta(days=1), zone)
    else:
        since, until = _window(now, days)
    names = day_names(since, until, zone)
    ranges = [(since, until)]
    if hour is not None:
        ranges = []
        for name in names:
            start, end = local_hour(date.fromisoformat(name), hour, zone)
            start, end = max(start, since), min(end, until)
            if start < end:
                ranges.append((start, end))
    per_hour: list[dict[str, Any]] | None = None
    with queries.snapshot(ledger) as db:
        counts = queries.decision_counts(db, ranges, filters)
        rows = queries.decisions(db, ranges, filters, limit)
        if day is not None:
            times = queries.decision_times(db, ranges, filters)
            heartbeats = queries.run_times(db, "heartbeat", since, until)
            rounds = queries.run_times(db, queries.ROUND_KIND, since, until)
            per_hour = _per_hour(times, heartbeats, rounds, zone, hour)
    by_day: dict[str, list[tuple[str, str | None, int]]] = {name: [] for name in names}
    for local_day, decision, reason, n in counts:
        by_day.setdefault(local_day, []).append((decision, reason, n))
    per_day = [{"day": name, **_tally(by_day[name])} for name in sorted(by_day)]
    totals = _tally((d, r, n) for _day, d, r, n in counts)
    return {
        **_header(ledger, "decisions", now),
        "window": {**_describe_window(since, until, zone, None if day else days), "day": _day_text(day)},
        "filters": {**filters, "day": _day_text(day), "hour": hour, "limit": limit},
        "quiet_hours": ledger.settings.quiet_hours,
        "reason_texts": reason_texts(ledger),
        "totals": totals,
        "per_day": per_day,
        "per_hour": per_hour,
        "shown": len(rows),
        "decisions": [_decision(row, zone) for row in rows],
    }


def _day_text(day: date | None) -> str | None:
    return None if day is None else day.isoformat()


def _per_hour(
    times: Sequence[tuple[datetime, str, str | None]],
    heartbeats: Sequence[datetime],
    rounds: Sequence[datetime],
    zone: ZoneInfo,
    only: int | None,
) -> list[dict[str, Any]]:
    """One day hour by hour: heartbeat ticks and rounds that ran, decisions sent and held back,
    and why nothing went out when nothing did."""
    hours = [only] if only is not None else list(range(24))
    found: dict[int, list[tuple[str, str | None, int]]] = {h: [] for h in hours}
    ticks = dict.fromkeys(hours, 0)
    checks = dict.fromkeys(hours, 0)
    for at, decision, reason in times:
        found.setdefault(at.astimezone(zone).hour, []).append((decision, reason, 1))
    for at in heartbeats:
        h = at.astimezone(zone).hour
        ticks[h] = ticks.get(h, 0) + 1
    for at in rounds:
        h = at.astimezone(zone).hour
        checks[h] = checks.get(h, 0) + 1
    out = []
    for h in hours:
        tally = _tally(found.get(h, []))
        out.append(
            {
                "hour": h,
                "heartbeats": ticks.get(h, 0),
                "rounds": checks.get(h, 0),
                **tally,
                "why": _why(tally, ticks.get(h, 0), checks.get(h, 0)),
            }
        )
    return out


def _why(tally: Mapping[str, Any], heartbeats: int, rounds: int) -> str:
    """Why nothing was sent in an hour, in a few words ("" when something was)."""
    if tally["sent"]:
        return ""
    if tally["suppressed"]:
        held = sorted(((n, r) for r, n in tally["reasons"].items() if n), reverse=True)
        return "held back: " + ", ".join(f"{REASON_LABELS[r]} ×{n}" for n, r in held)
    if not heartbeats and not rounds:
        return "no heartbeat ran"
    return "nothing was due"


def _decision(row: Mapping[str, Any], zone: ZoneInfo) -> dict[str, Any]:
    return {
        "at": _iso(row["at"], zone),
        "day": row["local_day"],
        "kind": row["kind"],
        "task_id": row["task_id"],
        "title": row["title"],
        "scope": row["scope"] or None,
        "topic": row["topic"],
        "risk": row["risk"],
        "decision": row["decision"],
        "reason": row["reason"],
        "blocker": row["blocker"],
        "suggestion": row["suggestion"],
        "message": row["message"],
    }


# --- Task -----------------------------------------------------------------------------------


def task_page(ledger: Ledger, params: Params) -> dict[str, Any]:
    """One task: its fields, history, claims, outcomes, errors and the decisions about it."""
    task_id = params.text("id")
    if task_id is None:
        raise InvalidInput("the task page needs ?id=TASK_ID (and &scope=QUEUE when the id is in several)")
    scope = params.raw("scope")
    now = ledger.now()
    zone = ledger.zone
    task = ledger.get(task_id, scope=scope, history=True)
    history = task.pop("history")
    with queries.snapshot(ledger) as db:
        pk = queries.task_pk(db, task["scope"] or "", task["id"])
        outcomes = queries.task_outcomes(db, pk, TASK_ROWS) if pk is not None else []
        errors = queries.task_errors(db, pk, TASK_ROWS) if pk is not None else []
        decisions = queries.task_decisions(db, pk, task["id"], TASK_ROWS) if pk is not None else []
    return {
        **_header(ledger, "task", now),
        "task": task,
        "history": list(reversed(history))[:TASK_ROWS],
        "claims": task_claims(task, outcomes, errors, now, zone),
        "outcomes": [{**row, **_times(row, zone, "completed_at", "claimed_at")} for row in outcomes],
        "errors": [{**row, **_times(row, zone, "at")} for row in errors],
        "decisions": [{**row, **_times(row, zone, "at")} for row in decisions],
    }


def _times(row: Mapping[str, Any], zone: ZoneInfo, *names: str) -> dict[str, Any]:
    return {name: _iso(row[name], zone) for name in names}


def task_claims(
    task: Mapping[str, Any],
    outcomes: Sequence[Mapping[str, Any]],
    errors: Sequence[Mapping[str, Any]],
    now: datetime,
    zone: ZoneInfo,
) -> list[dict[str, Any]]:
    """Each claim on the task, newest first: the one held now, then each closed by a
    completion or a failure (an outcome and an error of one claim are one entry)."""
    from heartbeat.clock import parse_when

    out: list[dict[str, Any]] = []
    if task["status"] == "doing":
        lease = parse_when(task["lease_expires_at"], zone) if task["lease_expires_at"] else None
        out.append(
            {
                "claim": task["claim"],
                "worker": task["claimed_by"],
                "claimed_at": task["claimed_at"],
                "ended_at": None,
                "ended": "stale" if lease is None or lease <= now else "held",
                "lease_expires_at": task["lease_expires_at"],
                "reason": None,
                "sort": now,
            }
        )
    closed: dict[str, dict[str, Any]] = {}
    for row in outcomes:
        entry = {
            "claim": row["claim"],
            "worker": row["worker"],
            "claimed_at": _iso(row["claimed_at"], zone),
            "ended_at": _iso(row["completed_at"], zone),
            "ended": "completed" if row["success"] else "failed for good",
            "lease_expires_at": None,
            "reason": None,
            "sort": row["completed_at"],
        }
        out.append(entry)
        if row["claim"]:
            closed[row["claim"]] = entry
    for row in errors:
        same = closed.get(row["claim"]) if row["claim"] else None
        if same is not None:
            same["reason"] = row["reason"]
            continue
        out.append(
            {
                "claim": row["claim"],
                "worker": None,
                "claimed_at": None,
                "ended_at": _iso(row["at"], zone),
                "ended": "failed for good" if row["final"] else "failed, retried",
                "lease_expires_at": None,
                "reason": row["reason"],
                "sort": row["at"],
            }
        )
    out.sort(key=lambda e: e["sort"], reverse=True)
    for entry in out:
        del entry["sort"]
    return out


# --- Outcomes -------------------------------------------------------------------------------


def outcomes_page(ledger: Ledger, params: Params) -> dict[str, Any]:
    """Outcomes per day, skill, scope or source: count, success rate, median and p95 duration,
    the numbers ``hb report outcomes --since Nd`` prints."""
    now = ledger.now()
    zone = ledger.zone
    by = params.choice("by", tuple(OUTCOME_DAYS), "day")
    assert by is not None
    days = params.number("days", OUTCOME_DAYS[by], 1, MAX_DAYS)
    assert days is not None
    since, until = _window(now, days)
    if by == "day":
        report = ledger.report("outcomes", by="day", since=since, until=until)
        columns, rows = report["columns"], report["rows"]
    else:
        with queries.snapshot(ledger) as db:
            values = queries.outcome_values(db, by, since, until)
        columns, rows = outcome_groups(by, values)
    n = sum(int(r["outcomes"]) for r in rows)
    ok = sum(int(r["successes"]) for r in rows)
    return {
        **_header(ledger, "outcomes", now),
        "by": by,
        "window": _describe_window(since, until, zone, days),
        "totals": {"outcomes": n, "successes": ok, "failures": n - ok, "success_rate": ok / n if n else None},
        "columns": columns,
        "rows": rows,
    }


def outcome_groups(
    by: str, values: Iterable[tuple[Any, bool, float | None]]
) -> tuple[list[str], list[dict[str, Any]]]:
    """``hb report outcomes --by skill|scope|source`` from the window's (group, success,
    duration) rows: the same columns, numbers (exact median, nearest-rank p95) and order."""
    from heartbeat.reporting import stats

    groups: dict[Any, list[Any]] = {}
    for key, success, duration in values:
        group = groups.setdefault(key, [0, 0, []])
        group[0] += 1
        group[1] += 1 if success else 0
        if duration is not None:
            group[2].append(duration)
    rows = []
    for key, (n, ok, durations) in groups.items():
        durations.sort()
        rows.append(
            {
                by: key,
                "outcomes": n,
                "successes": ok,
                "failures": n - ok,
                "success_rate": stats.rate(ok, n),
                "median_duration_s": stats.median(durations),
                "p95_duration_s": stats.p95(durations),
            }
        )
    # biggest groups first, then by key (none last) in code-point order, as hb report sorts them
    rows.sort(key=lambda r: (-r["outcomes"], r[by] is None, "" if r[by] is None else r[by]))
    columns = [by, "outcomes", "successes", "failures", "success_rate", "median_duration_s", "p95_duration_s"]
    return columns, rows


# --- Runs -----------------------------------------------------------------------------------


def runs_page(ledger: Ledger, params: Params) -> dict[str, Any]:
    """Heartbeat ticks and pokes: per day and how they ended, and the newest of them."""
    now = ledger.now()
    zone = ledger.zone
    days = params.number("days", RUN_DAYS, 1, MAX_DAYS)
    assert days is not None
    kind = params.choice("kind", RUN_KINDS)
    limit = params.number("limit", LIST_LIMIT, 1, MAX_LIMIT)
    assert limit is not None
    kinds = (kind,) if kind else RUN_KINDS
    since, until = _window(now, days)
    holder = ledger.guard_holder()
    with queries.snapshot(ledger) as db:
        rows = queries.ticks(db, kinds, since, until, limit)
        ended = queries.tick_outcomes(db, kinds, since, until)
    statuses = sorted({status for _at, _kind, status in ended})
    per_day: dict[str, dict[str, int]] = {name: {} for name in day_names(since, until, zone)}
    totals: dict[str, int] = {}
    for at, run_kind, status in ended:
        key = f"{run_kind}:{status}"
        bucket = per_day.setdefault(at.astimezone(zone).date().isoformat(), {})
        bucket[key] = bucket.get(key, 0) + 1
        totals[key] = totals.get(key, 0) + 1
    return {
        **_header(ledger, "runs", now),
        "window": _describe_window(since, until, zone, days),
        "filters": {"kind": kind, "limit": limit},
        "guard": _guard(holder),
        "statuses": statuses,
        "totals": totals,
        "per_day": [{"day": name, "runs": per_day[name]} for name in sorted(per_day)],
        "shown": len(rows),
        "runs": [_run(row, zone) for row in rows],
    }


def _run(row: Mapping[str, Any], zone: ZoneInfo) -> dict[str, Any]:
    started, finished = row["started_at"], row["finished_at"]
    detail = row["detail"] if isinstance(row["detail"], dict) else {}
    record = row["record"] if isinstance(row["record"], dict) else {}
    return {
        "kind": row["kind"],
        "status": row["status"],
        "started_at": _iso(started, zone),
        "finished_at": _iso(finished, zone),
        "duration_s": None if finished is None else round((finished - started).total_seconds(), 3),
        "pid": row["pid"],
        "task_id": row["task_id"],
        "worker": row["worker"],
        "expires_at": _iso(row["expires_at"], zone),
        "detail": row["detail"],
        "summary": _run_summary(row, detail, record, zone),
    }


def _run_summary(
    row: Mapping[str, Any], detail: Mapping[str, Any], record: Mapping[str, Any], zone: ZoneInfo
) -> str:
    """How a tick or poke ended, in a few words."""
    parts = []
    if detail.get("error"):
        parts.append(f"error: {detail['error']}")
    if detail.get("taken_over_by"):
        parts.append(f"taken over by a {detail['taken_over_by']} at {detail.get('taken_over_at')}")
    if detail.get("finished_after_expiry"):
        parts.append(f"finished ({detail['finished_after_expiry']}) after its guard expired")
    if detail.get("checked") is not None:
        sent, held = detail.get("sent", 0), detail.get("suppressed", 0)
        parts.append(f"checked {detail['checked']}, sent {sent}, held back {held}")
    if row["kind"] == "poke" and row["task_id"]:
        parts.append(f"added task {row['task_id']}")
    if not parts and isinstance(record.get("status"), str):
        parts.append(record["status"])
    if not parts and row["status"] == "running" and row["expires_at"] is not None:
        parts.append(f"running; its guard holds until {_iso(row['expires_at'], zone)}")
    return "; ".join(parts)


PAGES: dict[str, Callable[[Ledger, Params], dict[str, Any]]] = {
    "now": now_page,
    "decisions": decisions_page,
    "task": task_page,
    "outcomes": outcomes_page,
    "runs": runs_page,
}
