"""hb reads and writes mistermorph's TODO files exactly as mistermorph's own code does.

mistermorph (a Go agent runtime) owns TODO.md, TODO.DONE.md and TODO.RECUR.md
(``internal/todo``, ``internal/entryutil``). Each test states a fact of that
code as file text in -> entries out, or as what hb writes -> what the
runtime's reader gets back from it. The runtime's own test cases (its
``*_test.go``) are restated first, each named after the Go test it restates.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from heartbeat.formats import todo as fmt
from heartbeat.formats.repeat import RepeatKind, parse_repeat
from heartbeat.formats.todo import Entry, LineKind, TodoKind
from tests.conftest import Runner, every_row, workspace_files
from tests.sync.helpers import read, report, todo_rows, write

WIP_HEAD = (
    '---\ncreated_at: "1970-01-01T00:00:00Z"\nupdated_at: "1970-01-01T00:00:00Z"\nopen_count: 1\n---\n\n'
    "# TODO Work In Progress (WIP)\n\n"
)
RECUR_HEAD = (
    '---\ncreated_at: "1970-01-01T00:00:00Z"\nupdated_at: "1970-01-01T00:00:00Z"\nrecurring_count: 1\n---\n\n'
    "# TODO Recurring\n\n"
)


def entries(text: str, kind: TodoKind = TodoKind.TODO) -> list[tuple[Any, ...]]:
    """What the runtime reads from a file: ParseWIP / ParseDONE / ParseRECUR's entries."""
    doc = fmt.parse(text, kind)
    if kind is TodoKind.RECUR:
        return [(e.next, e.repeat, e.tz, e.chat_id, e.content) for e in doc.entries]
    if kind is TodoKind.DONE:
        return [(e.created, e.done, e.chat_id, e.content) for e in doc.entries]
    return [(e.created, e.chat_id, e.content) for e in doc.entries]


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def reasons(text: str, kind: TodoKind = TodoKind.TODO) -> list[tuple[int, str]]:
    return [(w.line, w.reason) for w in fmt.parse(text, kind).warnings]


def sync(hb: Runner, now: str) -> dict[str, Any]:
    return json.loads(hb("sync", "--json", HB_NOW=now).stdout)


def titles(hb: Runner) -> dict[str, dict[str, Any]]:
    return {t["title"]: t for t in hb.json("list", "--all", "--source", "todo")}


@pytest.fixture
def mm(hb_db: Runner) -> Runner:
    """A workspace whose zone is UTC (the runtime's time.Local in these tests), on each backend."""
    hb_db("init", "--timezone", "UTC")
    return hb_db


# --- the runtime's own test cases -----------------------------------------------------------


def test_channel_TestParseWIPEntryWithChatID() -> None:
    text = WIP_HEAD + (
        "- [ ] [Created](2026-02-11 09:30), [ChatID](tg:-1001981343441) | "
        "2026-02-11 10:00 Remind [John](tg:@johnwick) to submit report.\n"
    )
    assert entries(text) == [
        (
            utc(2026, 2, 11, 9, 30),
            "tg:-1001981343441",
            "2026-02-11 10:00 Remind [John](tg:@johnwick) to submit report.",
        )
    ]


def test_channel_TestRenderWIPEntryWithChatID() -> None:
    entry = Entry(
        TodoKind.TODO,
        "2026-02-11 10:00 Remind [John](tg:@johnwick) to submit report.",
        created=utc(2026, 2, 11, 9, 30),
        chat_id="tg:-1001981343441",
    )
    rendered = fmt.render(fmt.new_document(TodoKind.TODO, [entry], now=utc(1970, 1, 1)))
    assert "[ChatID](tg:-1001981343441) | 2026-02-11 10:00 Remind [John](tg:@johnwick)" in rendered


def test_channel_TestStoreAddWithChatIDAndCompleteKeepsChatID(mm: Runner, workspace: Path) -> None:
    added = mm.json(
        "add",
        "提醒 [John](tg:1001) 提交报告",
        "--source",
        "todo",
        "--chat-id",
        "tg:-1001981343441",
        HB_NOW="2026-02-11T09:30:00Z",
    )
    assert added["chat_id"] == "tg:-1001981343441"
    sync(mm, "2026-02-11T09:30:00Z")
    mm("done", added["id"], HB_NOW="2026-02-11T10:00:00Z")
    sync(mm, "2026-02-11T10:00:00Z")
    assert entries(read(workspace / "TODO.DONE.md"), TodoKind.DONE) == [
        (
            utc(2026, 2, 11, 9, 30),
            utc(2026, 2, 11, 10, 0),
            "tg:-1001981343441",
            "提醒 [John](tg:1001) 提交报告",
        )
    ]


def test_channel_TestStoreAddWithCustomProtocolChatID(mm: Runner) -> None:
    added = mm.json(
        "add", "提醒 [John](tg:1001) 提交报告", "--source", "todo", "--chat-id", "SLACK:T123:C456"
    )
    assert added["chat_id"] == "slack:T123:C456"


def test_channel_TestStoreAddWithLarkRefs(mm: Runner) -> None:
    added = mm.json(
        "add",
        "提醒 [John](lark_user:ou_123) 跟进飞书群消息",
        "--source",
        "todo",
        "--chat-id",
        "lark:oc_group123",
    )
    assert (added["chat_id"], added["title"]) == (
        "lark:oc_group123",
        "提醒 [John](lark_user:ou_123) 跟进飞书群消息",
    )


def test_channel_TestStoreAddWithInvalidChatID(mm: Runner) -> None:
    result = mm(
        "add", "提醒 [John](tg:1001) 提交报告", "--source", "todo", "--chat-id", "bad_chat_id", code=1
    )
    assert result.stderr == (
        "hb: --chat-id 'bad_chat_id' is not a protocol:id reference like tg:-100123: not protocol:id\n"
    )
    assert mm.json("list", "--all") == []


def test_ops_TestStoreAddAndComplete(mm: Runner, workspace: Path) -> None:
    content = "帮 [John](tg:1001) 发消息给 [Momo](slack:T111:D222)"
    added = mm.json("add", content, "--source", "todo", HB_NOW="2026-02-09T10:00:00Z")
    sync(mm, "2026-02-09T10:00:00Z")
    assert entries(read(workspace / "TODO.md")) == [(utc(2026, 2, 9, 10, 0), None, content)]
    mm("done", added["id"], HB_NOW="2026-02-09T10:30:00Z")
    sync(mm, "2026-02-09T10:30:00Z")
    assert entries(read(workspace / "TODO.md")) == []
    assert entries(read(workspace / "TODO.DONE.md"), TodoKind.DONE) == [
        (utc(2026, 2, 9, 10, 0), utc(2026, 2, 9, 10, 30), None, content)
    ]


def test_ops_TestStoreAddRejectsInvalidReferenceID(mm: Runner) -> None:
    result = mm("add", "提醒 [John](unknown id) 明天回复", "--source", "todo", code=1)
    assert result.stderr == (
        "hb: cannot be a TODO.md entry: link [John](unknown id) is not a protocol:id reference: "
        "mistermorph refuses such a link in TODO.md\n"
    )
    assert mm.json("list", "--all") == []


def test_ops_TestStoreAddAcceptsCustomProtocolReferenceID(mm: Runner) -> None:
    added = mm.json("add", "提醒 [Momo](peer:12D3KooWPeer) 明天回复", "--source", "todo")
    assert added["title"] == "提醒 [Momo](peer:12D3KooWPeer) 明天回复"


def test_recurring_TestParseAndRenderRECUR() -> None:
    line = (
        "- [ ] [Next](2026-05-02 09:00), [Repeat](daily), [TZ](Asia/Tokyo), [ChatID](tg:-100123)"
        " | Remind [John](tg:@john) to submit report."
    )
    doc = fmt.parse(RECUR_HEAD + line + "\n", TodoKind.RECUR)
    assert entries(RECUR_HEAD + line + "\n", TodoKind.RECUR) == [
        (
            datetime(2026, 5, 2, 9, 0),
            "daily",
            "Asia/Tokyo",
            "tg:-100123",
            "Remind [John](tg:@john) to submit report.",
        )
    ]
    rendered = fmt.render_entry(doc.entries[0])
    assert "[Next](2026-05-02 09:00), [Repeat](daily), [TZ](Asia/Tokyo), [ChatID](tg:-100123)" in rendered


def test_recurring_TestParseAndRenderRECURWithHourlyRepeat() -> None:
    text = (
        RECUR_HEAD
        + "- [ ] [Next](2026-05-02 09:00), [Repeat](every 6 hours), [TZ](Asia/Tokyo) | Check the feeder.\n"
    )
    [entry] = fmt.parse(text, TodoKind.RECUR).entries
    assert entry.repeat == "every 6 hours"
    assert "[Repeat](every 6 hours)" in fmt.render_entry(entry)


def test_recurring_TestParseRECURIgnoresHTMLCommentExamples() -> None:
    text = RECUR_HEAD + "<!--\n- [ ] [Next](2026-05-02 09:00), [Repeat](daily) | Example only.\n-->\n"
    assert entries(text, TodoKind.RECUR) == []
    assert reasons(text, TodoKind.RECUR) == []


def materialize(hb: Runner, workspace: Path, recur: str, now: str, *, zone: str = "UTC") -> dict[str, Any]:
    """mistermorph's MaterializeDueRecurring on TODO.RECUR.md: hb sync, materialize, sync."""
    hb("config", "set", "timezone", zone)
    write(workspace / "TODO.RECUR.md", RECUR_HEAD + recur)
    sync(hb, now)
    result: dict[str, Any] = hb.json("recur", "materialize", HB_NOW=now)
    sync(hb, now)
    return result


def recur_next(workspace: Path) -> list[tuple[datetime | None, str | None]]:
    return [(e.next, e.tz) for e in fmt.parse(read(workspace / "TODO.RECUR.md"), TodoKind.RECUR).entries]


def test_recurring_TestMaterializeDueRecurring(mm: Runner, workspace: Path) -> None:
    recur = (
        "- [ ] [Next](2026-05-02 09:00), [Repeat](daily), [ChatID](tg:-100123)"
        " | Remind [John](tg:@john) to submit report.\n"
        "- [ ] [Next](2026-05-03 09:00), [Repeat](weekly) | Future task.\n"
    )
    result = materialize(mm, workspace, recur, "2026-05-02T09:30:00Z")
    assert len(result["created"]) == 1 and len(result["advanced"]) == 1
    assert not (workspace / "TODO.DONE.md").exists()
    assert entries(read(workspace / "TODO.md")) == [
        (utc(2026, 5, 2, 9, 30), "tg:-100123", "2026-05-02 09:00 Remind [John](tg:@john) to submit report.")
    ]
    assert recur_next(workspace) == [(datetime(2026, 5, 3, 9, 0), None), (datetime(2026, 5, 3, 9, 0), None)]


@pytest.mark.parametrize(
    ("repeat", "now", "new_next"),
    [
        # TestMaterializeDueRecurringAdvancesPastNow
        ("every 3 days", "2026-05-09T10:00:00Z", datetime(2026, 5, 10, 9, 0)),
        # TestMaterializeDueRecurringAdvancesHourlyPastNow
        ("every 6 hours", "2026-05-01T20:00:00Z", datetime(2026, 5, 1, 21, 0)),
    ],
)
def test_recurring_TestMaterializeDueRecurringAdvancesPastNow(
    mm: Runner, workspace: Path, repeat: str, now: str, new_next: datetime
) -> None:
    materialize(mm, workspace, f"- [ ] [Next](2026-05-01 09:00), [Repeat]({repeat}) | x\n", now)
    assert recur_next(workspace) == [(new_next, None)]


def test_recurring_TestMaterializeDueRecurringWithHourlyTimezone(mm: Runner, workspace: Path) -> None:
    recur = "- [ ] [Next](2026-05-07 15:00), [Repeat](every 2 hours), [TZ](Asia/Tokyo) | 检查状态。\n"
    result = materialize(mm, workspace, recur, "2026-05-07T08:30:00Z")
    assert len(result["created"]) == 1
    assert recur_next(workspace) == [(datetime(2026, 5, 7, 19, 0), "Asia/Tokyo")]


def test_recurring_TestMaterializeDueRecurringWithTimezone(mm: Runner, workspace: Path) -> None:
    recur = "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly), [TZ](Asia/Tokyo) | 去打网球。\n"
    result = materialize(mm, workspace, recur, "2026-05-07T06:30:00Z")
    assert len(result["created"]) == 1
    [(_created, _chat, content)] = entries(read(workspace / "TODO.md"))
    assert content == "2026-05-07 15:00 (Asia/Tokyo) 去打网球。"
    assert recur_next(workspace) == [(datetime(2026, 5, 14, 15, 0), "Asia/Tokyo")]


def test_recurring_TestMaterializeDueRecurringWithTimezoneNotDueYet(mm: Runner, workspace: Path) -> None:
    recur = "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly), [TZ](Asia/Tokyo) | 去打网球。\n"
    result = materialize(mm, workspace, recur, "2026-05-07T05:59:00Z")
    assert result["created"] == [] and not (workspace / "TODO.md").exists()


def test_recurring_TestMaterializeDueRecurringDefaultsToLocalTimezone(mm: Runner, workspace: Path) -> None:
    """No TZ: the runtime's own zone (time.Local); hb's is the workspace zone. Due inclusive."""
    recur = "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly) | 去打网球。\n"
    result = materialize(mm, workspace, recur, "2026-05-07T06:00:00Z", zone="Asia/Tokyo")
    assert len(result["created"]) == 1
    [(_created, _chat, content)] = entries(read(workspace / "TODO.md"))
    assert content == "2026-05-07 15:00 去打网球。"


def test_refid_TestParse_TestNormalize_TestIsValid() -> None:
    assert fmt.normalize_chat_id("SLACK:T123:C456") == "slack:T123:C456"
    assert fmt.normalize_chat_id("TG:-1001981343441") == "tg:-1001981343441"
    for valid in ("peer:12D3KooWPeer", "line_user:U123"):
        assert fmt.normalize_chat_id(valid) == valid
    for invalid in ("peer-v2:12D3KooWPeer", "not-a-reference"):
        with pytest.raises(ValueError):
            fmt.normalize_chat_id(invalid)


def test_refid_markdown_TestExtractMarkdownReferenceIDs() -> None:
    assert fmt.link_problem("提醒 [John](tg:1001) 通知 [Momo](aqua:12D3KooW)") is None
    assert fmt.link_problem("提醒 [Momo](peer-v2:12D3KooW) 明天回复") == (
        "link [Momo](peer-v2:12D3KooW) is not a protocol:id reference"
    )


# --- what the runtime's reader reads (facts read from its code) ---------------------------------


@pytest.mark.parametrize(
    ("stamp", "read"),
    [
        ("2026-05-01  12:41", utc(2026, 5, 1, 12, 41)),  # Go's layout space matches a run of spaces
        ("2026-05-01 9:05", utc(2026, 5, 1, 9, 5)),  # "15" is one or two digits
        ("2026-05-01\t12:41", None),  # ... of spaces, not tabs
        ("2026-5-01 12:41", None),  # "01" and "02" are two digits
        ("2026-02-30 10:00", None),  # a day the month does not have
        ("2026-05-01 24:00", None),
        ("2026-05-01 12:41 ", utc(2026, 5, 1, 12, 41)),  # the value is trimmed first
    ],
)
def test_a_timestamp_reads_as_go_time_parse_reads_its_layout(stamp: str, read: datetime | None) -> None:
    text = f"- [ ] [Created]({stamp}) | x\n"
    assert entries(text) == ([] if read is None else [(read, None, "x")])


def test_a_timestamp_keeps_its_text_until_hb_rewrites_the_line(mm: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    write(todo, "- [ ] [Created](2026-05-01  9:05) | spaced\n")
    sync(mm, "2026-05-02T10:00:00Z")
    assert read(todo) == "- [ ] [Created](2026-05-01  9:05) | spaced\n"
    assert titles(mm)["spaced"]["created_at"] == "2026-05-01T09:05:00+00:00"


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (" TG : 5 ", "tg:5"),  # trimmed around the first colon, the protocol lower-cased
        ("slack:T1:C2", "slack:T1:C2"),  # the id may hold colons
        ("https://x.y", "https://x.y"),  # protocol "https", id "//x.y"
        ("line_user:U1", "line_user:U1"),
        ("line-user:U1", None),  # the protocol is [a-z][a-z0-9_]*
        ("1tg:5", None),
        ("tg:", None),
        (":5", None),
        ("tg:a b", None),  # the id holds no space
    ],
)
def test_a_chat_id_reads_as_refid_normalizes_it(value: str, read: str | None) -> None:
    text = f"- [ ] [Created](2026-05-01 12:41), [ChatID]({value}) | x\n"
    assert entries(text) == ([] if read is None else [(utc(2026, 5, 1, 12, 41), read, "x")])


def test_a_chat_id_is_stored_lower_case_and_written_so_when_hb_rewrites_the_line(
    mm: Runner, workspace: Path
) -> None:
    todo = workspace / "TODO.md"
    line = "- [ ] [Created](2026-05-01 12:41), [ChatID](TG : -100) | call"
    write(todo, line + "\n")
    sync(mm, "2026-05-02T10:00:00Z")
    task = titles(mm)["call"]
    assert task["chat_id"] == "tg:-100" and read(todo) == line + "\n"  # read, not rewritten
    mm("done", task["id"], HB_NOW="2026-05-02T10:00:00Z")
    sync(mm, "2026-05-02T10:00:00Z")
    assert "[ChatID](tg:-100) | call" in read(workspace / "TODO.DONE.md")


def test_a_protocol_the_runtime_refuses_keeps_the_line_unread(mm: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    line = "- [ ] [Created](2026-05-01 12:41), [ChatID](line-user:U1) | x"
    write(todo, line + "\n")
    out = sync(mm, "2026-05-02T10:00:00Z")
    assert report(out, "todo")["preserved"] == [
        f"{todo}:1: bad ChatID 'line-user:U1': protocol 'line-user' is not letters, digits and _ "
        "after a letter"
    ]
    assert titles(mm) == {} and read(todo) == line + "\n"


@pytest.mark.parametrize(
    ("repeat", "kind", "n"),
    [
        ("EVERY   2\tHOURS", RepeatKind.HOURS, 2),  # lower-cased, white space collapsed (strings.Fields)
        ("every 1 day", RepeatKind.DAYS, 1),
        ("DAİLY", RepeatKind.DAILY, 1),  # Go's ToLower: İ -> i
        ("every 9223372036854775807 hours", RepeatKind.HOURS, 2**63 - 1),  # strconv.Atoi's largest
    ],
)
def test_a_repeat_reads_as_recurring_go_reads_it(repeat: str, kind: RepeatKind, n: int) -> None:
    text = f"- [ ] [Next](2026-05-01 09:00), [Repeat]({repeat}) | x\n"
    [entry] = fmt.parse(text, TodoKind.RECUR).entries
    assert entry.repeat == repeat
    got = parse_repeat(repeat, any_step=True)
    assert (got.kind, got.n) == (kind, n)


@pytest.mark.parametrize(
    ("repeat", "reason"),
    [
        (
            "every 01 days",
            "bad Repeat 'every 01 days': N has a leading zero, which mistermorph does not read",
        ),
        (
            "every 9223372036854775808 hours",
            "bad Repeat 'every 9223372036854775808 hours': N is larger than mistermorph reads (2**63 - 1)",
        ),
        (
            "every 2\x1cdays",
            "bad Repeat 'every 2\\x1cdays': expected daily, weekly, every N days or every N hours",
        ),
        ("monthly", "bad Repeat 'monthly': expected daily, weekly, every N days or every N hours"),
    ],
)
def test_a_repeat_the_runtime_refuses_keeps_the_line_unread(repeat: str, reason: str) -> None:
    text = f"- [ ] [Next](2026-05-01 09:00), [Repeat]({repeat}) | x\n"
    assert entries(text, TodoKind.RECUR) == []
    assert reasons(text, TodoKind.RECUR) == [(1, reason)]


def test_a_step_over_100_years_is_read_but_never_scheduled(mm: Runner, workspace: Path) -> None:
    recur = workspace / "TODO.RECUR.md"
    line = "- [ ] [Next](2026-05-01 09:00), [Repeat](every 9223372036854775807 hours) | x"
    write(recur, line + "\n")
    out = sync(mm, "2026-05-02T10:00:00Z")
    assert report(out, "recur")["preserved"] == [
        f"{recur}:1: Repeat 'every 9223372036854775807 hours' steps over 100 years: hb reads it but "
        "never schedules it"
    ]
    assert [r["title"] for r in mm.json("recur", "list")] == ["x"]
    assert mm.json("recur", "due", HB_NOW="2026-05-02T10:00:00Z") == []
    assert mm.json("recur", "materialize", HB_NOW="2026-05-02T10:00:00Z")["created"] == []
    assert read(recur) == line + "\n"


def test_a_cron_rule_that_matches_no_date_is_read_but_never_scheduled(mm: Runner, workspace: Path) -> None:
    """hb's extended dialect: a cron expression for a date no month has (30 February) is a rule
    that never fires; the sync says so instead of taking it in silently."""
    mm("config", "set", "todo.dialect", "extended")
    recur = workspace / "TODO.RECUR.md"
    lines = [
        "- [ ] [Next](2026-05-01 09:00), [Repeat](cron 0 0 30 2 *) | never",
        "- [ ] [Next](2026-05-01 09:00), [Repeat](cron 0 0 29 2 *) | leap years",
    ]
    write(recur, "\n".join(lines) + "\n")
    out = sync(mm, "2026-05-02T10:00:00Z")
    assert report(out, "recur")["preserved"] == [
        f"{recur}:1: Repeat 'cron 0 0 30 2 *' matches no date: hb reads it but never schedules it"
    ]
    assert sorted(r["title"] for r in mm.json("recur", "list")) == ["leap years", "never"]
    assert mm.json("recur", "due", HB_NOW="2027-05-02T10:00:00Z") == []
    assert [d["title"] for d in mm.json("recur", "due", HB_NOW="2028-02-29T00:01:00Z")] == ["leap years"]
    assert read(recur) == "\n".join(lines) + "\n"


def test_tz_local_is_the_workspace_zone_and_stays_as_written(mm: Runner, workspace: Path) -> None:
    """[TZ](Local) is the runtime's time.Local; its materialized entry says "(Local)"."""
    recur = "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly), [TZ](Local) | tennis\n"
    not_yet = materialize(mm, workspace, recur, "2026-05-07T05:59:00Z", zone="Asia/Tokyo")
    assert not_yet["created"] == []
    due = mm.json("recur", "materialize", HB_NOW="2026-05-07T06:00:00Z")
    sync(mm, "2026-05-07T06:00:00Z")
    assert [e["title"] for e in due["created"]] == ["2026-05-07 15:00 (Local) tennis"]
    assert recur_next(workspace) == [(datetime(2026, 5, 14, 15, 0), "Local")]


def test_a_wip_line_with_done_and_a_done_line_with_a_capital_x_are_not_entries() -> None:
    assert entries("- [ ] [Created](2026-05-01 12:41), [Done](2026-05-01 12:42) | x\n") == []
    done = "- [X] [Created](2026-05-01 12:41), [Done](2026-05-01 12:42) | x\n"
    assert entries(done, TodoKind.DONE) == []


def test_lines_are_trimmed_as_go_trims_them_not_as_python_does() -> None:
    """strings.TrimSpace keeps U+001C-U+001F (str.strip() drops them) and U+FEFF; it drops U+3000."""
    text = (
        "\x1c- [ ] [Created](2026-05-01 12:41) | after a file separator\n"
        "\u3000- [ ] [Created](2026-05-01 12:42) | after an ideographic space\n"
        "- [ ] [Created](2026-05-01 12:43) | ends in a unit separator\x1f\n"
    )
    assert [c for _, _, c in entries(text)] == ["after an ideographic space", "ends in a unit separator\x1f"]
    assert reasons(text) == [(1, "not an entry")]


def test_a_byte_order_mark_is_no_space_to_the_runtime() -> None:
    text = "\ufeff- [ ] [Created](2026-05-01 12:41) | first\n- [ ] [Created](2026-05-01 12:42) | second\n"
    assert [c for _, _, c in entries(text)] == ["second"]
    bom_front = "\ufeff---\nopen_count: 1\n---\n- [ ] [Created](2026-05-01 12:41) | a\n"
    doc = fmt.parse(bom_front, TodoKind.TODO)
    assert doc.front_matter is None and [e.content for e in doc.entries] == ["a"]


def test_unclosed_front_matter_is_read_as_entry_lines() -> None:
    text = "---\n- [ ] [Created](2026-05-01 12:41) | in the would-be front matter\nopen_count: 1\n"
    assert [c for _, _, c in entries(text)] == ["in the would-be front matter"]


@pytest.mark.parametrize(
    "front",
    [
        "open_count: abc\n",  # Go's yaml.v3 cannot put it in an int: the runtime ignores the front matter
        "- a list\n",  # not a mapping
        "bad: [unclosed\n",  # not YAML
    ],
)
def test_front_matter_the_runtime_cannot_use_does_not_stop_the_entries(front: str) -> None:
    text = "---\n" + front + "---\n- [ ] [Created](2026-05-01 12:42) | b\n"
    assert [c for _, _, c in entries(text)] == ["b"]
    assert fmt.render(fmt.parse(text, TodoKind.TODO)) == text


def test_a_comment_across_lines_joins_them_into_one_entry() -> None:
    text = (
        "- [ ] [Created](2026-05-01 12:41) | foo <!-- note\n"
        "- [ ] [Created](2026-05-01 12:42) | hidden\n"
        "more -->bar\n"
    )
    assert entries(text) == [(utc(2026, 5, 1, 12, 41), None, "foo bar")]
    [line] = [ln for ln in fmt.parse(text, TodoKind.TODO).lines if ln.kind is LineKind.ENTRY]
    assert (line.number, line.last) == (1, 3)


def test_a_line_over_64_kib_stops_the_runtime_not_hb(mm: Runner, workspace: Path) -> None:
    """bufio.Scanner stops at a line of 64 KiB (a CR included) when the file has front matter:
    mistermorph loses that line and every one after it. hb reads them and says where."""
    long = "- [ ] [Created](2026-05-01 12:41) | " + "x" * (fmt.SCANNER_LIMIT - 37)
    assert len(long.encode()) == fmt.SCANNER_LIMIT - 1
    after = "- [ ] [Created](2026-05-01 12:42) | after\n"
    fits = WIP_HEAD + long + "\n" + after
    assert reasons(fits) == []
    todo = workspace / "TODO.md"
    write(todo, WIP_HEAD + long + "x\r\n" + after)
    out = sync(mm, "2026-05-02T10:00:00Z")
    assert report(out, "todo")["preserved"] == [
        f"{todo}:9: line over 64 KiB: mistermorph's reader stops here and loses this line and every "
        "line after it (hb reads them all)"
    ]
    assert len(titles(mm)) == 2
    assert reasons(long + "x\n" + after) == []  # without front matter the runtime reads it whole


def test_a_link_the_runtime_refuses_is_imported_kept_and_reported(mm: Runner, workspace: Path) -> None:
    todo, done = workspace / "TODO.md", workspace / "TODO.DONE.md"
    line = "- [ ] [Created](2026-05-01 12:41) | read [the doc](./doc.md)"
    write(todo, line + "\n")
    old = "- [x] [Created](2026-04-01 12:41), [Done](2026-04-02 10:00) | see [x](./y)"
    write(done, old + "\n")  # the runtime checks TODO.md's links, not TODO.DONE.md's
    out = sync(mm, "2026-05-02T10:00:00Z")
    assert report(out, "todo")["preserved"] == [
        f"{todo}:1: link [the doc](./doc.md) is not a protocol:id reference: mistermorph's add, complete "
        "and recurring materialize fail on the whole file"
    ]
    assert report(out, "done")["preserved"] == []
    assert set(titles(mm)) == {"read [the doc](./doc.md)", "see [x](./y)"}
    assert read(todo) == line + "\n"


# --- what hb writes: the runtime reads it back as the ledger says, and keeps working ----------


def test_hb_update_refuses_a_todo_title_with_a_link_the_runtime_refuses(mm: Runner) -> None:
    added = mm.json("add", "call Bob", "--source", "todo")
    result = mm("update", added["id"], "--title", "see [notes](notes.md)", code=1)
    assert result.stderr == (
        f"hb: {added['id']}: cannot be a TODO.md entry: link [notes](notes.md) is not a protocol:id "
        "reference: mistermorph refuses such a link in TODO.md\n"
    )
    assert mm.json("show", added["id"])["title"] == "call Bob"


def test_hb_recur_add_refuses_a_title_with_such_a_link_and_normalises_the_chat_id(mm: Runner) -> None:
    result = mm("recur", "add", "see [x](./y)", "--repeat", "daily", code=1)
    assert result.stderr == (
        "hb: recurrence title refused: link [x](./y) is not a protocol:id reference (mistermorph's "
        "recurring materialize fails on TODO.RECUR.md while such a link is there)\n"
    )
    bad_chat = mm("recur", "add", "x", "--repeat", "daily", "--chat-id", "line-user:U1", code=1)
    assert "protocol 'line-user' is not letters, digits and _ after a letter" in bad_chat.stderr
    assert mm.json("recur", "list") == []
    made = mm.json("recur", "add", "x", "--repeat", "daily", "--chat-id", "TG : 5")
    assert made["chat_id"] == "tg:5"
    result = mm("recur", "update", made["id"], "--title", "[a](b c)", code=1)
    assert "[a](b c) is not a protocol:id reference" in result.stderr


def test_hb_recur_add_and_update_refuse_a_title_that_opens_a_comment(mm: Runner, workspace: Path) -> None:
    """mistermorph cuts HTML comments out of the file before reading it: `hb add --source todo`
    refused such a title, `hb recur add` took it, and the rule (and every task it made) could never
    be written to TODO.RECUR.md / TODO.md, with a warning on every sync."""
    result = mm("recur", "add", "call <!-- bob", "--repeat", "daily", code=1)
    assert result.stderr == (
        "hb: recurrence title refused: entry content 'call <!-- bob' must not open an HTML comment\n"
    )
    made = mm.json("recur", "add", "call bob", "--repeat", "daily")
    mm("recur", "update", made["id"], "--title", "call <!-- bob", code=1)
    assert [r["title"] for r in mm.json("recur", "list")] == ["call bob"]
    mm("sync")
    assert "call bob" in (workspace / "TODO.RECUR.md").read_text()


def test_a_title_too_long_for_the_runtimes_line_reader_is_refused(mm: Runner, workspace: Path) -> None:
    """mistermorph reads TODO files with bufio.Scanner, which stops at a 64 KiB line and loses every
    line after it: hb add --source todo and hb recur add took such a title and wrote the line."""
    long = "é" * 33_000  # 66,000 bytes in UTF-8
    problem = "mistermorph's reader stops at a line of 64 KiB and loses every line after it\n"
    assert mm("add", long, "--source", "todo", code=1).stderr.endswith(problem)
    assert mm("recur", "add", long, "--repeat", "daily", code=1).stderr.endswith(problem)
    mm("add", "é" * 30_000, "--source", "todo")  # 60,000 bytes: a line the runtime reads
    mm("sync")
    assert max(len(line.encode()) for line in (workspace / "TODO.md").read_text().splitlines()) < 64 * 1024


def longest_line(path: Path) -> int:
    return max(len(line.encode()) for line in read(path).splitlines()) if path.exists() else 0


def test_hb_done_refuses_a_todo_entry_whose_done_line_would_stop_the_runtimes_reader(
    mm: Runner, workspace: Path, db_url: str
) -> None:
    """A TODO.md line typed by hand can fit mistermorph's 64 KiB reader and its TODO.DONE.md line
    (the Done stamp added) not: `hb done` wrote it, mistermorph then read no entry of TODO.DONE.md
    and its next Complete rewrote the file with its own entry alone."""
    todo, done = workspace / "TODO.md", workspace / "TODO.DONE.md"
    title = "x" * (65_516 - len("- [ ] [Created](2026-05-01 12:41) | "))
    write(todo, WIP_HEAD + "- [ ] [Created](2026-05-01 12:41) | " + title + "\n")
    write(done, "- [x] [Created](2026-04-01 12:41), [Done](2026-04-02 10:00) | older\n")
    sync(mm, "2026-05-02T10:00:00Z")
    assert longest_line(todo) == 65_516  # a line the runtime reads
    task = titles(mm)[title]
    before = (every_row(db_url), workspace_files(workspace))
    for args in (("done", task["id"]), ("update", task["id"], "--status", "done")):
        result = mm(*args, code=1, HB_NOW="2026-05-02T11:00:00Z")
        assert result.stderr == (
            f"hb: {task['id']}: cannot be completed: its line in TODO.DONE.md would be 65,542 bytes: "
            "mistermorph's reader stops at a line of 64 KiB and loses every line after it\n"
        )
    assert (every_row(db_url), workspace_files(workspace)) == before


def test_a_completion_whose_done_line_is_too_long_keeps_its_todo_line(mm: Runner, workspace: Path) -> None:
    """A completion hb cannot refuse (the queue's `hb complete`): the entry stays in TODO.md with a
    warning naming it, the ledger keeps it done, and TODO.DONE.md never gets a line of 64 KiB."""
    todo, done = workspace / "TODO.md", workspace / "TODO.DONE.md"
    line = "- [ ] [Created](2026-05-01 12:41) | " + "x" * (65_516 - 36)
    write(todo, WIP_HEAD + line + "\n")
    write(done, "- [x] [Created](2026-04-01 12:41), [Done](2026-04-02 10:00) | older\n")
    sync(mm, "2026-05-02T10:00:00Z")
    [task] = [t for t in titles(mm).values() if t["status"] == "todo"]
    mm("pop", "--id", task["id"], HB_NOW="2026-05-02T11:00:00Z")
    mm("complete", task["id"], HB_NOW="2026-05-02T11:00:00Z")
    out = sync(mm, "2026-05-02T11:00:00Z")
    assert report(out, "done")["preserved"] == [
        f"{done}: {task['id']} not written: its line would be 65,542 bytes: mistermorph's reader stops "
        f"at a line of 64 KiB and loses every line after it; its line stays at {todo}:9"
    ]
    assert longest_line(done) < fmt.SCANNER_LIMIT
    assert [c for *_, c in entries(read(done), TodoKind.DONE)] == ["older"]
    assert read(todo).endswith(line + "\n")
    assert mm.json("show", task["id"])["status"] == "done"


def test_a_long_chat_id_cannot_push_a_todo_line_past_the_runtimes_reader(mm: Runner, workspace: Path) -> None:
    """hb checked the title alone (and 512 bytes for the rest): a 64,900-byte title with a
    700-digit chat id was taken and written as a 65,651-byte TODO.md line."""
    title, chat = "y" * 64_900, "tg:" + "7" * 700
    problem = "mistermorph's reader stops at a line of 64 KiB and loses every line after it\n"
    result = mm("add", title, "--source", "todo", "--chat-id", chat, code=1)
    assert result.stderr == "hb: cannot be a TODO.md entry: its line would be 65,651 bytes: " + problem
    result = mm("recur", "add", title, "--repeat", "daily", "--chat-id", chat, code=1)
    assert result.stderr.endswith(problem) and "recurrence refused" in result.stderr
    added = mm.json("add", "short", "--source", "todo")
    assert mm("update", added["id"], "--title", title, "--chat-id", chat, code=1).stderr.endswith(problem)
    rule = mm.json("recur", "add", title, "--repeat", "daily")
    assert mm("recur", "update", rule["id"], "--chat-id", chat, code=1).stderr.endswith(problem)
    assert [r["chat_id"] for r in mm.json("recur", "list")] == [None]
    assert [t["title"] for t in mm.json("list", "--all", "--source", "todo")] == ["short"]
    mm("sync")
    assert longest_line(workspace / "TODO.md") < fmt.SCANNER_LIMIT
    assert longest_line(workspace / "TODO.RECUR.md") < fmt.SCANNER_LIMIT


def test_materialize_skips_a_rule_whose_occurrence_line_would_stop_the_runtimes_reader(
    mm: Runner, workspace: Path
) -> None:
    """A TODO.RECUR.md line of 65,534 bytes makes a TODO.md entry 3 bytes longer (65,537): hb
    materialised it. Now the rule is left as it is, with a warning naming it, as a rule whose
    title holds a link mistermorph refuses."""
    recur, todo = workspace / "TODO.RECUR.md", workspace / "TODO.md"
    head = "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | "
    long = head + "z" * (65_534 - len(head))
    good = "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | stand up"
    write(recur, RECUR_HEAD + long + "\n" + good + "\n")
    sync(mm, "2026-05-02T10:00:00Z")
    [long_id] = [r["id"] for r in mm.json("recur", "list") if r["title"].startswith("z")]
    result = mm("recur", "materialize", HB_NOW="2026-05-02T10:00:00Z")
    assert result.stderr == (
        f"hb: warning: {long_id} not materialised: its TODO.md entry: its line would be 65,537 bytes: "
        "mistermorph's reader stops at a line of 64 KiB and loses every line after it\n"
    )
    sync(mm, "2026-05-02T10:00:00Z")
    assert [c for _, _, c in entries(read(todo))] == ["2026-05-01 09:00 stand up"]
    assert longest_line(todo) < fmt.SCANNER_LIMIT
    assert recur_next(workspace) == [(datetime(2026, 5, 1, 9, 0), None), (datetime(2026, 5, 3, 9, 0), None)]


def test_materialize_skips_a_rule_whose_title_the_runtime_refuses(mm: Runner, workspace: Path) -> None:
    recur = workspace / "TODO.RECUR.md"
    bad = "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | read [the doc](./doc.md)"
    good = "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | stand up"
    write(recur, bad + "\n" + good + "\n")
    sync(mm, "2026-05-02T10:00:00Z")
    [bad_id] = [r["id"] for r in mm.json("recur", "list") if r["title"].startswith("read")]
    result = mm("recur", "materialize", HB_NOW="2026-05-02T10:00:00Z")
    assert result.stderr == (
        f"hb: warning: {bad_id} not materialised: link [the doc](./doc.md) is not a protocol:id reference "
        "in its title (mistermorph's add and complete fail on such a TODO.md entry)\n"
    )
    sync(mm, "2026-05-02T10:00:00Z")
    assert [c for _, _, c in entries(read(workspace / "TODO.md"))] == ["2026-05-01 09:00 stand up"]
    assert recur_next(workspace) == [(datetime(2026, 5, 1, 9, 0), None), (datetime(2026, 5, 3, 9, 0), None)]


def test_a_done_entry_with_such_a_link_is_not_reopened_into_todo_md(mm: Runner, workspace: Path) -> None:
    """TODO.DONE.md may hold it; TODO.md may not (the runtime's add and complete would fail)."""
    done = workspace / "TODO.DONE.md"
    line = "- [x] [Created](2026-04-01 12:41), [Done](2026-04-02 10:00) | see [x](./y)"
    write(done, line + "\n")
    sync(mm, "2026-05-02T10:00:00Z")
    task = titles(mm)["see [x](./y)"]
    mm("update", task["id"], "--status", "todo")
    out = sync(mm, "2026-05-02T10:00:00Z")
    assert report(out, "todo")["preserved"] == [
        f"{workspace / 'TODO.md'}: {task['id']} not written: link [x](./y) is not a protocol:id reference: "
        f"mistermorph refuses such a link in TODO.md; its line stays at {done}:1"
    ]
    assert read(done) == line + "\n" and not (workspace / "TODO.md").exists()


def test_completed_entries_go_first_in_todo_done_md_latest_first(mm: Runner, workspace: Path) -> None:
    todo, done = workspace / "TODO.md", workspace / "TODO.DONE.md"
    write(
        todo,
        "".join(f"- [ ] [Created](2026-05-01 12:4{i}) | task {i}\n" for i in range(3)),
    )
    old = "- [x] [Created](2026-04-01 12:41), [Done](2026-04-02 10:00) | old"
    write(done, "# TODO Done\n\n" + old + "\n")
    sync(mm, "2026-05-02T10:00:00Z")
    by_title = titles(mm)
    mm("done", by_title["task 0"]["id"], HB_NOW="2026-05-02T11:00:00Z")
    mm("done", by_title["task 2"]["id"], HB_NOW="2026-05-02T12:00:00Z")
    sync(mm, "2026-05-02T12:00:00Z")
    assert [c for _, _, _, c in entries(read(done), TodoKind.DONE)] == ["task 2", "task 0", "old"]
    mm("done", by_title["task 1"]["id"], HB_NOW="2026-05-02T13:00:00Z")
    sync(mm, "2026-05-02T13:00:00Z")
    assert [c for _, _, _, c in entries(read(done), TodoKind.DONE)] == ["task 1", "task 2", "task 0", "old"]
    rows = {r["title"]: r["position"] for r in todo_rows(workspace, mm.env["HB_DATABASE_URL"])}
    assert rows["task 1"] < rows["task 2"] < rows["task 0"] < rows["old"]


# --- hb never writes over what it has not read; hb import then hb export gives the text back ----

SOURCES = {
    "todo": (
        "---\n"
        'created_at: "2026-05-01T03:41:00Z"  # by hand\n'
        "open_count: 7\n"
        "---\n"
        "\n"
        "# TODO Work In Progress (WIP)\n"
        "<!-- kept: a note for people -->\n"
        "\n"
        "  - [ ]  [Created](2026-05-01  12:41) ,[ChatID](TG : -100) |  spaced out  \r\n"
        "- [ ] [Craeted](2026-05-01 12:42) | a typo hb keeps\n"
        "- [ ] [Created](2026-05-01 12:43) | joined <!-- across\n"
        "- [ ] [Created](2026-05-01 12:44) | a commented-out entry\n"
        "--> lines\n"
        "notes: call Bob"
    ),
    "done": (
        "# TODO Done\n\n"
        "- [x] [Created](2026-04-01 12:41), [Done](2026-04-02 10:00) | with [a link](./x.md)\n"
        "- [X] [Created](2026-04-01 12:41), [Done](2026-04-02 10:00) | capital X, kept\n"
    ),
    "recur": (
        "---\nbad: [unclosed\n---\n# TODO Recurring\n\n"
        "<!--\n- [ ] [Next](2026-05-07 15:00), [Repeat](weekly) | An example.\n-->\n"
        "- [ ] [Next](2026-05-07  15:00), [Repeat](EVERY  2 days), [TZ](Local) | water the plants\n"
        "- [ ] [Next](2026-05-07 15:00), [Repeat](every 01 days) | kept, unread\n"
    ),
}


@pytest.mark.parametrize("kind", ["todo", "done", "recur"])
def test_import_then_export_gives_back_the_exact_text(mm: Runner, workspace: Path, kind: str) -> None:
    src, dst = workspace / "old" / "SRC.md", workspace / "DST.md"
    src.parent.mkdir()
    write(src, SOURCES[kind])
    got = mm.json("import", kind, str(src), HB_NOW="2026-05-02T10:00:00Z")
    assert got["added"]
    assert mm.json("export", kind, str(dst), HB_NOW="2026-05-03T10:00:00Z")["written"] is True
    assert read(dst) == SOURCES[kind]
    assert mm("export", kind, "-").stdout_bytes == SOURCES[kind].encode()  # no workspace file: the same
    assert mm.json("export", kind, str(dst))["written"] is False  # again: nothing changed


def test_an_export_after_import_follows_the_ledger_and_keeps_the_rest(mm: Runner, workspace: Path) -> None:
    src, dst = workspace / "SRC.md", workspace / "DST.md"
    write(src, SOURCES["todo"])
    mm("import", "todo", str(src), HB_NOW="2026-05-02T10:00:00Z")
    spaced = titles(mm)["spaced out"]
    mm("done", spaced["id"], HB_NOW="2026-05-02T11:00:00Z")
    mm.json("add", "new one", "--source", "todo", HB_NOW="2026-05-02T11:00:00Z")
    mm("export", "todo", str(dst), HB_NOW="2026-05-02T12:00:00Z")
    out = read(dst)
    assert "spaced out" not in out and "<!-- kept: a note for people -->" in out
    assert "- [ ] [Craeted](2026-05-01 12:42) | a typo hb keeps\n" in out
    assert out.startswith(
        '---\ncreated_at: "2026-05-01T03:41:00Z"  # by hand\nopen_count: 2\nupdated_at: "2026'
    )
    # the new entry on top, where mistermorph's Add puts one
    assert [c for _, _, c in entries(out)] == ["new one", "joined  lines"]
    assert titles(mm)["joined  lines"]["status"] == "todo"
    mm("update", titles(mm)["new one"]["id"], "--title", "renamed")
    mm("export", "todo", str(dst), HB_NOW="2026-05-02T13:00:00Z")  # its own last export: known
    assert [c for _, _, c in entries(read(dst))] == ["renamed", "joined  lines"]


def test_export_refuses_a_workspace_file_it_cannot_read(mm: Runner, workspace: Path) -> None:
    todo = workspace / "TODO.md"
    mm.json("add", "in the ledger", "--source", "todo")
    data = b"# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 12:41) | caf\xe9\n"
    todo.write_bytes(data)
    result = mm("export", "todo", code=1)
    assert result.stderr == (
        f"hb: {todo}:3:40: not UTF-8 text (byte 70); hb export does not overwrite a file it cannot read\n"
    )
    assert todo.read_bytes() == data


def test_export_refuses_to_write_over_an_entry_hb_has_not_imported(mm: Runner, workspace: Path) -> None:
    """The issue's case: an entry the runtime reads but hb never imported is never lost."""
    todo = workspace / "TODO.md"
    text = "---\ncreated_at: [unclosed\n---\n\n- [ ] [Created](2026-05-01 12:41) | the runtime reads me\n"
    write(todo, text)
    mm.json("add", "in the ledger", "--source", "todo")
    result = mm("export", "todo", code=1)
    assert result.stderr == (
        f"hb: {todo}:5: this entry is not in the ledger (hb has not imported it), and hb export does not "
        f"overwrite it: run hb sync, or hb import todo {todo}, first\n"
    )
    assert read(todo) == text
    assert mm("export", "todo", "-", code=1).stderr == result.stderr
    sync(mm, "2026-05-02T10:00:00Z")
    assert set(titles(mm)) == {"the runtime reads me", "in the ledger"}
    assert mm.json("export", "todo")["written"] is False


def test_export_writes_over_entries_hb_synced_and_drops_those_removed_in_the_ledger(
    mm: Runner, workspace: Path
) -> None:
    todo, recur = workspace / "TODO.md", workspace / "TODO.RECUR.md"
    write(todo, "- [ ] [Created](2026-05-01 12:41) | a\n- [ ] [Created](2026-05-01 12:42) | b\n")
    write(recur, "- [ ] [Next](2026-05-07 15:00), [Repeat](daily) | rule\n")
    sync(mm, "2026-05-02T10:00:00Z")
    mm("done", titles(mm)["a"]["id"], HB_NOW="2026-05-02T10:00:00Z")
    [rule] = mm.json("recur", "list")
    mm("recur", "remove", rule["id"])
    assert mm.json("export", "todo")["written"] is True
    assert entries(read(todo)) == [(utc(2026, 5, 1, 12, 42), None, "b")]
    assert mm.json("export", "recur")["written"] is True
    assert entries(read(recur), TodoKind.RECUR) == []
    typed = read(todo) + "- [ ] [Created](2026-05-01 12:43) | typed in since\n"
    write(todo, typed)
    assert f"{todo}:2: this entry is not in the ledger" in mm("export", "todo", code=1).stderr
    assert read(todo) == typed


@pytest.mark.parametrize("exported", ["todo", "done"])
def test_an_export_then_a_sync_keeps_a_task_done_in_the_ledger_once(
    mm: Runner, workspace: Path, exported: str
) -> None:
    """``hb export todo`` (or done) after ``hb done`` wrote one file of the pair without the
    bookkeeping a sync keeps: the next sync took the entry gone from TODO.md for a deletion and
    removed the task from the ledger (export todo), or read the entry new in TODO.DONE.md as
    another task (export done, then it stood twice in the file and the ledger)."""
    todo, done = workspace / "TODO.md", workspace / "TODO.DONE.md"
    write(todo, "- [ ] [Created](2026-05-03 12:05) | a\n- [ ] [Created](2026-05-03 12:06) | b\n")
    sync(mm, "2026-05-04T09:00:00Z")
    a = titles(mm)["a"]["id"]
    mm("done", a, HB_NOW="2026-05-04T09:10:00Z")
    assert mm.json("export", exported, HB_NOW="2026-05-04T09:20:00Z")["written"] is True
    report = sync(mm, "2026-05-04T09:30:00Z")
    assert all(not (r["removed"] or r["added"] or r["conflicts"]) for r in report["reports"]), report
    assert mm.json("show", a)["status"] == "done"
    assert [t["title"] for t in mm.json("list", "--all", "--source", "todo")].count("a") == 1
    assert entries(read(todo)) == [(utc(2026, 5, 3, 12, 6), None, "b")]
    assert entries(read(done), TodoKind.DONE) == [(utc(2026, 5, 3, 12, 5), utc(2026, 5, 4, 9, 10), None, "a")]


def test_an_export_of_a_new_rule_then_a_sync_keeps_one_rule(mm: Runner, workspace: Path) -> None:
    """``hb recur add`` then ``hb export recur``: the next sync read the rule's line as a new
    rule beside the one in the ledger, so it fired twice."""
    write(workspace / "TODO.RECUR.md", "- [ ] [Next](2026-05-07 15:00), [Repeat](daily) | rule\n")
    sync(mm, "2026-05-04T09:00:00Z")
    mm("recur", "add", "Water the plants", "--repeat", "daily", "--next", "2026-05-05 08:00")
    mm("export", "recur", HB_NOW="2026-05-04T09:20:00Z")
    sync(mm, "2026-05-04T09:30:00Z")
    assert sorted(r["title"] for r in mm.json("recur", "list")) == ["Water the plants", "rule"]
    assert [e[-1] for e in entries(read(workspace / "TODO.RECUR.md"), TodoKind.RECUR)].count(
        "Water the plants"
    ) == 1


def test_export_to_an_existing_other_file_refuses_its_unknown_entries(mm: Runner, workspace: Path) -> None:
    other = workspace / "elsewhere.md"
    text = "- [ ] [Created](2026-05-01 12:41) | someone else's\n"
    write(other, text)
    mm.json("add", "mine", "--source", "todo")
    result = mm("export", "todo", str(other), code=1)
    assert result.stderr.startswith(f"hb: {other}:1: this entry is not in the ledger")
    assert read(other) == text


def test_import_elsewhere_sync_then_export_back_is_not_refused(mm: Runner, workspace: Path) -> None:
    src = workspace / "SRC.md"
    write(src, SOURCES["todo"])
    mm("import", "todo", str(src), HB_NOW="2026-05-02T10:00:00Z")
    sync(mm, "2026-05-02T10:00:00Z")  # the workspace's TODO.md now holds the entries too
    assert mm.json("export", "todo", str(src))["written"] is False
    assert read(src) == SOURCES["todo"]


def test_export_counts_a_copied_line_as_one_hb_has_not_read(mm: Runner, workspace: Path) -> None:
    """mistermorph reads two equal lines as two entries: a second copy typed in since the last
    sync is an entry hb has not imported."""
    todo = workspace / "TODO.md"
    line = "- [ ] [Created](2026-05-01 12:41) | water the plants\n"
    write(todo, line)
    sync(mm, "2026-05-02T10:00:00Z")
    write(todo, line + line)
    result = mm("export", "todo", code=1)
    assert result.stderr.startswith(f"hb: {todo}:2: this entry is not in the ledger")
    assert read(todo) == line + line


def test_hb_heartbeat_materialises_around_a_rule_whose_title_the_runtime_refuses(
    mm: Runner, workspace: Path
) -> None:
    recur = workspace / "TODO.RECUR.md"
    write(recur, "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | read [the doc](./doc.md)\n")
    mm("config", "set", "recur.materialize", "true")
    result = mm("heartbeat", HB_NOW="2026-05-02T10:00:00Z")
    [rule] = mm.json("recur", "list")
    assert f"hb: warning: {rule['id']} not materialised: link [the doc](./doc.md)" in result.stderr
    assert f"hb: warning: {recur}:1: link [the doc](./doc.md) is not a protocol:id reference" in result.stderr
    assert not (workspace / "TODO.md").exists() and rule["next"] == "2026-05-01 09:00"


def test_one_materialize_puts_its_entries_on_top_in_the_order_of_the_rules(
    mm: Runner, workspace: Path
) -> None:
    """mistermorph collects the due rules' entries in TODO.RECUR.md's order and puts that block
    above TODO.md's list: the first rule's entry is the first line, not the last."""
    write(workspace / "TODO.md", WIP_HEAD + "- [ ] [Created](2026-04-30 08:00) | older entry\n")
    recur = (
        "- [ ] [Next](2026-05-01 06:00), [Repeat](daily) | feed the cat\n"
        "- [ ] [Next](2026-05-02 09:00), [Repeat](weekly) | not due yet\n"
        "- [ ] [Next](2026-04-28 07:30), [Repeat](every 2 days), [ChatID](tg:42) | water the ferns\n"
        "- [ ] [Next](2026-05-01 10:00), [Repeat](every 3 hours) | stretch\n"
    )
    result = materialize(mm, workspace, recur, "2026-05-01T11:00:00Z")
    assert [e["title"] for e in result["created"]] == [
        "2026-05-01 06:00 feed the cat",
        "2026-04-28 07:30 water the ferns",
        "2026-05-01 10:00 stretch",
    ]
    assert [(c, chat) for _, chat, c in entries(read(workspace / "TODO.md"))] == [
        ("2026-05-01 06:00 feed the cat", None),
        ("2026-04-28 07:30 water the ferns", "tg:42"),
        ("2026-05-01 10:00 stretch", None),
        ("older entry", None),
    ]
