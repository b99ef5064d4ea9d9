"""PROACTIVE.md sync and the runs CraftBot's manager decides from: last_run both ways, dormant rows."""

from __future__ import annotations

import os
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from heartbeat.formats import proactive
from tests.conftest import Runner
from tests.recur.conftest import due_ids, rule

HEAD = """\
---
version: "1.0"
last_updated: null  # set on every save
---

# Proactive Tasks

<!-- PROACTIVE_TASKS_START -->

"""
TAIL = """\
<!-- PROACTIVE_TASKS_END -->

## Goals, Plan, and Status
"""
BRIEFING = """\
### [DAILY] Morning Briefing
```yaml
id: briefing
frequency: daily
enabled: true
priority: 10
permission_tier: 1
run_count: 0
instruction: Gather weather and calendar.
time: '08:15'
conditions: []
outcome_history: []
```

"""
REVIEW = """\
### [WEEKLY] Weekly Review
```yaml
id: review
frequency: weekly
day: friday
time: '09:30'
instruction: Review the week.
```

"""


def _write(workspace: Path, *blocks: str) -> Path:
    path = workspace / "PROACTIVE.md"
    path.write_text(HEAD + "".join(blocks) + TAIL, encoding="utf-8")
    return path


def _sync(runner: Runner, now: str) -> dict[str, Any]:
    report: dict[str, Any] = runner.json("--now", now, "sync", "--only", "proactive")["reports"][0]
    return report


def _fields(path: Path, task_id: str) -> dict[str, Any]:
    [task] = [t for t in proactive.parse(path.read_text("utf-8")).tasks if t.id == task_id]
    return task.fields


def test_an_outcome_writes_last_run_and_next_run_as_craftbots_manager_does(
    hb_db: Runner, workspace: Path
) -> None:
    hb_db("init", "--timezone", "Asia/Tokyo")
    path = _write(workspace, BRIEFING, REVIEW)
    _sync(hb_db, "2026-05-04T06:00")  # naive --now: Tokyo time
    # the heartbeat-processor skill records "Scheduled for 08:15" when it meets the task early
    hb_db("--now", "2026-05-04T07:00:12", "recur", "outcome", "briefing", "--result", "Scheduled for 08:15")
    report = _sync(hb_db, "2026-05-04T07:01")

    assert (report["updated"], report["written"]) == (["briefing"], True)
    fields = _fields(path, "briefing")
    assert fields["last_run"] == "2026-05-04T07:00:12+09:00"  # CraftBot's local time, with its offset
    assert fields["next_run"] == "2026-05-05T08:15:00+09:00"
    assert fields["run_count"] == 1
    assert fields["outcome_history"] == [
        {"timestamp": "2026-05-03T22:00:12Z", "result": "Scheduled for 08:15", "success": True}
    ]
    assert _fields(path, "review") == yaml.safe_load(REVIEW.split("```yaml\n")[1].split("```")[0])
    # what CraftBot's manager decides from that last_run, hb decides too: not again that day
    for tick in ("2026-05-04T08:00", "2026-05-04T08:15", "2026-05-04T08:30", "2026-05-04T08:45"):
        assert due_ids(hb_db, tick) == [], tick
    assert due_ids(hb_db, "2026-05-05T08:30") == ["briefing"]
    assert _sync(hb_db, "2026-05-04T07:05")["written"] is False  # written once


def test_craftbots_last_run_in_the_file_uses_the_period_up(hb_db: Runner, workspace: Path) -> None:
    hb_db("init", "--timezone", "Asia/Tokyo")
    ran = BRIEFING.replace("run_count: 0", "run_count: 1").replace(
        "outcome_history: []",
        "last_run: '2026-05-04T08:30:12.345678'\nnext_run: '2026-05-05T08:30:00'\n"
        "outcome_history:\n- timestamp: '2026-05-04T08:30:12.345678'\n  result: Sent.\n  success: true",
    )  # as CraftBot's manager writes a run: naive local times
    path = _write(workspace, ran)
    assert _sync(hb_db, "2026-05-04T08:40")["added"] == ["briefing"]

    assert rule(hb_db, "briefing")["last_run_at"] == "2026-05-04T08:30:12+09:00"
    assert due_ids(hb_db, "2026-05-04T08:40") == []  # the window is still open, but CraftBot ran it
    assert due_ids(hb_db, "2026-05-05T08:20") == ["briefing"]

    # the next day hb records a run at 08:16, and CraftBot (its own copy) another at 08:30
    hb_db("--now", "2026-05-05T08:16", "recur", "outcome", "briefing", "--result", "hb ran it")
    text = path.read_text("utf-8").replace("run_count: 1", "run_count: 2")
    path.write_text(text.replace("2026-05-04T08:30:12.345678'\nnext", "2026-05-05T08:30:00'\nnext"), "utf-8")
    _sync(hb_db, "2026-05-05T08:40")

    fields = _fields(path, "briefing")
    assert fields["run_count"] == 3  # both runs
    assert fields["last_run"] == "2026-05-05T08:30:00+09:00"  # the newer one, CraftBot's
    assert fields["next_run"] == "2026-05-06T08:15:00+09:00"
    assert [o["result"] for o in fields["outcome_history"]] == ["Sent.", "hb ran it"]
    assert rule(hb_db, "briefing")["last_run_at"] == "2026-05-05T08:30:00+09:00"


def test_a_block_that_stops_being_a_task_is_dormant_until_it_reads_again(
    hb_db: Runner, workspace: Path
) -> None:
    hb_db("init", "--timezone", "UTC")
    path = _write(workspace, BRIEFING, REVIEW)
    _sync(hb_db, "2026-05-07T12:00Z")
    assert due_ids(hb_db, "2026-05-08T09:30Z") == ["review"]  # a Friday

    unquoted = path.read_text("utf-8").replace("time: '09:30'", "time: 9:30")  # YAML reads 570
    path.write_text(unquoted, encoding="utf-8")
    report = _sync(hb_db, "2026-05-08T09:00Z")

    assert report["removed"] == [] and report["written"] is False
    assert path.read_text("utf-8") == unquoted  # kept byte for byte
    [preserved] = report["preserved"]
    assert preserved == (
        f"{path}:24: not a task, kept as written: time 570 is not HH:MM: CraftBot's heartbeat fails on it "
        '(YAML reads an unquoted H:MM as a number: write "9:30" in quotes)'
    )
    assert rule(hb_db, "review")["dormant"] == preserved.removeprefix(f"{path}:").replace(
        "24:", "line 24:", 1
    )
    assert due_ids(hb_db, "2026-05-08T09:30Z") == []  # CraftBot does not run it either
    hb_db("--now", "2026-05-08T09:40Z", "recur", "outcome", "review", "--result", "by hand")
    assert _sync(hb_db, "2026-05-08T09:41Z")["written"] is False  # no block to write it into

    path.write_text(unquoted.replace("time: 9:30", 'time: "9:30"'), encoding="utf-8")
    _sync(hb_db, "2026-05-08T09:45Z")

    assert rule(hb_db, "review")["dormant"] is None
    fields = _fields(path, "review")
    assert (fields["run_count"], fields["last_run"]) == (1, "2026-05-08T09:40:00+00:00")
    assert due_ids(hb_db, "2026-05-08T09:50Z") == []  # the run by hand used the week up
    assert due_ids(hb_db, "2026-05-15T09:30Z") == ["review"]


def test_a_block_deleted_while_dormant_removes_its_task(hb_db: Runner, workspace: Path) -> None:
    hb_db("init", "--timezone", "UTC")
    path = _write(workspace, BRIEFING, REVIEW)
    _sync(hb_db, "2026-05-07T12:00Z")
    path.write_text(path.read_text("utf-8").replace("frequency: weekly", "frequency: fortnightly"), "utf-8")
    _sync(hb_db, "2026-05-07T12:01Z")
    assert "never runs the task" in (rule(hb_db, "review")["dormant"] or "")

    _write(workspace, BRIEFING)
    assert _sync(hb_db, "2026-05-07T12:02Z")["removed"] == ["review"]
    assert [r["id"] for r in hb_db.json("recur", "list")] == ["briefing"]


def test_priorities_are_taken_as_craftbot_sorts_them_within_what_the_ledger_holds(
    hb_db: Runner, workspace: Path
) -> None:
    hb_db("init", "--timezone", "UTC")
    blocks = [
        f"### [HOURLY] {name}\n```yaml\nid: {name}\nfrequency: hourly\n{extra}\n```\n\n"
        for name, extra in [
            ("late", "priority: 200"),
            ("early", "priority: -5"),
            ("huge", "priority: 1000000000000\nrun_count: 1000000000000"),
            ("plain", "priority: 50"),
        ]
    ]
    _write(workspace, *blocks)
    report = _sync(hb_db, "2026-05-04T10:00Z")

    assert report["added"] == ["late", "early", "huge", "plain"]
    assert [p.split(": ", 1)[1] for p in report["preserved"]] == [
        "priority 1000000000000 is too large for hb: using 50",
        "run_count 1000000000000 is not a whole number >= 0 hb can hold: counted as 0 in the ledger "
        "(a run adds one to the file's own, as CraftBot's does)",
    ]
    assert due_ids(hb_db, "2026-05-04T10:05Z") == ["early", "huge", "plain", "late"]  # lower runs first
    assert (rule(hb_db, "huge")["priority"], rule(hb_db, "huge")["run_count"]) == (50, 0)


def test_runs_count_on_from_a_run_count_as_craftbots_manager_counts_it(
    hb_db: Runner, workspace: Path
) -> None:
    """CraftBot's manager adds one to a task's ``run_count`` as YAML gave it and writes the sum:
    true counts on from 1, -1 from -1, 2.5 from 2.5 (run against its code). hb left ``true`` as it
    was (1 is true) and then counted a run too many; -1 and 2.5 became 1. A text, which CraftBot
    cannot add to, is written over with hb's count."""
    hb_db("init", "--timezone", "UTC")
    counts = {"truthy": "true", "minus": "-1", "half": "2.5", "text": "'3'"}
    path = _write(
        workspace,
        *(
            f"### [HOURLY] {name}\n```yaml\nid: {name}\nfrequency: hourly\nrun_count: {count}\n```\n\n"
            for name, count in counts.items()
        ),
    )
    _sync(hb_db, "2026-05-04T10:00Z")
    written: dict[str, list[Any]] = {name: [] for name in counts}
    for hour in ("11", "12"):
        for name in counts:
            hb_db("--now", f"2026-05-04T{hour}:00Z", "recur", "outcome", name, "--result", "ok")
        _sync(hb_db, f"2026-05-04T{hour}:00Z")
        for name in counts:
            count = _fields(path, name)["run_count"]
            written[name].append((type(count).__name__, count))
    assert written == {
        "truthy": [("int", 2), ("int", 3)],
        "minus": [("int", 0), ("int", 1)],
        "half": [("float", 3.5), ("float", 4.5)],
        "text": [("int", 1), ("int", 2)],
    }
    assert [rule(hb_db, name)["run_count"] for name in counts] == [3, 1, 0, 2]  # 2.5: none hb holds


def test_craftbots_save_of_the_file_it_loaded_earlier_does_not_undo_a_run_hb_wrote(
    hb_db: Runner, workspace: Path
) -> None:
    """CraftBot's manager reads PROACTIVE.md once, when it starts, and each save (a run of any
    task) writes its whole copy from memory (read from its code): an hour after hb wrote a run of
    one task, CraftBot saved its own run of another, and hb took the first task's older block as
    the file's word. The run was gone from the file and the ledger (3 runs again, the outcome
    dropped), and CraftBot, reading its last_run, would run the task again that day. A block whose
    count is below the one hb wrote, lacking outcomes hb wrote, is such a copy: hb's runs are
    written again. A count lowered by hand, with the outcomes kept, is the file's word."""
    hb_db("init", "--timezone", "UTC")
    blocks = [
        f"### [DAILY] {name}\n```yaml\nid: {name}\nfrequency: daily\ninstruction: {name}\n"
        f"run_count: {runs}\n```\n\n"
        for name, runs in (("inbox", 3), ("mail", 0))
    ]
    path = _write(workspace, *blocks)
    _sync(hb_db, "2026-05-04T08:00Z")
    craftbots_memory = path.read_text("utf-8")
    hb_db("--now", "2026-05-04T09:05Z", "recur", "outcome", "inbox", "--result", "run A")
    _sync(hb_db, "2026-05-04T09:05Z")
    assert _fields(path, "inbox")["run_count"] == 4
    saved = craftbots_memory.replace(
        "instruction: mail\nrun_count: 0\n",
        "instruction: mail\nrun_count: 1\noutcome_history:\n- timestamp: '2026-05-04T10:00:00'\n"
        "  result: mailed\n  success: true\nlast_run: '2026-05-04T10:00:00'\n",
    )
    path.write_text(saved, encoding="utf-8")
    stat = path.stat()  # an hour after hb's write: no stale copy by its time
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 3600 * 10**9))
    _sync(hb_db, "2026-05-04T10:01Z")
    inbox, mail = _fields(path, "inbox"), _fields(path, "mail")
    assert inbox["run_count"] == 4 and [h["result"] for h in inbox["outcome_history"]] == ["run A"]
    assert str(inbox["last_run"]).startswith("2026-05-04T09:05")
    assert mail["run_count"] == 1 and [h["result"] for h in mail["outcome_history"]] == ["mailed"]
    assert (rule(hb_db, "inbox")["run_count"], rule(hb_db, "mail")["run_count"]) == (4, 1)
    # a count set lower by hand, the outcomes kept: the file's word
    path.write_text(path.read_text("utf-8").replace("run_count: 4", "run_count: 0"), encoding="utf-8")
    _sync(hb_db, "2026-05-04T10:05Z")
    assert _fields(path, "inbox")["run_count"] == 0 and rule(hb_db, "inbox")["run_count"] == 0


def test_an_outcome_recorded_after_its_period_ended_is_written_as_that_periods_run(
    hb_db: Runner, workspace: Path
) -> None:
    """CraftBot's should_run skips a weekly task whose last_run is in this ISO week (a daily one:
    on today's date), and calculate_next_run goes by the same test. An outcome recorded just past
    midnight answers the period it was handed out for (the ledger counts it there); written with
    its completion time as last_run, CraftBot took it for the next period's run and skipped that
    one, while hb handed it out. last_run is now stamped inside the period the run used up."""
    hb_db("init", "--timezone", "Europe/Berlin")
    review = (
        "### [WEEKLY] Review\n```yaml\nid: review\nfrequency: weekly\nday: sunday\n"
        "time: '23:30'\ninstruction: Review the week.\n```\n\n"
    )
    path = _write(workspace, review, BRIEFING)
    _sync(hb_db, "2026-05-10T20:00")
    assert [r["id"] for r in hb_db.json("--now", "2026-05-10T23:30", "recur", "due", "--claim")] == ["review"]
    hb_db("--now", "2026-05-11T00:05", "recur", "outcome", "review", "--result", "done")
    hb_db("--now", "2026-05-11T00:06", "sync")

    fields = _fields(path, "review")
    last_run = datetime.fromisoformat(fields["last_run"])  # as CraftBot's types.py reads it
    assert last_run == datetime.fromisoformat("2026-05-10T23:30:00+02:00")  # the hand-out time
    assert last_run.isocalendar()[1] == 19  # the week it answered, not week 20 (05-11..05-17)
    assert fields["next_run"] == "2026-05-17T23:30:00+02:00"
    assert due_ids(hb_db, "2026-05-17T23:30") == ["review"]

    # daily: handed out at 08:25, the outcome recorded at 00:10 the next day
    assert due_ids(hb_db, "2026-05-11T08:25") == ["briefing"]
    hb_db("--now", "2026-05-11T08:25", "recur", "due", "--claim")
    hb_db("--now", "2026-05-12T00:10", "recur", "outcome", "briefing", "--result", "sent")
    hb_db("--now", "2026-05-12T00:11", "sync")
    fields = _fields(path, "briefing")
    assert datetime.fromisoformat(fields["last_run"]).date() == date(2026, 5, 11)
    assert fields["next_run"] == "2026-05-12T08:15:00+02:00"
    assert due_ids(hb_db, "2026-05-12T08:15") == ["briefing"]
    # an outcome in its period keeps its completion time
    hb_db("--now", "2026-05-12T08:15", "recur", "due", "--claim")
    hb_db("--now", "2026-05-12T08:40", "recur", "outcome", "briefing", "--result", "sent")
    hb_db("--now", "2026-05-12T08:41", "sync")
    assert _fields(path, "briefing")["last_run"] == "2026-05-12T08:40:00+02:00"


def test_the_next_run_written_skips_a_window_closed_before_the_outcome_came(
    hb_db: Runner, workspace: Path
) -> None:
    hb_db("init", "--timezone", "UTC")
    path = _write(workspace, BRIEFING)
    _sync(hb_db, "2026-05-04T07:00")
    hb_db("--now", "2026-05-04T08:20", "recur", "due", "--claim")
    hb_db("--now", "2026-05-05T09:00", "recur", "outcome", "briefing", "--result", "late")
    hb_db("--now", "2026-05-05T09:01", "sync")
    fields = _fields(path, "briefing")
    assert fields["last_run"] == "2026-05-04T08:20:00+00:00"
    assert fields["next_run"] == "2026-05-06T08:15:00+00:00"  # 05-05's window closed at 08:45
    assert due_ids(hb_db, "2026-05-05T09:10") == []
    assert due_ids(hb_db, "2026-05-06T08:15") == ["briefing"]


def test_a_run_handed_out_past_midnight_for_the_day_before_is_stamped_in_that_day(
    hb_db: Runner, workspace: Path
) -> None:
    """hb's window of a 23:45 task stays open to 00:15 (CraftBot's closes at midnight); a run
    handed out at 00:10 answers the day before, so its last_run is that day's last second."""
    hb_db("init", "--timezone", "UTC")
    late = "### [DAILY] Late\n```yaml\nid: late\nfrequency: daily\ntime: '23:45'\ninstruction: x\n```\n\n"
    path = _write(workspace, late)
    _sync(hb_db, "2026-05-04T20:00")
    hb_db("--now", "2026-05-05T00:10", "recur", "due", "--claim")
    hb_db("--now", "2026-05-05T00:12", "recur", "outcome", "late", "--result", "ok")
    hb_db("--now", "2026-05-05T00:13", "sync")
    fields = _fields(path, "late")
    assert fields["last_run"] == "2026-05-04T23:59:59+00:00"
    assert fields["next_run"] == "2026-05-05T23:45:00+00:00"
    assert due_ids(hb_db, "2026-05-05T23:45") == ["late"]


def test_craftbots_last_run_a_little_ahead_of_hbs_clock_uses_the_period_up(
    hb_db: Runner, workspace: Path
) -> None:
    """CraftBot's should_run compares last_run's date (ISO week and year, month) with its local
    now's, so it does not run a task whose last_run is later the same day. hb, its clock 20 s
    behind CraftBot's, threw away a last_run later than its now and handed the task out again
    (and, the file unchanged since, never read the run). A later period's stamp is still no run."""
    hb_db("init", "--timezone", "UTC")
    daily = (
        "### [DAILY] M\n```yaml\nid: morning_briefing\nfrequency: daily\ntime: '08:00'\n"
        "instruction: x\n```\n\n"
    )
    weekly = REVIEW.replace("day: friday", "day: monday").replace("09:30", "08:00")
    path = _write(workspace, daily, weekly)
    _sync(hb_db, "2026-05-04T07:00")
    text = path.read_text("utf-8")
    for task_id in ("morning_briefing", "review"):  # as CraftBot's record_outcome writes last_run
        text = text.replace(
            f"id: {task_id}\n", f"id: {task_id}\nlast_run: '2026-05-04T08:00:30'\nrun_count: 1\n"
        )
    path.write_text(text, encoding="utf-8")
    _sync(hb_db, "2026-05-04T08:00:10")

    assert due_ids(hb_db, "2026-05-04T08:02") == []
    assert rule(hb_db, "morning_briefing")["last_run_at"] == "2026-05-04T08:00:30+00:00"
    assert rule(hb_db, "review")["last_run_at"] == "2026-05-04T08:00:30+00:00"
    assert due_ids(hb_db, "2026-05-05T08:00") == ["morning_briefing"]


def test_a_last_run_ahead_of_now_in_a_later_period_is_no_run(hb_db: Runner, workspace: Path) -> None:
    hb_db("init", "--timezone", "UTC")
    daily = "### [DAILY] M\n```yaml\nid: m\nfrequency: daily\ntime: '08:00'\ninstruction: x\n"
    path = _write(workspace, daily + "last_run: '2026-05-05T00:00:05'\n```\n\n")
    _sync(hb_db, "2026-05-04T08:00")  # the next day to CraftBot: it runs the task today
    assert rule(hb_db, "m")["last_run_at"] is None
    assert due_ids(hb_db, "2026-05-04T08:02") == ["m"]
    assert path.exists()


def test_outcomes_merged_into_a_history_craftbot_saved_since_stay_newest_last(
    hb_db: Runner, workspace: Path
) -> None:
    """FORMATS: outcome_history holds the last five outcomes, newest last; CraftBot's add_outcome
    appends and keeps [-5:]. hb's two runs, merged into the history CraftBot saved from the copy it
    loaded before them, were appended after CraftBot's four later ones: its oldest was dropped
    and the two older ones kept, last."""
    hb_db("init", "--timezone", "UTC")
    inbox = "### [HOURLY] Inbox\n```yaml\nid: inbox\nfrequency: hourly\ninstruction: x\nrun_count: 0\n```\n\n"
    path = _write(workspace, inbox)
    _sync(hb_db, "2026-05-04T07:00Z")
    craftbots_memory = path.read_text("utf-8")
    for at, result in (("08:05", "hb1"), ("09:05", "hb2")):
        hb_db("--now", f"2026-05-04T{at}Z", "recur", "outcome", "inbox", "--result", result)
        _sync(hb_db, f"2026-05-04T{at}Z")
    runs = ("10:00", "10:30", "11:00", "11:30")
    history = "".join(
        f"- timestamp: '2026-05-04T{at}:00'\n  result: cb {at}\n  success: true\n" for at in runs
    )
    saved = craftbots_memory.replace(
        "run_count: 0\n", f"run_count: 4\noutcome_history:\n{history}last_run: '2026-05-04T11:30:00'\n"
    )
    path.write_text(saved, encoding="utf-8")
    _sync(hb_db, "2026-05-04T11:31Z")

    fields = _fields(path, "inbox")
    assert [o["result"] for o in fields["outcome_history"]] == [
        "hb2",
        "cb 10:00",
        "cb 10:30",
        "cb 11:00",
        "cb 11:30",
    ]
    assert fields["run_count"] == 6
    assert fields["last_run"] == "2026-05-04T11:30:00+00:00"  # CraftBot's, the newest run
