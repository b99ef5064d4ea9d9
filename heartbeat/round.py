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

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from heartbeat.db.models import Task
    from heartbeat.guard import GuardRun
    from heartbeat.ledger import Ledger
    from heartbeat.rules.round import Risk, TaskState
    from heartbeat.rules.throttle import Decision, LastReminder

CHECKLIST = "HEARTBEAT.md"
HYGIENE_DUE = {"en": "memory hygiene due", "zh": "记忆整理到期"}
_PROACTIVE_LABELS = {"en": ("Open loop", "Suggestion", ": "), "zh": ("事项", "建议", "：")}


@dataclass
class _Entry:
    """A task entering the round, with why and how risky."""

    task: Task
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


class RoundAPI:
    """Mixed into :class:`heartbeat.Ledger`; each method is one transaction."""

    # --- the round -----------------------------------------------------------------

    def due(self) -> list[dict[str, Any]]:
        """The tasks entering this round (``hb due --json``): id, title, risk, reasons, ..."""
        ledger = _ledger(self)
        now = ledger.now()
        with ledger.read() as s:
            return [_entry_dict(ledger, e) for e in _entering(ledger, s, now)]

    def check(self, *, dry_run: bool = False, lang: str | None = None) -> dict[str, Any]:
        """Run one round: decide a reminder per entering task, move the check times and the watermark.

        Returns the decisions, the messages to send (``output`` is exactly
        ``HEARTBEAT_OK`` when there are none) and the new scan watermark. With
        ``dry_run`` the same answer comes back and nothing is recorded.
        """
        from heartbeat.rules.messages import render_brief

        ledger = _ledger(self)
        lang = _lang(ledger, lang)
        now = ledger.now()
        session_cm = ledger.read() if dry_run else ledger.write()
        with session_cm as s:
            entries = _entering(ledger, s, now, lock=not dry_run)
            reminders = _decide_reminders(ledger, s, entries, now, lang)
            hygiene = _hygiene_due(ledger, s, now)
            watermark = _watermark(ledger, now)
            messages = [r.message for r in reminders if r.decision.sent and r.message]
            if hygiene["due"]:
                messages.append(HYGIENE_DUE[lang])
            run_pk = None
            if not dry_run:
                run_pk = _record_round(ledger, s, reminders, watermark, hygiene, now)
            return {
                "ok": not messages,
                "output": render_brief(None, messages),
                "dry_run": dry_run,
                "run": run_pk,
                "checked": len(reminders),
                "sent": sum(1 for r in reminders if r.decision.sent),
                "suppressed": sum(1 for r in reminders if not r.decision.sent),
                "decisions": [_reminder_dict(ledger, r) for r in reminders],
                "messages": messages,
                "hygiene_due": hygiene["due"],
                "hygiene_last_run_at": hygiene["last_run_at"],
                "todoWatch": {"lastScanAt": watermark[0], "nextScanAt": watermark[1]},
            }

    def notify(
        self,
        task_id: str,
        risk: str | None = None,
        *,
        scope: str | None = None,
        reason: str | None = None,
        suggestion: str | None = None,
        fallback: str | None = None,
        lang: str | None = None,
    ) -> dict[str, Any]:
        """Ask the reminder throttle whether a reminder about ``task_id`` may go out now; record it.

        ``risk`` defaults to the task's assessed risk; ``reason`` (why the
        reminder) joins the message's status line; ``suggestion``/``fallback``
        default to the task's next and fallback actions. The answer has
        ``decision`` (sent|suppressed) and ``reason`` (None when sent).
        """
        from heartbeat.rules.round import Risk, assess_risk, entry_reasons, parse_risk

        ledger = _ledger(self)
        lang = _lang(ledger, lang)
        _read_state_file(ledger)
        now = ledger.now()
        with ledger.write() as s:
            task = _find(s, task_id, scope)
            state = _task_state(ledger, task, failed=_failed_recently(s, [task.pk]))
            reasons = [str(r) for r in entry_reasons(state, now)]
            wanted = parse_risk(risk) if risk else assess_risk(state, reasons, now)
            level = wanted if state.is_active else Risk.P2  # finished tasks are never reminded about
            last_sent = _last_sent(ledger, s, [task.pk], now).get(task.pk)
            entry = _Entry(task, state, reasons, level)
            reminder = _decide(
                ledger, entry, now, lang, last_sent, reason=reason, suggestion=suggestion, fallback=fallback
            )
            s.add(_notification_row(ledger, reminder, now, None))
            out = _reminder_dict(ledger, reminder)
            del out["next_check_at"]
            out["at"] = _iso(ledger, now)
            return out

    def proactive(
        self,
        topic: str | None,
        suggestion: str | None,
        *,
        lang: str | None = None,
    ) -> dict[str, Any]:
        """Ask the proactive-chat limits whether a message on ``topic`` may go out now; record it."""
        from sqlalchemy import func, select

        from heartbeat.db.models import Notification, Run
        from heartbeat.rules.quiet_hours import is_quiet
        from heartbeat.rules.throttle import decide_proactive

        ledger = _ledger(self)
        lang = _lang(ledger, lang)
        _read_state_file(ledger)
        settings = ledger.settings
        now = ledger.now()
        day = _local_day(ledger, now)
        with ledger.write() as s:
            _serialise(s, "proactive")  # two concurrent asks must not both use the day's one message
            sent = (Notification.kind == "proactive", Notification.decision == "sent")
            sent_today = s.scalar(
                select(func.count()).select_from(Notification).where(*sent, Notification.local_day == day)
            )
            last_proactive = s.scalar(select(func.max(Notification.at)).where(*sent))
            last_talk = s.scalar(select(func.max(Run.started_at)).where(Run.kind == "seen"))
            decision = decide_proactive(
                enabled=settings.proactive_enabled,
                quiet=is_quiet(_quiet_hours(ledger), now.astimezone(ledger.zone)),
                max_per_day=settings.proactive_max_per_day,
                sent_today=int(sent_today or 0),
                min_hours_between=settings.proactive_min_hours_between,
                last_proactive_at=last_proactive,
                min_hours_since_conversation=settings.proactive_min_hours_since_conversation,
                last_conversation_at=last_talk,
                topic=topic,
                suggestion=suggestion,
                now=now,
            )
            message = _proactive_message(topic, suggestion, lang)
            s.add(
                Notification(
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
                "at": _iso(ledger, now),
                "sent_today": int(sent_today or 0) + (1 if decision.sent else 0),
                "last_proactive_at": _iso(ledger, last_proactive),
                "last_conversation_at": _iso(ledger, last_talk),
            }

    def seen(self, at: datetime | str | None = None) -> dict[str, Any]:
        """Record that the user just talked to the agent (the proactive limits and ``user_available``)."""
        ledger = _ledger(self)
        moment = _when(ledger, at, "--at time")
        _record_run(ledger, "seen", moment)
        return {"kind": "seen", "at": _iso(ledger, moment)}

    def hygiene_done(self, at: datetime | str | None = None) -> dict[str, Any]:
        """Record a memory hygiene pass; the next one is due ``hygiene.every_hours`` later."""
        ledger = _ledger(self)
        moment = _when(ledger, at, "--at time")
        _record_run(ledger, "hygiene", moment)
        every = timedelta(hours=ledger.settings.hygiene_every_hours)
        return {
            "kind": "hygiene",
            "at": _iso(ledger, moment),
            "next_due_at": _iso(ledger, moment + every),
            "enabled": ledger.settings.hygiene_enabled,
        }

    # --- the guard, hb heartbeat and hb poke -----------------------------------------

    @contextmanager
    def guard(self, kind: str = "heartbeat") -> Iterator[GuardRun]:
        """Hold the workspace's re-entrancy guard for the block (Busy, exit 75, if held).

        The guard is a ``runs`` row of ``kind``; on leaving the block it is
        released with status ``ok`` or ``error``. While the block runs the guard
        renews itself; one left by a dead process is taken over once its
        ``expires_at`` (setting ``heartbeat.guard``) has passed.
        """
        from heartbeat import guard as guard_mod

        ledger = _ledger(self)
        held = guard_mod.acquire(ledger, kind)
        try:
            with guard_mod.renewed(ledger, held):  # a long tick is not taken for an abandoned one
                yield held
        except BaseException as exc:
            held.detail.setdefault("error", str(exc) or type(exc).__name__)
            guard_mod.release(ledger, held, "error")
            raise
        guard_mod.release(ledger, held, "ok")

    def guard_holder(self) -> dict[str, Any] | None:
        """Who holds the workspace guard (kind, pid, since, until, expired), or None."""
        from heartbeat import guard as guard_mod

        ledger = _ledger(self)
        return guard_mod.holder(ledger)

    def heartbeat(self, *, lang: str | None = None) -> dict[str, Any]:
        """One tick (SPEC.md section 7): guard, sync, materialise, round, export, record, brief.

        ``brief`` is what to print: the HEARTBEAT.md checklist (unless
        effectively empty) and the messages to send, or exactly ``HEARTBEAT_OK``.
        """
        from heartbeat.rules.checklist import is_effectively_empty
        from heartbeat.rules.messages import render_brief

        ledger = _ledger(self)
        with ledger.guard("heartbeat") as held:
            checklist = _read_checklist(ledger)
            synced = ledger.sync()  # also re-reads settings: heartbeat-state.json may carry some
            materialized = ledger.recur_materialize() if ledger.settings.recur_materialize else None
            round_ = ledger.check(lang=lang)
            brief = render_brief(checklist, round_["messages"])
            # the round committed its messages as sent: they are printed whatever the export does
            exported = _export_after_round(ledger, held.detail)
            held.detail.update(
                {
                    "checklist": not is_effectively_empty(checklist),
                    "checked": round_["checked"],
                    "sent": round_["sent"],
                    "suppressed": round_["suppressed"],
                    "check_run": round_["run"],
                }
            )
        return {
            "ok": brief == "HEARTBEAT_OK",
            "brief": brief,
            "run": held.pk,
            "started_at": _iso(ledger, held.started_at),
            "sync": synced,
            "materialized": materialized,
            "round": round_,
            "export": exported,
        }

    def poke(self, text: str, *, key: str | None = None) -> dict[str, Any]:
        """A one-off task from ``text`` (source ``poke``, legacy queue), under the workspace guard.

        ``key`` makes it idempotent, as ``hb add --key``: a task added with that key already is
        returned (and :attr:`notices` says so). Raises InvalidInput for blank text and Busy
        (exit 75) while a heartbeat runs.
        """
        from heartbeat.errors import InvalidInput

        ledger = _ledger(self)
        body = text.strip()
        if not body:
            raise InvalidInput("poke text is empty: the text becomes the task")
        control = next(
            (i for i, ch in enumerate(body) if (ch < " " and ch not in "\t\n\r") or ch == "\x7f"), None
        )
        if control is not None:  # a NUL or an escape code is not an instruction for the agent
            raise InvalidInput(
                f"poke text holds a control character (U+{ord(body[control]):04X}) at {control + 1}"
            )
        with ledger.guard("poke") as held:
            task = ledger.add(body, source="poke", key=key)
            held.task_id = task["id"]
        if ledger.settings.sync_auto_export:
            from heartbeat.sync.queue_files import export_queue_files

            export_queue_files(ledger)
        return task


# --- the round's parts --------------------------------------------------------------


def _ledger(api: RoundAPI) -> Ledger:
    """The ledger this mixin is part of (typed: the mixin cannot name its subclass)."""
    return cast("Ledger", api)


def _read_state_file(ledger: Ledger) -> None:
    """Sync memory/heartbeat-state.json first when it changed since hb last read it.

    The runtime writes ``lastProactiveAt`` / ``lastConversationAt`` there when it speaks or hears
    the user itself; a decision taken without them could send what its limits forbid.
    """
    from heartbeat.db.models import SyncState
    from heartbeat.sync.files import default_path, digest, read_text

    path = default_path(ledger.workspace, "state")
    if not path.is_file():
        return
    with ledger.read() as s:
        last = s.get(SyncState, "state")
        known = last is not None and last.path == str(path) and last.content_hash == digest(read_text(path))
    if not known:
        ledger.sync(only=["state"])


def _find(s: Session, task_id: str, scope: str | None) -> Task:
    """The task with this public id, locked for the transaction (see heartbeat.tasks.find)."""
    from heartbeat import tasks as tasks_mod
    from heartbeat.db.models import Task
    from heartbeat.db.rows import TaskRow
    from heartbeat.db.store import of_session

    row: TaskRow = tasks_mod.find(of_session(s), task_id, scope)
    task = s.get(Task, row.pk, with_for_update=s.get_bind().dialect.name == "postgresql")
    assert task is not None
    return task


def _serialise(s: Session, name: str) -> None:
    """Make concurrent transactions of ``name`` take turns (SQLite: BEGIN IMMEDIATE already does)."""
    import zlib

    from sqlalchemy import text

    bind = s.get_bind()
    if bind.dialect.name == "postgresql":
        key = zlib.crc32(f"hb:{name}".encode())
        s.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def _record_run(ledger: Ledger, kind: str, moment: datetime) -> None:
    from heartbeat.db.models import Run

    with ledger.write() as s:
        s.add(Run(kind=kind, status="ok", started_at=moment, finished_at=moment))


def _lang(ledger: Ledger, lang: str | None) -> str:
    from heartbeat.errors import InvalidInput

    chosen = lang or ledger.settings.lang
    if chosen not in ("en", "zh"):
        raise InvalidInput(f"lang {chosen!r}: expected en or zh")
    return chosen


def _entering(ledger: Ledger, s: Session, now: datetime, *, lock: bool = False) -> list[_Entry]:
    """Active tasks that enter the round at ``now``, most urgent first."""
    from dataclasses import replace

    from sqlalchemy import or_, select

    from heartbeat.db.models import ACTIVE_STATUSES, Task
    from heartbeat.rules.round import assess_risk, entry_reasons

    query = (
        select(Task)
        .where(
            Task.status.in_(ACTIVE_STATUSES),
            or_(Task.next_check_at <= now, Task.due_at < now, Task.stale_after.is_not(None)),
        )
        .order_by(Task.scope, Task.priority_rank, Task.position, Task.pk)
    )
    if lock:
        query = query.with_for_update()
    found = []
    for task in s.scalars(query):
        state = _task_state(ledger, task)
        reasons = [str(r) for r in entry_reasons(state, now)]
        if reasons:
            found.append((task, state, reasons))
    failed = _failed_recently(s, [task.pk for task, _, _ in found])
    entries = []
    for task, state, reasons in found:
        if task.pk in failed:
            state = replace(state, failed_recently=True)
        entries.append(_Entry(task, state, reasons, assess_risk(state, reasons, now)))
    # most urgent first; ties keep queue order
    entries.sort(key=lambda e: -e.risk.severity)
    return entries


def _task_state(ledger: Ledger, task: Task, failed: set[int] | None = None) -> TaskState:
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
        max_attempts=ledger.settings.queue_max_attempts,
        failed_recently=failed is not None and task.pk in failed,
        not_before=task.not_before,
    )


def _failed_recently(s: Session, pks: list[int]) -> set[int]:
    """Tasks with an error recorded after their last successful outcome."""
    from sqlalchemy import func, select

    from heartbeat.db.models import Error, Outcome

    if not pks:
        return set()
    errors = {
        pk: at
        for pk, at in s.execute(
            select(Error.task_pk, func.max(Error.at)).where(Error.task_pk.in_(pks)).group_by(Error.task_pk)
        )
    }
    if not errors:
        return set()
    successes = {
        pk: at
        for pk, at in s.execute(
            select(Outcome.task_pk, func.max(Outcome.completed_at))
            .where(Outcome.task_pk.in_(list(errors)), Outcome.success.is_(True))
            .group_by(Outcome.task_pk)
        )
    }
    return {
        pk
        for pk, at in errors.items()
        if pk is not None and (successes.get(pk) is None or _utc(at) > _utc(successes[pk]))
    }


def _utc(value: Any) -> datetime:
    from heartbeat.clock import to_utc

    if isinstance(value, str):  # an aggregate SQLite returned as text
        return to_utc(datetime.fromisoformat(value))
    result: datetime = to_utc(value)
    return result


def _quiet_hours(ledger: Ledger) -> Any:
    from heartbeat.rules.quiet_hours import QuietHours

    return QuietHours.parse(ledger.settings.quiet_hours)


def _decide_reminders(
    ledger: Ledger, s: Session, entries: list[_Entry], now: datetime, lang: str
) -> list[_Reminder]:
    from heartbeat.rules.round import after_check

    last = _last_sent(ledger, s, [e.task.pk for e in entries], now)
    out = []
    for entry in entries:
        reminder = _decide(ledger, entry, now, lang, last.get(entry.task.pk))
        update = after_check(entry.state, now)
        reminder.after = {"last_checked_at": update.last_checked_at, "next_check_at": update.next_check_at}
        out.append(reminder)
    return out


def _decide(
    ledger: Ledger,
    entry: _Entry,
    now: datetime,
    lang: str,
    last_sent: LastReminder | None,
    *,
    reason: str | None = None,
    suggestion: str | None = None,
    fallback: str | None = None,
) -> _Reminder:
    """The reminder decision for one task, with the message it would send."""
    from dataclasses import replace

    from heartbeat.rules.messages import render_message
    from heartbeat.rules.quiet_hours import is_quiet
    from heartbeat.rules.throttle import decide_reminder

    state = entry.state
    action = suggestion if suggestion is not None and suggestion.strip() else state.next_action
    backup = fallback if fallback is not None and fallback.strip() else state.fallback_action
    decision = decide_reminder(
        replace(state, next_action=action),
        entry.risk,
        last_sent=last_sent,
        quiet=is_quiet(_quiet_hours(ledger), now.astimezone(ledger.zone)),
        repeat_hours=ledger.settings.reminder_repeat_hours,
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
            lang=lang,
        )
    return _Reminder(entry, decision, message, action or None, backup or None)


def _last_sent(ledger: Ledger, s: Session, pks: list[int], now: datetime) -> dict[int, LastReminder]:
    """The last reminder sent per task inside the repeat window (older ones cannot hold a reminder back)."""
    from sqlalchemy import select

    from heartbeat.db.models import Notification
    from heartbeat.rules.round import Risk, parse_risk
    from heartbeat.rules.throttle import LastReminder

    if not pks:
        return {}
    since = now - timedelta(hours=ledger.settings.reminder_repeat_hours)
    wanted = set(pks)
    rows = s.execute(
        select(Notification.task_pk, Notification.at, Notification.risk, Notification.blocker)
        .where(
            Notification.kind == "reminder",
            Notification.decision == "sent",
            Notification.at > since,
        )
        .order_by(Notification.at, Notification.pk)
    )
    last: dict[int, LastReminder] = {}
    for pk, at, risk, blocker in rows:
        if pk in wanted:
            level = parse_risk(risk) if risk else Risk.P2
            last[pk] = LastReminder(at=at, risk=level, blocker=blocker)
    return last


def _hygiene_due(ledger: Ledger, s: Session, now: datetime) -> dict[str, Any]:
    from sqlalchemy import func, select

    from heartbeat.db.models import Run

    settings = ledger.settings
    last = s.scalar(select(func.max(Run.started_at)).where(Run.kind == "hygiene"))
    due = settings.hygiene_enabled and (
        last is None or now - _utc(last) >= timedelta(hours=settings.hygiene_every_hours)
    )
    return {"due": bool(due), "last_run_at": _iso(ledger, last)}


def _watermark(ledger: Ledger, now: datetime) -> tuple[str | None, str | None]:
    from heartbeat.clock import parse_duration
    from heartbeat.rules.round import scan_watermark

    mark = scan_watermark(now, parse_duration(ledger.settings.check_interval, what="check_interval"))
    return _iso(ledger, mark.last_scan_at), _iso(ledger, mark.next_scan_at)


def _record_round(
    ledger: Ledger,
    s: Session,
    reminders: list[_Reminder],
    watermark: tuple[str | None, str | None],
    hygiene: dict[str, Any],
    now: datetime,
) -> int:
    """The round's runs row, one notifications row per decision, the tasks' new check times."""
    from heartbeat.db.models import Run

    run = Run(
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
    s.add(run)
    s.flush()
    for reminder in reminders:
        s.add(_notification_row(ledger, reminder, now, run.pk))
        task = reminder.entry.task
        task.last_checked_at = reminder.after["last_checked_at"]
        task.next_check_at = reminder.after["next_check_at"]
    return run.pk


def _notification_row(ledger: Ledger, reminder: _Reminder, now: datetime, run_pk: int | None) -> Any:
    from heartbeat.db.models import Notification

    task = reminder.entry.task
    decision = reminder.decision
    return Notification(
        at=now,
        local_day=_local_day(ledger, now),
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


def _entry_dict(ledger: Ledger, entry: _Entry) -> dict[str, Any]:
    task = entry.task
    return {
        "id": task.id,
        "title": task.title,
        "scope": task.scope or None,
        "status": task.status.value,
        "risk": entry.risk.value,
        "reasons": entry.reasons,
        "due_at": _iso(ledger, task.due_at),
        "next_check_at": _iso(ledger, task.next_check_at),
        "last_checked_at": _iso(ledger, task.last_checked_at),
        "blocker": task.blocker,
        "next_action": task.next_action,
    }


def _reminder_dict(ledger: Ledger, reminder: _Reminder) -> dict[str, Any]:
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
        "next_check_at": _iso(ledger, reminder.after.get("next_check_at")),
    }


def _proactive_message(topic: str | None, suggestion: str | None, lang: str) -> str | None:
    """Two lines, the open loop and the suggestion (OpenClaw's format for open loops)."""
    if not (topic or "").strip() or not (suggestion or "").strip():
        return None
    item, advice, colon = _PROACTIVE_LABELS[lang]
    fold = " ".join
    return f"{item}{colon}{fold((topic or '').split())}\n{advice}{colon}{fold((suggestion or '').split())}"


def _export_after_round(ledger: Ledger, detail: dict[str, Any]) -> dict[str, Any] | None:
    """The sync that writes the round's changes back; a failure is a notice, not the tick's end
    (the messages the round recorded as sent must still reach the brief)."""
    from heartbeat.errors import HbError, one_line

    try:
        exported: dict[str, Any] = ledger.sync()
        return exported
    except (HbError, OSError) as exc:
        message = one_line(exc)
    ledger.notices.append(f"the files were not written back ({message}); the next sync retries")
    detail["export_error"] = message
    return None


def _read_checklist(ledger: Ledger) -> str | None:
    """HEARTBEAT.md's text, or None when the workspace has none."""
    from heartbeat.errors import NotFound
    from heartbeat.sync.files import read_text

    try:
        text = read_text(ledger.workspace / CHECKLIST, stream=True)  # hb only reads it: a pipe will do
    except NotFound:
        return None
    return text.removeprefix("\ufeff")  # a byte order mark is not part of the checklist


def _local_day(ledger: Ledger, moment: datetime) -> str:
    return moment.astimezone(ledger.zone).date().isoformat()


def _when(ledger: Ledger, at: datetime | str | None, what: str) -> datetime:
    from heartbeat.clock import parse_when, to_utc

    if at is None:
        return ledger.now()
    if isinstance(at, str):
        return parse_when(at, ledger.zone, what=what)
    if at.tzinfo is None:
        return parse_when(at.isoformat(), ledger.zone, what=what)
    return to_utc(at)


def _iso(ledger: Ledger, moment: Any) -> str | None:
    from heartbeat.clock import isoformat

    if moment is None:
        return None
    return isoformat(_utc(moment), ledger.zone)
