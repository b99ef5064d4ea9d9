#!/usr/bin/env python3
"""Fill a ledger with a realistic month of heartbeat history, for the docs and the benchmark.

    python scripts/demo_data.py --workspace /tmp/demo                      # a month, ~1,200 tasks
    python scripts/demo_data.py --workspace /tmp/demo --days 7 --tasks 150  # small (the docs test)
    python scripts/demo_data.py --workspace /tmp/big --outcomes 1000000 --notifications 100000

What it writes, deterministically for a given --seed and --end:

- tasks that arrive during local working hours in three queues (the legacy
  list and two scoped queues), claimed by workers every 20 minutes, completed
  or failed (with retries up to queue.max_attempts): through the public API,
  Ledger.add / pop / complete / fail / update / cancel, on a simulated clock;
- recurrences, repeat rules added with Ledger.recur_add and PROACTIVE.md
  tasks imported with Ledger.import_file: a heartbeat every 30 minutes hands
  out the due ones (recur_due --claim) and records their outcomes
  (recur_outcome); the agent was down for two days, and has been stopped for
  the last five hours, so periods were missed;
- reminder and proactive decisions, sent and suppressed for every reason, and
  the heartbeat runs: SQLAlchemy Core bulk inserts of the rows the round writes
  (their distribution is scripted, not the throttle's);
- with --outcomes N / --notifications N: more of the same rows in bulk
  (executemany), until the ledger holds N of each (the benchmark's volume).
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heartbeat import Ledger  # noqa: E402
from heartbeat.errors import QueueExhausted  # noqa: E402

SCOPES = ("", "_demo_extension.research", "_demo_extension.ops")  # tasks.json queue paths
SKILLS = ("research", "email", "calendar", "code-review", "summarize", "deploy", "triage", None)
SOURCES = ("cli", "tasks-json", "poke")
PRIORITIES = ("critical", "high", "medium", "medium", "low")
# median seconds from claim to completion, per skill
MEDIAN_S = {
    "research": 900,
    "email": 60,
    "calendar": 45,
    "code-review": 600,
    "summarize": 120,
    "deploy": 300,
    "triage": 90,
    None: 180,
}
FAIL_P = {"deploy": 0.25, "research": 0.12, "code-review": 0.1}
REASONS = (
    "timeout after 300s",
    "rate limited (HTTP 429)",
    "tool error: browser crashed",
    "missing credentials for the calendar API",
    "network unreachable",
    "validation failed: empty summary",
    "model refused the request",
)
REASON_WEIGHTS = (30, 22, 14, 9, 8, 6, 3)
PERMANENT = frozenset({"missing credentials for the calendar API", "model refused the request"})
TITLES = {
    "research": "Research {x} for the weekly brief",
    "email": "Reply to {x}",
    "calendar": "Schedule a call with {x}",
    "code-review": "Review the pull request on {x}",
    "summarize": "Summarise the thread about {x}",
    "deploy": "Deploy {x} to staging",
    "triage": "Triage the new issue about {x}",
    None: "Follow up on {x}",
}
TOPICS = (
    "the quarterly plan",
    "the billing bug",
    "Anna",
    "the vendor contract",
    "the offsite",
    "the API rollout",
)
# repeat rules, added with Ledger.recur_add (first occurrence on the first day, local time)
REPEAT_RULES: tuple[dict[str, str], ...] = (
    {"title": "Morning briefing", "repeat": "daily", "at": "08:00"},
    {"title": "Sweep the inbox", "repeat": "every 6 hours", "at": "07:30"},
    {"title": "Weekly review", "repeat": "weekly", "at": "17:00"},
    {"title": "Check the backups", "repeat": "every 2 days", "at": "06:00"},
    {"title": "Stand-up notes", "repeat": "cron 0 9 * * 1-5", "at": "09:00", "missed": "all"},
    {"title": "Market watch", "repeat": "every 1 hours", "at": "00:15", "missed": "skip"},
)
# PROACTIVE.md tasks, imported with Ledger.import_file("proactive", ...)
PROACTIVE_MD = """\
---
version: 1
last_updated: "{start}"
---

# Proactive Behaviour

At most one proactive message a day, never at night, always with a concrete next step.

<!-- PROACTIVE_TASKS_START -->

### [DAILY] Health Check-in

```yaml
id: health_check_in
frequency: daily
time: "09:00"
enabled: true
priority: 20
permission_tier: 1
instruction: Ask how the day is going; suggest one break.
run_count: 0
```

### [WEEKLY] Weekly Digest

```yaml
id: weekly_digest
frequency: weekly
day: monday
time: "10:00"
enabled: true
priority: 40
permission_tier: 1
instruction: Summarise the week's finished work in five lines.
run_count: 0
```

<!-- PROACTIVE_TASKS_END -->
"""


class SimClock:
    """The simulated now the ledger reads (Ledger(now=callable))."""

    def __init__(self, start: datetime) -> None:
        self.at = start

    def __call__(self) -> datetime:
        return self.at


def busy_weight(moment: datetime, zone: ZoneInfo) -> float:
    """How likely work happens at this local time (working hours, quieter weekends)."""
    local = moment.astimezone(zone)
    hour = local.hour + local.minute / 60
    day = 0.35 if local.weekday() >= 5 else 1.0
    if 8 <= hour < 19:
        return day
    if 7 <= hour < 23:
        return 0.35 * day
    return 0.05 * day


def diurnal_times(
    rng: random.Random, start: datetime, end: datetime, n: int, zone: ZoneInfo
) -> list[datetime]:
    """``n`` instants in [start, end), denser in local working hours, sorted."""
    span = (end - start).total_seconds()
    out: list[datetime] = []
    while len(out) < n:
        at = start + timedelta(seconds=rng.random() * span)
        if rng.random() < busy_weight(at, zone):
            out.append(at)
    out.sort()
    return out


def duration_s(rng: random.Random, skill: str | None) -> float:
    """Seconds of work: lognormal around the skill's median, within a worker's lease."""
    return round(min(rng.lognormvariate(math.log(MEDIAN_S[skill]), 0.8), 4 * 3600.0), 3)


def pick_reason(rng: random.Random) -> str:
    return rng.choices(REASONS, REASON_WEIGHTS)[0]


# --- the agents at work, through the public API ------------------------------------------------


def simulate(
    ledger: Ledger,
    clock: SimClock,
    rng: random.Random,
    start: datetime,
    end: datetime,
    n: int,
    down: list[tuple[datetime, datetime]],
) -> None:
    """The agents at work on a simulated clock, through the public API.

    Tasks arrive, workers claim them every 20 minutes and finish or fail them
    (retries come back); every 30 minutes a heartbeat hands out the due
    recurrences and records their outcomes. While ``down`` nothing runs.
    """
    zone = ledger.zone
    events: list[tuple[datetime, int, str, Any]] = []
    seq = 0

    def push(at: datetime, kind: str, data: Any) -> None:
        nonlocal seq
        if at < end:
            seq += 1
            heapq.heappush(events, (at, seq, kind, data))

    for at in diurnal_times(rng, start, end, n, zone):
        push(at, "arrive", None)
    tick = start
    while tick < end:
        push(tick, "tick", None)
        tick += timedelta(minutes=20)
    beat = start
    while beat < end:
        if not any(a <= beat < b for a, b in down):
            push(beat, "heartbeat", None)
        beat += timedelta(minutes=30)
    ready = dict.fromkeys(SCOPES, 0)
    while events:
        at, _seq, kind, data = heapq.heappop(events)
        clock.at = at
        if kind == "arrive":
            skill = rng.choice(SKILLS)
            scope = rng.choices(SCOPES, (5, 3, 2))[0]
            fields: dict[str, Any] = {"priority": rng.choice(PRIORITIES), "skill": skill}
            if rng.random() < 0.3:
                fields["due_at"] = at + timedelta(hours=rng.choice((4, 24, 72)))
            if rng.random() < 0.2:
                fields["check_interval"] = rng.choice(("2h", "6h", "1d"))
                fields["next_check_at"] = at + timedelta(hours=2)
            title = TITLES[skill].format(x=rng.choice(TOPICS))
            source = "tasks-json" if scope else rng.choice(SOURCES)
            task = ledger.add(title, scope=scope, source=source, **fields)
            if rng.random() < 0.04:  # parked: waits on someone past its due time, never claimed
                due = fields.get("due_at") or at + timedelta(days=1)
                ledger.update(
                    task["id"], scope=scope, status="blocked", blocker="waiting on the API key", due_at=due
                )
            elif rng.random() < 0.03:
                ledger.cancel(task["id"], scope=scope)
            else:
                ready[scope] += 1
        elif kind == "heartbeat":
            for rule in ledger.recur_due(claim=True):  # what is due now, handed out once
                took = timedelta(seconds=duration_s(rng, "summarize"))
                push(at + took, "recur_done", rule["id"])
        elif kind == "recur_done":
            ok = rng.random() < 0.92
            ledger.recur_outcome(data, result="done" if ok else pick_reason(rng), success=ok)
        elif kind == "tick":
            if any(a <= at < b for a, b in down):
                continue
            if busy_weight(at, zone) < 0.1 and rng.random() < 0.7:
                continue  # the agent mostly sleeps at night
            for scope in SCOPES:
                for worker in range(2):
                    if not ready[scope]:
                        break
                    try:
                        got = ledger.pop(scope=scope, worker=f"agent-{worker + 1}", lease="6h")
                    except QueueExhausted:
                        got = None
                    if got is None:
                        ready[scope] = 0
                        break
                    ready[scope] -= 1
                    task_id = got.get("id") or got.get("task_id")
                    skill = got.get("assigned_skill") or got.get("skill")
                    fails = rng.random() < FAIL_P.get(skill, 0.06)
                    push(at + timedelta(seconds=duration_s(rng, skill)), "finish", (task_id, scope, fails))
        else:
            task_id, scope, fails = data
            if fails:
                reason = pick_reason(rng)
                # some failures are permanent: retrying cannot help
                result = ledger.fail(task_id, scope=scope, reason=reason, final=reason in PERMANENT)
                if result["retry"]:
                    ready[scope] += 1
            else:
                ledger.complete(
                    task_id, scope=scope, outcome={"result": "done", "notes": rng.randrange(1, 9)}
                )


# --- rows the round and the recurrences write (Core bulk inserts) --------------------------------


def tables(ledger: Ledger) -> dict[str, Any]:
    from heartbeat.db.models import Base

    return dict(Base.metadata.tables)


def insert_rows(ledger: Ledger, table: Any, rows: list[dict[str, Any]], batch: int = 20_000) -> None:
    """executemany in batches, one transaction per batch."""
    from sqlalchemy import insert

    from heartbeat import progress

    with progress.steps(f"writing {table.name}", len(rows)) as advance:
        for i in range(0, len(rows), batch):
            with ledger.engine.begin() as conn:
                conn.execute(insert(table), rows[i : i + batch])
            advance(len(rows[i : i + batch]))


def local_at(day: datetime, hhmm: str, zone: ZoneInfo) -> datetime:
    from heartbeat.rules.recurrence import resolve_local

    hour, minute = (int(p) for p in hhmm.split(":"))
    return resolve_local(day.replace(hour=hour, minute=minute, second=0, microsecond=0), zone)


def add_recurrences(ledger: Ledger, start: datetime) -> None:
    """The agent's recurring work: repeat rules (hb recur add) and PROACTIVE.md tasks (import)."""
    zone = ledger.zone
    first_day = start.astimezone(zone).date()
    for spec in REPEAT_RULES:
        ledger.recur_add(
            spec["title"],
            repeat=spec["repeat"],
            next=f"{first_day} {spec['at']}",
            missed=spec.get("missed", "once"),
        )
    path = ledger.workspace / "PROACTIVE.md"
    path.write_text(PROACTIVE_MD.format(start=start.strftime("%Y-%m-%dT%H:%M:%SZ")), encoding="utf-8")
    ledger.import_file("proactive", path)


def rule_refs(ledger: Ledger) -> list[tuple[int, str, str]]:
    """(pk, id, source) of every recurrence."""
    t = tables(ledger)["recurrences"]
    return [
        (pk, rid, source)
        for pk, rid, source in _rows(ledger, t.select().with_only_columns(t.c.pk, t.c.id, t.c.source))
    ]


def notification_row(
    rng: random.Random,
    at: datetime,
    zone: ZoneInfo,
    tasks: list[tuple[int, str, str | None]],
    proactive_days: set[str],
) -> dict[str, Any]:
    """One decision as the round records it: reminders mostly, proactive checks now and then."""
    local = at.astimezone(zone)
    day = local.date().isoformat()
    quiet = local.hour >= 23 or local.hour < 8
    row: dict[str, Any] = {"at": at, "local_day": day, "run_pk": None}
    if rng.random() < 0.15:
        reason = rng.choices(
            (None, "min_gap", "recent_conversation", "no_suggestion", "disabled"), (4, 3, 3, 1, 1)
        )[0]
        if quiet:
            reason = "quiet_hours"
        elif reason is None and day in proactive_days:
            reason = "daily_cap"  # at most one proactive message per local day
        elif reason is None:
            proactive_days.add(day)
        topic = rng.choice(TOPICS)
        row.update(kind="proactive", task_pk=None, task_id=None, topic=topic, risk=None, blocker=None)
        row.update(decision="sent" if reason is None else "suppressed", reason=reason)
        row["suggestion"] = f"Ask whether {topic} needs a decision this week"
        row["message"] = f"Thinking about {topic}: shall I draft options?" if reason is None else None
        return row
    pk, task_id, title = rng.choice(tasks)
    risk = rng.choices(("P0", "P1", "P2"), (1, 6, 5))[0]
    if risk == "P2":
        reason: str | None = "risk_p2"
    elif quiet and risk != "P0":
        reason = "quiet_hours"
    else:
        reason = rng.choices((None, "repeat_window", "no_suggestion"), (3, 6, 1))[0]
    row.update(kind="reminder", task_pk=pk, task_id=task_id, topic=None, risk=risk)
    row.update(decision="sent" if reason is None else "suppressed", reason=reason)
    row["blocker"] = "waiting on the API key" if rng.random() < 0.2 else None
    row["suggestion"] = None if reason == "no_suggestion" else "Reply with the two open questions"
    row["message"] = f"Task: {task_id} {title}\nStatus: no update for 6h\nSuggestion: {row['suggestion']}"
    if reason is not None:
        row["message"] = None
    return row


def task_refs(ledger: Ledger) -> list[tuple[int, str, str | None]]:
    from sqlalchemy import select

    t = tables(ledger)["tasks"]
    with ledger.engine.connect() as conn:
        rows = conn.execute(select(t.c.pk, t.c.id, t.c.title).order_by(t.c.pk).limit(5000))
        return [(pk, tid, title) for pk, tid, title in rows]


def round_history(
    ledger: Ledger,
    rng: random.Random,
    start: datetime,
    end: datetime,
    per_day: int,
    down: list[tuple[datetime, datetime]],
) -> None:
    """Heartbeat runs every 30 minutes and the reminder / proactive decisions they made."""
    zone = ledger.zone
    t = tables(ledger)
    runs = []
    at = start - timedelta(minutes=30)
    while (at := at + timedelta(minutes=30)) < end:
        if any(a <= at < b for a, b in down):
            continue
        record = {"timestamp": at.isoformat(), "status": "HEARTBEAT_OK"}
        runs.append(
            {
                "kind": "heartbeat",
                "scope": None,
                "status": "ok",
                "started_at": at,
                "finished_at": at + timedelta(seconds=rng.randrange(1, 20)),
                "worker": "heartbeat",
                "record": record,
            }
        )
    insert_rows(ledger, t["runs"], runs)
    refs = task_refs(ledger)
    if not refs:
        return
    days = max(1, round((end - start).total_seconds() / 86400))
    sent: set[str] = set()
    times = diurnal_times(rng, start, end, per_day * days, zone)
    times = [at for at in times if not any(a <= at < b for a, b in down)]
    insert_rows(ledger, t["notifications"], [notification_row(rng, at, zone, refs, sent) for at in times])


# --- volume for the benchmark (executemany) --------------------------------------------------------


def count(ledger: Ledger, table: str) -> int:
    from sqlalchemy import func, select

    t = tables(ledger)[table]
    with ledger.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(t)).scalar_one())


def chunks(total: int, size: int) -> Iterator[int]:
    while total > 0:
        yield min(size, total)
        total -= size


def bulk_outcomes(
    ledger: Ledger,
    rng: random.Random,
    start: datetime,
    end: datetime,
    n: int,
    rules: list[tuple[int, str, str]],
) -> None:
    """``n`` more outcomes: queue completions (with their done tasks and retried errors) and rule runs."""
    from sqlalchemy import insert

    zone = ledger.zone
    t = tables(ledger)
    times = diurnal_times(rng, start, end, n, zone)
    serial = count(ledger, "tasks")
    # the ids hb gave the simulated tasks are random task-<8 hex>: a numbered one may be taken
    with ledger.engine.connect() as conn:
        taken = {row[0] for row in conn.exec_driver_sql("SELECT id FROM tasks")}
    repeat_rules = [r for r in rules if r[2] != "proactive"] or rules
    for size in chunks(n, 20_000):
        batch, times = times[:size], times[size:]
        tasks, outcomes, errors = [], [], []
        for done in batch:
            if repeat_rules and rng.random() < 0.3:
                pk, rid, source = rng.choice(repeat_rules)
                took = duration_s(rng, "summarize")
                ok = rng.random() < 0.92
                outcomes.append(
                    {
                        "task_pk": None,
                        "recurrence_pk": pk,
                        "task_id": rid,
                        "scope": "",
                        "source": source,
                        "skill": None,
                        "success": ok,
                        "result": {"result": "ok" if ok else pick_reason(rng)},
                        "claimed_at": done - timedelta(seconds=took),
                        "completed_at": done,
                        "duration_s": took,
                        "attempt": None,
                        "worker": None,
                    }
                )
                continue
            serial += 1
            while f"task-{serial:08x}" in taken:
                serial += 1
            skill = rng.choice(SKILLS)
            scope = rng.choices(SCOPES, (5, 3, 2))[0]
            took = duration_s(rng, skill)
            claimed = done - timedelta(seconds=took)
            retries = 1 if rng.random() < FAIL_P.get(skill, 0.06) else 0
            created = claimed - timedelta(seconds=rng.randrange(60, 6 * 3600)) - retries * timedelta(hours=1)
            task_id = f"task-{serial:08x}"
            tasks.append(
                {
                    "id": task_id,
                    "scope": scope,
                    "source": "tasks-json" if scope else rng.choice(SOURCES),
                    "title": TITLES[skill].format(x=rng.choice(TOPICS)),
                    "status": "done",
                    "priority": rng.choice(PRIORITIES),
                    "skill": skill,
                    "created_at": created,
                    "updated_at": done,
                    "completed_at": done,
                    "claimed_at": claimed,
                    "claimed_by": f"agent-{rng.randrange(1, 4)}",
                    "attempts": 1 + retries,
                }
            )
            outcomes.append(
                {
                    "task_pk": None,
                    "recurrence_pk": None,
                    "task_id": task_id,
                    "scope": scope,
                    "source": tasks[-1]["source"],
                    "skill": skill,
                    "success": True,
                    "result": {"result": "done"},
                    "claimed_at": claimed,
                    "completed_at": done,
                    "duration_s": took,
                    "attempt": 1 + retries,
                    "worker": tasks[-1]["claimed_by"],
                }
            )
            if retries:
                errors.append(
                    {
                        "task_id": task_id,
                        "scope": scope,
                        "skill": skill,
                        "at": claimed - timedelta(minutes=30),
                        "reason": pick_reason(rng),
                        "attempt": 1,
                        "final": False,
                    }
                )
        with ledger.engine.begin() as conn:
            if tasks:
                pks = conn.execute(
                    insert(t["tasks"]).returning(t["tasks"].c.pk, sort_by_parameter_order=True), tasks
                ).scalars()
                by_id = dict(zip((x["id"] for x in tasks), pks, strict=True))
                for o in outcomes:
                    if o["recurrence_pk"] is None:
                        o["task_pk"] = by_id[o["task_id"]]
                for e in errors:
                    e["task_pk"] = by_id[e["task_id"]]
            conn.execute(insert(t["outcomes"]), outcomes)
            if errors:
                conn.execute(insert(t["errors"]), errors)


def bulk_notifications(ledger: Ledger, rng: random.Random, start: datetime, end: datetime, n: int) -> None:
    zone = ledger.zone
    refs = task_refs(ledger)
    if not refs or n <= 0:
        return
    times = diurnal_times(rng, start, end, n, zone)
    sent = {
        d
        for (d,) in _rows(
            ledger, "SELECT local_day FROM notifications WHERE kind = 'proactive' AND decision = 'sent'"
        )
    }
    rows = [notification_row(rng, at, zone, refs, sent) for at in times]
    insert_rows(ledger, tables(ledger)["notifications"], rows)


def _rows(ledger: Ledger, query: Any) -> list[Any]:
    """Rows of a SQL text or a Core select."""
    from sqlalchemy import text

    with ledger.engine.connect() as conn:
        return list(conn.execute(text(query) if isinstance(query, str) else query))


# --- the whole month ---------------------------------------------------------------------------------


def fill(
    ledger: Ledger,
    clock: SimClock,
    *,
    end: datetime,
    days: int = 30,
    seed: int = 1,
    tasks: int = 1200,
    notifications_per_day: int = 40,
    outcomes: int | None = None,
    notifications: int | None = None,
) -> dict[str, int]:
    """Fill ``ledger`` (opened on ``clock``) with ``days`` of history ending at ``end``; row counts."""
    rng = random.Random(seed)
    start = end - timedelta(days=days)
    clock.at = start
    ledger.config_set("queue.max_attempts", "3")
    third = start + (end - start) / 3
    # the agent was down for a while, and has been stopped for the last 5 hours (missed periods)
    down = [(third, third + timedelta(days=min(2, days / 10))), (end - timedelta(hours=5), end)]
    add_recurrences(ledger, start)
    simulate(ledger, clock, rng, start, end, tasks, down)
    clock.at = end
    rules = rule_refs(ledger)
    round_history(ledger, rng, start, end, notifications_per_day, down)
    if outcomes is not None:
        bulk_outcomes(ledger, rng, start, end, outcomes - count(ledger, "outcomes"), rules)
    if notifications is not None:
        bulk_notifications(ledger, rng, start, end, notifications - count(ledger, "notifications"))
    return {
        name: count(ledger, name)
        for name in ("tasks", "outcomes", "errors", "notifications", "recurrences", "runs", "task_events")
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workspace", required=True, metavar="DIR", help="the workspace (created if missing)"
    )
    parser.add_argument(
        "--db", metavar="URL", help="database path or URL (default: the workspace's SQLite file)"
    )
    parser.add_argument("--days", type=int, default=30, help="days of history (default 30)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--end", metavar="ISO", help="when the history ends (default: now, to the hour)")
    parser.add_argument(
        "--timezone", default="Europe/Berlin", help="the workspace timezone (default Europe/Berlin)"
    )
    parser.add_argument(
        "--tasks", type=int, default=1200, help="tasks the simulated agents work (default 1200)"
    )
    parser.add_argument("--outcomes", type=int, metavar="N", help="bulk-insert outcomes until there are N")
    parser.add_argument(
        "--notifications", type=int, metavar="N", help="bulk-insert decisions until there are N"
    )
    args = parser.parse_args(argv)

    if args.end:
        end = datetime.fromisoformat(args.end.replace("Z", "+00:00"))
        end = end if end.tzinfo else end.replace(tzinfo=ZoneInfo(args.timezone))
    else:
        end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    end = end.astimezone(UTC)
    clock = SimClock(end - timedelta(days=args.days))
    Path(args.workspace).mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    if sys.stderr.isatty():  # progress bars for a person watching; none when piped
        from heartbeat import progress

        progress.set_reporter(progress.terminal_reporter)
    with Ledger.open(workspace=args.workspace, db=args.db, now=clock) as ledger:
        ledger.config_set("timezone", args.timezone)
        counts = fill(
            ledger,
            clock,
            end=end,
            days=args.days,
            seed=args.seed,
            tasks=args.tasks,
            outcomes=args.outcomes,
            notifications=args.notifications,
        )
    counts["seconds"] = round(time.perf_counter() - began, 1)
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
