"""PROACTIVE.md tasks: import, due periods, conditions, outcomes written back, the rubric."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from heartbeat.db.models import Outcome, Recurrence, Run
from heartbeat.formats import proactive
from heartbeat.ops.sync.proactive_files import render_proactive, sync_proactive
from tests.conftest import Runner
from tests.recur.conftest import due_ids, open_ledger, rule

HEAD = """\
---
version: 3
last_updated: "2026-04-28T08:00:00Z"  # bumped on every save
---

# Proactive Behaviour

Keep it light. Val edits this section by hand; the agent reads it every tick.

<!-- PROACTIVE_TASKS_START -->

"""
BRIEFING = """\
### [DAILY] Morning Briefing

```yaml
id: morning_briefing          # required, snake_case
frequency: daily
time: "08:00"
priority: 10
permission_tier: 1
conditions: [{type: weekdays_only}]
instruction: |
  Gather weather, calendar and open TODOs.
run_count: 2
outcome_history:
  - {timestamp: "2026-04-27T00:05:00Z", result: "sent briefing", success: true}
  - {timestamp: "2026-04-28T00:04:00Z", result: "sent briefing", success: true}
owner: val                    # not a field the runtime knows
```

"""
REVIEW = """\
### [WEEKLY] 每周代码回顾

```yaml
id: weekly_code_review
frequency: weekly
day: sunday
priority: 40
permission_tier: 0
instruction: 回顾本周的代码改动。
run_count: 0
review_scope: {repos: [hb, agent], max_prs: 20}
```

"""
BROKEN = """\
### [MONTHLY] Broken budget check

```yaml
id: budget_check
frequency: monthly
instruction: "Compare spend against the budget
```

"""
TAIL = """\
<!-- PROACTIVE_TASKS_END -->

## Goals

- Fewer, better messages.
"""
FILE = HEAD + BRIEFING + REVIEW + BROKEN + TAIL


def _write(workspace: Path, text: str) -> Path:
    path = workspace / "PROACTIVE.md"
    path.write_text(text, encoding="utf-8")
    return path


def _tasks_file(workspace: Path, *blocks: str) -> Path:
    return _write(workspace, HEAD + "".join(blocks) + TAIL)


def _texts(doc: proactive.ProactiveDocument) -> list[str]:
    return [p.raw if isinstance(p, proactive.ProactiveTask) else p for p in doc.parts]


def _task(text: str, task_id: str) -> proactive.ProactiveTask:
    [task] = [t for t in proactive.parse(text).tasks if t.id == task_id]
    return task


def _block(task_id: str, frequency: str, *lines: str) -> str:
    body = "\n".join((f"id: {task_id}", f"frequency: {frequency}", *lines))
    return f"### [{frequency.upper()}] {task_id}\n\n```yaml\n{body}\n```\n\n"


@pytest.fixture
def imported(hb_db: Runner, workspace: Path) -> Runner:
    hb_db("init")  # the machine zone: UTC
    _write(workspace, FILE)
    hb_db("import", "proactive")
    return hb_db


# --- import ---------------------------------------------------------------------------------


def test_import_maps_tasks_to_rows_and_keeps_the_malformed_block(imported: Runner, workspace: Path) -> None:
    result = imported("import", "proactive", str(workspace / "PROACTIVE.md"))
    assert "PROACTIVE.md:43: not a task, kept as written" in result.stderr  # the broken block, named by line
    assert result.stdout.endswith("0 added, 0 updated, 2 unchanged\n")
    briefing = rule(imported, "morning_briefing")
    assert {k: briefing[k] for k in ("source", "kind", "title", "rule", "time", "day", "enabled")} == {
        "source": "proactive",
        "kind": "proactive",
        "title": "Morning Briefing",
        "rule": "daily",
        "time": "08:00",
        "day": None,
        "enabled": True,
    }
    assert (briefing["priority"], briefing["permission_tier"], briefing["run_count"]) == (10, 1, 2)
    assert briefing["conditions"] == ["weekdays_only"]
    assert briefing["instruction"] == "Gather weather, calendar and open TODOs.\n"
    assert rule(imported, "weekly_code_review")["title"] == "每周代码回顾"
    assert [r["id"] for r in imported.json("recur", "list")] == ["morning_briefing", "weekly_code_review"]
    with open_ledger(imported) as ledger, ledger.read() as s:
        extra = s.scalars(select(Recurrence.extra).where(Recurrence.id == "weekly_code_review")).one()
    assert extra is not None
    assert extra["review_scope"] == {"repos": ["hb", "agent"], "max_prs": 20}


def test_outcome_then_export_changes_only_that_tasks_block(imported: Runner, workspace: Path) -> None:
    path = workspace / "PROACTIVE.md"
    before = proactive.parse(path.read_text(encoding="utf-8"))
    recorded = imported.json(
        "--now", "2026-05-04T08:06Z", "recur", "outcome", "morning_briefing", "--result", "sent briefing"
    )
    assert recorded["run_count"] == 3
    # importing the file before it is written keeps the outcome that is not in it yet
    report = imported.json("import", "proactive")
    assert (report["updated"], report["unchanged"]) == ([], 2)
    assert rule(imported, "morning_briefing")["run_count"] == 3
    imported("--now", "2026-05-04T08:07Z", "export", "proactive")
    after_text = path.read_text(encoding="utf-8")
    after = proactive.parse(after_text)

    # prose, markers, the other task and the malformed block: byte-identical
    assert [p for p in after.parts if isinstance(p, str)] == [p for p in before.parts if isinstance(p, str)]
    assert _texts(after)[3:] == _texts(before)[3:]  # the review block, the broken block, the tail
    assert BROKEN in after_text and REVIEW in after_text
    assert after.front_matter == before.front_matter.replace(
        '"2026-04-28T08:00:00Z"', '"2026-05-04T08:07:00Z"'
    )
    briefing = _task(after_text, "morning_briefing")
    assert briefing.run_count == 3
    assert briefing.outcome_history[-1] == {
        "timestamp": "2026-05-04T08:06:00Z",
        "result": "sent briefing",
        "success": True,
    }
    assert len(briefing.outcome_history) == 3
    assert briefing.fields["owner"] == "val"  # an unknown key survives

    # exporting again (or importing what was written) changes nothing: the outcome is not repeated
    assert imported.json("--now", "2026-05-04T09:00Z", "export", "proactive")["written"] is False
    assert imported("export", "proactive", "-").stdout == after_text
    imported("import", "proactive")
    assert rule(imported, "morning_briefing")["run_count"] == 3
    assert imported.json("--now", "2026-05-04T09:00Z", "export", "proactive")["written"] is False


def test_outcome_history_keeps_the_last_five(imported: Runner, workspace: Path) -> None:
    for n in range(1, 7):
        imported(
            "--now", f"2026-05-0{n}T09:00Z", "recur", "outcome", "weekly_code_review", "--result", f"r{n}"
        )
    imported("--now", "2026-05-07T09:00Z", "export", "proactive")
    review = _task((workspace / "PROACTIVE.md").read_text("utf-8"), "weekly_code_review")
    assert review.run_count == 6
    assert [h["result"] for h in review.outcome_history] == ["r2", "r3", "r4", "r5", "r6"]
    with open_ledger(imported) as ledger, ledger.read() as s:
        outcomes = s.scalars(select(Outcome).where(Outcome.task_id == "weekly_code_review")).all()
        first = outcomes[0]
        assert (first.result, first.success, first.source) == ({"result": "r1"}, True, "proactive")
        assert len(outcomes) == 6
        assert all(o.recurrence_pk is not None for o in outcomes)


def test_export_renders_from_the_files_current_text(imported: Runner, workspace: Path) -> None:
    path = workspace / "PROACTIVE.md"
    edited = path.read_text("utf-8").replace("Keep it light.", "Keep it light and short.")
    edited = edited.replace("回顾本周的代码改动。", "回顾本周的代码改动和测试。")
    path.write_text(edited, encoding="utf-8")  # edited after the import, not imported
    imported("--now", "2026-05-04T08:06Z", "recur", "outcome", "morning_briefing", "--result", "ok")
    imported("--now", "2026-05-04T08:07Z", "export", "proactive")
    text = path.read_text("utf-8")
    assert "Keep it light and short." in text
    assert "回顾本周的代码改动和测试。" in text
    assert "run_count: 3" in text


def test_a_block_that_turns_malformed_keeps_its_task(imported: Runner, workspace: Path) -> None:
    path = workspace / "PROACTIVE.md"
    broken = path.read_text("utf-8").replace('time: "08:00"', 'time: "08:00')
    path.write_text(broken, encoding="utf-8")
    result = imported("import", "proactive")
    assert "not a task, kept as written" in result.stderr
    assert rule(imported, "morning_briefing")["run_count"] == 2  # the row is kept while the block is broken
    imported("export", "proactive")
    assert path.read_text("utf-8") == broken
    # a block deleted from the file removes its task
    path.write_text(HEAD + REVIEW + TAIL, encoding="utf-8")
    report = imported.json("import", "proactive")
    assert report["removed"] == ["morning_briefing"]
    assert [r["id"] for r in imported.json("recur", "list")] == ["weekly_code_review"]


def test_sync_merges_both_sides_and_is_idempotent(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "UTC")
    path = _write(workspace, FILE)
    hb("import", "proactive")
    hb("--now", "2026-05-04T08:06Z", "recur", "outcome", "morning_briefing", "--result", "ok")
    hb("recur", "update", "weekly_code_review", "--disable")
    edited = path.read_text("utf-8").replace("priority: 40", "priority: 45")
    with open_ledger(hb, now="2026-05-04T08:10Z") as ledger, ledger.ctx.write() as s:
        report, out = sync_proactive(ledger.ctx, s, path, edited, ledger.now())
    assert out is not None and report.written
    assert sorted(report.updated) == ["morning_briefing", "weekly_code_review"]
    [preserved] = report.preserved
    assert preserved.startswith(f"{path}:43: not a task, kept as written: yaml block is not valid YAML")
    review = _task(out, "weekly_code_review")
    assert (review.priority, review.enabled) == (45, False)  # the file's edit and the ledger's
    assert "run_count: 3" in out
    assert rule(hb, "weekly_code_review")["priority"] == 45
    with open_ledger(hb, now="2026-05-04T08:20Z") as ledger, ledger.ctx.write() as s:
        again, unchanged = sync_proactive(ledger.ctx, s, path, out, ledger.now())
    assert unchanged is None and not again.changed


def test_sync_writes_back_a_deleted_file(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "UTC")
    path = _write(workspace, FILE)
    hb("import", "proactive")
    hb("--now", "2026-05-04T08:06Z", "recur", "outcome", "morning_briefing", "--result", "ok")
    path.unlink()
    with open_ledger(hb, now="2026-05-04T08:10Z") as ledger, ledger.ctx.write() as s:
        assert render_proactive(ledger.ctx, s) is not None
        report, out = sync_proactive(ledger.ctx, s, path, None, ledger.now())
    assert out is not None and report.written
    assert out.startswith(HEAD.replace("2026-04-28T08:00:00Z", "2026-05-04T08:10:00Z"))
    assert TAIL in out and BROKEN in out
    assert "run_count: 3" in out


def test_import_refuses_an_id_used_by_a_repeat_rule(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "UTC")
    rid = hb.json("recur", "add", "x", "--repeat", "daily")["id"]
    _tasks_file(workspace, _block(rid, "daily").replace(f"id: {rid}", f'id: "{rid}"'))
    result = hb("import", "proactive", code=1)
    assert "is already a cli recurrence" in result.stderr and result.stderr.count("\n") == 1


def test_proactive_tasks_are_edited_in_their_file(imported: Runner) -> None:
    assert (
        "edit it in PROACTIVE.md"
        in imported("recur", "update", "morning_briefing", "--title", "x", code=1).stderr
    )
    refused = imported("recur", "remove", "morning_briefing", code=1).stderr
    assert refused.endswith("or `hb recur update morning_briefing --disable`\n")
    assert imported.json("recur", "update", "morning_briefing", "--disable")["enabled"] is False


# --- due: periods, days, windows --------------------------------------------------------------


def test_daily_with_time_is_due_in_its_window_once_per_day(imported: Runner) -> None:
    assert "morning_briefing" not in due_ids(imported, "2026-05-04T07:59Z")  # Monday
    assert "morning_briefing" in due_ids(imported, "2026-05-04T08:00Z")
    assert "morning_briefing" in due_ids(imported, "2026-05-04T08:30Z")  # CraftBot's 30 minutes, end included
    assert "morning_briefing" not in due_ids(imported, "2026-05-04T08:30:01Z")
    handed_out = imported.json("--now", "2026-05-04T08:10Z", "recur", "due", "--claim")
    [handed] = [r for r in handed_out if r["id"] == "morning_briefing"]
    assert (handed["period"], handed["claimed"], handed["runs"]) == ("2026-05-04", True, 1)
    assert "morning_briefing" not in due_ids(imported, "2026-05-04T08:20Z")  # handed out, no outcome yet
    assert "morning_briefing" in due_ids(imported, "2026-05-05T08:05Z")  # the next day
    assert "morning_briefing" not in due_ids(imported, "2026-05-09T08:05Z")  # Saturday: weekdays_only


def test_the_time_window_is_craftbots_30_minutes_whatever_check_interval_says(
    hb: Runner, workspace: Path
) -> None:
    hb("init", "--timezone", "Asia/Tokyo")
    hb("config", "set", "check_interval", "2h")  # the round's interval, not CraftBot's window
    _tasks_file(workspace, _block("briefing", "daily", 'time: "08:00"'))
    hb("import", "proactive")
    assert due_ids(hb, "2026-05-04T08:30") == ["briefing"]  # naive --now: Tokyo time
    assert due_ids(hb, "2026-05-04T08:31") == []
    assert due_ids(hb, "2026-05-03T23:15Z") == ["briefing"]  # 08:15 JST


def test_due_is_ordered_by_priority(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "UTC")
    _tasks_file(
        workspace,
        _block("low_first", "hourly", "priority: 90"),
        _block("high_first", "hourly", "priority: 5"),
        _block("off", "hourly", "enabled: false"),
    )
    hb("import", "proactive")
    rid = hb.json("recur", "add", "r", "--repeat", "daily", "--next", "2026-05-04 00:00")["id"]
    assert due_ids(hb, "2026-05-04T10:00Z") == ["high_first", rid, "low_first"]


def test_weekly_at_a_year_boundary(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "UTC")
    _tasks_file(workspace, _block("weekly_any", "weekly"), _block("thursdays", "weekly", "day: thursday"))
    hb("import", "proactive")
    # ISO week 1 of 2026 and ISO week 1 of 2027 are a year apart: both run
    assert due_ids(hb, "2026-01-01T10:00Z", "--claim") == ["weekly_any", "thursdays"]
    assert due_ids(hb, "2026-01-08T10:00Z") == ["weekly_any", "thursdays"]
    # Wednesday 2026-12-30 is in the week of Monday 2026-12-28, which runs into 2027
    assert due_ids(hb, "2026-12-30T10:00Z", "--claim") == ["weekly_any"]
    assert due_ids(hb, "2027-01-02T10:00Z") == []  # Saturday of the same week
    assert due_ids(hb, "2027-01-04T10:00Z") == ["weekly_any"]  # Monday: a new week
    assert due_ids(hb, "2027-01-07T10:00Z", "--claim") == ["weekly_any", "thursdays"]
    assert rule(hb, "thursdays")["claimed_period"] == "2027-01-04"


def test_monthly_day_31_fires_on_the_last_day_of_april(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "UTC")
    _tasks_file(workspace, _block("month_end", "monthly", 'day: "31"', 'time: "18:00"'))
    hb("import", "proactive")
    assert due_ids(hb, "2026-04-29T18:10Z") == []
    assert due_ids(hb, "2026-04-30T17:59Z") == []
    assert due_ids(hb, "2026-04-30T18:10Z", "--claim") == ["month_end"]
    assert due_ids(hb, "2026-04-30T18:40Z") == []
    assert due_ids(hb, "2026-05-30T18:10Z") == []
    assert due_ids(hb, "2026-05-31T18:10Z") == ["month_end"]
    assert due_ids(hb, "2027-02-28T18:10Z") == ["month_end"]


def test_outcome_without_claim_is_not_run_again_this_period(imported: Runner) -> None:
    imported("--now", "2026-05-03T10:00Z", "recur", "outcome", "weekly_code_review", "--result", "done")
    assert "weekly_code_review" not in due_ids(imported, "2026-05-03T11:00Z")  # the same Sunday
    assert "weekly_code_review" in due_ids(imported, "2026-05-10T11:00Z")


# --- conditions ---------------------------------------------------------------------------------


def _seen(runner: Runner, at: str) -> None:
    """What `hb seen` records: a runs row of kind "seen"."""
    with open_ledger(runner, now=at) as ledger, ledger.write() as s:
        s.add(Run(kind="seen", status="ok", started_at=ledger.now(), finished_at=ledger.now()))


def test_conditions_are_judged_and_unknown_ones_passed_through(hb_db: Runner, workspace: Path) -> None:
    hb_db("init")  # the machine zone: UTC
    _tasks_file(
        workspace,
        _block("market", "hourly", "conditions: [market_hours_only]"),
        _block("weekdays", "hourly", "conditions: [weekdays_only]"),
        _block("available", "hourly", "conditions: [user_available]"),
        _block("custom", "hourly", "conditions: [weekdays_only, only_if_inbox_is_full]"),
    )
    hb_db("import", "proactive")
    assert due_ids(hb_db, "2026-05-04T09:29Z") == ["weekdays", "custom"]  # Monday, market closed, no talk
    assert due_ids(hb_db, "2026-05-04T09:30Z") == ["market", "weekdays", "custom"]
    assert due_ids(hb_db, "2026-05-04T16:00Z") == ["weekdays", "custom"]
    assert due_ids(hb_db, "2026-05-09T12:00Z") == []  # Saturday
    _seen(hb_db, "2026-05-04T10:00Z")
    assert "available" in due_ids(hb_db, "2026-05-04T14:00Z")
    assert "available" not in due_ids(hb_db, "2026-05-04T14:01Z")  # more than 4 hours since
    [custom] = [r for r in hb_db.json("--now", "2026-05-04T12:00Z", "recur", "due") if r["id"] == "custom"]
    assert custom["conditions_to_check"] == ["only_if_inbox_is_full"]
    assert custom["conditions"] == ["weekdays_only", "only_if_inbox_is_full"]
    # a condition that fails does not use up the period
    hb_db("--now", "2026-05-04T09:00Z", "recur", "due", "--claim")
    assert rule(hb_db, "market")["claimed_period"] is None
    assert "market" in due_ids(hb_db, "2026-05-04T09:45Z")


# --- the rubric -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "total", "decision"),
    [
        ((4, 5, 4, 3, 4), 20, "execute"),
        ((4, 5, 3, 2, 4), 18, "execute"),
        ((4, 4, 3, 2, 4), 17, "consider"),
        ((3, 3, 3, 2, 2), 13, "consider"),
        ((3, 3, 2, 2, 2), 12, "skip"),
    ],
)
def test_evaluate_thresholds(imported: Runner, scores: tuple[int, ...], total: int, decision: str) -> None:
    names = ("--impact", "--risk", "--cost", "--urgency", "--confidence")
    options = [str(v) for pair in zip(names, scores, strict=True) for v in pair]
    verdict = imported.json("--now", "2026-05-04T08:00Z", "recur", "evaluate", "morning_briefing", *options)
    assert (verdict["total"], verdict["decision"], verdict["execution"]) == (total, decision, "INLINE")
    assert rule(imported, "morning_briefing")["evaluation"]["total"] == total


def test_evaluate_execution_type_and_bad_scores(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "UTC")
    _tasks_file(workspace, _block("approval", "daily", "permission_tier: 2"), _block("quick", "daily"))
    hb("import", "proactive")
    scores = ["--impact", "4", "--risk", "5", "--cost", "4", "--urgency", "3", "--confidence", "4"]
    assert hb.json("recur", "evaluate", "approval", *scores)["execution"] == "SCHEDULED"  # tier 2
    assert hb.json("recur", "evaluate", "quick", *scores, "--long-running")["execution"] == "SCHEDULED"
    assert hb("recur", "evaluate", "quick", *scores).stdout == "quick: 20 -> execute, INLINE\n"
    recorded = rule(hb, "quick")["evaluation"]
    assert recorded["scores"] == {"impact": 4, "risk": 5, "cost": 4, "urgency": 3, "confidence": 4}
    assert recorded["long_running"] is False
    bad = hb("recur", "evaluate", "quick", *scores[:-1], "6", code=1)
    assert bad.stderr == "hb: confidence must be an integer from 1 to 5, got 6\n"


def test_hb_sync_writes_outcomes_and_then_has_nothing_to_do(hb_db: Runner, workspace: Path) -> None:
    hb_db("init")  # the machine zone: UTC
    path = _write(workspace, FILE)
    first = hb_db.json("sync", "--only", "proactive")
    assert first["reports"][0]["added"] == ["morning_briefing", "weekly_code_review"]
    assert path.read_text("utf-8") == FILE  # nothing to change: not rewritten
    hb_db("--now", "2026-05-04T08:06Z", "recur", "outcome", "weekly_code_review", "--result", "reviewed")
    second = hb_db.json("--now", "2026-05-04T08:07Z", "sync", "--only", "proactive")
    assert (second["reports"][0]["updated"], second["reports"][0]["written"]) == (
        ["weekly_code_review"],
        True,
    )
    text = path.read_text("utf-8")
    # all but the review block is as it was (the front matter's last_updated aside)
    assert text.split("### [WEEKLY]")[0] == (HEAD + BRIEFING).replace("2026-04-28T08:00", "2026-05-04T08:07")
    assert text.split("### [MONTHLY]")[1] == FILE.split("### [MONTHLY]")[1]
    assert _task(text, "weekly_code_review").outcome_history == (
        {"timestamp": "2026-05-04T08:06:00Z", "result": "reviewed", "success": True},
    )
    assert hb_db.json("--now", "2026-05-04T08:08Z", "sync", "--only", "proactive")["changed"] is False
    assert path.read_text("utf-8") == text


@pytest.mark.parametrize("count", [2**30 - 1, 2**31 - 1, 2**31, 2**63])
def test_a_run_count_the_ledger_cannot_hold_counts_on_in_the_file(
    hb_db: Runner, workspace: Path, count: int
) -> None:
    """CraftBot's manager counts on from any whole number. A count past what the ledger's column
    holds was read as 0 and the outcome recorded on it was never written (2**31 - 1 worked once,
    then wrote 2**31 and lost every outcome after). The file's own count goes on; each outcome
    is written once."""
    path = workspace / "PROACTIVE.md"
    path.write_text(
        "<!-- PROACTIVE_TASKS_START -->\n### [DAILY] T\n```yaml\nid: t\n"
        f"run_count: {count}\n```\n<!-- PROACTIVE_TASKS_END -->\n"
    )
    hb_db("sync")
    for day, result in (("2026-05-04", "first"), ("2026-05-05", "second")):
        hb_db("recur", "outcome", "t", "--result", result, HB_NOW=f"{day}T10:00:00Z")
        hb_db("sync", HB_NOW=f"{day}T10:00:01Z")
    [task] = proactive.parse(path.read_text()).tasks
    assert task.fields["run_count"] == count + 2
    assert [o["result"] for o in task.outcome_history] == ["first", "second"]
    hb_db("sync", HB_NOW="2026-05-05T10:00:02Z")  # nothing left to write
    assert proactive.parse(path.read_text()).tasks[0].fields["run_count"] == count + 2


def _outcome(hb: Runner, now: str, task_id: str) -> None:
    hb("--now", now, "recur", "outcome", task_id, "--result", "ok")


@pytest.mark.parametrize(
    ("block", "claimed", "late", "next_due"),
    [
        (
            ("books", "monthly", 'day: "31"', 'time: "23:45"'),
            "2027-01-31T23:45Z",
            "2027-02-01T00:20Z",
            "2027-02-28T23:45Z",
        ),
        (
            ("review", "weekly", "day: sunday", 'time: "23:30"'),
            "2027-01-31T23:30Z",
            "2027-02-01T00:20Z",
            "2027-02-07T23:30Z",
        ),
        (("nightly", "daily"), "2026-05-05T23:50Z", "2026-05-06T00:10Z", "2026-05-06T12:00Z"),
    ],
    ids=["monthly", "weekly", "daily"],
)
def test_an_outcome_just_past_its_period_answers_that_period_and_uses_up_no_other(
    hb: Runner, workspace: Path, block: tuple[str, ...], claimed: str, late: str, next_due: str
) -> None:
    """A task handed out late in its period whose run ends just after (the month's close at 23:45,
    done at 00:20): its outcome was charged to the period it was recorded in, so the next one
    (February, the next week, the next day) was never handed out. It answers the period it was
    handed out for."""
    hb("init", "--timezone", "UTC")
    task_id = block[0]
    _tasks_file(workspace, _block(*block))
    hb("import", "proactive")
    assert due_ids(hb, claimed, "--claim") == [task_id]
    _outcome(hb, late, task_id)
    assert rule(hb, task_id)["run_count"] == 1
    assert due_ids(hb, next_due, "--claim") == [task_id]
    assert due_ids(hb, next_due) == []  # and once


def test_a_run_recorded_without_a_hand_out_still_uses_up_its_period(hb: Runner, workspace: Path) -> None:
    """An outcome that answers no hand-out (CraftBot's "Scheduled for 08:15" run at 07:00) uses up
    the period it falls in, as before."""
    hb("init", "--timezone", "UTC")
    _tasks_file(workspace, _block("morning", "daily", 'time: "08:15"'))
    hb("import", "proactive")
    _outcome(hb, "2026-05-04T07:00Z", "morning")
    assert due_ids(hb, "2026-05-04T08:20Z") == []
    assert due_ids(hb, "2026-05-05T08:20Z") == ["morning"]


def test_a_period_is_handed_out_once_when_the_clock_goes_back_and_returns(
    hb: Runner, workspace: Path
) -> None:
    """Handed out for 05-05, the clock set back to 05-04 and then right again: 05-04 was handed
    out (a period before the last one handed out) and took its place as the period handed out,
    so 05-05 was handed out a second time. As for the repeat rules, an earlier clock hands out
    nothing, with or without outcomes recorded."""
    hb("init", "--timezone", "America/New_York")
    _tasks_file(workspace, _block("digest", "daily"), _block("pulse", "hourly"))
    hb("import", "proactive")
    handed: list[str] = []
    for now in ("2026-05-05T08:00", "2026-05-04T08:10", "2026-05-05T08:15"):
        for item in hb.json("--now", now, "recur", "due", "--claim"):
            handed.append(f"{item['id']}@{item['period']}")
        _outcome(hb, now, "digest")
    assert handed == ["digest@2026-05-05", "pulse@2026-05-05T08"]
    assert rule(hb, "digest")["claimed_period"] == "2026-05-05"
