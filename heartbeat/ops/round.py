"""Ledger operations for the heartbeat round, hb heartbeat and hb poke (SPEC.md sections 5 and 7).

The decisions are the pure rules of :mod:`heartbeat.rules` (entry reasons,
risk, quiet hours, throttles, messages); this module feeds them the ledger's
state and records every decision: a ``notifications`` row per reminder or
proactive message, sent or suppressed, and a ``runs`` row per round.

Choices the contract leaves open, made here:

- The check fields (``last_checked_at``, ``next_check_at``) are bookkeeping: a
  round writes them without a history event, a version bump or a new
  ``updated_at``, so a check is never mistaken for an edit (by ``stale_after``,
  or by sync as a ledger-side change).
- A task with no ``last_update_at`` counts from its creation for ``stale``.
- ``failed_recently`` (a P0 sign) is an error row for the task after its last
  successful outcome.
- Memory hygiene with no recorded run is due as soon as it is enabled.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from heartbeat.context import Context
from heartbeat.db.plain import read_time
from heartbeat.db.rows import NotificationRow, RunRow, TaskRow
from heartbeat.db.store import Db, statements
from heartbeat.errors import HbError, InvalidInput, one_line
from heartbeat.ops import guard as guard_mod

if TYPE_CHECKING:
    from collections.abc import Callable

    from heartbeat.rules.checklist import PeriodicTask
    from heartbeat.rules.round import Risk, TaskState
    from heartbeat.rules.throttle import Decision, LastReminder

SQL = statements("round")
CHECKLIST = "HEARTBEAT.md"
HYGIENE_DUE = {"en": "memory hygiene due", "zh": "记忆整理到期"}
_PROACTIVE_LABELS = {"en": ("Open loop", "Suggestion", ": "), "zh": ("事项", "建议", "：")}


@dataclass
class _Entry:
    """A task entering the round, with why and how risky."""

    task: TaskRow
    state: TaskState
    reasons: list[str]
    risk: Risk


@dataclass
class _Reminder:
    """One reminder decision of a round (not yet recorded)."""

    entry: _Entry
    decision: Decision
    message: str | None
    suggestion: str | None
    fallback: str | None
    after: dict[str, datetime | None] = field(default_factory=dict)


@dataclass(frozen=True)
class _Policy:
    """The settings one round's decisions take, read once: the same for every task."""

    zone: tzinfo
    lang: str
    quiet: bool  # now is inside quiet hours
    repeat_hours: float
    max_attempts: int


# --- hb sync, as a step of the round ---------------------------------------------------------


def sync_files(ctx: Context, only: list[str] | None = None) -> dict[str, Any]:
    """hb sync of the workspace files (of the ``only`` kinds), as one step of the round."""
    from heartbeat.ops.sync.engine import run

    return run(ctx, only=only)


def export_queue(ctx: Context) -> None:
    """Re-render the queue files (setting ``sync.auto_export``) after a poke."""
    from heartbeat.ops.sync.queue_files import export_queue_files

    export_queue_files(ctx)


# --- the operations --------------------------------------------------------------------------


def due(ctx: Context) -> list[dict[str, Any]]:
    """The tasks entering the round now (``hb due``)."""
    now = ctx.now()
    zone = ctx.zone
    max_attempts = ctx.settings.queue_max_attempts
    with ctx.read() as db:
        return [_entry_dict(zone, e) for e in _entering(db, now, max_attempts)]


def check(ctx: Context, *, dry_run: bool = False, lang: str | None = None) -> dict[str, Any]:
    """One round (``hb check``): see :meth:`heartbeat.Ledger.check`."""
    if not dry_run:  # (as notify and proactive: the runtime may have noted hygiene done there)
        _read_state_file(ctx)
    return _round(ctx, dry_run=dry_run, lang=lang)


def _round(ctx: Context, *, dry_run: bool = False, lang: str | None = None) -> dict[str, Any]:
    """The round itself, the state file read already (``hb heartbeat`` has just synced it)."""
    from heartbeat.rules.messages import render_brief

    now = ctx.now()
    policy = _policy(ctx, lang, now)
    watermark = _watermark(ctx, now)
    with ctx.read() if dry_run else ctx.write() as db:
        entries = _entering(db, now, policy.max_attempts, lock=not dry_run)
        reminders = _decide_reminders(ctx, db, policy, entries, now)
        hygiene = _hygiene_due(ctx, db, now)
        messages = [r.message for r in reminders if r.decision.sent and r.message]
        if hygiene["due"]:
            messages.append(HYGIENE_DUE[policy.lang])
        run_pk = None
        if not dry_run:
            run_pk = _record_round(db, policy, reminders, watermark, hygiene, now)
        return {
            "ok": not messages,
            "output": render_brief(None, messages),
            "dry_run": dry_run,
            "run": run_pk,
            "checked": len(reminders),
            "sent": sum(1 for r in reminders if r.decision.sent),
            "suppressed": sum(1 for r in reminders if not r.decision.sent),
            "decisions": [_reminder_dict(policy.zone, r) for r in reminders],
            "messages": messages,
            "hygiene_due": hygiene["due"],
            "hygiene_last_run_at": hygiene["last_run_at"],
            "todoWatch": {"lastScanAt": watermark[0], "nextScanAt": watermark[1]},
        }


def notify(
    ctx: Context,
    task_id: str,
    risk: str | None = None,
    *,
    scope: str | None = None,
    reason: str | None = None,
    suggestion: str | None = None,
    fallback: str | None = None,
    lang: str | None = None,
) -> dict[str, Any]:
    """Decide and record one reminder (``hb notify``): see :meth:`heartbeat.Ledger.notify`."""
    from heartbeat.db import tasks as tasks_mod
    from heartbeat.rules.round import Risk, assess_risk, entry_reasons, parse_risk

    chosen = _lang(ctx, lang)
    _read_state_file(ctx)
    now = ctx.now()
    policy = _policy(ctx, chosen, now)
    with ctx.write() as db:
        task = tasks_mod.find(db, task_id, scope, lock=True)
        assert task.pk is not None
        failed = _failed_recently(db, [task.pk])
        state = _task_state(task, policy.max_attempts, failed=task.pk in failed)
        reasons = [str(r) for r in entry_reasons(state, now)]
        wanted = parse_risk(risk) if risk else assess_risk(state, reasons, now)
        level = wanted if state.is_active else Risk.P2  # finished tasks are never reminded about
        last_sent = _last_sent(ctx, db, {task.pk}, now).get(task.pk)
        entry = _Entry(task, state, reasons, level)
        reminder = _decide(
            policy, entry, now, last_sent, reason=reason, suggestion=suggestion, fallback=fallback
        )
        db.add(_notification_row(policy.zone, reminder, now, None))
        out = _reminder_dict(policy.zone, reminder)
        del out["next_check_at"]
        out["at"] = _iso(policy.zone, now)
        return out


def proactive(
    ctx: Context,
    topic: str | None,
    suggestion: str | None,
    *,
    lang: str | None = None,
) -> dict[str, Any]:
    """Decide and record one proactive message (``hb proactive``): see :meth:`heartbeat.Ledger.proactive`."""
    from heartbeat.rules.quiet_hours import QuietHours, is_quiet
    from heartbeat.rules.throttle import decide_proactive

    chosen = _lang(ctx, lang)
    _read_state_file(ctx)
    settings = ctx.settings
    zone = ctx.zone
    now = ctx.now()
    day = _local_day(zone, now)
    quiet = is_quiet(QuietHours.parse(settings.quiet_hours), now.astimezone(zone))
    with ctx.write() as db:
        db.take_turns("proactive")  # two concurrent asks must not both use the day's one message
        start, end = _day_bounds(zone, now)
        sent_today, last_sent, last_talked = db.rows(
            SQL.proactive_state, {"day_start": db.time(start), "day_end": db.time(end)}
        )[0]
        sent_today = int(sent_today or 0)
        last_proactive, last_talk = read_time(last_sent), read_time(last_talked)
        decision = decide_proactive(
            enabled=settings.proactive_enabled,
            quiet=quiet,
            max_per_day=settings.proactive_max_per_day,
            sent_today=sent_today,
            min_hours_between=settings.proactive_min_hours_between,
            last_proactive_at=last_proactive,
            min_hours_since_conversation=settings.proactive_min_hours_since_conversation,
            last_conversation_at=last_talk,
            topic=topic,
            suggestion=suggestion,
            now=now,
        )
        message = _proactive_message(topic, suggestion, chosen)
        db.add(
            NotificationRow(
                at=now,
                local_day=day,
                kind="proactive",
                topic=(topic or None),
                decision=decision.decision.value,
                reason=decision.reason.value if decision.reason else None,
                suggestion=(suggestion or None),
                message=message,
            )
        )
        return {
            "decision": decision.decision.value,
            "reason": decision.reason.value if decision.reason else None,
            "topic": topic or None,
            "suggestion": suggestion or None,
            "message": message if decision.sent else None,
            "at": _iso(zone, now),
            "sent_today": sent_today + (1 if decision.sent else 0),
            "last_proactive_at": _iso(zone, last_proactive),
            "last_conversation_at": _iso(zone, last_talk),
        }


def seen(ctx: Context, at: datetime | str | None = None) -> dict[str, Any]:
    """Record that the user spoke (``hb seen``)."""
    moment = _when(ctx, at, "--at time")
    _record_run(ctx, "seen", moment)
    return {"kind": "seen", "at": _iso(ctx.zone, moment)}


def hygiene_done(ctx: Context, at: datetime | str | None = None) -> dict[str, Any]:
    """Record a memory hygiene pass (``hb hygiene done``)."""
    moment = _when(ctx, at, "--at time")
    _record_run(ctx, "hygiene", moment)
    every = timedelta(hours=ctx.settings.hygiene_every_hours)
    return {
        "kind": "hygiene",
        "at": _iso(ctx.zone, moment),
        "next_due_at": _iso(ctx.zone, moment + every),
        "enabled": ctx.settings.hygiene_enabled,
    }


def heartbeat(
    ctx: Context,
    *,
    lang: str | None = None,
    deliver: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """One tick (``hb heartbeat``): see :meth:`heartbeat.Ledger.heartbeat`."""
    from heartbeat.ops import recur
    from heartbeat.rules.checklist import is_effectively_empty, periodic_tasks
    from heartbeat.rules.messages import render_brief

    with guard_mod.held(ctx, "heartbeat") as held:
        checklist = _read_checklist(ctx)
        synced = sync_files(ctx)  # also re-reads settings: heartbeat-state.json may carry some
        materialized = None
        if ctx.settings.recur_materialize:  # (the sync just read the files)
            materialized = recur.materialize(ctx, export=False, read_files=False)
        round_ = _round(ctx, lang=lang)  # (the sync just read the state file)
        tasks = periodic_tasks(checklist)
        due_tasks = _periodic_due(ctx, held, tasks)
        brief = render_brief(checklist, round_["messages"], due_tasks=due_tasks, lang=_lang(ctx, lang))
        result: dict[str, Any] = {
            "ok": brief == "HEARTBEAT_OK",
            "brief": brief,
            "run": held.pk,
            "started_at": _iso(ctx.zone, held.started_at),
            "sync": synced,
            "materialized": materialized,
            "round": round_,
            "export": None,
        }
        if deliver is not None:
            # the round committed its messages as sent: they go out now, before the export
            # (seconds on a large workspace) gives a kill a moment to lose them in
            deliver(result)
        # and are printed whatever the export does
        result["export"] = _export_after_round(ctx, held.detail)
        held.detail.update(
            {
                "checklist": bool(due_tasks) if tasks else not is_effectively_empty(checklist),
                "checked": round_["checked"],
                "sent": round_["sent"],
                "suppressed": round_["suppressed"],
                "check_run": round_["run"],
            }
        )
    return result


# How many earlier heartbeat runs are looked at for the periodic tasks' last runs: every tick
# that finishes carries the whole map on (also one whose HEARTBEAT.md has no tasks block just
# then), so the last one is enough; the others cover ticks of an hb that did not carry it.
_PERIODIC_LOOKBACK = 20


def _periodic_due(
    ctx: Context, held: guard_mod.GuardRun, tasks: list[PeriodicTask]
) -> list[PeriodicTask] | None:
    """The periodic tasks of HEARTBEAT.md due now, as OpenClaw's runner decides (a task never run
    is due; then once its interval has passed since it last ran), and this tick noted as their
    last run; None when HEARTBEAT.md has no tasks block. Their last runs live in the heartbeat
    runs' detail (``periodic_last_run``: task name -> UTC time), each run carrying the whole map
    on: a tasks block taken out while the file is reworked forgets none of them."""
    now = held.started_at
    with ctx.read() as db:
        details = db.rows(
            "SELECT detail FROM runs WHERE kind = 'heartbeat' AND status = 'ok' AND pk < :pk "
            "ORDER BY pk DESC LIMIT :n",
            # (with no tasks block, only the last tick's map is carried on: it holds them all)
            {"pk": held.pk, "n": _PERIODIC_LOOKBACK if tasks else 1},
        )
    last_runs: dict[str, str] = {}
    for (raw,) in details:
        detail = db.read_json(raw)
        noted = detail.get("periodic_last_run") if isinstance(detail, dict) else None
        if isinstance(noted, dict):
            last_runs = {k: v for k, v in noted.items() if isinstance(k, str) and isinstance(v, str)}
            break
    if last_runs:
        held.detail["periodic_last_run"] = last_runs
    if not tasks:
        return None
    due = [task for task in tasks if task.due(_noted_time(last_runs.get(task.name)), now)]
    for task in due:
        last_runs[task.name] = now.astimezone(UTC).isoformat()
    held.detail["periodic_due"] = [task.name for task in due]
    held.detail["periodic_last_run"] = last_runs
    return due


def _noted_time(text: str | None) -> datetime | None:
    try:
        return None if text is None else datetime.fromisoformat(text)
    except ValueError:
        return None


def poke(ctx: Context, text: str, *, key: str | None = None) -> dict[str, Any]:
    """A task from ``text`` under the workspace guard (``hb poke``): see :meth:`heartbeat.Ledger.poke`."""
    from heartbeat.rules.checklist import trimmed

    body = trimmed(text)
    if not body:
        raise InvalidInput("poke text is empty: the text becomes the task")
    control = next(
        (i for i, ch in enumerate(body) if (ch < " " and ch not in "\t\n\r") or ch == "\x7f"), None
    )
    if control is not None:  # a NUL or an escape code is not an instruction for the agent
        raise InvalidInput(
            f"poke text holds a control character (U+{ord(body[control]):04X}) at {control + 1}"
        )
    if key is not None:  # refused before the guard, whose record a refusal would leave behind
        from heartbeat.db.tasks import check_key

        key = check_key(key)
    with guard_mod.held(ctx, "poke") as held:
        from heartbeat.ops import tasks as tasks_ops

        task = tasks_ops.add(ctx, body, source="poke", key=key)
        held.task_id = task["id"]
    if ctx.settings.sync_auto_export:
        export_queue(ctx)
    return task


# --- the round's parts --------------------------------------------------------------


def _read_state_file(ctx: Context) -> None:
    """Sync memory/heartbeat-state.json first when it changed since hb last read it.

    The runtime writes ``lastProactiveAt`` / ``lastConversationAt`` there when it speaks or hears
    the user itself; a decision taken without them could send what its limits forbid.
    """
    from heartbeat.ops.sync.engine import sync_edited

    sync_edited(ctx, ["state"])


def _record_run(ctx: Context, kind: str, moment: datetime) -> None:
    with ctx.write() as db:
        db.add(RunRow(kind=kind, status="ok", started_at=moment, finished_at=moment))


def _lang(ctx: Context, lang: str | None) -> str:
    chosen = lang or ctx.settings.lang
    if chosen not in ("en", "zh"):
        raise InvalidInput(f"lang {chosen!r}: expected en or zh")
    return chosen


def _policy(ctx: Context, lang: str | None, now: datetime) -> _Policy:
    """The round's settings; read before its transaction (reading them may end one)."""
    from heartbeat.rules.quiet_hours import QuietHours, is_quiet

    settings = ctx.settings
    zone = ctx.zone
    return _Policy(
        zone=zone,
        lang=_lang(ctx, lang),
        quiet=is_quiet(QuietHours.parse(settings.quiet_hours), now.astimezone(zone)),
        repeat_hours=settings.reminder_repeat_hours,
        max_attempts=settings.queue_max_attempts,
    )


def _entering(db: Db, now: datetime, max_attempts: int, *, lock: bool = False) -> list[_Entry]:
    """Active tasks that enter the round at ``now``, most urgent first."""
    from heartbeat.rules.round import assess_risk, entry_reasons

    query = SQL.entering_locked if lock else SQL.entering
    tasks: list[TaskRow] = []
    for names, batch in db.batches(query, {"now": db.time(now)}):
        tasks.extend(db.rows_of(TaskRow, names, batch))  # read only: not attached
    found = []
    for task in tasks:
        state = _task_state(task, max_attempts)
        reasons = [str(r) for r in entry_reasons(state, now)]
        if reasons:
            found.append((task, state, reasons))
    failed = _failed_recently(db, [task.pk for task, _, _ in found if task.pk is not None])
    entries = []
    for task, state, reasons in found:
        if task.pk in failed:
            state = replace(state, failed_recently=True)
        entries.append(_Entry(task, state, reasons, assess_risk(state, reasons, now)))
    # most urgent first; ties keep queue order
    entries.sort(key=lambda e: -e.risk.severity)
    return entries


def _task_state(task: TaskRow, max_attempts: int, *, failed: bool = False) -> TaskState:
    from heartbeat.rules.round import TaskState

    def span(seconds: int | None) -> timedelta | None:
        return timedelta(seconds=seconds) if seconds else None

    return TaskState(
        id=task.id,
        title=task.title,
        status=task.status.value,
        priority=task.priority,
        risk=task.risk,
        due_at=task.due_at,
        next_check_at=task.next_check_at,
        last_update_at=task.last_update_at or task.created_at,
        last_checked_at=task.last_checked_at,
        check_interval=span(task.check_interval),
        stale_after=span(task.stale_after),
        blocker=task.blocker,
        next_action=task.next_action,
        fallback_action=task.fallback_action,
        last_progress_note=task.last_progress_note,
        follow_up=bool(task.follow_up),
        attempts=task.attempts or 0,
        max_attempts=max_attempts,
        failed_recently=failed,
        not_before=task.not_before,
    )


def _failed_recently(db: Db, pks: list[int]) -> set[int]:
    """Tasks with an error recorded after their last successful outcome (one statement)."""
    if not pks:
        return set()
    return {pk for (pk,) in db.rows(SQL.failed_recently, {"pks": pks})}


def _decide_reminders(
    ctx: Context, db: Db, policy: _Policy, entries: list[_Entry], now: datetime
) -> list[_Reminder]:
    from heartbeat.rules.round import after_check

    last = _last_sent(ctx, db, {e.task.pk for e in entries if e.task.pk is not None}, now)
    out = []
    for entry in entries:
        assert entry.task.pk is not None
        reminder = _decide(policy, entry, now, last.get(entry.task.pk))
        update = after_check(entry.state, now)
        reminder.after = {"last_checked_at": update.last_checked_at, "next_check_at": update.next_check_at}
        out.append(reminder)
    return out


def _decide(
    policy: _Policy,
    entry: _Entry,
    now: datetime,
    last_sent: LastReminder | None,
    *,
    reason: str | None = None,
    suggestion: str | None = None,
    fallback: str | None = None,
) -> _Reminder:
    """The reminder decision for one task, with the message it would send."""
    from heartbeat.rules.messages import render_message
    from heartbeat.rules.throttle import decide_reminder

    state = entry.state
    action = suggestion if suggestion is not None and suggestion.strip() else state.next_action
    backup = fallback if fallback is not None and fallback.strip() else state.fallback_action
    decision = decide_reminder(
        state if action == state.next_action else replace(state, next_action=action),
        entry.risk,
        last_sent=last_sent,
        quiet=policy.quiet,
        repeat_hours=policy.repeat_hours,
        now=now,
    )
    message = None
    if action and action.strip():
        status = ", ".join(part for part in (state.status, state.last_progress_note, reason) if part)
        message = render_message(
            task_id=state.id,
            title=state.title,
            status=status,
            blocker=state.blocker,
            risk=entry.risk.value,
            suggestion=action,
            fallback=backup,
            lang=policy.lang,
        )
    return _Reminder(entry, decision, message, action or None, backup or None)


def _last_sent(ctx: Context, db: Db, pks: set[int], now: datetime) -> dict[int, LastReminder]:
    """The last reminder sent per task inside the repeat window (older ones cannot hold a reminder back)."""
    from heartbeat.rules.round import Risk, parse_risk
    from heartbeat.rules.throttle import LastReminder

    if not pks:
        return {}
    window = timedelta(hours=ctx.settings.reminder_repeat_hours)
    last: dict[int, LastReminder] = {}
    bounds = {"since": db.time(now - window), "until": db.time(now + window)}
    for pk, at, risk, blocker in db.rows(SQL.reminders_sent_since, bounds):
        if pk in pks:
            level = parse_risk(risk) if risk else Risk.P2
            moment = read_time(at)
            assert moment is not None
            last[pk] = LastReminder(at=moment, risk=level, blocker=blocker)
    return last


def _hygiene_due(ctx: Context, db: Db, now: datetime) -> dict[str, Any]:
    settings = ctx.settings
    last = read_time(db.value(SQL.last_hygiene))
    due = settings.hygiene_enabled and (
        last is None or now - last >= timedelta(hours=settings.hygiene_every_hours)
    )
    return {"due": bool(due), "last_run_at": _iso(ctx.zone, last)}


def _watermark(ctx: Context, now: datetime) -> tuple[str | None, str | None]:
    from heartbeat.clock import parse_duration
    from heartbeat.rules.round import scan_watermark

    mark = scan_watermark(now, parse_duration(ctx.settings.check_interval, what="check_interval"))
    return _iso(ctx.zone, mark.last_scan_at), _iso(ctx.zone, mark.next_scan_at)


def _record_round(
    db: Db,
    policy: _Policy,
    reminders: list[_Reminder],
    watermark: tuple[str | None, str | None],
    hygiene: dict[str, Any],
    now: datetime,
) -> int:
    """The round's runs row, one notifications row per decision (one executemany), the tasks' new
    check times (one executemany): three statements however many tasks entered."""
    run = db.add(
        RunRow(
            kind="check",
            status="ok",
            started_at=now,
            finished_at=now,
            detail={
                "lastScanAt": watermark[0],
                "nextScanAt": watermark[1],
                "checked": len(reminders),
                "sent": sum(1 for r in reminders if r.decision.sent),
                "hygieneDue": hygiene["due"],
            },
        )
    )
    at, day = db.time(now), _local_day(policy.zone, now)
    db.insert_many(
        "notifications",
        _REMINDER_COLUMNS,
        [
            (
                at,
                day,
                "reminder",
                r.entry.task.pk,
                r.entry.task.id,
                r.entry.risk.value,
                r.decision.decision.value,
                r.decision.reason.value if r.decision.reason else None,
                r.entry.task.blocker or None,
                r.suggestion,
                r.message,
                run.pk,
            )
            for r in reminders
        ],
    )
    db.executemany(
        SQL.checked,
        [
            {
                "pk": r.entry.task.pk,
                "last_checked_at": db.time(r.after["last_checked_at"]),
                "next_check_at": db.time(r.after["next_check_at"]),
            }
            for r in reminders
        ],
    )
    assert run.pk is not None
    return run.pk


# a round's notifications rows, as _notification_row makes them, in one executemany
_REMINDER_COLUMNS = (
    "at",
    "local_day",
    "kind",
    "task_pk",
    "task_id",
    "risk",
    "decision",
    "reason",
    "blocker",
    "suggestion",
    "message",
    "run_pk",
)


def _notification_row(
    zone: tzinfo, reminder: _Reminder, now: datetime, run_pk: int | None
) -> NotificationRow:
    task = reminder.entry.task
    decision = reminder.decision
    return NotificationRow(
        at=now,
        local_day=_local_day(zone, now),
        kind="reminder",
        task_pk=task.pk,
        task_id=task.id,
        risk=reminder.entry.risk.value,
        decision=decision.decision.value,
        reason=decision.reason.value if decision.reason else None,
        blocker=(task.blocker or None),
        suggestion=reminder.suggestion,
        message=reminder.message,
        run_pk=run_pk,
    )


def _entry_dict(zone: tzinfo, entry: _Entry) -> dict[str, Any]:
    task = entry.task
    return {
        "id": task.id,
        "title": task.title,
        "scope": task.scope or None,
        "status": task.status.value,
        "risk": entry.risk.value,
        "reasons": entry.reasons,
        "due_at": _iso(zone, task.due_at),
        "next_check_at": _iso(zone, task.next_check_at),
        "last_checked_at": _iso(zone, task.last_checked_at),
        "blocker": task.blocker,
        "next_action": task.next_action,
    }


def _reminder_dict(zone: tzinfo, reminder: _Reminder) -> dict[str, Any]:
    entry = reminder.entry
    return {
        "id": entry.task.id,
        "title": entry.task.title,
        "scope": entry.task.scope or None,
        "risk": entry.risk.value,
        "reasons": entry.reasons,
        "decision": reminder.decision.decision.value,
        "reason": reminder.decision.reason.value if reminder.decision.reason else None,
        "message": reminder.message if reminder.decision.sent else None,  # never send a held one
        "blocker": entry.task.blocker or None,
        "suggestion": reminder.suggestion,
        "fallback": reminder.fallback,
        "next_check_at": _iso(zone, reminder.after.get("next_check_at")),
    }


def _proactive_message(topic: str | None, suggestion: str | None, lang: str) -> str | None:
    """Two lines, the open loop and the suggestion (OpenClaw's format for open loops)."""
    if not (topic or "").strip() or not (suggestion or "").strip():
        return None
    item, advice, colon = _PROACTIVE_LABELS[lang]
    fold = " ".join
    return f"{item}{colon}{fold((topic or '').split())}\n{advice}{colon}{fold((suggestion or '').split())}"


def _export_after_round(ctx: Context, detail: dict[str, Any]) -> dict[str, Any] | None:
    """The sync that writes the round's changes back; a failure is a notice, not the tick's end
    (the messages the round recorded as sent must still reach the brief)."""
    try:
        return sync_files(ctx)
    except (HbError, OSError) as exc:
        message = one_line(exc)
    ctx.notices.append(f"the files were not written back ({message}); the next sync retries")
    detail["export_error"] = message
    return None


def _read_checklist(ctx: Context) -> str | None:
    """HEARTBEAT.md's text, or None when the workspace has none."""
    from heartbeat.errors import NotFound
    from heartbeat.ops.sync.files import read_text

    path = ctx.workspace / CHECKLIST
    unread: list[str] = []
    try:
        text = read_text(path, stream=True, unread=unread)  # hb only reads it: a pipe will do
    except NotFound:
        if path.is_dir():  # no checklist either, but not one to leave unsaid
            ctx.notices.append(f"{path}: a directory, not a file: no checklist read")
        return None
    for problem in unread:  # read on, as OpenClaw (U+FFFD) and mistermorph (the bytes) read it
        ctx.notices.append(f"{problem}: read as U+FFFD, as OpenClaw reads it")
    return text.removeprefix("\ufeff")  # a byte order mark is not part of the checklist


def _local_day(zone: tzinfo, moment: datetime) -> str:
    return moment.astimezone(zone).date().isoformat()


def _day_bounds(zone: tzinfo, moment: datetime) -> tuple[datetime, datetime]:
    """The first instant of ``moment``'s local day in ``zone`` and of the day after (UTC). A
    midnight that does not exist (clocks sprang forward at it) is the instant of the change."""
    day = moment.astimezone(zone).date()
    start, end = (datetime(d.year, d.month, d.day, tzinfo=zone) for d in (day, day + timedelta(days=1)))
    return start.astimezone(UTC), end.astimezone(UTC)


def _when(ctx: Context, at: datetime | str | None, what: str) -> datetime:
    """When a last event happened: now, or ``at``, which may not be later than now (a time to
    come would hold proactive chat or hygiene back until then, and no later time undoes it)."""
    from heartbeat.clock import isoformat, parse_when, to_utc
    from heartbeat.ops.sync.state_files import FUTURE_SLACK

    now = ctx.now()
    if at is None:
        return now
    if isinstance(at, str):
        moment = parse_when(at, ctx.zone, what=what)
    elif at.tzinfo is None:
        moment = parse_when(at.isoformat(), ctx.zone, what=what)
    else:
        moment = to_utc(at)
    if moment > now + FUTURE_SLACK:
        raise InvalidInput(
            f"{what} {isoformat(moment, ctx.zone)} is later than now ({isoformat(now, ctx.zone)}): "
            "it records something that happened"
        )
    return moment


def _iso(zone: tzinfo, moment: datetime | None) -> str | None:
    from heartbeat.clock import isoformat

    return isoformat(moment, zone)
