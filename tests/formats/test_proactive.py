"""PROACTIVE.md: lossless parse/render, read as CraftBot reads it, writes that touch only changed blocks."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from heartbeat.errors import InvalidInput
from heartbeat.formats import proactive
from heartbeat.formats.proactive import ProactiveTask, parse, record_outcome, render, with_tasks

NOW = datetime(2026, 5, 1, 1, 0, tzinfo=UTC)

FIXTURE = """\
---
version: 3
last_updated: "2026-04-28T08:00:00Z"  # bumped on every save
---

# Proactive Behaviour

Keep it light. Val edits this section by hand; the agent reads it every tick.

## Decision rubric

Score impact, risk, cost, urgency and confidence from 1 to 5.
- Total >= 18: execute
- 13-17: consider, may need the user
- < 13: skip

<!-- PROACTIVE_TASKS_START -->

### [DAILY] Morning Briefing

```yaml
id: morning_briefing          # required, snake_case
frequency: daily
time: "08:00"
enabled: true
priority: 10
permission_tier: 1
conditions: [{type: weekdays_only}]
instruction: |
  Gather weather, calendar and open TODOs.
  Send one short message with a star prefix.
run_count: 2
outcome_history:
  - {timestamp: "2026-04-27T00:05:00Z", result: "sent briefing", success: true}
  - {timestamp: "2026-04-28T00:04:00Z", result: "sent briefing", success: true}
owner: val                    # not a field the runtime knows
```

### [WEEKLY] 每周代码回顾

```yaml
id: weekly_code_review
frequency: weekly
day: sunday
time: "20:00"
priority: 40
instruction: 回顾本周的代码改动，找出模式、问题和改进点。
run_count: 0
review_scope: {repos: [hb, agent], max_prs: 20}
```

### [MONTHLY] Broken budget check

```yaml
id: budget_check
frequency: monthly
day: "31"
instruction: "Compare spend against the budget
priority: 30
```

### [HOURLY] Inbox triage

```yaml
id: inbox_triage
frequency: hourly
enabled: false
priority: 70
permission_tier: 0
conditions:
  - type: user_available
  - type: market_hours_only
instruction: Sort new mail into the usual folders.
run_count: 41
```

<!-- PROACTIVE_TASKS_END -->

## Goals

- Fewer, better messages.
"""

MALFORMED_BLOCK = FIXTURE[FIXTURE.index("### [MONTHLY] Broken") : FIXTURE.index("### [HOURLY]")]


def block_of(text: str, heading: str) -> str:
    """From ``heading`` through its closing fence line."""
    start = text.index(heading)
    fence = text.index("```yaml\n", start) + len("```yaml\n")
    return text[start : text.index("```\n", fence) + len("```\n")]


def task(doc: proactive.ProactiveDocument, task_id: str) -> ProactiveTask:
    return next(t for t in doc.tasks if t.id == task_id)


def outcome(n: int) -> dict[str, object]:
    return {"timestamp": f"2026-04-0{n}T00:00:00Z", "result": f"run {n}", "success": True}


# --- reading ---


def test_fixture_round_trips_byte_identical() -> None:
    assert render(parse(FIXTURE)) == FIXTURE


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no front matter, no markers\n",
        FIXTURE.replace("\n", "\r\n"),
        FIXTURE.rstrip("\n"),
        "\ufeff" + FIXTURE,
        FIXTURE.replace("<!-- PROACTIVE_TASKS_END -->\n", ""),
    ],
    ids=["empty", "plain", "crlf", "no-final-newline", "bom", "no-end-marker"],
)
def test_variants_round_trip_byte_identical(text: str) -> None:
    assert render(parse(text)) == text


def test_tasks_are_typed_from_their_yaml() -> None:
    doc = parse(FIXTURE)

    assert [t.id for t in doc.tasks] == ["morning_briefing", "weekly_code_review", "inbox_triage"]
    briefing, review, triage = doc.tasks
    assert (briefing.name, briefing.frequency, briefing.time) == (
        "Morning Briefing",
        "daily",
        "08:00",
    )
    assert briefing.conditions == ("weekdays_only",)
    assert briefing.instruction == (
        "Gather weather, calendar and open TODOs.\nSend one short message with a star prefix.\n"
    )
    assert briefing.run_count == 2
    assert [o["result"] for o in briefing.outcome_history] == ["sent briefing", "sent briefing"]
    assert briefing.line == 19
    assert (review.name, review.day, review.time) == ("每周代码回顾", "sunday", "20:00")
    assert (review.enabled, review.priority, review.permission_tier) == (True, 40, 0)  # no tier: 0
    assert (triage.enabled, triage.permission_tier) == (False, 0)
    assert triage.conditions == ("user_available", "market_hours_only")


def test_fields_keep_unknown_keys_in_file_order() -> None:
    briefing, review, _ = parse(FIXTURE).tasks

    assert list(briefing.fields)[-2:] == ["outcome_history", "owner"]
    assert briefing.fields["owner"] == "val"
    assert review.fields["review_scope"] == {"repos": ["hb", "agent"], "max_prs": 20}


def test_raw_is_the_heading_through_the_closing_fence() -> None:
    review = parse(FIXTURE).tasks[1]

    assert review.raw == block_of(FIXTURE, "### [WEEKLY] 每周代码回顾")


def test_malformed_block_is_kept_as_text_with_a_warning() -> None:
    doc = parse(FIXTURE)

    assert "budget_check" not in [t.id for t in doc.tasks]
    [warning] = doc.warnings
    assert warning.line == 52
    assert warning.text == "### [MONTHLY] Broken budget check"
    assert warning.reason.startswith("not a task, kept as written: yaml block is not valid YAML")
    assert MALFORMED_BLOCK in render(doc)


def test_front_matter_is_read() -> None:
    doc = parse(FIXTURE)

    assert doc.meta == {"version": 3, "last_updated": "2026-04-28T08:00:00Z"}
    assert doc.front_matter.endswith("---\n")


@pytest.mark.parametrize(
    ("front", "line", "reason"),
    [
        ("---\nversion: 1\n\n# Title\n", 1, "never closed"),
        # the line where the [ opened, not the end of the text where YAML noticed
        ("---\nversion: 1\nlast_updated: [2026\n---\nprose\n", 3, "flow sequence"),
        ('---\nversion: 1\nnote: "open\n\n---\n', 3, "never closed"),
        ("---\nversion: 1\n  bad: indent\n---\n", 3, "not valid YAML"),
        # CraftBot's shipped templates (before 2026-03) start like this
        ('---\nversion: "1.0"\nlast_updated: {{TIMESTAMP}}  # Auto-updated\n---\n', 3, "not valid YAML"),
        ("---\n- a\n- b\n---\n", 1, "not a mapping: CraftBot's parser fails on this file"),
        ("---\nlast_updated: 2026-13-45\n---\n", 1, "(month must be in 1..12): CraftBot's parser fails"),
        (
            "---\nversion: 1\nbuild: -" + "1_000" * 1100 + "\n---\n",
            1,
            "(a number with 4400 digits (at most 4300) (line 3)): CraftBot's parser fails",
        ),
    ],
    ids=[
        "unclosed",
        "unclosed-flow",
        "unclosed-quote",
        "bad-indent",
        "template",
        "list",
        "impossible-date",
        "long-number",
    ],
)
def test_unreadable_front_matter_is_kept_with_a_warning_and_the_tasks_are_read(
    front: str, line: int, reason: str
) -> None:
    text = front + SECTION.format("### [DAILY] A\n```yaml\nid: a\n```\n")

    doc = parse(text)

    assert [t.id for t in doc.tasks] == ["a"]
    [warning] = doc.warnings
    assert warning.line == line and reason in warning.reason
    assert (doc.front_matter, doc.meta) == ("", {})  # not hb's front matter: last_updated is left alone
    assert render(doc) == text
    again = with_tasks(doc, [record_outcome(doc.tasks[0], result="ok", success=True, now=NOW)], now=NOW)
    assert render(again).startswith(front)


SECTION = "<!-- PROACTIVE_TASKS_START -->\n{}<!-- PROACTIVE_TASKS_END -->\n"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        # blocks CraftBot's parser skips (and drops on its next save)
        ('### [DAILY] A\n```yaml\nid: a\ninstruction: "open\n```\n', "not valid YAML (line 5)"),
        ("### [DAILY] A\n```yaml\n\n```\n", "yaml block is empty: CraftBot skips it"),
        ("### [DAILY] A\n```yaml\nid: a\n", "its ```yaml block is never closed"),
        ("### [DAILY] A\n~~~yaml\nid: a\n~~~\n", "CraftBot reads only a block opened with ```yaml"),
        ("### [DAILY] A\n```yml\nid: a\n```\n", "CraftBot reads only a block opened with ```yaml"),
        ("### [DAILY] A\n```\nid: a\n```\n", "CraftBot reads only a block opened with ```yaml"),
        ("### [DAILY] A\n```YAML\nid: a\n```\n", "CraftBot reads only a block opened with ```yaml"),
        ("### [DAILY] A\n\nJust prose.\n", "no ```yaml block follows this task heading"),
        ("### No brackets\n```yaml\nid: a\n```\n", "heading is not '### [FREQUENCY] Name'"),
        ("#### [DAILY] A\n```yaml\nid: a\n```\n", "heading is not '### [FREQUENCY] Name'"),
        ("## Daily: A\n\n```\nid: a\n```\n", "heading is not '### [FREQUENCY] Name'"),
        # blocks CraftBot's parser fails on: it then loads no task of the file
        ("### [DAILY] A\n```yaml\n- id: a\n```\n", "not a mapping: CraftBot's parser fails"),
        ("### [DAILY] A\n```yaml\nid: a\nconditions:\n```\n", "conditions None is not a list: CraftBot's"),
        ("### [DAILY] A\n```yaml\nid: a\noutcome_history: 3\n```\n", "is not a list: CraftBot's parser"),
        ("### [DAILY] A\n```yaml\nid: a\nlast_run: yesterday\n```\n", "not an ISO 8601 time: CraftBot's"),
        ("### [DAILY] A\n```yaml\nid: a\nseen: 2026-13-45\n```\n", "in 1..12: CraftBot's parser fails"),
        # Python refuses to read an integer this long: the number's length and line, not its advice
        (
            "### [DAILY] A\n```yaml\nid: a\nrun_count: " + "9" * 5000 + "\n```\n",
            "a number with 5000 digits (at most 4300) (line 5): CraftBot's parser fails",
        ),
        (
            "### [DAILY] A\n```yaml\nid: a\noutcome_history:\n- {timestamp: soon, result: x}\n```\n",
            "timestamp 'soon' is not an ISO 8601 time",
        ),
        # blocks CraftBot reads but hb cannot track
        ("### [DAILY] A\n```yaml\nfrequency: daily\n```\n", "no id: hb cannot track it"),
        ("### [DAILY] A\n```yaml\nid: 7\n```\n", "id 7 is not text"),
        # tasks CraftBot never runs (and drops on its next save)
        ("### [DAILY] A\n```yaml\nid: a\nfrequency: often\n```\n", "frequency 'often' is not hourly"),
        ("### [DAILY] A\n```yaml\nid: a\nfrequency: Daily\n```\n", "frequency 'Daily' is not hourly"),
        ("### [YEARLY] A\n```yaml\nid: a\nfrequency:\n```\n", "frequency 'yearly' is not hourly"),
        # tasks CraftBot's heartbeat fails on, or never runs
        ("### [DAILY] A\n```yaml\nid: a\ntime: 9:30\n```\n", "time 570 is not HH:MM: CraftBot's heartbeat"),
        ("### [DAILY] A\n```yaml\nid: a\ntime: '08:00:00'\n```\n", "CraftBot's heartbeat fails"),
        ("### [DAILY] A\n```yaml\nid: a\ntime: '24:00'\n```\n", "CraftBot's heartbeat fails"),
        ("### [W] A\n```yaml\nid: a\nfrequency: weekly\nday: mon\n```\n", "CraftBot never runs this task"),
        ("### [W] A\n```yaml\nid: a\nfrequency: weekly\nday: 1\n```\n", "CraftBot's heartbeat fails"),
        ("### [M] A\n```yaml\nid: a\nfrequency: monthly\nday: 32\n```\n", "CraftBot never runs this task"),
        ("### [M] A\n```yaml\nid: a\nfrequency: monthly\nday: '0'\n```\n", "CraftBot never runs this task"),
        ("### [M] A\n```yaml\nid: a\nfrequency: monthly\nday: [1]\n```\n", "CraftBot's heartbeat fails"),
        ("### [DAILY] A\n```yaml\nid: a\nlast_run: 2026-05-04\n```\n", "CraftBot's heartbeat fails"),
    ],
)
def test_blocks_that_are_not_tasks_stay_verbatim(body: str, reason: str) -> None:
    text = SECTION.format(body)
    doc = parse(text)

    assert doc.tasks == []
    assert [w.line for w in doc.warnings] == [2]
    assert reason in doc.warnings[0].reason
    assert render(doc) == text


# Python 3.10's datetime.fromisoformat, which CraftBot's parser calls on last_run, next_run and
# each outcome's timestamp (CraftBot runs on 3.10: environment.yml python=3.10, Dockerfile
# python:3.10-slim): the stamps it reads, and stamps 3.11 reads but 3.10 refuses.
PY310_READS = [
    "2026-05-03",
    "2026-05-03T09",
    "2026-05-03T09:00",
    "2026-05-03 09:00:00",
    "2026-05-03x09:00:00",  # any one separator
    "2026-05-03T09:00:00.500",
    "2026-05-03T09:00:00.500000",
    "2026-05-03T09:00:00Z",
    "2026-05-03T09:00:00+08:00",
    "2026-05-03T09:00:00.123-05:00",
    "2026-05-03T09+08:00",
    "2026-05-03T09:00:00+08:00:30",
    "2026-05-03T09:00:00+08:00:30.123456",
    "2026-05-03T09:00:00 +08:00",  # one stray character before the offset
]
PY310_REFUSES = [
    "2026-05-03T09:00:00.5",  # a fraction of 1, 2, 4, 5 or more than 6 digits
    "2026-05-03T09:00:00.5000",
    "2026-05-03T09:00:00.123456789",
    "2026-05-03T09:00:00,500",  # a comma for the point
    "2026-05-03T0900",  # a compact time
    "2026-05-03T09:00+0800",  # a compact offset, an offset of hours alone
    "2026-05-03T09:00+08",
    "2026-05-03T09:00:00+08:00:30.123",
    "20260503T090000",  # a compact date, a week date
    "2026-W18-7",
]


@pytest.mark.parametrize("stamp", PY310_READS)
def test_a_stamp_python_3_10_reads_is_a_last_run(stamp: str) -> None:
    body = f"### [DAILY] A\n```yaml\nid: a\nlast_run: '{stamp}'\n```\n"
    doc = parse(SECTION.format(body))

    assert [t.id for t in doc.tasks] == ["a"] and doc.warnings == []
    assert doc.tasks[0].last_run == datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@pytest.mark.parametrize("key", ["last_run", "next_run", "outcome_history"])
@pytest.mark.parametrize("stamp", PY310_REFUSES)
def test_a_stamp_only_python_3_11_reads_stops_craftbots_parser(stamp: str, key: str) -> None:
    """Python 3.11 reads these, 3.10 does not: on the Python CraftBot runs, its parser fails on the
    whole file and no task runs. hb read them and said nothing."""
    value = f"[{{timestamp: '{stamp}', result: x}}]" if key == "outcome_history" else f"'{stamp}'"
    body = f"### [DAILY] A\n```yaml\nid: a\n{key}: {value}\n```\n### [DAILY] B\n```yaml\nid: b\n```\n"
    text = SECTION.format(body)
    doc = parse(text)

    assert [t.id for t in doc.tasks] == ["b"]
    assert [w.line for w in doc.warnings] == [2]
    assert f"{stamp!r} is not an ISO 8601 time: CraftBot's parser fails" in doc.warnings[0].reason
    assert render(doc) == text


def test_second_block_with_the_same_id_is_not_a_task() -> None:
    body = "### [DAILY] A\n```yaml\nid: a\n```\n### [HOURLY] Again\n```yaml\nid: a\n```\n"
    doc = parse(SECTION.format(body))

    assert [(t.id, t.frequency) for t in doc.tasks] == [("a", "daily")]
    assert doc.warnings[0].line == 6
    assert "duplicate id 'a' (first on line 2): CraftBot runs both" in doc.warnings[0].reason
    assert doc.warnings[0].task_id == "a"


def test_a_second_block_with_the_id_of_a_first_hb_does_not_read_is_not_a_task_either() -> None:
    """CraftBot's get_task_by_id finds the first block of an id, so its runs are recorded there:
    hb took the second block for the task when it did not read the first (a frequency it does
    not know), and wrote its runs into a block CraftBot does not record them in."""
    body = "### [DAILY] A\n```yaml\nid: a\nfrequency: Daily\n```\n\n### [DAILY] B\n```yaml\nid: a\n```\n"
    doc = parse(SECTION.format(body))

    assert list(doc.tasks) == []
    assert [w.line for w in doc.warnings] == [2, 8]
    assert doc.warnings[1].reason == (
        "not a task, kept as written: duplicate id 'a' (first on line 2): CraftBot runs both, hb neither "
        "(the first is not read: see its warning)"
    )


@pytest.mark.parametrize(
    ("value", "craftbot_fails"), [("10.5", False), ("true", False), ('"high"', True), ("[1]", True)]
)
def test_a_priority_that_is_no_whole_number_says_what_craftbot_does_with_it(
    value: str, craftbot_fails: bool
) -> None:
    """CraftBot sorts due tasks by priority: a fraction or a boolean sorts as a number; text or a
    list against another task's number stops its heartbeat."""
    doc = parse(SECTION.format(f"### [DAILY] A\n```yaml\nid: a\npriority: {value}\n```\n"))

    assert doc.tasks[0].priority == 50
    [warning] = doc.warnings
    assert warning.reason.startswith(f"priority {yaml.safe_load(value)!r} is not a whole number: using 50")
    assert ("CraftBot's heartbeat fails" in warning.reason) is craftbot_fails


def test_an_hourly_task_whose_last_run_is_no_date_is_read_with_a_warning() -> None:
    """CraftBot's hourly branch never reads last_run, so it runs the task; but its to_dict calls
    last_run.isoformat() on every save, so recording any task's outcome fails until this task
    runs. hb read it without a word."""
    doc = parse(SECTION.format("### [HOURLY] A\n```yaml\nid: a\nfrequency: hourly\nlast_run: 5\n```\n"))

    assert [(t.id, t.last_run) for t in doc.tasks] == [("a", None)]
    [warning] = doc.warnings
    assert warning.reason == (
        "last_run 5 is not a date and time: CraftBot runs the task, but its save fails on it (no "
        "outcome of any task is written until this one runs)"
    )


def test_task_outside_the_markers_is_reported_not_read() -> None:
    doc = parse("# Notes\n\n### [DAILY] Stray\n```yaml\nid: stray\n```\n")

    assert doc.tasks == []
    assert [(w.line, w.reason) for w in doc.warnings] == [
        (3, "task outside the PROACTIVE_TASKS markers is not read (CraftBot reads only between them)")
    ]


_HOLDS_NOT = (
    "is not a whole number >= 0 hb can hold: counted as 0 in the ledger "
    "(a run adds one to the file's own, as CraftBot's does)"
)
_FAILS = (
    "is not a number: CraftBot's record of a run fails on it (it adds one); "
    "hb counts from 0 and writes its count at the next run"
)


# CraftBot's manager does ``run_count += 1`` on whatever YAML gave and writes the sum back as it
# is (run against its code): a bool counts as Python's 1 or 0, a number of any kind counts on, a
# text, a list or null makes its record of a run fail (TypeError) and leaves the file as it was
@pytest.mark.parametrize(
    ("written", "held", "after_a_run", "warning"),
    [
        ("false", 0, 1, "run_count false is not a number: counted as 0, as CraftBot does"),
        ("true", 1, 2, "run_count true is not a number: counted as 1, as CraftBot does"),
        ("0.0", 0, 1.0, f"run_count 0.0 {_HOLDS_NOT}"),
        ("2.5", 0, 3.5, f"run_count 2.5 {_HOLDS_NOT}"),
        ("-1", 0, 0, f"run_count -1 {_HOLDS_NOT}"),
        ("1073741824", 0, 1073741825, f"run_count 1073741824 {_HOLDS_NOT}"),
        ("'3'", 0, 1, f"run_count '3' {_FAILS}"),
        ("null", 0, 1, f"run_count null {_FAILS}"),
        ("[]", 0, 1, f"run_count [] {_FAILS}"),
    ],
)
def test_a_run_count_that_is_no_count_hb_holds_counts_on_as_craftbot_counts_it(
    written: str, held: int, after_a_run: float, warning: str
) -> None:
    doc = parse(SECTION.format(f"### [DAILY] Tick\n```yaml\nid: tick\nrun_count: {written}\n```\n"))
    [tick] = doc.tasks
    assert tick.run_count == held
    assert [w.reason for w in doc.warnings] == [warning]
    ran = record_outcome(tick, result="ok", success=True, now=NOW)
    count = ran.fields["run_count"]
    assert count == after_a_run and type(count) is type(after_a_run)  # (True == 1: the type tells)
    again = parse(render(with_tasks(doc, [ran], now=NOW)))
    assert again.tasks[0].fields["run_count"] == after_a_run


def test_soft_problems_keep_the_task_and_warn() -> None:
    body = (
        "### [Daily] Tick\n```yaml\nid: Tick-Tock\ntime: '9:5'\npriority: high\n"
        "permission_tier: 7\nenabled: maybe\nrun_count: many\ninstruction: 42\n```\n"
    )
    doc = parse(SECTION.format(body))

    [tick] = doc.tasks
    assert (tick.id, tick.frequency, tick.time) == ("Tick-Tock", "daily", "09:05")  # as CraftBot splits it
    assert (tick.priority, tick.permission_tier, tick.enabled) == (50, 3, True)
    assert (tick.run_count, tick.instruction) == (0, "42")
    reasons = " | ".join(w.reason for w in doc.warnings)
    assert "not snake_case" in reasons
    assert "priority 'high' is not a whole number" in reasons
    assert "permission_tier 7 is not 0-3" in reasons
    assert "enabled 'maybe' is not true/false: CraftBot runs the task" in reasons
    assert "run_count 'many'" in reasons and "instruction is not text" in reasons
    assert all(w.line == 2 for w in doc.warnings)


@pytest.mark.parametrize(
    ("frequency", "day", "expected"),
    [
        ("weekly", "Monday", "monday"),
        ("weekly", "SUNDAY", "sunday"),
        ("monthly", "31", "31"),
        ("monthly", "1", "1"),
        ("monthly", "'05'", "5"),
        ("monthly", "15", "15"),
        ("monthly", "0", None),  # a day CraftBot reads as false: not checked
        ("daily", "friday", None),  # a day means nothing to a daily task
        ("hourly", "3", None),
    ],
)
def test_day_is_read_for_its_frequency(frequency: str, day: str, expected: str | None) -> None:
    body = f"### [X] T\n```yaml\nid: t\nfrequency: {frequency}\nday: {day}\n```\n"

    [t] = parse(SECTION.format(body)).tasks

    assert t.day == expected


def test_a_monthly_day_that_is_no_number_is_any_day_as_craftbot_reads_it() -> None:
    body = "### [MONTHLY] T\n```yaml\nid: t\nfrequency: monthly\nday: last\n```\n"
    doc = parse(SECTION.format(body))

    [t] = doc.tasks
    assert t.day is None
    assert "day 'last' is not a number: CraftBot ignores it, any day" in doc.warnings[0].reason


# --- writing ---


def test_with_the_same_tasks_nothing_changes() -> None:
    doc = parse(FIXTURE)

    again = with_tasks(doc, doc.tasks, now=NOW)

    assert again is doc
    assert render(again) == FIXTURE


def test_recording_an_outcome_changes_only_that_block_and_last_updated() -> None:
    doc = parse(FIXTURE)
    old_block = block_of(FIXTURE, "### [DAILY] Morning Briefing")
    done = record_outcome(task(doc, "morning_briefing"), result="sent", success=True, now=NOW)

    text = render(with_tasks(doc, [done, *doc.tasks[1:]], now=NOW))

    new_block = block_of(text, "### [DAILY] Morning Briefing")
    stamped = FIXTURE.replace("2026-04-28T08:00:00Z", "2026-05-01T01:00:00Z")
    assert text.replace(new_block, old_block) == stamped
    written = yaml.safe_load(new_block.split("```yaml\n")[1].removesuffix("```\n"))
    assert written["run_count"] == 3
    assert written["outcome_history"][-1] == {
        "timestamp": "2026-05-01T01:00:00Z",
        "result": "sent",
        "success": True,
    }
    assert written["last_run"] == "2026-05-01T01:00:00+00:00"  # as CraftBot's manager, with each outcome
    assert list(written) == [*task(doc, "morning_briefing").fields, "last_run"]
    assert written["owner"] == "val"


def test_rewritten_block_keeps_heading_gap_and_fence_lines() -> None:
    doc = parse(FIXTURE)
    paused = dataclasses.replace(task(doc, "weekly_code_review"), enabled=False)

    text = render(with_tasks(doc, [paused if t.id == paused.id else t for t in doc.tasks], now=NOW))

    assert block_of(text, "### [WEEKLY]") == (
        "### [WEEKLY] 每周代码回顾\n\n```yaml\n"
        'id: weekly_code_review\nfrequency: weekly\nday: sunday\ntime: "20:00"\n'
        "priority: 40\ninstruction: 回顾本周的代码改动，找出模式、问题和改进点。\nrun_count: 0\n"
        "review_scope: {repos: [hb, agent], max_prs: 20}\nenabled: false\n```\n"
    )  # only the new key is written; every line already there stays as written


def test_an_unchanged_heading_keeps_its_own_spelling() -> None:
    text = SECTION.format("### [daily]   Tick \nSome words first.\n```yaml \nid: tick\n```\n")
    doc = parse(text)
    assert doc.tasks[0].name == "Tick"
    done = record_outcome(doc.tasks[0], result="ok", success=True, now=NOW)

    out = render(with_tasks(doc, [done], now=NOW))

    assert out.startswith(
        "<!-- PROACTIVE_TASKS_START -->\n### [daily]   Tick \nSome words first.\n```yaml \nid: tick\n"
    )
    assert out.endswith(
        "  success: true\nlast_run: '2026-05-01T01:00:00+00:00'\n```\n<!-- PROACTIVE_TASKS_END -->\n"
    )


def test_a_changed_field_is_written_too() -> None:
    doc = parse(FIXTURE)
    triage = task(doc, "inbox_triage")
    edited = dataclasses.replace(triage, fields={**triage.fields, "priority": 5})

    new = with_tasks(doc, [edited if t.id == edited.id else t for t in doc.tasks], now=NOW)

    assert task(new, "inbox_triage").priority == 5


def test_renaming_a_task_rewrites_its_heading() -> None:
    doc = parse(FIXTURE)
    renamed = dataclasses.replace(task(doc, "inbox_triage"), name="邮件分拣")

    text = render(with_tasks(doc, [renamed if t.id == renamed.id else t for t in doc.tasks], now=NOW))

    assert "### [HOURLY] 邮件分拣\n\n```yaml\nid: inbox_triage\n" in text
    assert "Inbox triage" not in text


def test_the_malformed_block_survives_ten_updates() -> None:
    doc = parse(FIXTURE)
    for hour in range(10):
        triage = record_outcome(
            task(doc, "inbox_triage"),
            result=f"tick {hour}",
            success=True,
            now=NOW + timedelta(hours=hour),
        )
        doc = with_tasks(doc, [triage if t.id == triage.id else t for t in doc.tasks], now=NOW)

    text = render(doc)
    assert MALFORMED_BLOCK in text
    assert [w.text for w in doc.warnings] == ["### [MONTHLY] Broken budget check"]
    assert task(doc, "inbox_triage").run_count == 51


def test_a_sixth_outcome_trims_the_oldest() -> None:
    five = ProactiveTask(
        id="t", name="T", frequency="daily", run_count=5,
        outcome_history=tuple(outcome(n) for n in range(1, 6)),
    )  # fmt: skip

    sixth = record_outcome(five, result="run 6", success=False, now=NOW)

    assert [o["result"] for o in sixth.outcome_history] == [f"run {n}" for n in range(2, 6)] + ["run 6"]
    assert sixth.outcome_history[-1] == {
        "timestamp": "2026-05-01T01:00:00Z",
        "result": "run 6",
        "success": False,
    }
    assert sixth.run_count == 6
    assert sixth.fields["outcome_history"] == list(sixth.outcome_history)


def test_a_long_history_is_trimmed_when_its_block_is_rewritten() -> None:
    history = "".join(
        f"  - {{timestamp: '2026-04-0{n}T00:00:00Z', result: run {n}, success: true}}\n" for n in range(1, 8)
    )
    text = SECTION.format(f"### [DAILY] T\n```yaml\nid: t\noutcome_history:\n{history}```\n")
    doc = parse(text)
    assert len(doc.tasks[0].outcome_history) == 7  # read as written

    new = with_tasks(doc, [dataclasses.replace(doc.tasks[0], priority=9)], now=NOW)

    assert [o["result"] for o in new.tasks[0].outcome_history] == [f"run {n}" for n in range(3, 8)]


def test_with_tasks_on_a_fresh_parse_keeps_all_prose() -> None:
    doc = parse(FIXTURE)
    tasks = [record_outcome(t, result="ok", success=True, now=NOW) for t in doc.tasks]

    after = with_tasks(doc, tasks, now=NOW)

    prose = [p for p in doc.parts if isinstance(p, str)]
    assert [p for p in after.parts if isinstance(p, str)] == prose
    assert "".join(prose).startswith("\n# Proactive Behaviour\n\nKeep it light.")
    assert MALFORMED_BLOCK in prose[2]
    assert render(after).endswith("<!-- PROACTIVE_TASKS_END -->\n\n## Goals\n\n- Fewer, better messages.\n")


def test_new_tasks_go_before_the_end_marker() -> None:
    doc = parse(FIXTURE)
    new = ProactiveTask(
        id="evening_wrap", name="晚间总结", frequency="weekly", day="friday", time="18:30",
        instruction="Summarise the day.\nList open loops.\n", fields={"owner": "val"},
    )  # fmt: skip

    after = with_tasks(doc, [*doc.tasks, new], now=NOW)

    text = render(after)
    assert text.replace("2026-05-01T01:00:00Z", "2026-04-28T08:00:00Z") == FIXTURE.replace(
        "<!-- PROACTIVE_TASKS_END -->",
        "### [WEEKLY] 晚间总结\n```yaml\nowner: val\nid: evening_wrap\nfrequency: weekly\n"
        'time: "18:30"\nday: friday\nenabled: true\npriority: 50\npermission_tier: 0\n'
        "instruction: |\n  Summarise the day.\n  List open loops.\nrun_count: 0\n"
        "outcome_history: []\n```\n\n<!-- PROACTIVE_TASKS_END -->",
    )
    assert task(after, "evening_wrap").time == "18:30"


def test_markers_are_created_when_missing() -> None:
    text = "---\nversion: 1\n---\n# Proactive\n\nNo tasks yet."
    doc = parse(text)

    after = with_tasks(doc, [ProactiveTask(id="ping", name="Ping", frequency="hourly")], now=NOW)

    assert render(after) == (
        text + "\n\n<!-- PROACTIVE_TASKS_START -->\n\n### [HOURLY] Ping\n```yaml\nid: ping\n"
        "frequency: hourly\nenabled: true\npriority: 50\npermission_tier: 0\nrun_count: 0\n"
        "outcome_history: []\n```\n\n<!-- PROACTIVE_TASKS_END -->\n"
    )
    assert [t.id for t in after.tasks] == ["ping"]


def test_a_removed_task_loses_its_block_and_one_blank_line() -> None:
    doc = parse(FIXTURE)

    after = with_tasks(doc, [t for t in doc.tasks if t.id != "weekly_code_review"], now=NOW)

    removed = block_of(FIXTURE, "### [WEEKLY]") + "\n"
    expected = FIXTURE.replace(removed, "").replace("2026-04-28T08:00:00Z", "2026-05-01T01:00:00Z")
    assert render(after) == expected


def test_last_updated_is_only_set_when_the_key_exists() -> None:
    text = "---\nversion: 1\n---\n" + SECTION.format("")
    doc = parse(text)

    after = with_tasks(doc, [ProactiveTask(id="a", name="A", frequency="daily")], now=NOW)

    assert render(after).startswith("---\nversion: 1\n---\n<!-- PROACTIVE_TASKS_START -->\n")


def test_last_updated_keeps_its_quoting() -> None:
    text = "---\nlast_updated: 2026-04-01T00:00:00Z\n---\n" + SECTION.format("")
    after = with_tasks(parse(text), [ProactiveTask(id="a", name="A", frequency="daily")], now=NOW)

    assert render(after).startswith("---\nlast_updated: 2026-05-01T01:00:00Z\n---\n")


def test_crlf_file_gets_crlf_blocks() -> None:
    text = FIXTURE.replace("\n", "\r\n")
    doc = parse(text)
    done = record_outcome(task(doc, "inbox_triage"), result="ok", success=True, now=NOW)

    out = render(with_tasks(doc, [done if t.id == done.id else t for t in doc.tasks], now=NOW))

    assert "\n" not in out.replace("\r\n", "")


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        (
            [ProactiveTask(id="a", name="A", frequency="daily")] * 2,
            "task id 'a' is given twice",
        ),
        ([ProactiveTask(id="a", name="A", frequency="yearly")], "frequency 'yearly'"),
        ([ProactiveTask(id=" ", name="A", frequency="daily")], "non-empty string"),
        ([ProactiveTask(id="a", name="A\nB", frequency="daily")], "one heading line"),
        ([ProactiveTask(id="a", name="A", frequency="daily", fields={"x": object()})], "YAML"),
    ],
)
def test_unwritable_tasks_are_invalid_input(tasks: list[ProactiveTask], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        with_tasks(parse(FIXTURE), tasks, now=NOW)


def test_now_must_be_aware() -> None:
    doc = parse(FIXTURE)
    with pytest.raises(InvalidInput):
        with_tasks(doc, doc.tasks, now=datetime(2026, 5, 1))
    with pytest.raises(InvalidInput):
        record_outcome(doc.tasks[0], result="x", success=True, now=datetime(2026, 5, 1))


def test_outcome_timestamps_are_utc_z() -> None:
    tokyo = timezone(timedelta(hours=9))
    done = record_outcome(
        parse(FIXTURE).tasks[0], result="ok", success=True, now=datetime(2026, 5, 1, 9, tzinfo=tokyo)
    )

    assert done.outcome_history[-1]["timestamp"] == "2026-05-01T00:00:00Z"


# --- properties ---

FRAGMENTS = [
    "<!-- PROACTIVE_TASKS_START -->\n",
    "<!-- PROACTIVE_TASKS_END -->\n",
    "### [DAILY] A\n",
    "### [weekly] 周报\n",
    "### [NOPE] x\n",
    "```yaml\n",
    "```\n",
    "~~~\n",
    "id: a\n",
    "id: b\n",
    "frequency: daily\n",
    "time: 9:30\n",
    "outcome_history: [{result: x}]\n",
    "key: [\n",
    "- x\n",
    "prose\n",
    "\n",
    "\r\n",
    "# title\n",
    "last words",
]


START_BLOCK_END = (
    "<!-- PROACTIVE_TASKS_START -->\n### [DAILY] Good\n```yaml\nid: good\n```\n<!-- PROACTIVE_TASKS_END -->\n"
)


@st.composite
def proactive_texts(draw: st.DrawFn, *, with_task: bool = False) -> str:
    pieces = draw(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=30))
    front = draw(st.sampled_from(["", "---\nlast_updated: x\n---\n"]))
    if with_task or draw(st.booleans()):  # a readable task somewhere among the pieces
        at = draw(st.integers(0, len(pieces)))
        pieces[at:at] = [START_BLOCK_END]
    return front + "".join(pieces)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(proactive_texts())
def test_render_parse_is_identity(text: str) -> None:
    assert render(parse(text)) == text


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(proactive_texts(with_task=True), st.data())
def test_recording_an_outcome_leaves_every_other_part_alone(text: str, data: st.DataObject) -> None:
    doc = parse(text)
    assume(doc.tasks)
    chosen = data.draw(st.sampled_from(doc.tasks))
    done = record_outcome(chosen, result="ok", success=True, now=NOW)

    after = with_tasks(doc, [done if t.id == done.id else t for t in doc.tasks], now=NOW)

    assert [t.id for t in after.tasks] == [t.id for t in doc.tasks]
    assert [t.raw for t in after.tasks if t.id != chosen.id] == [
        t.raw for t in doc.tasks if t.id != chosen.id
    ]
    assert [p for p in after.parts if isinstance(p, str)] == [p for p in doc.parts if isinstance(p, str)]
    assert task(after, chosen.id).run_count == chosen.run_count + 1


def test_recording_an_outcome_rewrites_only_the_keys_it_changes() -> None:
    block = (
        "### [MONTHLY] Month End\n\n```yaml\n"
        'id: month_end\nfrequency: monthly\nday: "31"   # the last day\nenabled: true\n'
        "# a comment line of its own\n"
        "conditions: [weekdays_only]\ninstruction: Close the books.\ncustom_key: keep me   # a comment\n"
        "outcome_history:\n"
        '  - {timestamp: "2026-01-31T00:00:00Z", result: "r1", success: true}\n'
        "run_count: 1\n```\n"
    )
    doc = parse(SECTION.format(block))
    done = record_outcome(doc.tasks[0], result="closed", success=True, now=NOW)

    out = render(with_tasks(doc, [done], now=NOW))

    kept = out.split("outcome_history:")[0]
    assert kept.endswith(
        'day: "31"   # the last day\nenabled: true\n# a comment line of its own\n'
        "conditions: [weekdays_only]\ninstruction: Close the books.\ncustom_key: keep me   # a comment\n"
    )
    again = parse(out).tasks[0]
    assert again.run_count == 2 and [h["result"] for h in again.outcome_history] == ["r1", "closed"]
    assert again.fields["custom_key"] == "keep me" and again.conditions == ("weekdays_only",)


@pytest.mark.parametrize(
    "result",
    ["x\x85y", "line one\nx\x85y", "x\u2028y\u2029z", "\x85", "a\ufeffb", "x\x85"],
    ids=["nel", "nel-in-lines", "ls-ps", "nel-alone", "bom", "nel-last"],
)
def test_an_outcome_with_a_line_break_yaml_reads_in_quotes_is_written_so_it_reads_back(result: str) -> None:
    """PyYAML writes a NEL (U+0085) inside a plain, single-quoted or block scalar as it is and
    reads it back as a space: the write was refused, and every later write of the file with it
    (the run never reached CraftBot, which then ran the task again)."""
    doc = parse(SECTION.format('### [DAILY] A\n```yaml\nid: a\nfrequency: daily\ntime: "08:00"\n```\n'))
    done = record_outcome(doc.tasks[0], result=result, success=True, now=NOW)

    out = render(with_tasks(doc, [done], now=NOW))

    again = parse(out).tasks[0]
    assert [h["result"] for h in again.outcome_history] == [result]
    assert again.last_run == done.last_run and again.run_count == 1


def test_an_outcome_keeps_the_comments_and_the_lines_of_the_history_it_extends() -> None:
    """FORMATS 3's own example block: the runtime's comments survive hb's outcomes (the entries
    older than the outcomes added, as a history newest last has them)."""
    block = (
        "### [DAILY] Morning Briefing\n```yaml\nid: morning_briefing\n"
        "run_count: 3                  # maintained by the runtime\n"
        "outcome_history:              # last 5 outcomes, newest last\n"
        '  - {timestamp: "2026-04-29T00:04:00Z", result: "a", success: true}\n'
        "  # a note between entries\n"
        '  - {timestamp: "2026-04-30T00:04:00Z", result: "b", success: true}\n'
        "```\n"
    )
    doc = parse(SECTION.format(block))
    done = record_outcome(doc.tasks[0], result="sent", success=True, now=NOW)
    out = render(with_tasks(doc, [done], now=NOW))
    assert "run_count: 4                  # maintained by the runtime\n" in out
    assert "outcome_history:              # last 5 outcomes, newest last\n" in out
    assert (
        '  - {timestamp: "2026-04-29T00:04:00Z", result: "a", success: true}\n  # a note between entries\n'
        in out
    )
    assert out.endswith(
        "  - {timestamp: '2026-05-01T01:00:00Z', result: sent, success: true}\n"
        "last_run: '2026-05-01T01:00:00+00:00'\n```\n<!-- PROACTIVE_TASKS_END -->\n"
    )
    # the history full: the oldest entry's line goes, the rest stay as written
    for n in range(3):
        done = record_outcome(done, result=f"r{n}", success=True, now=NOW)
    out = render(with_tasks(parse(out), [done], now=NOW))
    assert '"a"' not in out and '  - {timestamp: "2026-04-30T00:04:00Z", result: "b", success: true}\n' in out
    assert [h["result"] for h in parse(out).tasks[0].outcome_history] == ["b", "sent", "r0", "r1", "r2"]


@pytest.mark.parametrize("history", ["[]", '[{timestamp: "2026-05-01T00:04:00Z", result: a, success: true}]'])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_list_written_on_one_line_keeps_its_comment_when_it_grows_onto_several(
    history: str, newline: str
) -> None:
    """``outcome_history: []  # newest last``, a list written in flow style on its key's line:
    the first outcome writes its items below the key, and the line's comment stays on it (it was
    lost with the flow value, while a scalar's comment was kept)."""
    block = (
        "### [DAILY] Morning\n```yaml\nid: morning\nfrequency: daily\n"
        "run_count: 0             # maintained by the runtime\n"
        f"outcome_history: {history}      # last 5, newest last\n"
        "```\n"
    ).replace("\n", newline)
    doc = parse(SECTION.replace("\n", newline).format(block))
    done = record_outcome(doc.tasks[0], result="sent", success=True, now=NOW)

    out = render(with_tasks(doc, [done], now=NOW))

    assert f"run_count: 1             # maintained by the runtime{newline}" in out
    assert f"outcome_history:      # last 5, newest last{newline}- " in out
    assert out.count("\r\n") == (out.count("\n") if newline == "\r\n" else 0)
    again = parse(out).tasks[0]
    assert [h["result"] for h in again.outcome_history] == ["a", "sent"][-len(done.outcome_history) :]
    assert again.outcome_history == done.outcome_history and again.run_count == 1


def test_a_hash_inside_a_quoted_value_is_no_comment_to_keep() -> None:
    block = '### [DAILY] Tick\n```yaml\nid: tick\nfrequency: daily\ninstruction: "step # 1"\n```\n'
    doc = parse(SECTION.format(block))
    edited = dataclasses.replace(doc.tasks[0], instruction="step # 2")

    out = render(with_tasks(doc, [edited], now=NOW))

    assert parse(out).tasks[0].instruction == "step # 2"
    assert "# 1" not in out


def test_a_block_written_as_one_flow_mapping_stays_one_with_its_comments() -> None:
    """A block that is one flow mapping on one line, with a comment above it and one after it:
    the line is written again in flow style (the keys that changed in place), and both
    comments stay (the whole block was written in block style, without them)."""
    block = "### [DAILY] Tick\n\n```yaml\n# by hand\n  {id: tick, frequency: daily}   # one line\n```\n"
    doc = parse(SECTION.format(block))
    done = record_outcome(doc.tasks[0], result="ok", success=True, now=NOW)

    out = render(with_tasks(doc, [done], now=NOW))

    assert "```yaml\n# by hand\n  {id: tick, frequency: daily, run_count: 1, outcome_history: [{" in out
    assert "}   # one line\n```\n" in out
    again = parse(out).tasks[0]
    assert (again.id, again.frequency, again.run_count, again.outcome_history) == (
        "tick",
        "daily",
        1,
        done.outcome_history,
    )


def test_a_layout_that_cannot_be_spliced_is_written_whole_and_reads_the_same() -> None:
    block = "### [DAILY] Tick\n\n```yaml\n{id: tick,\n  frequency: daily}\n```\n"  # a flow mapping, two lines
    doc = parse(SECTION.format(block))
    done = record_outcome(doc.tasks[0], result="ok", success=True, now=NOW)

    again = parse(render(with_tasks(doc, [done], now=NOW))).tasks[0]

    assert (again.id, again.frequency, again.run_count) == ("tick", "daily", 1)


@settings(max_examples=300, deadline=None)
@given(
    old=st.lists(st.sampled_from([0, 1, {"r": "a"}, {"r": "b"}]), max_size=12),
    new=st.lists(st.sampled_from([0, 1, {"r": "a"}, {"r": "b"}]), max_size=12),
)
def test_overlap_is_the_longest_end_of_the_old_list_the_new_one_starts_with(old: list, new: list) -> None:
    longest = max(n for n in range(min(len(old), len(new)) + 1) if old[len(old) - n :] == new[:n])
    assert proactive.overlap(old, new) == longest


def test_overlap_of_thousands_of_equal_outcomes_compares_linearly_many_items() -> None:
    """outcome_history lists thousands long (within hb's YAML bounds) of equal items, whose last
    one differs: trying each start compared about n*n/2 items; the prefix function about 6n."""

    class Counted(dict):  # type: ignore[type-arg]
        compared = 0

        def __eq__(self, other: object) -> bool:
            Counted.compared += 1
            return dict.__eq__(self, other)

        def __ne__(self, other: object) -> bool:
            return not self.__eq__(other)

        __hash__ = None  # type: ignore[assignment]

    n = 3000
    old = [Counted(r="a") for _ in range(n)] + [Counted(r="c")]
    new = [Counted(r="a") for _ in range(n)] + [Counted(r="b")]
    assert proactive.overlap(old, new) == 0
    assert Counted.compared <= 8 * n  # (the prefix function: at most a few per item; before, ~n * n / 2)


def test_an_outcome_is_placed_in_the_history_by_its_time_newest_last() -> None:
    """outcome_history is newest last (CraftBot appends and keeps [-5:]): an outcome older than
    entries already there goes before them, and the newest five stay. CraftBot's naive
    timestamps are its local time (``zone``)."""
    tokyo = timezone(timedelta(hours=9))
    history = tuple(
        {"timestamp": stamp, "result": stamp, "success": True}
        for stamp in ("2026-05-04T10:00:00", "2026-05-04T02:00:00Z", "not a time", "2026-05-04T12:00:00")
    )
    task = ProactiveTask(id="a", name="A", frequency="daily", outcome_history=history)
    at = datetime(2026, 5, 4, 11, 0, tzinfo=tokyo)
    done = record_outcome(task, result="hb", success=True, now=at, zone=tokyo)
    # moved back past the later 12:00 only: an entry whose time does not read stays ahead of it
    assert [o["result"] for o in done.outcome_history] == [
        "2026-05-04T10:00:00",
        "2026-05-04T02:00:00Z",
        "not a time",
        "hb",
        "2026-05-04T12:00:00",
    ]
    assert done.fields["outcome_history"] == list(done.outcome_history)
    early = record_outcome(done, result="early", success=True, now=datetime(2026, 5, 4, 10, 30, tzinfo=tokyo))
    assert [o["result"] for o in early.outcome_history] == [  # the newest five: 10:00 dropped
        "2026-05-04T02:00:00Z",
        "not a time",
        "early",
        "hb",
        "2026-05-04T12:00:00",
    ]
    later = datetime(2026, 5, 4, 12, 30, tzinfo=tokyo)
    newest = record_outcome(done, result="newest", success=True, now=later)
    assert [o["result"] for o in newest.outcome_history][-1] == "newest"


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_an_outcome_changes_no_byte_of_the_block_it_does_not_mean_to(newline: str) -> None:
    """Bytes of a block hb did not mean to change were lost when an outcome edited it: the
    ``---`` and ``...`` that open and close its YAML document, the blank line after the last key
    (it went with the key's value), and a CR-only file's line endings (written as LF). CraftBot
    reads all of them (yaml.safe_load; universal newlines)."""
    block = (
        "### [DAILY] Morning Briefing\n```yaml\n---\nid: morning_briefing\nrun_count: 3   # kept\n"
        "last_run: null # never\n\n...\n```\n"
    )
    doc = parse(SECTION.format(block).replace("\n", newline))
    done = record_outcome(doc.tasks[0], result="sent", success=True, now=NOW)
    out = render(with_tasks(doc, [done], now=NOW))
    assert out == SECTION.format(
        "### [DAILY] Morning Briefing\n```yaml\n---\nid: morning_briefing\nrun_count: 4   # kept\n"
        "last_run: '2026-05-01T01:00:00+00:00' # never\noutcome_history:\n"
        "- timestamp: '2026-05-01T01:00:00Z'\n  result: sent\n  success: true\n\n...\n```\n"
    ).replace("\n", newline)
    assert parse(out).tasks[0].fields == done.fields
    # a blank line before the fence, no document markers
    plain = block.replace("---\n", "").replace("...\n", "")
    doc = parse(SECTION.format(plain).replace("\n", newline))
    out = render(
        with_tasks(doc, [record_outcome(doc.tasks[0], result="sent", success=True, now=NOW)], now=NOW)
    )
    assert out.endswith(f"  success: true{newline}{newline}```{newline}<!-- PROACTIVE_TASKS_END -->{newline}")
