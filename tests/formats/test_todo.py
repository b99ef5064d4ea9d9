"""TODO.md / TODO.DONE.md / TODO.RECUR.md: reading, writing, keeping every byte."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.errors import InvalidInput
from heartbeat.formats.todo import (
    Entry,
    LineKind,
    LineWarning,
    TodoKind,
    new_document,
    parse,
    parse_entry,
    recounted,
    render,
    render_entry,
    with_entries,
)

NOW = datetime(2026, 5, 3, 1, 2, 3, tzinfo=UTC)
LATER = datetime(2026, 5, 4, 6, 30, 59, tzinfo=UTC)

EXAMPLE = (
    "---\n"
    'created_at: "2026-05-01T03:41:00Z"\n'
    'updated_at: "2026-05-02T00:00:00Z"\n'
    "open_count: 1\n"
    "---\n"
    "\n"
    "# TODO Work In Progress (WIP)\n"
    "\n"
    "- [ ] [Created](2026-05-01 12:41), [ChatID](tg:-100123)"
    " | Remind [John](tg:@john) to submit report.\n"
)

RECUR = (
    "# TODO Recurring\n"
    "\n"
    "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly), [TZ](Asia/Tokyo) | Play tennis.\n"
    "- [ ] [Next](2026-05-02 09:00), [Repeat](every 6 hours) | Check the report queue.\n"
)


def todo(content: str, created: datetime, chat_id: str | None = None) -> Entry:
    return Entry(TodoKind.TODO, content, created=created, chat_id=chat_id)


# --- reading -------------------------------------------------------------------------


def test_formats_example_parses_to_one_entry_with_its_fields() -> None:
    doc = parse(EXAMPLE, TodoKind.TODO)

    assert doc.entries == [
        Entry(
            TodoKind.TODO,
            "Remind [John](tg:@john) to submit report.",
            created=datetime(2026, 5, 1, 12, 41, tzinfo=UTC),
            chat_id="tg:-100123",
            line=9,
            raw=EXAMPLE.splitlines(keepends=True)[8],
        )
    ]
    assert doc.warnings == []
    assert doc.front_matter == {
        "created_at": "2026-05-01T03:41:00Z",
        "updated_at": "2026-05-02T00:00:00Z",
        "open_count": 1,
    }
    assert doc.header is not None and doc.header.number == 7
    assert [ln.kind for ln in doc.lines] == [LineKind.FRONT_MATTER] * 5 + [
        LineKind.BLANK,
        LineKind.HEADING,
        LineKind.BLANK,
        LineKind.ENTRY,
    ]
    assert render(doc) == EXAMPLE


def test_recur_seed_lines_parse_with_next_naive_and_tz_as_written() -> None:
    doc = parse(RECUR, TodoKind.RECUR)

    tennis, queue = doc.entries
    assert (tennis.next, tennis.repeat, tennis.tz, tennis.content) == (
        datetime(2026, 5, 7, 15, 0),
        "weekly",
        "Asia/Tokyo",
        "Play tennis.",
    )
    assert tennis.next is not None and tennis.next.tzinfo is None
    assert (queue.repeat, queue.tz, queue.line) == ("every 6 hours", None, 4)
    assert render(doc) == RECUR


def test_done_entry_reads_created_and_done_in_utc() -> None:
    line = "- [x] [Created](2026-05-01 12:41), [Done](2026-05-02 08:05) | Sent it.\n"
    (entry,) = parse("# TODO Done\n\n" + line, TodoKind.DONE).entries

    assert entry.created == datetime(2026, 5, 1, 12, 41, tzinfo=UTC)
    assert entry.done == datetime(2026, 5, 2, 8, 5, tzinfo=UTC)
    assert (entry.line, entry.raw) == (3, line)


def test_only_the_first_separator_splits_and_links_stay_in_content() -> None:
    entry = parse_entry("- [ ] [Created](2026-05-01 12:41) | a | b [x](y) | 日本語のテキスト", TodoKind.TODO)
    assert entry.content == "a | b [x](y) | 日本語のテキスト"


def test_surrounding_whitespace_is_trimmed_like_the_runtime() -> None:
    text = "  - [ ]   [Created]( 2026-05-01 12:41 ) ,  [ChatID](tg:-1)  |   spaced out   \n"
    doc = parse(text, TodoKind.TODO)

    (entry,) = doc.entries
    assert (entry.content, entry.chat_id) == ("spaced out", "tg:-1")
    assert entry.created == datetime(2026, 5, 1, 12, 41, tzinfo=UTC)
    assert render(doc) == text


def test_one_digit_hour_is_read_as_go_reads_its_layout() -> None:
    entry = parse_entry("- [ ] [Created](2026-05-01 9:05) | early", TodoKind.TODO)
    assert entry.created == datetime(2026, 5, 1, 9, 5, tzinfo=UTC)


def test_tz_utc_is_accepted_in_any_case() -> None:
    entry = parse_entry("- [ ] [Next](2026-05-01 09:00), [Repeat](Daily), [TZ](uTc) | x", TodoKind.RECUR)
    assert (entry.tz, entry.repeat) == ("uTc", "Daily")


MALFORMED = [
    (
        TodoKind.TODO,
        "- [ ] [Created](2026-05-01 12:41), [Created](2026-05-01 12:42) | twice",
        "duplicate key Created",
    ),
    (
        TodoKind.TODO,
        "- [ ] [Created](2026-13-01 10:00) | month 13",
        "bad timestamp '2026-13-01 10:00' in Created",
    ),
    (
        TodoKind.TODO,
        "- [ ] [Created](2026-02-30 10:00) | no such day",
        "bad timestamp '2026-02-30 10:00' in Created",
    ),
    (
        TodoKind.TODO,
        "- [ ] [Created](2026-05-01T10:00) | iso",
        "bad timestamp '2026-05-01T10:00' in Created",
    ),
    (TodoKind.TODO, "- [ ] buy milk", "missing ' | '"),
    (TodoKind.TODO, "- [ ] [Created](2026-05-01 12:41), [Foo](bar) | x", "unknown key Foo"),
    (
        TodoKind.TODO,
        "- [ ] [Created](2026-05-01 12:41), [Done](2026-05-01 12:42) | x",
        "unknown key Done",
    ),
    (TodoKind.TODO, "- [ ] [ChatID](tg:-100123) | no stamp", "missing required key Created"),
    (TodoKind.TODO, "- [ ] Created: 2026-05-01 | x", "bad metadata 'Created: 2026-05-01'"),
    (TodoKind.TODO, "- [ ] [Created](2026-05-01 12:41),, [ChatID](tg:-1) | x", "empty metadata item"),
    (TodoKind.TODO, "- [ ] [Created](   ) | x", "empty value for Created"),
    (
        TodoKind.TODO,
        "- [ ] [Created](2026-05-01 12:41), [ChatID](100123) | x",
        "bad ChatID '100123': not protocol:id",
    ),
    (TodoKind.TODO, "- [x] [Created](2026-05-01 12:41) | checked box", "not an entry"),
    (TodoKind.TODO, "* item", "not an entry"),
    (TodoKind.TODO, "just some prose", "not an entry"),
    (TodoKind.TODO, "---", "not an entry"),
    (TodoKind.DONE, "- [x] [Created](2026-05-01 12:41) | never done", "missing required key Done"),
    (
        TodoKind.DONE,
        "- [X] [Created](2026-05-01 12:41), [Done](2026-05-01 12:42) | capital X",
        "not an entry",
    ),
    (
        TodoKind.RECUR,
        "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly), [TZ](Mars/Base) | x",
        "bad TZ 'Mars/Base'",
    ),
    # a path Go's LoadLocation opens but that names no zone key (README: deliberate differences)
    (
        TodoKind.RECUR,
        "- [ ] [Next](2026-05-07 15:00), [Repeat](daily), [TZ](Asia//Tokyo) | x",
        "bad TZ 'Asia//Tokyo'",
    ),
    (
        TodoKind.RECUR,
        "- [ ] [Next](2026-05-07 15:00), [Repeat](daily), [TZ](Asia/./Tokyo) | x",
        "bad TZ 'Asia/./Tokyo'",
    ),
    (
        TodoKind.RECUR,
        "- [ ] [Next](2026-05-07 15:00), [Repeat](monthly) | x",
        "bad Repeat 'monthly': expected daily, weekly, every N days or every N hours",
    ),
    (
        TodoKind.RECUR,
        "- [ ] [Next](2026-05-07 15:00), [Repeat](every 0 days) | x",
        "bad Repeat 'every 0 days': N must be at least 1",
    ),
    (TodoKind.RECUR, "- [ ] [Repeat](daily) | x", "missing required key Next"),
    (TodoKind.RECUR, "- [ ] [Created](2026-05-01 12:41) | x", "unknown key Created"),
]


@pytest.mark.parametrize(("kind", "bad", "reason"), MALFORMED)
def test_a_malformed_line_is_kept_in_place_and_reported(kind: TodoKind, bad: str, reason: str) -> None:
    good = {
        TodoKind.TODO: "- [ ] [Created](2026-05-01 12:41) | fine",
        TodoKind.DONE: "- [x] [Created](2026-05-01 12:41), [Done](2026-05-02 10:00) | fine",
        TodoKind.RECUR: "- [ ] [Next](2026-05-07 15:00), [Repeat](daily) | fine",
    }[kind]
    text = f"{kind.header}\n\n{good}\n{bad}\n{good}\n"

    doc = parse(text, kind)

    assert doc.warnings == [LineWarning(4, bad, reason)]
    assert [e.line for e in doc.entries] == [3, 5]
    assert doc.lines[3].kind is LineKind.MALFORMED
    assert render(doc) == text
    with pytest.raises(ValueError, match="^" + reason.replace("(", r"\(").replace(")", r"\)")):
        parse_entry(bad, kind)


def test_comments_blank_lines_and_headings_are_kept_without_warnings() -> None:
    text = (
        "# TODO Recurring\n"
        "\n"
        "<!-- Examples:\n"
        "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly) | Play tennis.\n"
        "free prose inside the comment\n"
        "-->\n"
        "<!-- one line -->\n"
        "## another heading\n"
        "   \n"
        "- [ ] [Next](2026-05-02 09:00), [Repeat](every 6 hours) | Real one.\n"
    )
    doc = parse(text, TodoKind.RECUR)

    assert doc.warnings == []
    assert [e.content for e in doc.entries] == ["Real one."]
    # the runtime cuts the comments out before splitting lines: lines 3-6 read as one empty line
    assert [(ln.kind, ln.number, ln.last) for ln in doc.lines[2:6]] == [
        (LineKind.COMMENT, 3, 6),
        (LineKind.COMMENT, 7, 7),
        (LineKind.HEADING, 8, 8),
        (LineKind.BLANK, 9, 9),
    ]
    assert render(doc) == text


def test_an_inline_comment_is_not_part_of_the_content_but_stays_in_the_file() -> None:
    text = "- [ ] [Created](2026-05-01 12:41) | call Bob <!-- after lunch -->\n"
    doc = parse(text, TodoKind.TODO)

    assert doc.entries[0].content == "call Bob"
    assert render(doc) == text


def test_an_unterminated_comment_hides_nothing() -> None:
    text = "<!-- never closed\n- [ ] [Created](2026-05-01 12:41) | still read\n"
    doc = parse(text, TodoKind.TODO)

    assert [e.content for e in doc.entries] == ["still read"]
    assert doc.warnings == [LineWarning(1, "<!-- never closed", "not an entry")]


def test_crlf_mixed_endings_bom_and_no_final_newline_survive() -> None:
    text = (
        "\ufeff# TODO Work In Progress (WIP)\r\n"
        "\r\n"
        "- [ ] [Created](2026-05-01 12:41) | Привет, мир\r\n"
        "- [ ] [Created](2026-05-01 12:42) | 中文内容 | 管道\n"
        "a stray\rcarriage return\n"
        "- [ ] [Created](2026-05-01 12:43) | last, no newline"
    )
    doc = parse(text, TodoKind.TODO)

    assert [e.content for e in doc.entries] == [
        "Привет, мир",
        "中文内容 | 管道",
        "last, no newline",
    ]
    assert [ln.ending for ln in doc.lines] == ["\r\n", "\r\n", "\r\n", "\n", "\n", ""]
    assert doc.header is not None and doc.header.number == 1
    assert doc.newline == "\r\n"
    assert [w.line for w in doc.warnings] == [5]
    assert render(doc) == text


def test_a_bom_before_the_front_matter_makes_it_lines_the_runtime_reads_as_entry_lines() -> None:
    """Go's strings.TrimSpace keeps a BOM, so mistermorph finds no '---' on line 1: the front
    matter's lines are read as entry lines (none of them is one), and hb does not edit it."""
    text = "\ufeff" + EXAMPLE
    doc = parse(text, TodoKind.TODO)

    assert doc.front_matter is None
    assert [ln.kind for ln in doc.lines[:5]] == [LineKind.FRONT_MATTER] * 5
    assert [e.content for e in doc.entries] == ["Remind [John](tg:@john) to submit report."]
    assert [(w.line, w.reason) for w in doc.warnings] == [
        (
            1,
            "a byte-order mark comes before '---': mistermorph reads no front matter here "
            "(it reads these lines as entry lines)",
        )
    ]
    assert render(doc) == text
    changed = with_entries(doc, [], now=NOW)
    assert render(changed) == text.replace(EXAMPLE.splitlines(keepends=True)[8], "")


def test_empty_text_is_an_empty_document() -> None:
    doc = parse("", TodoKind.DONE)
    assert (doc.lines, doc.entries, doc.front_matter, render(doc)) == ((), [], None, "")


# --- strict and extended dialects -----------------------------------------------------


def test_id_key_is_extended_dialect_only() -> None:
    line = "- [ ] [Created](2026-05-01 12:41), [ID](todo-1a2b3c4d) | with an id"
    strict = parse(line + "\n", TodoKind.TODO)
    extended = parse(line + "\n", TodoKind.TODO, dialect="extended")

    assert strict.entries == []
    assert strict.warnings == [LineWarning(1, line, "unknown key ID (extended dialect only)")]
    assert extended.warnings == []
    assert extended.entries[0].extra == (("ID", "todo-1a2b3c4d"),)


def test_cron_repeat_is_extended_dialect_only() -> None:
    line = "- [ ] [Next](2026-05-04 09:00), [Repeat](cron 0 9;17 * * 1-5) | standup"

    assert parse(line, TodoKind.RECUR).warnings[0].reason == (
        "bad Repeat 'cron 0 9;17 * * 1-5': expected daily, weekly, every N days or every N hours"
    )
    (entry,) = parse(line, TodoKind.RECUR, dialect="extended").entries
    assert entry.repeat == "cron 0 9;17 * * 1-5"


def test_an_id_entry_cannot_be_written_into_a_strict_document() -> None:
    doc = parse(RECUR, TodoKind.RECUR)
    rule = Entry(
        TodoKind.RECUR,
        "standup",
        next=datetime(2026, 5, 4, 9),
        repeat="daily",
        extra=(("ID", "rec-1"),),
    )

    with pytest.raises(InvalidInput, match="strict dialect: unknown key ID"):
        with_entries(doc, [*doc.entries, rule], now=NOW)
    extended = parse(RECUR, TodoKind.RECUR, dialect="extended")
    written = with_entries(extended, [*extended.entries, rule], now=NOW)
    assert render(written).endswith(
        "- [ ] [Next](2026-05-04 09:00), [Repeat](daily), [ID](rec-1) | standup\n"
    )


def test_unknown_dialect_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="dialect"):
        parse("", TodoKind.TODO, dialect="loose")


# --- the canonical line ----------------------------------------------------------------


def test_render_entry_writes_canonical_key_order_and_utc_minutes() -> None:
    tokyo = timezone(timedelta(hours=9))
    assert (
        render_entry(todo("content", datetime(2026, 5, 1, 21, 41, 59, tzinfo=tokyo), "tg:-100123"))
        == "- [ ] [Created](2026-05-01 12:41), [ChatID](tg:-100123) | content"
    )
    done = Entry(
        TodoKind.DONE,
        "done it",
        created=datetime(2026, 5, 1, 12, 41, tzinfo=UTC),
        done=datetime(2026, 5, 2, 8, 5, tzinfo=UTC),
        chat_id="tg:-1",
        extra=(("ID", "todo-1a2b3c4d"),),
    )
    assert render_entry(done) == (
        "- [x] [Created](2026-05-01 12:41), [Done](2026-05-02 08:05), [ChatID](tg:-1),"
        " [ID](todo-1a2b3c4d) | done it"
    )
    recur = Entry(
        TodoKind.RECUR,
        "Play tennis.",
        next=datetime(2026, 5, 7, 15),
        repeat="weekly",
        tz="Asia/Tokyo",
        chat_id="tg:@john",
    )
    assert render_entry(recur) == (
        "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly), [TZ](Asia/Tokyo),"
        " [ChatID](tg:@john) | Play tennis."
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (todo("x", datetime(2026, 5, 1, 12, 41)), "timezone-aware"),
        (todo("two\nlines", NOW), "one line"),
        (todo("  padded", NOW), "trimmed"),
        (todo("", NOW), "non-empty"),
        (todo("<!-- hidden", NOW), "HTML comment"),
        (todo("x", NOW, chat_id="tg:-1,2"), "ChatID"),
        (replace(todo("x", NOW), done=NOW), "Done is not allowed in TODO.md"),
        (Entry(TodoKind.TODO, "x"), "needs Created"),
        (Entry(TodoKind.RECUR, "x", repeat="daily"), "needs Next"),
        (Entry(TodoKind.RECUR, "x", next=NOW, repeat="daily"), "naive"),
        (Entry(TodoKind.RECUR, "x", next=NOW.replace(tzinfo=None), repeat="monthly"), "Repeat"),
        (Entry(TodoKind.RECUR, "x", next=NOW.replace(tzinfo=None), repeat="daily", tz="Nowhere/X"), "TZ"),
        (replace(todo("x", NOW), extra=(("Created", "y"),)), "extra key"),
        (replace(todo("x", NOW), extra=(("ID", "a(b)"),)), "parenthesis"),
    ],
)
def test_render_entry_refuses_what_would_not_read_back(entry: Entry, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        render_entry(entry)


def test_parse_entry_returns_a_new_entry() -> None:
    entry = parse_entry("- [ ] [Created](2026-05-01 12:41) | x\r\n", TodoKind.TODO)
    assert (entry.line, entry.raw, entry.content) == (0, None, "x")


# --- with_entries ------------------------------------------------------------------------


def test_unchanged_entries_give_back_the_exact_text() -> None:
    text = EXAMPLE + "- [ ] typo here\n<!-- note -->\n"
    doc = parse(text, TodoKind.TODO)

    assert render(with_entries(doc, doc.entries, now=NOW)) == text
    stripped = [replace(e, raw=None, line=e.line) for e in doc.entries]
    assert render(with_entries(doc, stripped, now=NOW)) == text


def test_an_equal_entry_keeps_its_bytes_and_a_changed_one_is_rewritten_in_place() -> None:
    text = (
        "# TODO Work In Progress (WIP)\r\n"
        "\r\n"
        "-  [ ] odd\r\n"
        "  - [ ]   [ChatID](tg:-5),[Created](2026-05-01 12:41)  |  keep my spacing\r\n"
        "- [ ] [Created](2026-05-01 12:42) | change me\r\n"
        "trailing prose\r\n"
    )
    doc = parse(text, TodoKind.TODO)
    keep, change = doc.entries

    # same values with seconds and another zone: still equal at the file's precision
    same = replace(keep, created=datetime(2026, 5, 1, 21, 41, 30, tzinfo=timezone(timedelta(hours=9))))
    out = with_entries(doc, [same, replace(change, content="changed")], now=NOW)

    assert render(out) == text.replace(
        "- [ ] [Created](2026-05-01 12:42) | change me",
        "- [ ] [Created](2026-05-01 12:42) | changed",
    )
    assert [e.line for e in out.entries] == [4, 5]
    assert all(e.raw is not None for e in out.entries)


def test_removing_an_entry_drops_only_its_line() -> None:
    text = (
        "# TODO Work In Progress (WIP)\n"
        "\n"
        "- [ ] [Created](2026-05-01 12:41) | first\n"
        "<!-- between -->\n"
        "- [ ] [Created](2026-05-01 12:42) | second\n"
        "- [ ] [Created](2026-05-01 12:43) | third\n"
    )
    doc = parse(text, TodoKind.TODO)
    first, _, third = doc.entries

    out = with_entries(doc, [first, third], now=NOW)

    assert render(out) == text.replace("- [ ] [Created](2026-05-01 12:42) | second\n", "")


def test_new_entries_go_after_their_predecessor_or_before_the_first_entry() -> None:
    text = (
        "# TODO Work In Progress (WIP)\n"
        "\n"
        "<!-- keep me above -->\n"
        "- [ ] [Created](2026-05-01 12:41) | a\n"
        "- [ ] [Created](2026-05-01 12:42) | b\n"
        "footer prose\n"
    )
    doc = parse(text, TodoKind.TODO)
    a, b = doc.entries
    top = todo("top", NOW)
    mid1, mid2 = todo("mid 1", NOW), todo("mid 2", NOW)
    end = todo("end", NOW)

    out = with_entries(doc, [top, a, mid1, mid2, b, end], now=NOW)

    assert render(out) == (
        "# TODO Work In Progress (WIP)\n"
        "\n"
        "<!-- keep me above -->\n"
        "- [ ] [Created](2026-05-03 01:02) | top\n"
        "- [ ] [Created](2026-05-01 12:41) | a\n"
        "- [ ] [Created](2026-05-03 01:02) | mid 1\n"
        "- [ ] [Created](2026-05-03 01:02) | mid 2\n"
        "- [ ] [Created](2026-05-01 12:42) | b\n"
        "- [ ] [Created](2026-05-03 01:02) | end\n"
        "footer prose\n"
    )
    assert [e.line for e in out.entries] == [4, 5, 6, 7, 8, 9]


def test_a_new_entry_replaces_a_removed_first_entry_in_its_slot() -> None:
    text = "# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 12:41) | old\n# tail\n"
    doc = parse(text, TodoKind.TODO)

    out = with_entries(doc, [todo("new", NOW)], now=NOW)

    assert render(out) == (
        "# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-03 01:02) | new\n# tail\n"
    )


def test_with_no_entry_line_new_entries_go_after_the_header_and_its_blank_lines() -> None:
    text = "# TODO Recurring\n\n\n<!-- examples -->\n"
    doc = parse(text, TodoKind.RECUR)
    rule = Entry(TodoKind.RECUR, "water plants", next=datetime(2026, 5, 4, 8), repeat="every 2 days")

    out = with_entries(doc, [rule], now=NOW)

    assert render(out) == (
        "# TODO Recurring\n\n\n"
        "- [ ] [Next](2026-05-04 08:00), [Repeat](every 2 days) | water plants\n"
        "<!-- examples -->\n"
    )


def test_without_header_or_entries_new_entries_go_at_the_end_keeping_no_final_newline() -> None:
    doc = parse("some notes\nmore notes", TodoKind.TODO)

    out = with_entries(doc, [todo("added", NOW)], now=NOW)

    assert render(out) == "some notes\nmore notes\n- [ ] [Created](2026-05-03 01:02) | added"
    assert render(with_entries(parse("", TodoKind.TODO), [todo("x", NOW)], now=NOW)) == (
        "- [ ] [Created](2026-05-03 01:02) | x\n"
    )


def test_a_crlf_document_gets_crlf_for_new_lines() -> None:
    doc = parse("# TODO Done\r\n\r\n", TodoKind.DONE)
    entry = Entry(TodoKind.DONE, "x", created=NOW, done=LATER)

    assert render(with_entries(doc, [entry], now=NOW)) == (
        "# TODO Done\r\n\r\n- [x] [Created](2026-05-03 01:02), [Done](2026-05-04 06:30) | x\r\n"
    )


def test_front_matter_gets_count_and_updated_at_and_nothing_else_changes_comments_included() -> None:
    text = (
        "---\n"
        "# a yaml comment hb must keep\n"
        'created_at: "2026-05-01T03:41:00Z"\n'
        "updated_at:   '2020-01-01T00:00:00Z'   # old\n"
        "owner: {name: agent, tags: [a, b]}\n"
        "open_count: 99 # recomputed by the runtime\n"
        "---\n"
        "\n"
        "# TODO Work In Progress (WIP)\n"
        "\n"
        "- [ ] [Created](2026-05-01 12:41) | one\n"
        "- [ ] [Created](2026-05-01 12:42) | two\n"
    )
    doc = parse(text, TodoKind.TODO)

    out = with_entries(
        doc, doc.entries[:1], now=datetime(2026, 5, 3, 10, 2, 3, tzinfo=timezone(timedelta(hours=9)))
    )

    assert render(out) == (
        "---\n"
        "# a yaml comment hb must keep\n"
        'created_at: "2026-05-01T03:41:00Z"\n'
        'updated_at: "2026-05-03T01:02:03Z"   # old\n'
        "owner: {name: agent, tags: [a, b]}\n"
        "open_count: 1 # recomputed by the runtime\n"
        "---\n"
        "\n"
        "# TODO Work In Progress (WIP)\n"
        "\n"
        "- [ ] [Created](2026-05-01 12:41) | one\n"
    )
    assert out.front_matter is not None and out.front_matter["open_count"] == 1


def test_missing_front_matter_keys_are_appended_before_the_closing_fence() -> None:
    text = "---\r\ntitle: mine\r\n---\r\n# TODO Done\r\n"
    doc = parse(text, TodoKind.DONE)
    entry = Entry(TodoKind.DONE, "x", created=NOW, done=LATER)

    out = with_entries(doc, [entry], now=NOW)

    assert render(out) == (
        "---\r\n"
        "title: mine\r\n"
        'updated_at: "2026-05-03T01:02:03Z"\r\n'
        "done_count: 1\r\n"
        "---\r\n"
        "# TODO Done\r\n"
        "- [x] [Created](2026-05-03 01:02), [Done](2026-05-04 06:30) | x\r\n"
    )


def test_front_matter_is_not_touched_when_nothing_changed_and_not_added_when_absent() -> None:
    doc = parse(EXAMPLE, TodoKind.TODO)
    assert with_entries(doc, doc.entries, now=NOW) is doc

    bare = parse(RECUR, TodoKind.RECUR)
    out = with_entries(bare, bare.entries[1:], now=NOW)
    assert out.front_matter is None
    assert render(out) == RECUR.replace(RECUR.splitlines(keepends=True)[2], "")


def test_a_hand_typo_survives_ten_rounds_of_changes() -> None:
    typo = "- [ ] [Creted](2026-05-01 12:41) | call the dentist  \n"
    text = EXAMPLE + typo + "<!-- multi\nline -->\n"
    for round_no in range(10):
        doc = parse(text, TodoKind.TODO)
        assert [w.text + "\n" for w in doc.warnings] == [typo]
        kept = [replace(e, content=f"{e.content} ({round_no})") for e in doc.entries[-1:]]
        added = todo(f"round {round_no}", NOW + timedelta(minutes=round_no))
        text = render(with_entries(doc, [*kept, added], now=NOW))

    assert text.count(typo) == 1
    assert text.endswith(typo + "<!-- multi\nline -->\n")
    doc = parse(text, TodoKind.TODO)
    assert [e.content for e in doc.entries] == ["round 8 (9)", "round 9"]
    assert doc.front_matter is not None and doc.front_matter["open_count"] == 2


def test_completing_moves_an_entry_from_todo_to_the_end_of_done() -> None:
    todo_text = EXAMPLE + "- [ ] [Created](2026-05-02 07:00) | second\n"
    done_text = "# TODO Done\n\n- [x] [Created](2026-04-01 10:00), [Done](2026-04-02 11:00) | old\n"
    todo_doc = parse(todo_text, TodoKind.TODO)
    done_doc = parse(done_text, TodoKind.DONE)
    finished, remaining = todo_doc.entries

    new_todo = with_entries(todo_doc, [remaining], now=NOW)
    completed = Entry(
        TodoKind.DONE,
        finished.content,
        created=finished.created,
        done=NOW,
        chat_id=finished.chat_id,
    )
    new_done = with_entries(done_doc, [*done_doc.entries, completed], now=NOW)

    assert [e.content for e in new_todo.entries] == ["second"]
    assert render(new_done) == done_text + (
        "- [x] [Created](2026-05-01 12:41), [Done](2026-05-03 01:02), [ChatID](tg:-100123)"
        " | Remind [John](tg:@john) to submit report.\n"
    )
    assert new_done.entries[-1].done == datetime(2026, 5, 3, 1, 2, tzinfo=UTC)


def test_with_entries_rejects_misuse() -> None:
    doc = parse(EXAMPLE, TodoKind.TODO)
    (entry,) = doc.entries

    with pytest.raises(ValueError, match="aware"):
        with_entries(doc, [], now=datetime(2026, 5, 3))
    with pytest.raises(ValueError, match="line 3 is not an entry"):
        with_entries(doc, [replace(entry, line=3)], now=NOW)
    with pytest.raises(ValueError, match="listed twice"):
        with_entries(doc, [entry, entry], now=NOW)
    with pytest.raises(InvalidInput, match=r"cannot go into TODO\.md"):
        with_entries(doc, [Entry(TodoKind.DONE, "x", created=NOW, done=NOW)], now=NOW)


def test_a_new_entry_that_a_stray_comment_would_swallow_is_refused() -> None:
    doc = parse("<!-- never closed\n", TodoKind.TODO)

    with pytest.raises(InvalidInput, match="would not read back"):
        with_entries(doc, [todo("closes it --> oops", NOW)], now=NOW)


# --- new_document ------------------------------------------------------------------------


def test_new_document_is_the_runtimes_full_form() -> None:
    entries = [
        todo(
            "Remind [John](tg:@john) to submit report.",
            datetime(2026, 5, 1, 12, 41, tzinfo=UTC),
            "tg:-100123",
        ),
        todo("second", datetime(2026, 5, 1, 12, 42, 30, tzinfo=UTC)),
    ]

    doc = new_document(TodoKind.TODO, entries, now=NOW)

    assert render(doc) == (
        "---\n"
        'created_at: "2026-05-03T01:02:03Z"\n'
        'updated_at: "2026-05-03T01:02:03Z"\n'
        "open_count: 2\n"
        "---\n"
        "\n"
        "# TODO Work In Progress (WIP)\n"
        "\n"
        "- [ ] [Created](2026-05-01 12:41), [ChatID](tg:-100123)"
        " | Remind [John](tg:@john) to submit report.\n"
        "- [ ] [Created](2026-05-01 12:42) | second\n"
    )
    assert [e.line for e in doc.entries] == [9, 10]


def test_new_document_without_entries() -> None:
    doc = new_document(TodoKind.RECUR, [], now=NOW)
    assert render(doc) == (
        "---\n"
        'created_at: "2026-05-03T01:02:03Z"\n'
        'updated_at: "2026-05-03T01:02:03Z"\n'
        "recurring_count: 0\n"
        "---\n"
        "\n"
        "# TODO Recurring\n"
        "\n"
    )


# --- front matter that cannot be read -------------------------------------------------------

DONE_LINE = "- [x] [Created](2026-05-01 12:41), [Done](2026-05-02 10:00) | still read\n"


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        # the line where the [ or the quote opened, not the end of the text where YAML noticed
        ("---\nfine: 1\nbad: [unclosed\n---\n", 3, "not valid YAML: while parsing a flow sequence"),
        ('---\ncreated_at: "2026-05-01T03:41:00Z\nopen_count: 1\n---\n', 2, "never closed"),
        ("---\na: 1\n  b: 2\n---\n", 3, "not valid YAML"),
        ("---\n- a list\n---\n", 2, "not a YAML mapping"),
        ("---\ncreated_at: 2026-13-01\n---\n", 1, "not valid YAML"),
        ("---  \nx: !!python/name:os.system\n---\n", 2, "not valid YAML"),
    ],
)
def test_unreadable_front_matter_is_kept_as_written_and_the_entries_are_read(
    text: str, line: int, reason: str
) -> None:
    """mistermorph reads the entries after front matter it cannot read: so does hb, with a
    warning naming the line, and it leaves that front matter alone when it writes."""
    text = text + "# TODO Done\n\n" + DONE_LINE
    doc = parse(text, TodoKind.DONE)

    assert [e.content for e in doc.entries] == ["still read"]
    assert doc.front_matter is None
    [warning] = doc.warnings
    assert warning.line == line and reason in warning.reason
    assert warning.reason.endswith("; kept as written (mistermorph still reads the entries)")
    assert render(doc) == text
    added = Entry(TodoKind.DONE, "added", created=NOW, done=NOW)
    out = render(with_entries(doc, [*doc.entries, added], now=NOW))
    assert out == text + "- [x] [Created](2026-05-03 01:02), [Done](2026-05-03 01:02) | added\n"


def test_front_matter_without_a_closing_fence_is_read_as_entry_lines_as_the_runtime_does() -> None:
    text = "---\nopen_count: 1\n" + DONE_LINE + "\n# TODO Done\n"
    doc = parse(text, TodoKind.DONE)

    assert [e.content for e in doc.entries] == ["still read"]
    assert doc.front_matter is None
    assert [(w.line, w.reason) for w in doc.warnings] == [
        (1, "front matter has no closing '---': mistermorph reads every line of this file as an entry line"),
        (2, "not an entry"),
    ]
    assert render(doc) == text


def test_empty_front_matter_is_an_empty_mapping() -> None:
    doc = parse("---\n---\n# TODO Done\n", TodoKind.DONE)
    assert doc.front_matter == {}


def test_a_write_sets_the_count_and_updated_at_in_front_matter_that_lacks_them() -> None:
    """mistermorph writes its count and updated_at on every write; hb adds the two lines to a
    readable front matter without them and leaves every other line as it was."""
    doc = parse("---\nowner: me\n---\n# TODO Done\n", TodoKind.DONE)
    added = Entry(TodoKind.DONE, "added", created=NOW, done=NOW)

    out = render(with_entries(doc, [added], now=NOW))

    assert out == (
        '---\nowner: me\nupdated_at: "2026-05-03T01:02:03Z"\ndone_count: 1\n---\n# TODO Done\n'
        "- [x] [Created](2026-05-03 01:02), [Done](2026-05-03 01:02) | added\n"
    )


# --- comments that cross lines, and the BOM, when lines move ------------------------------


def test_a_new_entry_after_a_line_that_opens_a_comment_goes_after_the_comment() -> None:
    text = (
        "- [ ] [Created](2026-05-01 12:41) | first <!-- a note\n"
        "- [ ] [Created](2026-05-01 12:42) | hidden in the note\n"
        "-->\n"
        "tail\n"
    )
    doc = parse(text, TodoKind.TODO)
    (first,) = doc.entries

    out = with_entries(doc, [first, todo("added", NOW)], now=NOW)

    assert render(out) == text.replace("-->\n", "-->\n- [ ] [Created](2026-05-03 01:02) | added\n")
    assert [e.content for e in out.entries] == ["first", "added"]


def test_a_new_top_entry_goes_before_the_comment_the_first_entry_starts_with() -> None:
    text = "<!-- opened\n--> - [ ] [Created](2026-05-01 12:41) | first\n"
    doc = parse(text, TodoKind.TODO)

    out = with_entries(doc, [todo("top", NOW), *doc.entries], now=NOW)

    assert render(out) == "- [ ] [Created](2026-05-03 01:02) | top\n" + text
    assert [e.content for e in out.entries] == ["top", "first"]


def test_removing_an_entry_that_opens_a_comment_keeps_the_comment_and_the_lines_it_hides() -> None:
    text = (
        "- [ ] [Created](2026-05-01 12:41) | first <!-- a note\n"
        "- [ ] [Created](2026-05-01 12:42) | hidden in the note\n"
        "-->\n"
    )
    doc = parse(text, TodoKind.TODO)

    out = with_entries(doc, [], now=NOW)

    assert render(out) == text.removeprefix("- [ ] [Created](2026-05-01 12:41) | first ")
    assert out.entries == [] and [ln.kind for ln in out.lines] == [LineKind.COMMENT]


def test_rewriting_an_entry_that_spans_lines_keeps_its_comments_after_the_new_text() -> None:
    text = (
        "<!-- lead -->  - [ ] [Created](2026-05-01 12:41) | first <!-- a note\n"
        "- [ ] [Created](2026-05-01 12:42) | hidden in the note\n"
        "--> tail\n"
        "- [ ] [Created](2026-05-01 12:43) | next\n"
    )
    doc = parse(text, TodoKind.TODO)
    first, nxt = doc.entries
    assert (first.content, first.line, nxt.line) == ("first  tail", 1, 4)

    out = with_entries(doc, [replace(first, content="renamed"), nxt], now=NOW)

    assert render(out) == (
        "<!-- lead -->- [ ] [Created](2026-05-01 12:41) | renamed <!-- a note\n"
        "- [ ] [Created](2026-05-01 12:42) | hidden in the note\n"
        "-->\n"
        "- [ ] [Created](2026-05-01 12:43) | next\n"
    )
    assert [e.content for e in out.entries] == ["renamed", "next"]


def test_a_bom_keeps_the_first_line_from_being_an_entry_and_stays_at_the_start() -> None:
    """Go's strings.TrimSpace keeps a BOM: mistermorph does not read line 1 as an entry."""
    text = "\ufeff- [ ] [Created](2026-05-01 12:41) | first\n- [ ] [Created](2026-05-01 12:42) | second"
    doc = parse(text, TodoKind.TODO)

    assert [e.content for e in doc.entries] == ["second"]
    assert doc.warnings == [
        LineWarning(
            1,
            "\ufeff- [ ] [Created](2026-05-01 12:41) | first",
            "a byte-order mark starts this line: mistermorph does not read it as an entry",
        )
    ]
    out = with_entries(doc, [todo("top", NOW), replace(doc.entries[0], content="renamed")], now=NOW)

    assert render(out) == (
        "\ufeff- [ ] [Created](2026-05-01 12:41) | first\n"
        "- [ ] [Created](2026-05-03 01:02) | top\n"
        "- [ ] [Created](2026-05-01 12:42) | renamed"
    )


def test_an_entry_placed_by_the_parser_is_the_one_dataclasses_replace_makes() -> None:
    """The parser places each entry at its line with a copy of its fields (dataclasses.replace
    walks the fields on every call, the cost of every entry of every parse): equal, hashing
    alike, its fields each the ones asked for or the original's, the original unchanged."""
    import dataclasses

    from heartbeat.formats.todo import Entry, TodoKind, _entry_with

    full = Entry(
        kind=TodoKind.RECUR,
        content="Rule 1",
        created=datetime(2026, 5, 1, 9, 0, tzinfo=UTC),
        done=datetime(2026, 5, 2, 9, 0, tzinfo=UTC),
        next=datetime(2026, 5, 3, 9, 0),
        repeat="daily",
        tz="Asia/Tokyo",
        chat_id="tg:5",
        extra=(("Owner", "ops"),),
        line=4,
        raw="- [ ] ...\n",
    )
    assert not hasattr(Entry, "__slots__") and not hasattr(Entry, "__post_init__")
    for changes in ({"line": 9, "raw": "x\n"}, {"raw": None}, {"created": None, "line": 0, "raw": None}):
        made = _entry_with(full, **changes)
        assert made == dataclasses.replace(full, **changes) and hash(made) == hash(
            dataclasses.replace(full, **changes)
        )
        assert type(made) is Entry and made is not full
        assert {f.name: getattr(made, f.name) for f in dataclasses.fields(Entry)} == {
            **{f.name: getattr(full, f.name) for f in dataclasses.fields(Entry)},
            **changes,
        }
    assert full.line == 4 and full.raw == "- [ ] ...\n"
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.line = 1  # type: ignore[misc]


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="<!->x\n", max_size=40))
def test_comment_spans_are_the_lazy_matches_of_an_html_comment(text: str) -> None:
    """The spans hb cuts are those of ``<!--.*?-->`` across lines, for any text of markers."""
    import re

    from heartbeat.formats.todo import _comment_spans

    assert _comment_spans(text) == [m.span() for m in re.finditer(r"<!--.*?-->", text, re.DOTALL)]


def test_a_file_of_unclosed_comments_is_read_in_one_pass() -> None:
    """Every line opens an HTML comment that nothing closes, so none is a comment and every entry
    keeps its text; the file is read without scanning to its end from each opening (the regex
    did, in time in the square of the file: 31 s at 8,000 lines)."""
    from heartbeat.formats import todo

    scans: list[int] = []

    class Counting(str):
        def find(self, sub: str, *args: Any) -> int:
            scans.append(1)
            return str.find(self, sub, *args)

    lines = "".join(f"- [ ] [Created](2026-01-01 00:00) | Task {i} <!-- note\n" for i in range(2000))
    doc = parse("# TODO\n\n" + lines, TodoKind.TODO)
    assert [e.content for e in doc.entries] == [f"Task {i} <!-- note" for i in range(2000)]
    assert len(todo._comment_spans(Counting(lines))) == 0 and len(scans) == 2


def test_lines_remembered_reads_a_line_once_within_its_block_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """classify answers a line read before from the memo of the enclosing lines_remembered()
    block: a nested block shares it, it ends with the outer block, and another thread (hb serve
    answers each request in one) has none of it."""
    import threading

    from heartbeat.formats import todo as fmt

    calls: list[str] = []
    read_line = fmt._read_line

    def counted(visible: str, kind: TodoKind, dialect: str, first: bool) -> object:
        calls.append(visible)
        return read_line(visible, kind, dialect, first)

    monkeypatch.setattr(fmt, "_read_line", counted)
    line = "- [ ] [Created](2026-05-01 12:41) | Pay the rent"

    def read_twice() -> None:
        assert fmt.classify(line, TodoKind.TODO, "strict") == fmt.classify(line, TodoKind.TODO, "strict")

    read_twice()
    assert len(calls) == 2  # no block: every call reads
    with fmt.lines_remembered():
        read_twice()
        with fmt.lines_remembered():
            read_twice()
        assert len(calls) == 3  # one reading served the outer block and the nested one
        fmt.classify(line, TodoKind.DONE, "strict")
        fmt.classify(line, TodoKind.TODO, "extended")
        fmt.classify(line, TodoKind.TODO, "strict", first=True)
        assert len(calls) == 6  # another kind, dialect or place is another reading
        thread = threading.Thread(target=read_twice)
        thread.start()
        thread.join()
        assert len(calls) == 8  # the thread read without the block's memo
    read_twice()
    assert len(calls) == 10  # the memo ended with the block


@pytest.mark.parametrize(
    "front",
    [
        'updated_at: &u "2026-01-01T00:00:00Z"\nlast_seen: *u\n',  # an alias of the value hb sets
        "open_count: &n 1\nother: *n\n",
        "updated_at: >\n  folded\n  text\nopen_count:\n  7\n",  # values on more lines than one
        "open_count: [1,\n  2]\n",
        "{open_count: 3, updated_at: x}\n",  # a flow mapping: no line of its own for a key
        '"open_count": 7\n',  # a quoted key: a line added for it would repeat the key
        "? open_count\n: 5\n",
        "a: 1\n...\n",  # the end of the YAML document: a line added after it is no YAML
    ],
)
def test_front_matter_hb_cannot_set_in_place_is_kept_every_byte(front: str) -> None:
    """hb sets ``updated_at`` and the count on their own lines; where that would make other keys
    lose their values or the YAML unreadable (to mistermorph too), the front matter stays as
    written and the entries still change."""
    import yaml

    text = f"---\n{front}---\n\n# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 12:41) | a\n"
    doc = parse(text, TodoKind.TODO)
    assert doc.front_matter is not None
    added = Entry(kind=TodoKind.TODO, content="b", created=NOW)
    out = render(with_entries(doc, [*doc.entries, added], now=NOW))
    assert out == text + "- [ ] [Created](2026-05-03 01:02) | b\n"
    assert yaml.safe_load(out.split("---\n")[1]) == doc.front_matter


def test_front_matter_set_in_place_keeps_every_other_key() -> None:
    front = (
        'created_at: "2026-05-01T03:41:00Z"\nowner: &o me  # a comment\n'
        "updated_at: 2026-05-02\nopen_count: 1\nnext: *o\n"
    )
    text = f"---\n{front}---\n\n# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 12:41) | a\n"
    doc = parse(text, TodoKind.TODO)
    added = Entry(kind=TodoKind.TODO, content="b", created=NOW)
    out = render(with_entries(doc, [*doc.entries, added], now=NOW))
    assert out.startswith(
        '---\ncreated_at: "2026-05-01T03:41:00Z"\nowner: &o me  # a comment\n'
        'updated_at: "2026-05-03T01:02:03Z"\nopen_count: 2\nnext: *o\n---\n'
    )


@pytest.mark.parametrize(
    ("front", "want"),
    [
        # the count of one writer's copy over the entries merged from two: set, with updated_at
        (
            'updated_at: "2026-05-01T00:00:00Z"\nopen_count: 1\n',
            'updated_at: "2026-05-03T01:02:03Z"\nopen_count: 2\n',
        ),
        ("open_count: two\n", 'open_count: 2\nupdated_at: "2026-05-03T01:02:03Z"\n'),  # not a number: set
        ("owner: me\n", 'owner: me\nupdated_at: "2026-05-03T01:02:03Z"\nopen_count: 2\n'),  # none: added
        ("updated_at: x\nopen_count: 2\n", None),  # the count is right: nothing changes
        ('"open_count": 7\n', None),  # a key hb cannot set on a line of its own: every byte kept
        ("open_count: &n 1\nother: *n\n", None),
    ],
)
def test_recounted_sets_the_count_to_the_entries_the_file_holds(front: str, want: str | None) -> None:
    text = (
        f"---\n{front}---\n\n# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 12:41) | a\n"
        "- [ ] [Created](2026-05-01 12:42) | b\n<!-- - [ ] [Created](2026-05-01 12:43) | hidden -->\n"
    )
    doc = parse(text, TodoKind.TODO)
    counted = recounted(doc, now=NOW)
    if want is None:
        assert counted is doc
        return
    assert render(counted) == text.replace(front, want, 1)
    assert [e.content for e in counted.entries] == ["a", "b"]


def test_recounted_leaves_a_file_without_front_matter_as_it_is() -> None:
    doc = parse("# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 12:41) | a\n", TodoKind.TODO)
    assert recounted(doc, now=NOW) is doc
