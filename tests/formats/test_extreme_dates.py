"""Dates near year 1 or 9999 in the files hb reads: not timestamps to hb, kept as written.

Python's datetime holds years 1 to 9999 only. A time at either end was read, stored, and then
overflowed when it was shown in the workspace's zone or stepped a day on: ``hb list`` or every
``hb sync`` failed with "out of range", naming no file. hb now reads only the instants from
0002-01-01 to 9998-12-31 UTC as timestamps (:data:`heartbeat.formats.timestamps.EARLIEST` ..
``LATEST``); a time outside takes the path each format already takes for an unreadable one: a
warning naming the file (and line) and the value kept in the file as written, not read.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from heartbeat.errors import InvalidInput
from heartbeat.formats import proactive, state, tasks_json, todo
from heartbeat.formats.timestamps import (
    EARLIEST,
    LATEST,
    OutOfRangeError,
    in_range,
    is_malformed,
    parse_timestamp,
    read_timestamp,
    timestamp_or_none,
)
from heartbeat.formats.todo import LineKind, TodoKind
from tests.conftest import Runner

OUT = "is outside the dates hb reads (0002-01-01 to 9998-12-31 UTC)"
NOW = "2026-05-04T12:00:00Z"

# --- the shared reader ---------------------------------------------------------------------------


def test_the_range_leaves_a_year_at_each_end() -> None:
    assert datetime(2, 1, 1, tzinfo=UTC) == EARLIEST
    assert datetime(9999, 1, 1, tzinfo=UTC) == LATEST
    # room for any offset and a day's arithmetic either way, inside what datetime holds
    assert (EARLIEST - timedelta(days=2)).astimezone(timezone(timedelta(hours=-14))).year == 1
    assert (LATEST + timedelta(days=2)).astimezone(timezone(timedelta(hours=14))).year == 9999


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0002-01-01T00:00:00Z", datetime(2, 1, 1, tzinfo=UTC)),
        ("0002-01-01T00:00:00+00:00", datetime(2, 1, 1, tzinfo=UTC)),
        ("0001-12-31T20:00:00-05:00", datetime(2, 1, 1, 1, tzinfo=UTC)),  # year 1 written, year 2 meant
        ("0002-01-01T14:00:00+14:00", datetime(2, 1, 1, tzinfo=UTC)),
        ("9998-12-31T23:59:59.999999Z", datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("9999-01-01T00:59:00+01:00", datetime(9998, 12, 31, 23, 59, tzinfo=UTC)),  # year 9999 written
        ("9998-12-31T13:59:59-10:00Z", datetime(9998, 12, 31, 23, 59, 59, tzinfo=UTC)),
    ],
)
def test_the_first_and_last_instants_are_read(text: str, expected: datetime) -> None:
    assert read_timestamp(text) == expected
    assert read_timestamp(text).tzinfo is UTC
    assert timestamp_or_none(text) == expected
    assert in_range(expected)


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:00:00Z",
        "0001-12-31T23:59:59.999999Z",
        "0002-01-01T00:00:00+00:01",  # 0001-12-31T23:59Z
        "0001-01-01T00:00:00+14:00",  # before what datetime holds at all
        "0001-01-01T00:00:00+14:00Z",
        "0001-01-01 00:00:00+14",
        "9999-01-01T00:00:00Z",
        "9998-12-31T23:00:00-01:00",  # 9999-01-01T00:00Z
        "9999-12-31T23:59:59Z",
        "9999-12-31T23:59:59-14:00",  # after what datetime holds at all
        "9999-12-31T23:59:59+00:00Z",
    ],
)
def test_an_instant_outside_is_no_timestamp_never_an_overflow(text: str) -> None:
    with pytest.raises(OutOfRangeError, match=r"^'.*' is outside the dates hb reads \(0002-01-01 to 9998"):
        read_timestamp(text)
    assert issubclass(OutOfRangeError, ValueError)  # every caller that catches ValueError copes
    assert timestamp_or_none(text) is None
    assert not is_malformed(text)  # a +HH:MMZ form outside is kept verbatim, not rewritten


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-01:00"])
def test_the_grammar_reader_refuses_what_datetime_cannot_hold_with_a_value_error(text: str) -> None:
    """parse_timestamp reads every instant datetime holds (the grammar's own reader); one it
    cannot hold in UTC is a ValueError too, never the OverflowError it was."""
    with pytest.raises(ValueError, match="outside the dates Python holds"):
        parse_timestamp(text)


def test_in_range_reads_a_naive_time_as_utc() -> None:
    assert in_range(datetime(2, 1, 1))
    assert not in_range(datetime(1, 12, 31, 23, 59))
    assert in_range(datetime(9998, 12, 31, 23, 59))
    assert not in_range(datetime(9999, 1, 1))
    assert not in_range(datetime.min.replace(tzinfo=timezone(timedelta(hours=14))))  # compared, not converted
    assert not in_range(datetime.max.replace(tzinfo=timezone(timedelta(hours=-14))))


# --- each format, read as text --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "line", "key"),
    [
        (TodoKind.TODO, "- [ ] [Created](0001-01-01 00:00) | a", "Created"),  # the canonical form
        (TodoKind.TODO, "- [ ] [Created](0001-12-31 23:59), [ChatID](tg:1) | a", "Created"),
        (TodoKind.TODO, "- [ ]  [Created](9999-01-01  0:00) | a", "Created"),  # the general reader
        (TodoKind.DONE, "- [x] [Created](2026-01-01 00:00), [Done](9999-12-31 23:59) | a", "Done"),
        (TodoKind.DONE, "- [x] [Created](0001-01-01 00:00), [Done](2026-01-01 00:00) | a", "Created"),
        (TodoKind.RECUR, "- [ ] [Next](9999-12-31 23:59), [Repeat](daily) | a", "Next"),
        (TodoKind.RECUR, "- [ ] [Next](0001-01-01 00:00), [Repeat](daily), [TZ](Asia/Tokyo) | a", "Next"),
    ],
)
def test_a_todo_stamp_outside_is_a_line_kept_as_written(kind: TodoKind, line: str, key: str) -> None:
    text = f"{kind.header}\n\n{line}\n"
    doc = todo.parse(text, kind)

    assert doc.entries == []
    [kept] = [ln for ln in doc.lines if ln.number == 3]
    assert kept.kind is LineKind.MALFORMED
    [warning] = doc.warnings
    assert warning.line == 3
    assert warning.reason.startswith("bad timestamp '")
    assert f"in {key} (mistermorph reads it, but it {OUT})" in warning.reason
    assert todo.render(doc) == text


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        (TodoKind.TODO, "- [ ] [Created](0002-01-01 00:00) | a"),
        (TodoKind.DONE, "- [x] [Created](0002-01-01 00:00), [Done](9998-12-31 23:59) | a"),
        (TodoKind.RECUR, "- [ ] [Next](9998-12-31 23:59), [Repeat](daily), [TZ](America/Anchorage) | a"),
    ],
)
def test_a_todo_stamp_at_the_edge_is_read(kind: TodoKind, line: str) -> None:
    text = f"{kind.header}\n\n{line}\n"
    doc = todo.parse(text, kind)

    [entry] = doc.entries
    assert doc.warnings == []
    assert entry.content == "a"
    assert todo.render(doc) == text


def test_year_zero_and_impossible_stamps_keep_their_reasons() -> None:
    zero = todo.parse("- [ ] [Created](0000-01-01 00:00) | a\n", TodoKind.TODO)
    assert zero.warnings[0].reason.endswith("(mistermorph reads year 0000; hb cannot store it)")
    impossible = todo.parse("- [ ] [Created](9999-02-30 00:00) | a\n", TodoKind.TODO)
    assert impossible.warnings[0].reason == "bad timestamp '9999-02-30 00:00' in Created"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ('"9999-12-31T23:59:59Z"', f"'9999-12-31T23:59:59Z' {OUT}"),
        ('"0001-01-01T00:00:00+14:00"', f"'0001-01-01T00:00:00+14:00' {OUT}"),
        ('"9999-12-31T12:00:00"', f"'9999-12-31T12:00:00' {OUT}"),  # naive: the workspace's zone
        ('"0001-01-01T00:00:00"', f"'0001-01-01T00:00:00' {OUT}"),
        ("253402300799000", f"253402300799000 is not a usable epoch time: it {OUT}"),  # milliseconds
        ("-62135596800", f"-62135596800 is not a usable epoch time: it {OUT}"),
    ],
)
def test_a_state_time_outside_is_a_problem_kept_as_written(value: str, why: str) -> None:
    text = f'{{"lastConversationAt": {value}, "memoryHygiene": {{"lastRunAt": "2026-05-01T00:00:00Z"}}}}\n'
    doc = state.parse(text)
    problems: dict[str, str] = {}

    facts = state.facts_from_state(doc, tz=ZoneInfo("Asia/Shanghai"), problems=problems)

    assert facts == {"hygiene.last_run_at": datetime(2026, 5, 1, tzinfo=UTC)}
    assert problems == {"proactive.last_conversation_at": f"lastConversationAt: {why}"}
    with pytest.raises(InvalidInput, match=r"^lastConversationAt: .* outside the dates hb reads"):
        state.facts_from_state(doc, tz=ZoneInfo("Asia/Shanghai"))
    assert state.render(doc) == text


def test_a_state_time_at_the_edge_is_read() -> None:
    doc = state.parse(
        '{"lastConversationAt": "9998-12-31T23:59:59Z", "lastProactiveAt": "0002-01-01T00:00:00"}'
    )
    facts = state.facts_from_state(doc, tz=UTC)
    assert facts["proactive.last_conversation_at"] == datetime(9998, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert facts["proactive.last_proactive_at"] == datetime(2, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("key", ["created_at", "completed_at"])
@pytest.mark.parametrize(
    "value", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00+14:00", "9999-06-01T00:00:00+00:00Z"]
)
def test_a_tasks_json_time_outside_is_not_a_timestamp_kept_as_written(key: str, value: str) -> None:
    text = json.dumps({"pending": [{"id": "a", "description": "x", key: value}]}, indent=2) + "\n"
    doc = tasks_json.parse(text)

    [record] = doc.records
    assert getattr(record, key) is None
    assert record.fields[key] == value
    assert doc.warnings == [f"line 3: pending[0]: {key} {value!r} is not a timestamp: kept as written"]
    assert tasks_json.render(doc) == text
    assert (
        tasks_json.render_errors([{"timestamp": value}], None)
        == json.dumps([{"timestamp": value}], indent=2) + "\n"
    )


PROACTIVE = (
    "<!-- PROACTIVE_TASKS_START -->\n\n### [DAILY] Name\n\n```yaml\nid: t\nfrequency: daily\n"
    'time: "08:00"\n{}\n```\n\n<!-- PROACTIVE_TASKS_END -->\n'
)


@pytest.mark.parametrize(
    ("field", "why"),
    [
        ("last_run: 9999-12-31T00:00:00", f"last_run 9999-12-31T00:00:00 {OUT}"),
        ("last_run: '9999-12-31T00:00:00'", f"last_run '9999-12-31T00:00:00' {OUT}"),
        ("last_run: '0001-01-01T00:00:00+14:00'", f"last_run '0001-01-01T00:00:00+14:00' {OUT}"),
        ("last_run: 0001-01-01T00:00:00+14:00", f"last_run 0001-01-01T00:00:00+14:00 {OUT}"),
        ("frequency: weekly\nday: monday\nlast_run: 9999-12-31", f"last_run 9999-12-31 {OUT}"),
        ("next_run: 9999-12-31T23:59:59-05:00", f"next_run 9999-12-31T23:59:59-05:00 {OUT}"),
        (
            "outcome_history:\n- {timestamp: 0001-01-01T00:00:00+14:00, result: x, success: true}",
            f"outcome_history[0].timestamp 0001-01-01T00:00:00+14:00 {OUT}",
        ),
        ("seen: 9999-12-31T23:59:59-05:00", f"seen 9999-12-31T23:59:59-05:00 {OUT}"),
    ],
)
def test_a_proactive_time_outside_is_a_block_kept_as_written(field: str, why: str) -> None:
    text = PROACTIVE.format(field)
    doc = proactive.parse(text)

    assert doc.tasks == []
    [warning] = doc.warnings
    assert warning.line == 3
    assert warning.task_id == "t"
    assert warning.reason == f"not a task, kept as written: {why}: hb cannot track it (CraftBot runs it)"
    assert proactive.render(doc) == text


@pytest.mark.parametrize(
    "field",
    [
        "last_run: 9998-12-31T23:00:00",
        "last_run: '0002-01-01T00:00:00Z'",
        "next_run: '9999-12-31T23:59:59Z'",  # text hb never reads as a time
        "outcome_history:\n- {timestamp: '9999-12-31T23:59:59Z', result: x, success: true}",
    ],
)
def test_a_proactive_time_at_the_edge_or_only_text_is_a_task(field: str) -> None:
    doc = proactive.parse(PROACTIVE.format(field))
    assert [t.id for t in doc.tasks] == ["t"]
    assert doc.warnings == []


def test_a_proactive_date_is_checked_as_its_midnight() -> None:
    doc = proactive.parse(PROACTIVE.format("frequency: weekly\nday: monday\nlast_run: 9998-12-31"))
    assert doc.tasks[0].last_run == datetime(9998, 12, 31)  # CraftBot's local time: naive
    assert date(9998, 12, 31) == doc.tasks[0].fields["last_run"]


# --- the command line -----------------------------------------------------------------------------


def _files(workspace: Path) -> dict[str, bytes]:
    """The workspace's files but the ledger and its lock."""
    return {
        str(p.relative_to(workspace)): p.read_bytes()
        for p in sorted(workspace.rglob("*"))
        if p.is_file() and not p.name.endswith((".db", ".lock", "-wal", "-shm", "-journal"))
    }


def _kept(workspace: Path, before: dict[str, bytes]) -> None:
    """Every file there before has its bytes (hb adds its own: sync bases, the scan watermark)."""
    after = _files(workspace)
    assert {name: after.get(name) for name in before} == before


def _write(workspace: Path, name: str, text: str) -> Path:
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _everything_works(hb: Runner) -> None:
    """The commands that failed on a stored far date: list, show, sync, heartbeat, recur list."""
    tasks = hb.json("--now", NOW, "list")
    for task in tasks:
        assert hb.json("--now", NOW, "show", task["id"])["id"] == task["id"]
    hb("--now", NOW, "list")
    hb("--now", NOW, "sync")
    hb("--now", NOW, "heartbeat")
    hb("--now", NOW, "recur", "list")


def _warned(stderr: str, *lines: str) -> None:
    assert stderr.splitlines() == [f"hb: warning: {line}" for line in lines]


def test_a_todo_created_in_year_1_is_a_warning_and_the_ledger_stays_listable(
    hb: Runner, workspace: Path
) -> None:
    hb("init", "--timezone", "America/New_York")
    path = _write(
        workspace, "TODO.md", "- [ ] [Created](0001-01-01 00:00) | a\n- [ ] [Created](2026-05-01 09:00) | b\n"
    )
    before = _files(workspace)

    result = hb("--now", NOW, "sync")

    reason = f"bad timestamp '0001-01-01 00:00' in Created (mistermorph reads it, but it {OUT})"
    _warned(result.stderr, f"{path}:1: {reason}")
    assert [t["title"] for t in hb.json("--now", NOW, "list")] == ["b"]
    _everything_works(hb)
    _kept(workspace, before)


def test_a_tasks_json_time_in_year_9999_is_not_a_timestamp(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "Asia/Tokyo")
    text = '{"pending":[{"id":"a","description":"x","created_at":"9999-12-31T23:59:59Z"}]}\n'
    path = _write(workspace, ".agent/state/tasks.json", text)
    before = _files(workspace)

    result = hb("--now", NOW, "sync")

    _warned(
        result.stderr,
        f"{path}: line 1: pending[0]: created_at '9999-12-31T23:59:59Z' is not a timestamp: kept as written",
    )
    [task] = hb.json("--now", NOW, "list")
    assert task["id"] == "a"
    assert hb.json("--now", NOW, "show", "a")["title"] == "x"
    _everything_works(hb)
    _kept(workspace, before)


def test_a_proactive_last_run_in_year_9999_is_a_block_kept_as_written(hb: Runner, workspace: Path) -> None:
    hb("init")
    path = _write(workspace, "PROACTIVE.md", PROACTIVE.format("last_run: 9999-12-31T00:00:00"))
    before = _files(workspace)

    result = hb("--now", NOW, "sync")

    why = f"last_run 9999-12-31T00:00:00 {OUT}: hb cannot track it (CraftBot runs it)"
    warning = f"{path}:3: not a task, kept as written: {why}"
    _warned(result.stderr, warning)
    assert hb.json("recur", "list") == []
    refused = hb("--now", NOW, "recur", "outcome", "t", "--result", "ok", code=1)
    assert refused.stderr == "hb: no recurrence with id 't'\n"
    _warned(hb("--now", NOW, "sync").stderr, warning)
    _everything_works(hb)
    _kept(workspace, before)


def test_a_proactive_task_whose_last_run_turns_far_is_dormant_and_sync_keeps_working(
    hb: Runner, workspace: Path
) -> None:
    hb("init", "--timezone", "Asia/Tokyo")
    path = _write(workspace, "PROACTIVE.md", PROACTIVE.format("last_run: 2026-05-01T08:00:00"))
    hb("--now", NOW, "sync")
    path.write_text(PROACTIVE.format("last_run: 9999-12-31T00:00:00"))
    before = _files(workspace)

    result = hb("--now", NOW, "sync")

    assert f"{path}:3: not a task, kept as written: last_run 9999-12-31T00:00:00 {OUT}" in result.stderr
    assert hb("--now", NOW, "recur", "outcome", "t", "--result", "ok").stdout == "t: run 1 recorded\n"
    assert "out of range" not in hb("--now", NOW, "sync").stderr  # the block is not written to
    _everything_works(hb)
    _kept(workspace, before)


def test_a_state_conversation_in_year_9999_is_kept_and_proactive_decides(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "Asia/Shanghai")
    path = _write(workspace, "memory/heartbeat-state.json", '{"lastConversationAt":"9999-12-31T23:59:59Z"}\n')

    result = hb("--now", NOW, "sync")

    _warned(
        result.stderr, f"{path}: lastConversationAt: '9999-12-31T23:59:59Z' {OUT}: kept as written, not read"
    )
    decided = hb("--now", "2026-05-04T12:00", "proactive", "--topic", "t", "--suggestion", "s", code=None)
    assert decided.exit_code in (0, 20), decided.stderr  # sent or suppressed: a decision, not an error
    assert "out of range" not in decided.stderr
    _everything_works(hb)
    assert json.loads(path.read_text())["lastConversationAt"] == "9999-12-31T23:59:59Z"


def test_times_before_year_1_in_utc_are_warnings_not_an_unnamed_failure(hb: Runner, workspace: Path) -> None:
    hb("init")
    far = "0001-01-01T00:00:00+14:00"
    state_path = _write(
        workspace, "memory/heartbeat-state.json", f'{{"todoWatch":{{"lastScanAt":"{far}"}}}}\n'
    )
    tasks_path = _write(
        workspace,
        ".agent/state/tasks.json",
        f'{{"pending":[{{"id":"a","description":"x","created_at":"{far}"}}]}}\n',
    )
    errors_path = _write(
        workspace, ".agent/state/errors.json", f'[{{"timestamp":"{far}","task_id":"x","error":"e"}}]\n'
    )
    kept = {p: p.read_bytes() for p in (tasks_path, errors_path)}

    result = hb("--now", NOW, "sync")

    _warned(
        result.stderr,
        f"{tasks_path}: line 1: pending[0]: created_at '{far}' is not a timestamp: kept as written",
        f"{state_path}: todoWatch.lastScanAt: '{far}' {OUT}: kept as written, not read",
        f"{errors_path}: line 1: [0].timestamp: '{far}' is not a timestamp: kept as written, its row in "
        "the ledger is dated when hb read it",
    )
    assert [t["id"] for t in hb.json("--now", NOW, "list")] == ["a"]
    _everything_works(hb)
    assert {p: p.read_bytes() for p in kept} == kept
    assert json.loads(state_path.read_text())["todoWatch"]["lastScanAt"] == far


def test_a_recurring_next_in_year_9999_is_a_warning_not_a_calendar_failure(
    hb: Runner, workspace: Path
) -> None:
    hb("init", "--timezone", "America/Anchorage")
    path = _write(workspace, "TODO.RECUR.md", "- [ ] [Next](9999-12-31 23:59), [Repeat](daily) | a\n")
    before = _files(workspace)

    result = hb("--now", NOW, "sync")

    _warned(
        result.stderr,
        f"{path}:1: bad timestamp '9999-12-31 23:59' in Next (mistermorph reads it, but it {OUT})",
    )
    assert hb.json("recur", "list") == []
    _everything_works(hb)
    _kept(workspace, before)


def test_a_recurring_next_at_the_last_day_is_read_and_scheduled(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "America/Anchorage")
    _write(workspace, "TODO.RECUR.md", "- [ ] [Next](9998-12-31 23:59), [Repeat](daily) | a\n")

    result = hb("--now", NOW, "sync")

    assert "warning" not in result.stderr
    [rule] = hb.json("recur", "list")
    assert rule["title"] == "a"
    _everything_works(hb)


def test_a_todo_created_at_the_first_day_is_listed_in_any_zone(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "America/New_York")
    _write(workspace, "TODO.md", "- [ ] [Created](0002-01-01 00:00) | a\n")

    assert "warning" not in hb("--now", NOW, "sync").stderr
    [task] = hb.json("--now", NOW, "list")
    assert task["title"] == "a"
    _everything_works(hb)


def test_a_done_entry_in_year_9999_and_a_last_run_json_stay_as_written(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "Asia/Tokyo")
    done = _write(
        workspace,
        "TODO.DONE.md",
        "# TODO Done\n\n- [x] [Created](2026-01-01 00:00), [Done](9999-12-31 23:59) | a\n",
    )
    last_run = _write(
        workspace,
        ".agent/state/last-run.json",
        '{"timestamp":"9999-12-31T23:59:59Z","task_id":"a","status":"ok"}\n',
    )
    before = _files(workspace)

    result = hb("--now", NOW, "sync")

    _warned(
        result.stderr,
        f"{done}:3: bad timestamp '9999-12-31 23:59' in Done (mistermorph reads it, but it {OUT})",
        f"{last_run}: line 1: timestamp: '9999-12-31T23:59:59Z' is not a timestamp: kept as written, its "
        "row in the ledger is dated when hb read it",
    )
    _everything_works(hb)
    _kept(workspace, before)
