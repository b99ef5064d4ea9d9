"""Hypothesis properties of the TODO formats: nothing is lost, entries round-trip."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import example, given, settings
from hypothesis import strategies as st

from heartbeat.formats.go_text import trim_space
from heartbeat.formats.todo import (
    Entry,
    TodoKind,
    _alike,
    _canonical,
    _parse_entry,
    _simple_front_matter,
    lines_remembered,
    link_problem,
    new_document,
    parse,
    parse_entry,
    render,
    render_entry,
    with_entries,
)

NOW = datetime(2026, 5, 3, 1, 2, 3, tzinfo=UTC)
FAST = settings(max_examples=200, deadline=None)
KINDS = st.sampled_from(list(TodoKind))
DIALECTS = st.sampled_from(["strict", "extended"])

# --- valid entries ----------------------------------------------------------------------

CONTENT = (
    st.text(
        alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\n\r"),
        min_size=1,
        max_size=30,
    )
    .map(trim_space)  # Go's trim: a content may end in \x1c-\x1f
    .filter(lambda c: c != "" and "<!--" not in c and link_problem(c) is None)
)
UTC_MINUTES = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 12, 31)).map(
    lambda d: d.replace(second=0, microsecond=0, tzinfo=UTC)
)
WALL_MINUTES = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 12, 31)).map(
    lambda d: d.replace(second=0, microsecond=0)
)
CHAT_IDS = st.none() | st.from_regex(
    r"(tg:-?[1-9][0-9]{0,12}|tg:@[a-z_]{1,8}|slack:C[0-9A-Z]{4})", fullmatch=True
)
ZONES = st.sampled_from([None, "UTC", "utc", "Asia/Tokyo", "Europe/Berlin", "America/New_York"])
REPEATS = st.sampled_from(["daily", "weekly", "Daily", "every 1 day"]) | st.integers(1, 500).flatmap(
    lambda n: st.sampled_from([f"every {n} days", f"every {n} hours", f"every {n} hour"])
)
IDS = st.from_regex(r"todo-[0-9a-f]{8}", fullmatch=True)


def entries_of(kind: TodoKind, *, extended: bool) -> st.SearchStrategy[Entry]:
    extra = st.builds(lambda i: (("ID", i),), IDS) if extended else st.just(())
    if kind is TodoKind.TODO:
        return st.builds(Entry, st.just(kind), CONTENT, created=UTC_MINUTES, chat_id=CHAT_IDS, extra=extra)
    if kind is TodoKind.DONE:
        return st.builds(
            Entry,
            st.just(kind),
            CONTENT,
            created=UTC_MINUTES,
            done=UTC_MINUTES,
            chat_id=CHAT_IDS,
            extra=extra,
        )
    repeats = REPEATS | st.just("cron 0 9;17 * * 1-5") if extended else REPEATS
    return st.builds(
        Entry,
        st.just(kind),
        CONTENT,
        next=WALL_MINUTES,
        repeat=repeats,
        tz=ZONES,
        chat_id=CHAT_IDS,
        extra=extra,
    )


# --- arbitrary text: junk, near-entries and real entries, any line ending ------------------

FRAGMENTS = [
    "- [ ] ",
    "- [x] ",
    "- [X] ",
    "[Created](2026-05-01 12:41)",
    "[Created](2026-13-01 10:00)",
    "[Repeat](weekly)",
    "[TZ](Mars/Base)",
    "[ChatID](tg:-100123)",
    ", ",
    " | ",
    "|",
    "<!--",
    "-->",
    "# ",
    "---",
    "\n",
    "\r\n",
    "\r",
    "\ufeff",
    " ",
    "\t",
    "日本語",
    "Привет",
    "[x](y)",
]
JUNK = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=6).map("".join)
TUPLES = [
    "[Created](2026-05-01 12:41)",
    "[Done](2026-05-02 08:05)",
    "[Next](2026-05-07 15:00)",
    "[Repeat](every 6 hours)",
    "[Repeat](cron 0 9;17 * * 1-5)",
    "[TZ](Asia/Tokyo)",
    "[ChatID](tg:-100123)",
    "[ID](todo-1a2b3c4d)",
    "[Created](2026-02-30 10:00)",
    "[Foo](bar)",
]
NEAR_ENTRIES = st.builds(
    lambda indent, prefix, tuples, comma, content: indent + prefix + comma.join(tuples) + content,
    st.sampled_from(["", "", "  ", "\ufeff"]),
    st.sampled_from(["- [ ] ", "- [x] ", "- [ ]", "* "]),
    st.lists(st.sampled_from(TUPLES), min_size=1, max_size=4, unique=True),
    st.sampled_from([", ", ", ", ",", ",, "]),
    st.sampled_from([" | ", " | ", "|", ""]).flatmap(lambda sep: JUNK.map(lambda j: sep + j)),
)
REAL_ENTRIES = KINDS.flatmap(lambda k: entries_of(k, extended=True)).map(render_entry)
LINES = st.tuples(
    st.one_of(JUNK, NEAR_ENTRIES, REAL_ENTRIES),
    st.sampled_from(["", "", "", " <!-- note -->", " <!--", "-->", "  "]),
    st.sampled_from(["\n", "\n", "\r\n", ""]),
).map("".join)
TEXTS = st.lists(LINES, max_size=8).map("".join)


FENCES = st.sampled_from(["", "", "---\n", "\ufeff---\n", "---\r\n", " --- \n"])
# front matter of any kind (closed, unclosed, not YAML) never stops the reader
ARBITRARY = st.builds(lambda fence, body: fence + body, FENCES, TEXTS)


def lines_of(text: str) -> list[str]:
    """Lines with their endings; only LF ends a line, as in the formats."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _without_counters(lines: list[str], kind: TodoKind) -> list[str]:
    """The lines less the front matter's count and updated_at lines (the front matter is
    the first line through the next '---' line)."""
    close = next(i for i in range(1, len(lines)) if trim_space(lines[i].rstrip("\n")) == "---")
    counter = re.compile(rf"(?:updated_at|{kind.count_key})[ \t]*:")
    return [ln for i, ln in enumerate(lines) if not (0 < i < close and counter.match(ln))]


# --- properties ---------------------------------------------------------------------------


@FAST
@given(text=ARBITRARY, kind=KINDS, dialect=DIALECTS)
def test_render_of_parse_is_the_identity(text: str, kind: TodoKind, dialect: str) -> None:
    doc = parse(text, kind, dialect=dialect)

    assert render(doc) == text
    # every line of the file is in exactly one line as the runtime reads it, in order
    spans = [(ln.number, ln.last) for ln in doc.lines]
    assert [n for first, last in spans for n in range(first, last + 1)] == list(
        range(1, len(lines_of(text)) + 1)
    )
    by_number = {ln.number: ln for ln in doc.lines}
    assert all(
        w.text in (by_number[w.line].text, lines_of(text)[w.line - 1].rstrip("\r\n")) for w in doc.warnings
    )
    assert all(by_number[e.line].entry == e for e in doc.entries)


@FAST
@given(text=ARBITRARY, kind=KINDS, dialect=DIALECTS)
def test_with_the_same_entries_the_text_is_unchanged(text: str, kind: TodoKind, dialect: str) -> None:
    doc = parse(text, kind, dialect=dialect)

    assert render(with_entries(doc, doc.entries, now=NOW)) == text
    unraw = [replace(e, raw=None) for e in doc.entries]
    assert render(with_entries(doc, unraw, now=NOW)) == text


@st.composite
def documents(draw: st.DrawFn) -> tuple[TodoKind, str, list[Entry]]:
    kind = draw(KINDS)
    dialect = draw(DIALECTS)
    entries = draw(st.lists(entries_of(kind, extended=dialect == "extended"), max_size=8))
    return kind, dialect, entries


@FAST
@given(case=documents())
def test_new_document_entries_read_back_with_the_same_values(
    case: tuple[TodoKind, str, list[Entry]],
) -> None:
    kind, dialect, entries = case

    text = render(new_document(kind, entries, now=NOW, dialect=dialect))
    back = parse(text, kind, dialect=dialect)

    assert [replace(e, line=0, raw=None) for e in back.entries] == entries
    assert back.warnings == []
    assert back.front_matter is not None and back.front_matter[kind.count_key] == len(entries)
    assert render(with_entries(back, back.entries, now=NOW)) == text


@FAST
@given(text=ARBITRARY, kind=KINDS, data=st.data())
def test_adding_an_entry_adds_exactly_one_line_and_keeps_every_other(
    text: str, kind: TodoKind, data: st.DataObject
) -> None:
    text = text if text.endswith("\n") or not text else text + "\n"
    doc = parse(text, kind)
    new = data.draw(entries_of(kind, extended=False))
    at = data.draw(st.integers(0, len(doc.entries)))

    out = with_entries(doc, [*doc.entries[:at], new, *doc.entries[at:]], now=NOW)

    before = lines_of(text)
    after = lines_of(render(out))
    if doc.front_matter is not None:
        # a readable front matter gets its count and updated_at set, as mistermorph writes it
        # (added when missing); every other front-matter line stays as it was
        before, after = _without_counters(before, kind), _without_counters(after, kind)
    added = render_entry(new) + doc.newline
    assert any(after[i] == added and after[:i] + after[i + 1 :] == before for i in range(len(after)))
    assert [w.text for w in out.warnings] == [w.text for w in doc.warnings]
    assert len(out.entries) == len(doc.entries) + 1


# --- the one-match reader of canonical lines agrees with the general reader ------------------


def mostly(usual: str, *bent: str) -> st.SearchStrategy[str]:
    """``usual`` two times in three, else one of the bent variants."""
    return st.sampled_from([usual] * (2 * len(bent)) + list(bent))


STAMPS = mostly(
    "2026-05-01 13:00", "2026-02-30 09:00", "2026-05-01 9:05", "2026-5-01 09:00", "x", " 2026-05-01 13:00"
)
CHATS = mostly("tg:-100123", "tg:@john", "tg:", "tg:a,b", "tg:a b", "tg:a(b", "1x:y", "slack:C0", "tg:a)")
SPACES = mostly("", " ", "  ", "\t", "\u3000")


@st.composite
def near_canonical_lines(draw: st.DrawFn) -> str:
    """Lines shaped like the canonical one, with a piece bent here and there."""
    kind = draw(st.sampled_from(["- [ ] ", "- [x] "]))
    prefix = draw(mostly(kind, "-  [ ] ", "- [ ]", "- [X] "))
    items = [f"[Created]({draw(STAMPS)})"]
    if kind == "- [x] " or draw(st.integers(0, 5)) == 0:
        items.append(f"[Done]({draw(STAMPS)})")
    if draw(st.booleans()):
        items.append(f"[ChatID]({draw(CHATS)})")
    if draw(st.integers(0, 5)) == 0:
        items.insert(draw(st.integers(0, len(items))), draw(st.sampled_from(["[ID](todo-1)", "[Next](x)"])))
    comma = draw(mostly(", ", ",", " , ", ",  "))
    separator = draw(mostly(" | ", "|", " |  ", " | | ", " |"))
    content = draw(SPACES) + draw(CONTENT | st.just("")) + draw(SPACES)
    return draw(SPACES) + prefix + comma.join(items) + separator + content + draw(SPACES)


def _outcome(read: Callable[[], Entry]) -> object:
    try:
        return read()
    except ValueError as exc:
        return ("ValueError", str(exc))


@settings(max_examples=600, deadline=None)
@given(
    line=near_canonical_lines()
    | st.builds(render_entry, entries_of(TodoKind.TODO, extended=False))
    | st.builds(render_entry, entries_of(TodoKind.DONE, extended=False)),
    kind=KINDS,
    dialect=DIALECTS,
)
def test_a_canonical_line_reads_as_the_general_reader_reads_it(
    line: str, kind: TodoKind, dialect: str
) -> None:
    fast = _outcome(lambda: parse_entry(line, kind, dialect=dialect))
    general = _outcome(lambda: _parse_entry(trim_space(line), kind, dialect))
    assert fast == general


# --- front matter read without YAML is what YAML reads ------------------------------------------

FRONT_KEYS = st.sampled_from(
    ["created_at", "updated_at", "open_count", "yes", "On", "NULL", "x_1", "_", "Ab"]
)
FRONT_VALUES = (
    st.sampled_from(
        ['"2026-05-01T03:41:00Z"', "0", "17", "007", "1_000", "-3", "2026-05-01", '"a\\"b"', "''"]
    )
    | st.text(max_size=12).map(lambda t: f'"{t}"')
    | st.integers(0, 10**19).map(str)
)


@settings(max_examples=500, deadline=None)
@given(items=st.lists(st.tuples(FRONT_KEYS, FRONT_VALUES, st.sampled_from([": ", ":  ", ":", ": "]))))
def test_front_matter_read_without_yaml_is_what_yaml_reads(items: list[tuple[str, str, str]]) -> None:
    import yaml

    lines = [f"{key}{colon}{value}" for key, value, colon in items]
    fast = _simple_front_matter(lines)
    if fast is None:
        return
    assert fast == (yaml.safe_load("".join(line + "\n" for line in lines)) or {})


# --- one reading of each line: lines_remembered, and comparing entries without _canonical ------

ANY_STAMPS = st.none() | st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 12, 31),
    timezones=st.sampled_from([None, UTC, timezone(timedelta(hours=9)), timezone(timedelta(minutes=-90))]),
)


@FAST
@given(text=ARBITRARY, kind=KINDS, dialect=DIALECTS)
@example(text="\ufeff- [ ] [Created](2026-05-01 12:41) | a\n", kind=TodoKind.TODO, dialect="strict")
def test_a_document_read_within_lines_remembered_is_the_one_read_without(
    text: str, kind: TodoKind, dialect: str
) -> None:
    """The memo changes no reading: every line, entry, warning and the front matter are the
    ones read without it, the first time and again from the memo (twice in the file too)."""
    plain = parse(text + text, kind, dialect=dialect)

    with lines_remembered():
        first = parse(text + text, kind, dialect=dialect)
        again = parse(text + text, kind, dialect=dialect)

    assert first == plain and again == plain


KEEP = object()  # a field left as the base entry has it


def _changed(values: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.just(KEEP), st.just(KEEP), values)


@FAST
@given(
    base=KINDS.flatmap(lambda k: entries_of(k, extended=True)),
    changes=st.fixed_dictionaries(
        {
            "created": _changed(ANY_STAMPS),
            "done": _changed(ANY_STAMPS),
            "next": _changed(ANY_STAMPS),
            "content": _changed(st.just("other")),
            "repeat": _changed(st.sampled_from([None, "daily"])),
            "tz": _changed(st.sampled_from([None, "UTC"])),
            "chat_id": _changed(st.sampled_from([None, "tg:1"])),
            "extra": _changed(st.sampled_from([(), (("ID", "todo-00000000"),)])),
            "kind": _changed(KINDS),
            "line": _changed(st.integers(0, 9)),
            "raw": _changed(st.sampled_from([None, "x\n"])),
        }
    ),
)
def test_entries_read_alike_exactly_when_their_canonical_forms_are_equal(
    base: Entry, changes: dict[str, object]
) -> None:
    """_alike, which skips building the canonical forms when the fields already agree, answers
    what comparing them answers: stamps to the minute (created and done in UTC), line and text
    aside; for any mix of seconds, offsets and naive times, and any field changed or kept."""
    other = replace(base, **{name: value for name, value in changes.items() if value is not KEEP})
    for a, b in ((base, other), (other, base), (other, replace(other, line=0, raw=None)), (base, base)):
        assert _alike(a, b) is (_canonical(a) == _canonical(b))
