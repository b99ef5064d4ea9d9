"""hb recur: recurrences and proactive tasks (SPEC.md section 6)."""

from __future__ import annotations

from typing import Any

import click

from heartbeat.cli.base import emit, info, json_option, state, table, warn

MISSED_HELP = "Missed-run policy: skip, once (default: one run for all missed periods) or all."


def _schedule(r: dict[str, Any]) -> str:
    if r["kind"] == "proactive":
        when = " ".join(v for v in (r["day"], r["time"]) if v)
        return f"{r['rule']} {when}".strip()
    return f"{r['rule']}, next {r['next']}" + (f" ({r['tz']})" if r["tz"] else "")


def _rules_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "No recurrences."
    return table(
        [
            (r["id"], r["source"], _schedule(r), "yes" if r["enabled"] else "no", r["run_count"], r["title"])
            for r in rows
        ],
        ["id", "source", "schedule", "enabled", "runs", "title"],
    )


def _due_lines(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "Nothing due."
    lines = []
    for r in rows:
        line = f"{r['id']}  [{_schedule(r)}]  {r['title']}"
        if r["runs"] > 1:
            line += f"  (x{r['runs']})"
        elif r["missed"]:
            line += f"  ({r['missed']} missed period(s) folded into one run)"
        if r["conditions_to_check"]:
            line += "  check: " + ", ".join(r["conditions_to_check"])
        lines.append(line)
    return "\n".join(lines)


def _warn_cron(rule: dict[str, Any]) -> None:
    if rule["rule"].startswith("cron ") and state().ledger().settings.todo_dialect != "extended":
        info(
            f"{rule['id']}: cron rules stay in the ledger; TODO.RECUR.md shows them only with "
            "`hb config set todo.dialect extended`"
        )


@click.group()
def recur() -> None:
    """Recurrences: TODO.RECUR.md rules, PROACTIVE.md tasks, and rules added here.

    \b
    Example:
      hb recur add "Check the report queue" --repeat "every 6 hours" --next "2026-05-02 09:00"
      hb recur due --claim --json
      hb recur outcome morning_briefing --result "sent the briefing" --success
    """


@recur.command("list")
@click.option("--source", type=click.Choice(["recur", "cli", "proactive"]), help="Only rules from here.")
@json_option
def list_(source: str | None) -> None:
    """List every recurrence, enabled or not.

    \b
    Example:
      hb recur list
      hb recur list --source proactive --json
    """
    emit(state().ledger().recur_list(source=source), _rules_table)


@recur.command()
@click.option("--claim", is_flag=True, help="Mark each as handed out for its period (no second hand-out).")
@json_option
def due(claim: bool) -> None:
    """What recurs now: enabled rules due after their time, day and conditions.

    Repeat rules are due when Next <= now; PROACTIVE.md tasks once per period
    (inside [time, time + heartbeat interval], both ends included, when they have a time).
    Conditions hb cannot judge are listed under conditions_to_check.

    \b
    Example:
      hb recur due --json
      hb --now 2026-05-04T08:05 recur due --claim
    """
    emit(state().ledger().recur_due(claim=claim), _due_lines)


@recur.command()
@click.argument("title", nargs=-1, required=True)
@click.option(
    "--repeat", "rule", required=True, metavar="RULE", help="daily, weekly, every N days/hours, or cron EXPR."
)
@click.option(
    "--next", "next_", metavar="WHEN", help="First occurrence, YYYY-MM-DD HH:MM in the zone (default: now)."
)
@click.option("--tz", metavar="ZONE", help="IANA zone of Next (default: the workspace timezone).")
@click.option("--chat-id", metavar="REF", help="Where the entry belongs, e.g. tg:-100123.")
@click.option("--missed", default="once", show_default=True, metavar="POLICY", help=MISSED_HELP)
@json_option
def add(
    title: tuple[str, ...], rule: str, next_: str | None, tz: str | None, chat_id: str | None, missed: str
) -> None:
    """Add a repeat rule; prints its id.

    \b
    Example:
      hb recur add "Play tennis" --repeat weekly --next "2026-05-07 15:00" --tz Asia/Tokyo
      hb recur add "Stand-up notes" --repeat "cron 0 9 * * 1-5" --json
    """
    created = (
        state()
        .ledger()
        .recur_add(" ".join(title), repeat=rule, next=next_, tz=tz, chat_id=chat_id, missed=missed)
    )
    _warn_cron(created)
    emit(created, lambda r: r["id"])


@recur.command()
@click.argument("rule_id", metavar="ID")
@click.option("--title", metavar="TEXT", help="New content.")
@click.option("--repeat", "rule", metavar="RULE", help="New rule (reschedules).")
@click.option("--next", "next_", metavar="WHEN", help="New Next, YYYY-MM-DD HH:MM (reschedules).")
@click.option("--tz", metavar="ZONE", help="New zone; 'none' = the workspace timezone.")
@click.option("--chat-id", metavar="REF", help="New chat id; 'none' clears.")
@click.option("--missed", metavar="POLICY", help=MISSED_HELP)
@click.option("--enable/--disable", "enabled", default=None, help="Turn the rule on or off.")
@json_option
def update(
    rule_id: str,
    title: str | None,
    rule: str | None,
    next_: str | None,
    tz: str | None,
    chat_id: str | None,
    missed: str | None,
    enabled: bool | None,
) -> None:
    """Change a rule. PROACTIVE.md tasks: only --enable/--disable (edit the file for the rest).

    \b
    Example:
      hb recur update recur-1a2b3c4d --next "2026-05-08 15:00" --missed skip
      hb recur update morning_briefing --disable
    """
    if all(value is None for value in (title, rule, next_, tz, chat_id, missed, enabled)):
        raise click.UsageError("nothing to update: pass at least one option (see hb recur update --help)")
    changed = (
        state()
        .ledger()
        .recur_update(
            rule_id,
            title=title,
            repeat=rule,
            next=next_,
            tz=tz,
            chat_id=chat_id,
            missed=missed,
            enabled=enabled,
        )
    )
    if rule is not None:
        _warn_cron(changed)
    emit(changed, lambda r: f"{r['id']}: {_schedule(r)}")


@recur.command()
@click.argument("rule_id", metavar="ID")
@json_option
def remove(rule_id: str) -> None:
    """Delete a repeat rule (its outcomes stay in the ledger).

    \b
    Example:
      hb recur remove recur-1a2b3c4d
    """
    removed = state().ledger().recur_remove(rule_id)
    emit(removed, lambda r: f"removed {r['id']}")


@recur.command()
@click.option("--dry-run", is_flag=True, help="Show what would be copied; change nothing.")
@json_option
def materialize(dry_run: bool) -> None:
    """Copy due TODO.RECUR.md rules into TODO.md and advance their Next.

    One entry per due rule however many periods were missed (missed policy
    'once'), at the top of TODO.md: "<Next> [(<TZ>)] <content>". `hb sync`
    writes the files.

    \b
    Example:
      hb recur materialize --dry-run
      hb recur materialize && hb sync
    """
    result = state().ledger().recur_materialize(dry_run=dry_run)
    for skipped in result["skipped"]:
        warn(skipped["reason"])

    def human(r: dict[str, Any]) -> str:
        if not r["advanced"]:
            return "Nothing due."
        lines = [f"{e['id'] or '(new)'}  {e['title']}" for e in r["created"]]
        lines += [f"{a['id']}: Next {a['next']} -> {a['new_next']}" for a in r["advanced"]]
        return "\n".join(lines)

    emit(result, human)


@recur.command()
@click.argument("rule_id", metavar="ID")
@click.option("--result", required=True, metavar="TEXT", help="What was done (may be empty).")
@click.option("--success/--failure", default=True, show_default=True, help="How it went.")
@json_option
def outcome(rule_id: str, result: str, success: bool) -> None:
    """Record a run's outcome (recurring_update_task add_outcome): run count + 1, last run.

    \b
    Example:
      hb recur outcome weekly_code_review --result "Scheduled as separate task" --success
    """
    recorded = state().ledger().recur_outcome(rule_id, result=result, success=success)
    emit(recorded, lambda r: f"{r['id']}: run {r['run_count']} recorded")


@recur.command()
@click.argument("rule_id", metavar="ID")
@click.option("--impact", type=int, required=True, help="1 negligible .. 5 critical.")
@click.option("--risk", type=int, required=True, help="1 high risk .. 5 no risk.")
@click.option("--cost", type=int, required=True, help="1 very high cost .. 5 negligible.")
@click.option("--urgency", type=int, required=True, help="1 can wait .. 5 immediate.")
@click.option("--confidence", type=int, required=True, help="1 user unlikely to accept .. 5 certain.")
@click.option("--long-running", is_flag=True, help="Multi-step work: run it as a separate task.")
@json_option
def evaluate(
    rule_id: str, impact: int, risk: int, cost: int, urgency: int, confidence: int, long_running: bool
) -> None:
    """Score a task with the rubric: >= 18 execute, 13-17 consider, < 13 skip; INLINE or SCHEDULED.

    \b
    Example:
      hb recur evaluate morning_briefing --impact 4 --risk 5 --cost 4 --urgency 3 --confidence 4
    """
    verdict = (
        state()
        .ledger()
        .recur_evaluate(
            rule_id,
            impact=impact,
            risk=risk,
            cost=cost,
            urgency=urgency,
            confidence=confidence,
            long_running=long_running,
        )
    )
    emit(verdict, lambda v: f"{v['id']}: {v['total']} -> {v['decision']}, {v['execution']}")


COMMANDS: list[click.Command] = [recur]
