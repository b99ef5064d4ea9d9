"""CraftBot's PROACTIVE.md, as its own code reads, decides and writes it, stated as facts.

CraftBot (zfoong/CraftBot, ``app/proactive``: parser.py, types.py, manager.py) owns
PROACTIVE.md. Each test states what its code does with a file (file text in, tasks
out; a run recorded, what its manager decides next) and that hb does the same, or
where hb differs on purpose (the README's Compatibility section lists each). The
facts were read from CraftBot's source and checked by running its parser and
manager on files hb wrote; CraftBot itself is not needed here.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from heartbeat.errors import InvalidInput
from heartbeat.formats import proactive
from heartbeat.formats.proactive import END_MARKER, START_MARKER, ProactiveTask
from heartbeat.rules.recurrence import Frequency, due_period
from tests.conftest import Runner
from tests.recur.conftest import due_ids, rule

NOW = datetime.fromisoformat("2026-05-04T07:00:12+09:00")


def section(*blocks: str) -> str:
    return f"# Proactive Tasks\n\n{START_MARKER}\n\n" + "".join(blocks) + f"{END_MARKER}\n\n## Goals\n"


def block(heading: str, *lines: str, fence: str = "```yaml") -> str:
    return f"{heading}\n{fence}\n" + "".join(f"{line}\n" for line in lines) + "```\n\n"


def tasks(text: str) -> list[tuple[str, str, str]]:
    return [(t.id, t.name, t.frequency) for t in proactive.parse(text).tasks]


def reasons(text: str) -> list[str]:
    return [w.reason for w in proactive.parse(text).warnings]


def craftbot_blocks(text: str) -> dict[str, dict[str, Any]]:
    """The yaml mapping of each task as CraftBot's parser finds it, restated: the text between
    the first start marker and the first end marker of the file (read with universal newlines);
    a heading is ``###``, ``[WORD]`` and a name at the start of a line; its yaml is the first
    ```` ```yaml ```` block before the next heading, up to the first three backticks."""
    text = text.replace("\r\n", "\n")
    start, end = text.find(START_MARKER), text.find(END_MARKER)
    if start == -1 or end == -1:
        return {}
    tasks_text = text[start + len(START_MARKER) : end]
    headings = list(re.finditer(r"^###\s*\[(\w+)\]\s*(.+)$", tasks_text, re.MULTILINE))
    found: dict[str, dict[str, Any]] = {}
    for i, heading in enumerate(headings):
        stop = headings[i + 1].start() if i + 1 < len(headings) else len(tasks_text)
        match = re.search(r"```yaml\s*\n(.*?)```", tasks_text[heading.end() : stop], re.DOTALL)
        if match is not None:
            data = yaml.safe_load(match.group(1))
            if data:
                found[data.get("id", "")] = data
    return found


def craftbot_time(value: str) -> datetime:
    """How CraftBot's types.py reads last_run, next_run and outcome timestamps."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# --- the parser: file text in, tasks out ---------------------------------------------------------


def test_a_task_heading_needs_no_spaces() -> None:
    text = section(block("###[DAILY]Morning", "id: a"), block("###  [weekly]   Review  ", "id: b"))

    assert tasks(text) == [("a", "Morning", "daily"), ("b", "Review", "daily")]  # no frequency: daily


def test_the_task_section_runs_from_the_first_start_to_the_first_end_marker_wherever_they_stand() -> None:
    task = block("### [DAILY] A", "id: a")
    assert tasks(f"Intro text {START_MARKER}\n{task}{END_MARKER}\n") == [("a", "A", "daily")]
    assert tasks(f"{START_MARKER}\n{task}") == []  # no end marker: no tasks at all
    assert reasons(f"{START_MARKER}\n{task}") == [
        "task section has no end marker: CraftBot reads no task from this file"
    ]
    assert tasks(f"{END_MARKER}\n{START_MARKER}\n{task}{END_MARKER}\n") == []  # end before start
    after_end = f"{START_MARKER}\n{task}{END_MARKER}\n" + block("### [DAILY] B", "id: b")
    assert tasks(after_end) == [("a", "A", "daily")]
    assert "task outside the PROACTIVE_TASKS markers is not read" in reasons(after_end)[0]


def test_the_yaml_is_the_first_yaml_block_after_the_heading() -> None:
    text = section("### [DAILY] A\nWhy: the user asked.\n```yaml\nid: a\n```\n```yaml\nid: b\n```\n\n")

    assert tasks(text) == [("a", "A", "daily")]  # prose before it is fine; a second block is not read
    assert reasons(text) == ["this ```yaml block follows no task heading CraftBot reads: not a task"]


@pytest.mark.parametrize("fence", ["```yml", "~~~yaml", "```", "```YAML", "``` yaml"])
def test_only_a_block_opened_with_yaml_is_read(fence: str) -> None:
    closing = "~~~" if fence.startswith("~") else "```"
    text = section(f"### [DAILY] A\n{fence}\nid: a\n{closing}\n\n")

    assert tasks(text) == []
    [reason] = reasons(text)
    assert "not a task: CraftBot reads only a block opened with ```yaml" in reason
    assert proactive.render(proactive.parse(text)) == text


def test_a_block_ends_at_the_first_three_backticks() -> None:
    text = section(block("### [WEEKLY] A", "id: a", "instruction: run ```ls``` now", "frequency: weekly"))

    [task] = proactive.parse(text).tasks
    assert (task.instruction, task.frequency) == ("run", "daily")  # the yaml CraftBot reads stops there


def test_a_line_of_three_hashes_inside_a_block_starts_a_heading() -> None:
    text = section(
        block("### [DAILY] A", "id: a", "### [NOTE] keep it short", "time: '08:00'"),
        block("### [HOURLY] B", "id: b", "frequency: hourly"),
    )

    assert tasks(text) == [("b", "B", "hourly")]
    assert "its ```yaml block is not closed before the next task heading" in reasons(text)[0]


def test_a_task_inside_an_html_comment_is_still_read() -> None:
    text = section("<!--\n" + block("### [DAILY] Old", "id: old") + "-->\n")

    assert tasks(text) == [("old", "Old", "daily")]
    assert reasons(text) == ["this task is inside an HTML comment: CraftBot reads and runs it all the same"]


def test_the_frequency_comes_from_the_yaml_and_a_missing_one_is_daily() -> None:
    text = section(
        block("### [WEEKLY] No key", "id: a", "day: friday"),
        block("### [WEEKLY] Empty key", "id: b", "frequency:", "day: friday"),
        block("### [DAILY] Key wins", "id: c", "frequency: monthly"),
        block("### [DAILY] Capital", "id: d", "frequency: Daily"),
    )

    assert tasks(text) == [
        ("a", "No key", "daily"),
        ("b", "Empty key", "weekly"),
        ("c", "Key wins", "monthly"),
    ]
    assert reasons(text) == [
        "no frequency: CraftBot reads it as daily, whatever the heading [WEEKLY] says",
        "heading says [DAILY] but frequency is monthly: CraftBot uses monthly",
        "not a task, kept as written: frequency 'Daily' is not hourly, daily, weekly or monthly as CraftBot "
        "writes them: it never runs the task and drops it on its next save",
    ]


def test_a_missing_permission_tier_is_0() -> None:
    [task] = proactive.parse(section(block("### [DAILY] A", "id: a"))).tasks

    assert task.permission_tier == 0


def test_conditions_are_the_mappings_of_the_list_by_their_type() -> None:
    text = section(
        block(
            "### [DAILY] A",
            "id: a",
            "conditions:",
            "  - type: market_hours_only",
            "    exchange: NYSE",
            "  - note: no type given",
            "  - weekdays_only",
        )
    )
    doc = proactive.parse(text)

    [task] = doc.tasks
    assert task.conditions == ("market_hours_only", "unknown", "weekdays_only")
    assert task.fields["conditions"][0] == {"type": "market_hours_only", "exchange": "NYSE"}
    # a plain name: CraftBot reads no condition from it (and its next save writes []); hb judges it
    assert [w.reason for w in doc.warnings] == [
        "condition weekdays_only written as a plain name: hb judges it, CraftBot ignores it and drops it "
        "on its next save (write '- type: weekdays_only')"
    ]


@pytest.mark.parametrize(
    ("value", "enabled"),
    [
        ("true", True),
        ("false", False),
        ("no", False),
        ("'false'", True),
        ("'yes'", True),
        ("0", False),
        ("", False),
    ],
)
def test_enabled_is_true_unless_its_value_is_false_like(value: str, enabled: bool) -> None:
    [task] = proactive.parse(section(block("### [DAILY] A", "id: a", f"enabled: {value}"))).tasks

    assert task.enabled is enabled


@pytest.mark.parametrize(
    ("value", "time"),
    [("'08:15'", "08:15"), ("08:15", "08:15"), ("'8:5'", "08:05"), ("' 7:05'", "07:05"), ("''", None)],
)
def test_a_time_is_an_hour_and_a_minute_split_at_the_colon(value: str, time: str | None) -> None:
    [task] = proactive.parse(section(block("### [DAILY] A", "id: a", f"time: {value}"))).tasks

    assert task.time == time


def test_an_hourly_task_has_no_time() -> None:
    text = section(block("### [HOURLY] A", "id: a", "frequency: hourly", "time: 9:30"))

    [task] = proactive.parse(text).tasks  # CraftBot never reads an hourly task's time: no failure
    assert task.time is None


def test_crlf_reads_as_lf() -> None:
    text = section(
        block("### [DAILY] A", "id: a", "time: '08:15'", "conditions:", "  - type: user_available")
    )
    crlf = text.replace("\n", "\r\n")

    assert proactive.parse(crlf).tasks[0].fields == proactive.parse(text).tasks[0].fields
    assert proactive.render(proactive.parse(crlf)) == crlf


# A file as CraftBot's manager saves it: the front matter rewritten with a naive local time,
# each block in the key order of its to_dict, times naive local with microseconds.
WRITTEN_BY_CRAFTBOT = f"""\
---
version: 1.0
last_updated: 2026-05-04T07:00:12.345678
---

# Proactive Tasks

{START_MARKER}

### [DAILY] Morning Briefing
```yaml
id: daily_morning_briefing
frequency: daily
enabled: true
priority: 50
permission_tier: 1
run_count: 1
instruction: 'Gather weather.

  Send it.'
time: 08:15
conditions:
- type: weekdays_only
last_run: '2026-05-04T07:00:12.345678'
next_run: '2026-05-05T08:30:00'
outcome_history:
- timestamp: '2026-05-04T07:00:12.345678'
  result: Scheduled for 08:15
  success: true
```

### [WEEKLY] Weekly Review
```yaml
id: weekly_weekly_review
frequency: weekly
enabled: true
priority: 50
permission_tier: 0
run_count: 0
instruction: Review.
time: '10:30'
day: friday
conditions: []
outcome_history: []
```

{END_MARKER}
"""


def test_a_file_craftbots_manager_saved_reads_without_a_warning() -> None:
    doc = proactive.parse(WRITTEN_BY_CRAFTBOT)

    assert doc.warnings == []
    briefing, review = doc.tasks
    assert (briefing.time, briefing.conditions, briefing.permission_tier) == ("08:15", ("weekdays_only",), 1)
    assert briefing.instruction == "Gather weather.\nSend it."
    assert briefing.last_run == datetime(2026, 5, 4, 7, 0, 12, 345678)  # naive: CraftBot's local time
    assert (review.day, review.time, review.conditions, review.last_run) == ("friday", "10:30", (), None)


TEMPLATE_HEAD = """\
---
version: "1.0"
last_updated: {{TIMESTAMP}}  # Auto-updated by system (format: YYYY-MM-DDTHH:MM:SSZ)
---
"""


def test_the_templates_front_matter_does_not_stop_hb_sync_or_hb_heartbeat(
    hb_db: Runner, workspace: Path
) -> None:
    hb_db("init", "--timezone", "UTC")
    path = workspace / "PROACTIVE.md"
    text = TEMPLATE_HEAD + section(block("### [DAILY] A", "id: a", "time: '08:00'"))
    path.write_text(text, encoding="utf-8")

    synced = hb_db("--now", "2026-05-04T07:00Z", "sync")
    assert (
        f"{path}:3: front matter is not valid YAML (found unhashable key): kept as written" in synced.stderr
    )
    assert [r["id"] for r in hb_db.json("recur", "list")] == ["a"]
    hb_db("--now", "2026-05-04T07:30Z", "heartbeat")
    assert path.read_text("utf-8") == text  # nothing to write: untouched
    hb_db("--now", "2026-05-04T08:10Z", "recur", "outcome", "a", "--result", "done")
    hb_db("--now", "2026-05-04T08:11Z", "sync")
    written = path.read_text("utf-8")
    assert written.startswith(TEMPLATE_HEAD)  # left as it was: hb stamps only a front matter it reads
    assert craftbot_blocks(written)["a"]["last_run"] == "2026-05-04T08:10:00+00:00"


# --- the manager: when a task is due -------------------------------------------------------------


def due(
    freq: Frequency, now: datetime, *, time: str | None = None, day: str | None = None, **kw: Any
) -> bool:
    return due_period(freq, time=time, day=day, last_period=None, now_local=now, **kw) is not None


def test_the_window_is_30_minutes_from_the_time_both_ends_included() -> None:
    """should_run: due unless now < time or now > time + 30 minutes (its GRACE_PERIOD)."""
    at = datetime(2026, 5, 4, 8, 15)
    assert [due(Frequency.DAILY, at + timedelta(minutes=m), time="08:15") for m in (-1, 0, 15, 30, 31)] == [
        False,
        True,
        True,
        True,
        False,
    ]


def test_a_run_anywhere_in_the_period_uses_it_up() -> None:
    """should_run: not due when last_run falls on today's date / in this week / in this month,
    whatever its time: the heartbeat-processor's "Scheduled for 08:15" at 07:00 counts for the day."""
    early = datetime(2026, 5, 4, 7, 0)  # a Monday
    assert not due(Frequency.DAILY, datetime(2026, 5, 4, 8, 30), time="08:15", last_run=early)
    assert not due(Frequency.WEEKLY, datetime(2026, 5, 8, 10, 30), time="10:30", day="friday", last_run=early)
    assert not due(Frequency.MONTHLY, datetime(2026, 5, 15, 10), day="15", last_run=early)
    assert due(Frequency.DAILY, datetime(2026, 5, 5, 8, 30), time="08:15", last_run=early)


def test_where_hb_stays_right_and_craftbot_is_not() -> None:
    # hourly: CraftBot's should_run is true at every tick (twice an hour); hb hands it out once an hour
    ran = datetime(2026, 5, 4, 10, 0)
    assert not due(Frequency.HOURLY, datetime(2026, 5, 4, 10, 30), last_run=ran)
    assert due(Frequency.HOURLY, datetime(2026, 5, 4, 11, 0), last_run=ran)
    # weekly: CraftBot compares ISO week numbers with calendar years, so Thursday 31 December 2026
    # and Friday 1 January 2027 (both ISO week 53 of 2026) look like two weeks: it runs again;
    # hb's week runs Monday to Sunday
    assert not due(Frequency.WEEKLY, datetime(2027, 1, 1, 9), last_run=datetime(2026, 12, 31, 9))
    # monthly day 31: CraftBot's now.day == 31 never holds in April; hb fires on the 30th
    assert due(Frequency.MONTHLY, datetime(2026, 4, 30, 10), day="31")
    # 23:45: CraftBot's window closes at midnight, so its :00/:30 ticks never see it; hb's stays open
    assert due(Frequency.DAILY, datetime(2026, 5, 5, 0, 0), time="23:45")
    # a time in the spring-forward gap: CraftBot's naive clock jumps past the window; hb opens it
    from zoneinfo import ZoneInfo

    ny = ZoneInfo("America/New_York")
    assert due(Frequency.DAILY, datetime(2026, 3, 8, 3, 0, tzinfo=ny), time="02:15")


# --- hb's file in, what CraftBot reads and decides ------------------------------------------------


def test_hbs_run_is_written_as_craftbots_manager_writes_one(hb_db: Runner, workspace: Path) -> None:
    hb_db("init", "--timezone", "Asia/Tokyo")
    path = workspace / "PROACTIVE.md"
    path.write_text(WRITTEN_BY_CRAFTBOT, encoding="utf-8")
    hb_db("--now", "2026-05-04T09:00", "sync")
    hb_db("--now", "2026-05-04T10:30:05", "recur", "outcome", "weekly_weekly_review", "--result", "Reviewed.")
    hb_db("--now", "2026-05-04T10:31", "sync")

    written = path.read_text("utf-8")
    seen = craftbot_blocks(written)
    assert list(seen) == ["daily_morning_briefing", "weekly_weekly_review"]
    assert seen["daily_morning_briefing"] == craftbot_blocks(WRITTEN_BY_CRAFTBOT)["daily_morning_briefing"]
    review = seen["weekly_weekly_review"]
    assert review["run_count"] == 1
    assert review["outcome_history"] == [
        {"timestamp": "2026-05-04T01:30:05Z", "result": "Reviewed.", "success": True}
    ]
    last_run = craftbot_time(review["last_run"])
    # CraftBot's manager compares last_run's date, ISO week and month with its local now's (Tokyo)
    assert last_run.date() == date(2026, 5, 4)
    assert (last_run.isocalendar()[1], last_run.year, last_run.month) == (19, 2026, 5)
    # Monday's run uses the week up: next is Friday of the next week
    assert craftbot_time(review["next_run"]) == datetime.fromisoformat("2026-05-15T10:30:00+09:00")
    # its writer calls isoformat() on each of them when it saves: they read as date-times
    assert all(isinstance(craftbot_time(o["timestamp"]), datetime) for o in review["outcome_history"])
    # and hb decides as CraftBot's manager does from that last_run: not on Friday of that week
    assert due_ids(hb_db, "2026-05-08T10:30") == []
    assert due_ids(hb_db, "2026-05-15T10:30") == ["weekly_weekly_review"]
    assert rule(hb_db, "weekly_weekly_review")["last_run_at"] == "2026-05-04T10:30:05+09:00"


def test_a_last_run_later_than_now_is_no_run_and_hbs_run_replaces_it(hb_db: Runner, workspace: Path) -> None:
    """should_run compares last_run's date with today's: a stamp days ahead (a clock ahead, a
    hand edit) is not today, so CraftBot runs the task. hb took it as the last run (not due until
    then) and kept it over its own run when writing, so CraftBot ran the task a second time."""
    hb_db("init", "--timezone", "Asia/Tokyo")
    path = workspace / "PROACTIVE.md"
    ahead = 'last_run: "2026-05-08T10:35:00"'
    path.write_text(section(block("### [DAILY] A", "id: a", 'time: "08:00"', ahead)), encoding="utf-8")
    hb_db("--now", "2026-05-04T07:00", "sync")
    assert due_ids(hb_db, "2026-05-04T08:05") == ["a"]  # as CraftBot decides
    hb_db("--now", "2026-05-04T08:10", "recur", "outcome", "a", "--result", "done")
    hb_db("--now", "2026-05-04T08:11", "sync")

    written = craftbot_blocks(path.read_text("utf-8"))["a"]
    assert craftbot_time(written["last_run"]) == datetime.fromisoformat("2026-05-04T08:10:00+09:00")
    assert written["run_count"] == 1
    # CraftBot at its next tick: today's run, not due; hb the same
    assert craftbot_time(written["last_run"]).date() == date(2026, 5, 4)
    assert due_ids(hb_db, "2026-05-04T08:30") == []
    assert due_ids(hb_db, "2026-05-05T08:05") == ["a"]


def test_text_that_would_end_craftbots_block_or_section_is_escaped() -> None:
    text = section(block("### [DAILY] A", "id: a"), block("### [DAILY] B", "id: b"))
    doc = proactive.parse(text)
    result = f"ran ```ls``` then\n### [DAILY] x\n{END_MARKER} {START_MARKER}"
    done = proactive.record_outcome(doc.tasks[0], result=result, success=False, now=NOW)

    written = proactive.render(proactive.with_tasks(doc, [done, doc.tasks[1]], now=NOW))

    seen = craftbot_blocks(written)
    assert list(seen) == ["a", "b"]
    assert seen["a"]["outcome_history"][-1]["result"] == result
    assert seen["a"]["last_run"] == "2026-05-04T07:00:12+09:00"


def test_a_write_craftbot_would_not_read_back_is_refused() -> None:
    doc = proactive.parse(section(block("### [DAILY] A", "id: a")))
    broken = ProactiveTask(id="b", name=f"B {END_MARKER}", frequency="daily")  # it would end the section

    with pytest.raises(InvalidInput, match="cannot be written so that CraftBot reads it back"):
        proactive.with_tasks(doc, [*doc.tasks, broken], now=NOW)


def test_a_run_written_into_a_flow_mapping_block_or_after_a_commented_flow_list_reads_in_craftbot() -> None:
    text = section(
        block("### [DAILY] A", "{id: a, frequency: daily}   # by hand"),
        block("### [DAILY] B", "id: b", "outcome_history: []   # newest last"),
    )
    doc = proactive.parse(text)
    done = [proactive.record_outcome(task, result="ok", success=True, now=NOW) for task in doc.tasks]

    written = proactive.render(proactive.with_tasks(doc, done, now=NOW))

    assert "   # by hand\n" in written and "outcome_history:   # newest last\n" in written
    seen = craftbot_blocks(written)
    assert list(seen) == ["a", "b"]
    for task_id in seen:
        assert seen[task_id]["run_count"] == 1
        assert [h["result"] for h in seen[task_id]["outcome_history"]] == ["ok"]
        assert seen[task_id]["last_run"] == "2026-05-04T07:00:12+09:00"
