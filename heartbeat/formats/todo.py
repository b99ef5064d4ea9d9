"""TODO.md, TODO.DONE.md and TODO.RECUR.md: a lossless line parser and renderer.

FORMATS.md section 1. A file is optional YAML front matter, a header line and
one entry per line, read exactly as mistermorph's ``internal/todo`` reads it:

- every ``<!-- ... -->`` is cut from the text before it is split into lines, so
  a comment that spans line breaks joins those lines into one (:class:`Line`
  then holds several lines of the file, as written);
- lines are trimmed with Go's ``strings.TrimSpace`` (:mod:`heartbeat.formats.go_text`),
  which keeps a byte-order mark: a line that starts with one is no entry;
- front matter that is unclosed, not YAML or not a mapping does not stop the
  entries from being read (hb keeps it as written and says why).

mistermorph silently drops every line it cannot read; hb keeps every line it
does not understand verbatim, in place, and reports it as a :class:`LineWarning`,
as it reports the entries mistermorph reads but stumbles over (a link its
add, complete and materialize refuse, a line its scanner stops at).
``render(parse(text, kind)) == text`` for any text.

Pure: no I/O, no clock. ``now`` is always a parameter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from heartbeat.errors import InvalidInput
from heartbeat.formats.go_text import lower, trim_space
from heartbeat.formats.repeat import cron_matches_a_date, parse_repeat
from heartbeat.formats.timestamps import OUT_OF_RANGE, in_range

__all__ = [
    "DIALECTS",
    "SCANNER_LIMIT",
    "CommentMarkerError",
    "Document",
    "Entry",
    "FrontMatter",
    "Line",
    "LineKind",
    "LineWarning",
    "TodoKind",
    "classify",
    "entry_note",
    "lines_remembered",
    "link_problem",
    "new_document",
    "normalize_chat_id",
    "over_scanner_limit",
    "parse",
    "parse_entry",
    "read_front_matter",
    "render",
    "render_entry",
    "rule_zone",
    "scanner_note",
    "with_entries",
]

DIALECTS = ("strict", "extended")  # strict = what the runtime reads; extended adds ID and cron

BOM = "\ufeff"
_FENCE = "---"
_SEPARATOR = " | "
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_TUPLE = re.compile(rf"\[({_KEY.pattern})\]\(([^()]+)\)")
# Go's "2006-01-02 15:04" layout: a one-digit hour too, and its space matches a run of spaces
_STAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) +([0-9]{1,2}):([0-9]{2})")
_PROTOCOL = re.compile(r"[a-z][a-z0-9_]*")  # refid's protocol, after lower-casing
_REFERENCE = re.compile(r"\[[^\[\]\n]+\]\(([^()]+)\)")  # refid's "[label](protocol:id)" in content
_PLAIN_REFERENCE = re.compile(r"[A-Za-z][A-Za-z0-9_]*:[^\s()]+")  # a valid target with no blank at all
_OPEN, _CLOSE = "<!--", "-->"  # the runtime strips each <!--...--> before reading lines
_MARKERS = (_OPEN, _CLOSE)
_CORE_KEYS = ("Created", "Done", "Next", "Repeat", "TZ", "ChatID")
_EXTENDED_KEYS = ("ID",)
SCANNER_LIMIT = 64 * 1024  # bufio.Scanner's longest line (bytes, a CR included)
_LOCAL = "Local"  # [TZ](Local): the runtime's own zone (hb: the workspace's)


class CommentMarkerError(InvalidInput):
    """A change after which an HTML comment would hide other lines than before.

    ``line``: the line of the file as read whose comment marker is in the way
    (None: the marker is in a new entry). The message starts ``file[:line]: ``;
    :meth:`at_path` names another path.
    """

    def __init__(self, where: str, reason: str, line: int | None = None) -> None:
        self.where = where
        self.reason = reason
        self.line = line
        super().__init__(f"{where}{'' if line is None else f':{line}'}: {reason}")

    def at_path(self, path: str) -> CommentMarkerError:
        return CommentMarkerError(path, self.reason, self.line)


@dataclass(frozen=True)
class _Layout:
    filename: str
    header: str
    count_key: str
    prefix: str
    keys: tuple[str, ...]  # the allowed keys, in canonical order
    required: tuple[str, ...]


class TodoKind(StrEnum):
    TODO = "todo"  # TODO.md: open one-off entries
    DONE = "done"  # TODO.DONE.md: completed one-off entries
    RECUR = "recur"  # TODO.RECUR.md: recurrence rules

    @property
    def filename(self) -> str:
        return _LAYOUTS[self].filename

    @property
    def header(self) -> str:
        return _LAYOUTS[self].header

    @property
    def count_key(self) -> str:
        return _LAYOUTS[self].count_key

    @property
    def prefix(self) -> str:
        return _LAYOUTS[self].prefix

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys the runtime's strict reader allows, in canonical order."""
        return _LAYOUTS[self].keys

    @property
    def required_keys(self) -> tuple[str, ...]:
        return _LAYOUTS[self].required


_LAYOUTS = {
    TodoKind.TODO: _Layout(
        "TODO.md",
        "# TODO Work In Progress (WIP)",
        "open_count",
        "- [ ] ",
        ("Created", "ChatID"),
        ("Created",),
    ),
    TodoKind.DONE: _Layout(
        "TODO.DONE.md",
        "# TODO Done",
        "done_count",
        "- [x] ",
        ("Created", "Done", "ChatID"),
        ("Created", "Done"),
    ),
    TodoKind.RECUR: _Layout(
        "TODO.RECUR.md",
        "# TODO Recurring",
        "recurring_count",
        "- [ ] ",
        ("Next", "Repeat", "TZ", "ChatID"),
        ("Next", "Repeat"),
    ),
}


@dataclass(frozen=True)
class Entry:
    """One entry. Which fields apply depends on ``kind`` (FORMATS.md 1)."""

    kind: TodoKind
    content: str  # text after the first " | ", trimmed as Go trims it
    created: datetime | None = None  # aware UTC (TODO, DONE)
    done: datetime | None = None  # aware UTC (DONE)
    next: datetime | None = None  # naive wall-clock time in the entry's zone (RECUR)
    repeat: str | None = None  # RECUR, as written
    tz: str | None = None  # RECUR, as written ("Local" too); None = the workspace zone
    chat_id: str | None = None  # protocol:id, the protocol lower-cased (as the runtime normalises it)
    extra: tuple[tuple[str, str], ...] = ()  # extended-dialect keys, in file order
    line: int = 0  # 1-based line in the parsed text (the first, when it spans several); 0 = new
    raw: str | None = None  # the exact original text with its ending; None = new/changed


def _entry_with(entry: Entry, **changes: Any) -> Entry:
    """``dataclasses.replace(entry, **changes)`` at a fraction of its cost: replace walks the
    class's fields on every call (7 µs against 1 µs here), and every entry of every parse passes
    through here. Entry has neither ``__post_init__`` nor slots, so an instance holding the same
    fields is an equal one (tests/formats check it against replace)."""
    new = object.__new__(Entry)
    fields = new.__dict__
    fields.update(entry.__dict__)
    fields.update(changes)
    return new


@dataclass(frozen=True)
class LineWarning:
    """A line hb keeps verbatim but cannot read as an entry, or an entry the runtime stumbles on."""

    line: int  # 1-based
    text: str  # the line without its ending
    reason: str


class LineKind(StrEnum):
    FRONT_MATTER = "front_matter"  # a YAML front-matter line, both fences included
    HEADING = "heading"  # starts with '#': the header and any other heading
    BLANK = "blank"
    COMMENT = "comment"  # nothing outside HTML comments
    ENTRY = "entry"
    MALFORMED = "malformed"  # kept verbatim and reported


@dataclass(frozen=True)
class Line:
    """One line as the runtime reads it, exactly as written.

    Usually one line of the file; an HTML comment spanning line breaks makes it
    several (``text`` then holds their inner endings, ``last`` is the last one).
    """

    kind: LineKind
    number: int  # 1-based line in the parsed text (its first); 0 = added
    text: str  # without the final line ending (a BOM stays on line 1)
    ending: str  # "\n", "\r\n" or "" (last line without a newline)
    entry: Entry | None = None
    warning: LineWarning | None = None

    @property
    def last(self) -> int:
        """The last line of the file this line takes up."""
        return self.number + self.text.count("\n")


@dataclass(frozen=True)
class Document:
    """A parsed TODO file: every line, in order, plus what was read from it."""

    kind: TodoKind
    lines: tuple[Line, ...]
    front_matter: dict[Any, Any] | None = None  # parsed YAML; None = none, or none hb can edit
    dialect: str = "strict"
    newline: str = "\n"  # the ending used for lines hb adds
    notes: tuple[LineWarning, ...] = ()  # what else hb tells about lines: front matter, entries
    _entry_index: dict[int, Entry] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        index = {ln.number: ln.entry for ln in self.lines if ln.entry is not None}
        object.__setattr__(self, "_entry_index", index)

    @property
    def entries(self) -> list[Entry]:
        """The entries, in file order."""
        return [ln.entry for ln in self.lines if ln.entry is not None]

    @property
    def warnings(self) -> list[LineWarning]:
        """In line order: one warning per line that is kept but could not be read, and the notes."""
        kept = [ln.warning for ln in self.lines if ln.warning is not None]
        if not self.notes:
            return kept
        return sorted([*kept, *self.notes], key=lambda w: w.line)

    @property
    def header(self) -> Line | None:
        """The first line that is this file's header, if any."""
        return next((ln for ln in self.lines if _is_header(ln, self.kind)), None)


# --- reading -------------------------------------------------------------------------


def parse(text: str, kind: TodoKind, *, dialect: str = "strict") -> Document:
    """Read a TODO file as mistermorph reads it; every line is kept, unreadable ones with a
    LineWarning. Never fails on the text; InvalidInput for an unknown dialect."""
    _is_extended(dialect)  # reject an unknown dialect before reading
    raw_lines = list(_split_lines(text))
    front = read_front_matter([body for _, body, _ in raw_lines])
    lines = [Line(LineKind.FRONT_MATTER, n, body, end) for n, body, end in raw_lines[: front.end]]
    notes = list(front.notes)
    for number, raw, ending, visible, touched in _joined(raw_lines[front.end :]):
        line = _classify(number, raw, ending, visible, touched, kind, dialect)
        if line.kind is not LineKind.ENTRY and number <= front.shadow:
            line = Line(LineKind.FRONT_MATTER, number, raw, ending)  # read by the runtime, not an entry
        elif line.entry is not None:
            note = entry_note(line.entry)
            if note is not None:
                notes.append(LineWarning(number, raw, note))
            if "\n" in raw:
                what = f"an HTML comment joins lines {number}-{line.last} into this one entry"
                notes.append(LineWarning(number, raw, f"{what} (mistermorph reads them as one line)"))
        lines.append(line)
    if front.scanned:
        notes.extend(_scanner_notes(raw_lines, front.end))
    return Document(kind, tuple(lines), front.data, dialect, _newline_of(raw_lines), tuple(notes))


@dataclass(frozen=True)
class FrontMatter:
    """What the runtime makes of the top of a file (``parseFrontmatter``)."""

    end: int  # the lines hb keeps as front matter, fences included (0: none)
    data: dict[Any, Any] | None  # the parsed mapping; None: none, or one hb cannot read
    notes: tuple[LineWarning, ...] = ()
    shadow: int = 0  # lines from line 1 the runtime reads as entry lines that hb shows as front matter
    scanned: bool = False  # the runtime reads this file line by line (bufio.Scanner): see SCANNER_LIMIT


def read_front_matter(lines: Sequence[str]) -> FrontMatter:
    """The front matter of a file given as its lines without endings (at least up to the
    closing fence). As the runtime: the first line, trimmed, is ``---`` (a BOM is no space);
    YAML up to the next line that is ``---``. Without that closing line the runtime reads
    the whole file as entry lines; front matter that is not a YAML mapping it ignores."""
    if not lines:
        return FrontMatter(0, None)
    first = trim_space(lines[0])
    if first != _FENCE:
        if first.startswith(BOM) and trim_space(first[1:]) == _FENCE:
            close = _closing_fence(lines)
            reason = (
                "a byte-order mark comes before '---': mistermorph reads no front matter here "
                "(it reads these lines as entry lines)"
            )
            shadow = close + 1 if close is not None else 1
            return FrontMatter(0, None, (LineWarning(1, lines[0], reason),), shadow=shadow)
        return FrontMatter(0, None)
    close = _closing_fence(lines)
    if close is None:
        reason = (
            "front matter has no closing '---': mistermorph reads every line of this file as an entry line"
        )
        return FrontMatter(0, None, (LineWarning(1, lines[0], reason),), shadow=1)
    data, problem, line = _load_front_matter(lines[1:close])
    if problem is None:
        return FrontMatter(close + 1, data, scanned=True)
    at = min(max(line, 1), close + 1)
    note = LineWarning(at, lines[at - 1], f"{problem}; kept as written (mistermorph still reads the entries)")
    return FrontMatter(close + 1, None, (note,), scanned=True)


def _closing_fence(lines: Sequence[str]) -> int | None:
    return next((i for i in range(1, len(lines)) if trim_space(lines[i]) == _FENCE), None)


def _load_front_matter(lines: Sequence[str]) -> tuple[dict[Any, Any] | None, str | None, int]:
    """(mapping, None, 0), or (None, why not, the line of the file where it goes wrong)."""
    simple = _simple_front_matter(lines)
    if simple is not None:
        return simple, None, 0
    # one text line per file line, so YAML's marks map to file lines
    source = "".join(text + "\n" for text in lines)
    import yaml  # only a file with front matter needs it (a one-line sync may not)

    from heartbeat.formats import yaml_safe

    try:
        yaml_safe.check(source)  # an alias bomb or deep nesting: unreadable, as for mistermorph
        loaded = yaml.safe_load(source)
    except yaml_safe.YamlLimitError as exc:
        return None, f"front matter is not valid YAML: {exc.reason}", exc.line + 2
    except yaml.YAMLError as exc:
        from heartbeat.formats.yaml_errors import describe

        reason, line, _column = describe(exc)
        return None, f"front matter is not valid YAML: {reason}", line + 2
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
        # PyYAML's constructors fail this way on e.g. `a: 2026-13-01`, `!!int x` or a number past
        # Python's 4,300 digits
        from heartbeat.formats.yaml_errors import constructor_failure

        reason, at = constructor_failure(source, exc)
        return None, f"front matter is not valid YAML: {reason}", 1 if at is None else at + 2
    if loaded is None:
        return {}, None, 0  # empty front matter, as the runtime reads it
    if not isinstance(loaded, dict):
        return None, "front matter is not a YAML mapping", 2
    return loaded, None, 0


# A front-matter line as the runtime writes it: a plain key and a double-quoted string without
# escapes, or a decimal integer. YAML reads these as str and int; any other line goes to YAML.
_YAML_WORDS = frozenset(("yes", "no", "true", "false", "on", "off", "null"))
_SIMPLE_ITEM = re.compile(r'([A-Za-z_][A-Za-z0-9_]*): (?:"([^"\\]*)"|(0|[1-9][0-9]{0,17}))')


def _simple_front_matter(lines: Sequence[str]) -> dict[Any, Any] | None:
    """The front matter without loading YAML when every line is that simple (else None)."""
    out: dict[Any, Any] = {}
    for line in lines:
        match = _SIMPLE_ITEM.fullmatch(line)
        if match is None or match.group(1) in out:
            return None
        key, text, number = match.groups()
        if key.lower() in _YAML_WORDS:
            return None  # a key YAML reads as a boolean or null
        if text is not None and not text.isprintable():
            return None  # YAML folds or rejects some characters: let it say what they are
        out[key] = text if text is not None else int(number)
    return out


def over_scanner_limit(text: str, ending: str) -> bool:
    """Whether bufio.Scanner stops at this line (its bytes, a CR included, reach 64 KiB)."""
    size = len(text) + (1 if ending == "\r\n" else 0)
    if size * 4 < SCANNER_LIMIT:  # four bytes a character at most
        return False
    return len(text.encode("utf-8")) + (1 if ending == "\r\n" else 0) >= SCANNER_LIMIT


def scanner_note(in_front_matter: bool) -> str:
    if in_front_matter:
        return (
            "line over 64 KiB in the front matter: mistermorph's reader stops here and reads the "
            "file as if it had no front matter (hb reads it whole)"
        )
    return (
        "line over 64 KiB: mistermorph's reader stops here and loses this line and every line after "
        "it (hb reads them all)"
    )


def _scanner_notes(raw_lines: Sequence[tuple[int, str, str]], fm_end: int) -> Iterator[LineWarning]:
    for number, body, ending in raw_lines[1:]:
        if over_scanner_limit(body, ending):
            yield LineWarning(number, body, scanner_note(number <= fm_end))
            return  # the scanner stops at the first one


def _joined(lines: Sequence[tuple[int, str, str]]) -> Iterator[tuple[int, str, str, str, bool]]:
    """The lines as the runtime reads them once every HTML comment is cut from the text:
    ``(number, text as written, ending, text left visible, a comment was cut)``. A comment
    that spans a line break joins the lines it touches into one."""
    body = "".join(text + ending for _, text, ending in lines)
    if "<!--" not in body:
        for number, text, ending in lines:
            yield number, text, ending, text, False
        return
    spans = _comment_spans(body)
    k = 0  # the first span that ends after the current position
    offset = 0
    i = 0
    while i < len(lines):
        start, first = offset, lines[i][0]
        while True:
            _, text, ending = lines[i]
            text_end = offset + len(text)
            offset = text_end + len(ending)
            newline = offset - 1  # where this line's "\n" stands, when it has one
            while k < len(spans) and spans[k][1] <= newline:
                k += 1
            inside = bool(ending) and k < len(spans) and spans[k][0] <= newline
            i += 1
            if not inside or i == len(lines):
                break
        pieces: list[str] = []
        cursor = start
        touched = False
        j = k
        while j > 0 and spans[j - 1][1] > start:  # back to the first span of this line
            j -= 1
        while j < len(spans) and spans[j][0] < text_end:
            span_start, span_end = spans[j]
            if span_start >= start:
                touched = True
                pieces.append(body[cursor:span_start])
                cursor = span_end
            j += 1
        pieces.append(body[cursor:text_end])
        yield first, body[start:text_end], ending, "".join(pieces), touched


def _comment_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each HTML comment: ``<!--`` up to the first ``-->`` after it, the
    spans of a lazy ``<!--.*?-->`` across lines. An opening with no ``-->`` after it ends the
    search: no later one can close either. (That regex retried the scan to the end from every
    later ``<!--``: 31 s for a file of 8,000 lines each opening one.)"""
    spans: list[tuple[int, int]] = []
    at = 0
    while (start := text.find(_OPEN, at)) >= 0:
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            break
        at = end + len(_CLOSE)
        spans.append((start, at))
    return spans


def _classify(
    number: int, raw: str, ending: str, visible: str, touched: bool, kind: TodoKind, dialect: str
) -> Line:
    read = classify(visible, kind, dialect, first=number == 1)
    if read is None:
        probe = trim_space(visible.removeprefix(BOM) if number == 1 else visible)
        kind_of = LineKind.HEADING if probe else LineKind.COMMENT if touched else LineKind.BLANK
        return Line(kind_of, number, raw, ending)
    if isinstance(read, str):
        return Line(LineKind.MALFORMED, number, raw, ending, warning=LineWarning(number, raw, read))
    return Line(LineKind.ENTRY, number, raw, ending, entry=_entry_with(read, line=number, raw=raw + ending))


# what classify read within lines_remembered(), by (line, kind, dialect, first); None outside
_Reading = Entry | str | None
_REMEMBERED: ContextVar[dict[tuple[str, TodoKind, str, bool], _Reading] | None] = ContextVar(
    "hb_todo_lines_remembered", default=None
)


@contextmanager
def lines_remembered() -> Iterator[None]:
    """Within the block, :func:`classify` reads each distinct line once (the same text, kind,
    dialect and place) and answers it again from a memo, which ends with the block.

    A sync reads most lines of a file several times: the file, the document a render starts
    from, the render's own check of its result, the warnings of the text written. classify is
    a function of its arguments alone and its entries are frozen, so one reading serves every
    later one. The memo belongs to the block's context (a thread of ``hb serve`` has its own)
    and holds no more than the lines read in it; a nested block shares the outer one's."""
    if _REMEMBERED.get() is not None:
        yield
        return
    token = _REMEMBERED.set({})
    try:
        yield
    finally:
        _REMEMBERED.reset(token)


def classify(visible: str, kind: TodoKind, dialect: str, *, first: bool = False) -> Entry | str | None:
    """What the runtime makes of one line once HTML comments are cut from it: an entry, the
    reason it is none (a line hb keeps and reports), or None (blank or a heading).
    ``first``: the file's first line, where a byte-order mark may stand. Within
    :func:`lines_remembered`, a line read before is answered from its memo."""
    memo = _REMEMBERED.get()
    if memo is None:
        return _read_line(visible, kind, dialect, first)
    key = (visible, kind, dialect, first)
    try:
        return memo[key]
    except KeyError:
        got = memo[key] = _read_line(visible, kind, dialect, first)
        return got


def _read_line(visible: str, kind: TodoKind, dialect: str, first: bool) -> Entry | str | None:
    """:func:`classify` without the memo."""
    stripped = trim_space(visible)
    if first and stripped.startswith(BOM):
        probe = trim_space(stripped[1:])
        if not probe or probe.startswith("#"):
            return None
        try:
            parse_entry(probe, kind, dialect=dialect)
        except ValueError as exc:
            return str(exc)
        return "a byte-order mark starts this line: mistermorph does not read it as an entry"
    if not stripped or stripped.startswith("#"):
        return None
    try:
        return parse_entry(stripped, kind, dialect=dialect)
    except ValueError as exc:
        return str(exc)


def entry_note(entry: Entry) -> str | None:
    """What keeps the runtime from working with an entry it reads (None: nothing)."""
    if entry.kind is TodoKind.DONE:
        return None  # the runtime checks the links of TODO.md and TODO.RECUR.md entries only
    problem = link_problem(entry.content)
    if problem is not None:
        if entry.kind is TodoKind.TODO:
            return f"{problem}: mistermorph's add, complete and recurring materialize fail on the whole file"
        return f"{problem}: mistermorph's recurring materialize fails on the whole file"
    if entry.repeat is not None:
        try:
            rule = parse_repeat(entry.repeat)
        except ValueError:
            return f"Repeat {entry.repeat!r} steps over 100 years: hb reads it but never schedules it"
        if rule.cron is not None and not cron_matches_a_date(rule.cron):
            return f"Repeat {entry.repeat!r} matches no date: hb reads it but never schedules it"
    return None


def link_problem(content: str) -> str | None:
    """Why the runtime refuses a content: a ``[text](target)`` whose target is no
    ``protocol:id`` reference (its Add, Complete and materialize fail on it). None: fine."""
    if "](" not in content:
        return None
    for match in _REFERENCE.finditer(content):
        if _PLAIN_REFERENCE.fullmatch(match.group(1)):
            continue  # the usual form, valid as it stands
        target = trim_space(match.group(1))
        if not target:
            return f"link {match.group(0)} has no reference id"
        try:
            normalize_chat_id(target)
        except ValueError:
            return f"link {match.group(0)} is not a protocol:id reference"
    return None


def normalize_chat_id(value: str) -> str:
    """A ``protocol:id`` reference as the runtime normalises it (refid.Normalize): trimmed
    around the first colon, the protocol lower-cased. ValueError(why) when it is none."""
    raw = trim_space(value)
    at = raw.find(":")
    if at <= 0 or at == len(raw) - 1:
        raise ValueError("not protocol:id")
    protocol, ident = lower(trim_space(raw[:at])), trim_space(raw[at + 1 :])
    if not protocol or not ident:
        raise ValueError("not protocol:id")
    if not _PROTOCOL.fullmatch(protocol):
        raise ValueError(f"protocol {protocol!r} is not letters, digits and _ after a letter")
    if any(ch in ident for ch in " \t\r\n()"):
        raise ValueError("the id holds a space, a tab, a line break or a parenthesis")
    return f"{protocol}:{ident}"


def rule_zone(tz: str | None, local: ZoneInfo) -> ZoneInfo:
    """The zone a TODO.RECUR.md ``TZ`` names as the runtime reads it: none or ``Local`` is
    the runtime's own zone (``local``: hb's workspace zone), ``UTC`` in any case, else any zone
    of the database the line reader accepts (Go's LoadLocation loads ``Factory`` or
    ``posixrules`` too, which hb refuses as a workspace timezone). InvalidInput for a zone
    that does not exist."""
    if tz is None or tz == _LOCAL or not trim_space(tz):
        return local
    name = trim_space(tz)
    if name.upper() == "UTC":
        return ZoneInfo("UTC")
    if not _valid_zone(name):
        raise InvalidInput(f"unknown timezone {name!r} (expected an IANA name like Asia/Tokyo)")
    return ZoneInfo(name)


# The canonical TODO.md / TODO.DONE.md line, as the runtime writes it: read in one match. Only
# lines the general reader below accepts, with the same result, match (the ChatID value
# excludes what that reader would split, change or reject); anything else takes the general reader.
_TIME = r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{1,2}):([0-9]{2})"
_CHAT = r"(?:, \[ChatID\]\(([a-z][a-z0-9_]*:[^\s(),]+)\))?"
_CANONICAL = {
    TodoKind.TODO: re.compile(rf"- \[ \] \[Created\]\({_TIME}\){_CHAT} \| (.*)", re.DOTALL),
    TodoKind.DONE: re.compile(
        rf"- \[x\] \[Created\]\({_TIME}\), \[Done\]\({_TIME}\){_CHAT} \| (.*)", re.DOTALL
    ),
}


def parse_entry(line: str, kind: TodoKind, *, dialect: str = "strict") -> Entry:
    """Read one entry line as the runtime does; raise ValueError(reason) if it is not one.

    The line may carry its ending and surrounding white space. The entry is new
    (``line`` 0, ``raw`` None). Comments are not removed here: that is the
    document's job.
    """
    stripped = trim_space(line)
    canonical = _CANONICAL.get(kind)
    match = canonical.fullmatch(stripped) if canonical is not None else None
    if match is not None and dialect in DIALECTS:
        got = _canonical_entry(kind, match)
        if got is not None:
            return got
    return _parse_entry(stripped, kind, dialect)


def _canonical_entry(kind: TodoKind, match: re.Match[str]) -> Entry | None:
    """The entry of a canonical line; None when the general reader must say what is wrong."""
    g = match.groups()
    content = trim_space(g[-1])
    if not content:
        return None
    try:
        created = datetime(int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), tzinfo=UTC)
        done = (
            datetime(int(g[5]), int(g[6]), int(g[7]), int(g[8]), int(g[9]), tzinfo=UTC)
            if kind is TodoKind.DONE
            else None
        )
    except ValueError:
        return None
    if not in_range(created) or (done is not None and not in_range(done)):
        return None
    return Entry(kind=kind, content=content, created=created, done=done, chat_id=g[-2])


def _parse_entry(stripped: str, kind: TodoKind, dialect: str) -> Entry:
    """The general reader: any key order and spacing the runtime's reader takes."""
    extended = _is_extended(dialect)
    if not stripped.startswith(kind.prefix):
        raise ValueError("not an entry")
    rest = trim_space(stripped[len(kind.prefix) :])
    if _SEPARATOR not in rest:
        raise ValueError(f"missing {_SEPARATOR!r}")
    meta_text, content = (trim_space(part) for part in rest.split(_SEPARATOR, 1))
    if not meta_text:
        raise ValueError(f"missing metadata before {_SEPARATOR!r}")
    if not content:
        raise ValueError("empty content")
    meta = _read_metadata(meta_text)
    allowed = kind.keys + (_EXTENDED_KEYS if extended else ())
    for key in meta:
        if key not in allowed:
            hint = " (extended dialect only)" if key in _EXTENDED_KEYS else ""
            raise ValueError(f"unknown key {key}{hint}")
    for key in kind.required_keys:
        if key not in meta:
            raise ValueError(f"missing required key {key}")
    return _entry_from_meta(kind, content, meta, extended)


def _read_metadata(text: str) -> dict[str, str]:
    meta: dict[str, str] = {}
    for part in text.split(","):
        item = trim_space(part)
        if not item:
            raise ValueError("empty metadata item")
        match = _TUPLE.fullmatch(item)
        if match is None:
            raise ValueError(f"bad metadata {item!r}")
        key, value = match.group(1), trim_space(match.group(2))
        if not value:
            raise ValueError(f"empty value for {key}")
        if key in meta:
            raise ValueError(f"duplicate key {key}")
        meta[key] = value
    return meta


def _entry_from_meta(kind: TodoKind, content: str, meta: dict[str, str], extended: bool) -> Entry:
    stamps: dict[str, datetime | None] = {}
    for key in ("Created", "Done", "Next"):
        value = meta.get(key)
        stamp = _parse_stamp(value) if value is not None else None
        if value is not None and stamp is None:
            raise ValueError(f"bad timestamp {value!r} in {key}{_why_unread(value)}")
        stamps[key] = stamp
    repeat = meta.get("Repeat")
    if repeat is not None:
        try:
            parse_repeat(repeat, allow_cron=extended, any_step=True)
        except ValueError as exc:
            raise ValueError(f"bad {exc}") from None
    tz = meta.get("TZ")
    if tz is not None and not _valid_zone(tz):
        raise ValueError(f"bad TZ {tz!r}")
    chat_id = meta.get("ChatID")
    if chat_id is not None:
        try:
            chat_id = normalize_chat_id(chat_id)
        except ValueError as exc:
            raise ValueError(f"bad ChatID {chat_id!r}: {exc}") from None
    created, done = stamps["Created"], stamps["Done"]
    return Entry(
        kind=kind,
        content=content,
        created=created.replace(tzinfo=UTC) if created else None,
        done=done.replace(tzinfo=UTC) if done else None,
        next=stamps["Next"],
        repeat=repeat,
        tz=tz,
        chat_id=chat_id,
        extra=tuple((k, v) for k, v in meta.items() if k not in _CORE_KEYS),
    )


def _parse_stamp(value: str) -> datetime | None:
    """A naive datetime for a real ``YYYY-MM-DD HH:MM`` (Go's layout) within the dates hb reads
    (:func:`heartbeat.formats.timestamps.in_range`: a Next is a wall clock in any zone), else None."""
    match = _STAMP.fullmatch(value)
    if match is None:
        return None
    year, month, day, hour, minute = (int(g) for g in match.groups())
    try:
        stamp = datetime(year, month, day, hour, minute)  # noqa: DTZ001 - zone applied by caller
    except ValueError:
        return None
    return stamp if in_range(stamp) else None


def _why_unread(value: str) -> str:
    """Why a stamp the runtime reads is still refused: year 0000, which hb cannot store, or a
    date near year 1 or 9999, outside the dates hb reads. "" when the runtime refuses it too."""
    match = _STAMP.fullmatch(value)
    if match is not None and match.group(1) != "0000":
        year, month, day, hour, minute = (int(g) for g in match.groups())
        try:
            datetime(year, month, day, hour, minute)  # noqa: DTZ001 - only whether it exists
        except ValueError:
            return ""  # no such date or time: the runtime refuses it too
        return f" (mistermorph reads it, but it {OUT_OF_RANGE})"
    if match is None or int(match.group(4)) > 23 or int(match.group(5)) > 59:
        return ""
    try:
        date(4, int(match.group(2)), int(match.group(3)))  # year 0 is a leap year, as year 4
    except ValueError:
        return ""  # no such date in a leap year either: the runtime refuses it too
    return " (mistermorph reads year 0000; hb cannot store it)"


def _valid_zone(name: str) -> bool:
    if name.upper() == "UTC" or name == _LOCAL:
        return True
    try:
        ZoneInfo(name)
    except (KeyError, ValueError, OSError):  # not found, not a key, a directory, not TZif
        return False
    return True


def _is_extended(dialect: str) -> bool:
    if dialect not in DIALECTS:
        raise InvalidInput(f"unknown TODO dialect {dialect!r}: expected strict or extended")
    return dialect == "extended"


def _split_lines(text: str) -> Iterator[tuple[int, str, str]]:
    """(number, text without ending, ending); only LF ends a line, CRLF is one ending."""
    parts = text.split("\n")
    for index, part in enumerate(parts):
        if index == len(parts) - 1:
            if part:
                yield index + 1, part, ""
        elif part.endswith("\r"):
            yield index + 1, part[:-1], "\r\n"
        else:
            yield index + 1, part, "\n"


def _newline_of(raw_lines: Sequence[tuple[int, str, str]]) -> str:
    return next((ending for _, _, ending in raw_lines if ending), "\n")


def _is_header(line: Line, kind: TodoKind) -> bool:
    text = line.text.removeprefix(BOM) if line.number == 1 else line.text
    return line.kind is LineKind.HEADING and trim_space(text) == kind.header


# --- writing -------------------------------------------------------------------------


def render(doc: Document) -> str:
    """The document's text: every kept line byte-identical, changed entries canonical."""
    return "".join(_line_text(line) for line in doc.lines)


def _line_text(line: Line) -> str:
    entry = line.entry
    if entry is None:
        return line.text + line.ending
    if entry.raw is not None:
        return entry.raw
    return render_entry(entry, comments=True) + line.ending


def render_entry(entry: Entry, *, comments: bool = False) -> str:
    """The canonical line for an entry, without a newline.

    Keys in canonical order (extended keys last), timestamps at minute
    precision (``Created``/``Done`` in UTC). Raises InvalidInput for an entry
    that cannot be written as one readable line. ``comments``: the content may
    hold ``<!--``; whether the line still reads as written then depends on the
    rest of the file, which the caller must check (as :func:`with_entries` does).
    A TODO.md or TODO.RECUR.md content may hold no ``[text](target)`` link whose
    target is not a ``protocol:id`` reference: the runtime fails on those.
    """
    pairs = _metadata_pairs(entry)
    content = entry.content
    if not content or content != trim_space(content):
        raise InvalidInput(f"entry content {content!r} must be non-empty and trimmed")
    if "\n" in content:  # only LF ends a line: a CR inside the content is part of it
        raise InvalidInput(f"entry content {content!r} must be one line")
    if "<!--" in content and not comments:
        raise InvalidInput(f"entry content {content!r} must not open an HTML comment")
    problem = link_problem(content) if entry.kind is not TodoKind.DONE else None
    if problem is not None:  # the runtime's add, complete and materialize would fail on the file
        raise InvalidInput(f"{problem}: mistermorph refuses such a link in {entry.kind.filename}")
    metadata = ", ".join(f"[{key}]({value})" for key, value in pairs)
    return f"{entry.kind.prefix}{metadata}{_SEPARATOR}{content}"


def _metadata_pairs(entry: Entry) -> list[tuple[str, str]]:
    kind = entry.kind
    fields: dict[str, object] = {
        "Created": entry.created,
        "Done": entry.done,
        "Next": entry.next,
        "Repeat": entry.repeat,
        "TZ": entry.tz,
        "ChatID": entry.chat_id,
    }
    for key, value in fields.items():
        if value is not None and key not in kind.keys:
            raise InvalidInput(f"{key} is not allowed in {kind.filename}")
    for key in kind.required_keys:
        if fields[key] is None:
            raise InvalidInput(f"an entry of {kind.filename} needs {key}")
    pairs = [(key, _format_value(entry, key)) for key in kind.keys if fields[key] is not None]
    seen = {key for key, _ in pairs}
    for key, value in entry.extra:
        if not _KEY.fullmatch(key) or key in _CORE_KEYS or key in seen:
            raise InvalidInput(f"extra key {key!r} cannot be written in {kind.filename}")
        seen.add(key)
        pairs.append((key, _checked_value(key, value)))
    return pairs


def _format_value(entry: Entry, key: str) -> str:
    if key in ("Created", "Done"):
        stamp = entry.created if key == "Created" else entry.done
        assert stamp is not None
        if stamp.tzinfo is None or stamp.utcoffset() is None:
            raise InvalidInput(f"{key} must be a timezone-aware datetime")
        try:
            return _format_stamp(stamp.astimezone(UTC))
        except OverflowError:
            raise InvalidInput(f"{key} {stamp.isoformat()} is out of range") from None
    if key == "Next":
        assert entry.next is not None
        if entry.next.tzinfo is not None:
            raise InvalidInput("Next must be a naive wall-clock time in the entry's zone")
        return _format_stamp(entry.next)
    if key == "Repeat":
        assert entry.repeat is not None
        try:
            parse_repeat(entry.repeat, any_step=True)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        return _checked_value(key, entry.repeat)
    if key == "TZ":
        assert entry.tz is not None
        if not _valid_zone(entry.tz):
            raise InvalidInput(f"TZ {entry.tz!r} is not an IANA time zone")
        return _checked_value(key, entry.tz)
    assert entry.chat_id is not None
    try:
        normal = normalize_chat_id(entry.chat_id)
    except ValueError as exc:
        raise InvalidInput(f"ChatID {entry.chat_id!r} is not a reference like tg:-100123: {exc}") from None
    if normal != entry.chat_id:
        raise InvalidInput(f"ChatID {entry.chat_id!r} reads back as {normal!r}: write that")
    return _checked_value(key, entry.chat_id)


def _format_stamp(stamp: datetime) -> str:
    # f-string, not strftime: strftime does not pad years below 1000 on every libc
    return f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d} {stamp.hour:02d}:{stamp.minute:02d}"


def _checked_value(key: str, value: str) -> str:
    """A metadata value must survive the reader: no comma, parenthesis or separator."""
    if not value or value != trim_space(value):
        raise InvalidInput(f"{key} value {value!r} must be non-empty and trimmed")
    if any(ch in value for ch in ",()\r\n") or _SEPARATOR in value:
        raise InvalidInput(f"{key} value {value!r} may not hold a comma, parenthesis or ' | '")
    return value


def _canonical(entry: Entry) -> Entry:
    """The entry as it reads back from its canonical line (for comparisons)."""

    def minute(stamp: datetime | None, *, to_utc: bool) -> datetime | None:
        if stamp is None:
            return None
        if to_utc and stamp.utcoffset() is not None:
            stamp = stamp.astimezone(UTC)
        return stamp.replace(second=0, microsecond=0)

    return _entry_with(
        entry,
        created=minute(entry.created, to_utc=True),
        done=minute(entry.done, to_utc=True),
        next=minute(entry.next, to_utc=False),
        line=0,
        raw=None,
    )


def _alike(a: Entry, b: Entry) -> bool:
    """``_canonical(a) == _canonical(b)``, without building either when every field but the
    line and the text is already equal (then so are their canonical forms): the common case of
    a line read twice, which every render checks for each entry of the file."""
    if (a.kind, a.content, a.created, a.done, a.next, a.repeat, a.tz, a.chat_id, a.extra) == (
        b.kind,
        b.content,
        b.created,
        b.done,
        b.next,
        b.repeat,
        b.tz,
        b.chat_id,
        b.extra,
    ):
        return True
    return _canonical(a) == _canonical(b)


def _all_alike(got: Sequence[Entry], expected: Sequence[Entry]) -> bool:
    """Whether the two lists read alike, entry by entry (:func:`_alike`)."""
    return len(got) == len(expected) and all(map(_alike, got, expected))


def _same(given: Entry, original: Entry) -> bool:
    try:
        return _alike(given, original)
    except OverflowError:
        return False


def _checked_line(entry: Entry, dialect: str) -> str:
    """render_entry, then prove the runtime-facing reader gets the same entry back (a comment
    marker in the content is left to the caller's check of the whole document)."""
    text = render_entry(entry, comments=True)
    try:
        back = parse_entry(text, entry.kind, dialect=dialect)
    except ValueError as exc:
        raise InvalidInput(
            f"{entry.kind.filename}: entry {entry.content!r} is not readable in the {dialect} dialect: {exc}"
        ) from None
    if back != _canonical(entry):
        raise InvalidInput(f"{entry.kind.filename}: entry {entry.content!r} does not read back")
    return text


def with_entries(doc: Document, entries: Sequence[Entry], *, now: datetime) -> Document:
    """The document with exactly these entries; everything else stays where it was.

    Entries are matched to lines by ``line`` (0 = new). Unlisted entries are
    removed, equal ones keep their bytes, changed ones are rewritten canonically
    in place, new ones go after the preceding listed entry (or before the first
    entry line, or after the header, or at the end). Listing existing entries in
    another order does not move them. An entry that takes up several lines of
    the file (an HTML comment spans their line breaks) keeps its comments, and
    with them the lines they hide: rewritten, they follow the new text; removed,
    they stay as they were. If anything changed, the front matter's count and
    ``updated_at`` lines are set. The result is re-parsed, so its entries carry
    their new line numbers. Raises ValueError for a naive ``now`` or a ``line``
    that is not an entry of ``doc``; InvalidInput for an entry that cannot be
    written readably in the document's dialect; CommentMarkerError (naming the
    line) for a change whose HTML comment marker would alter how other lines
    read. An entry's content may hold ``<!--`` when the result still reads
    exactly as written.
    """
    _require_aware(now)
    for entry in entries:
        if entry.kind is not doc.kind:
            raise InvalidInput(f"a {entry.kind} entry cannot go into {doc.kind.filename}")
    given = _index_given(doc, entries)
    out, changed, rewritten = _place_entries(doc, given, _anchor_new(entries))
    if not changed:
        return doc
    out = _fix_endings(out, doc)  # a BOM stays put: a line that starts with one is never an entry
    counted = None
    if doc.front_matter is not None:
        count = sum(1 for ln in out if ln.kind is LineKind.ENTRY)
        counted = _update_front_matter(out, doc, count, now)
    result = parse("".join(_line_text(ln) for ln in counted or out), doc.kind, dialect=doc.dialect)
    if counted is not None and not _front_matter_kept(doc, result, count, now):
        # the lines hb sets were not the keys' only lines (an anchor, a block scalar, a flow
        # mapping, a quoted key...): the front matter stays as it was, every byte of it
        result = parse("".join(_line_text(ln) for ln in out), doc.kind, dialect=doc.dialect)
    if not _all_alike(result.entries, [ln.entry for ln in out if ln.entry is not None]):
        # an HTML comment marker in a changed or added line moved a comment
        raise _comment_error(doc, out, rewritten)
    return result


def recounted(doc: Document, *, now: datetime) -> Document:
    """The document with its front matter's count set to the entries it holds, and
    ``updated_at`` to ``now``, when the count says otherwise (a text merged from two writers'
    copies holds the entries of both under one writer's count); else ``doc`` itself. The front
    matter stays as it was, every byte of it, where those keys are not on lines of their own."""
    _require_aware(now)
    if doc.front_matter is None:
        return doc
    count = sum(1 for ln in doc.lines if ln.kind is LineKind.ENTRY)
    stated = doc.front_matter.get(doc.kind.count_key)
    if type(stated) is int and stated == count:
        return doc
    counted = _update_front_matter(list(doc.lines), doc, count, now)
    if counted is None:
        return doc
    result = parse("".join(_line_text(ln) for ln in counted), doc.kind, dialect=doc.dialect)
    return result if _front_matter_kept(doc, result, count, now) else doc


def _comment_error(doc: Document, out: Sequence[Line], rewritten: dict[int, int]) -> CommentMarkerError:
    """Why the result of with_entries reads otherwise: the first rewritten or new entry line
    that holds an HTML comment marker (``rewritten``: index in ``out`` -> the line it was)."""
    name = doc.kind.filename
    unread = "the result would not read back as written"
    for index, line in enumerate(out):
        if line.number or line.entry is None:
            continue
        text = render_entry(line.entry, comments=True)
        if not any(m in text for m in _MARKERS):
            continue
        if index in rewritten:
            what = "the new text of this entry holds an HTML comment marker"
            return CommentMarkerError(
                name, f"{unread}: {what} that would change which lines are hidden", rewritten[index]
            )
        what = f"the new entry {line.entry.content!r} holds an HTML comment marker"
        return CommentMarkerError(name, f"{unread}: {what} that would change which lines are hidden")
    return CommentMarkerError(name, f"{unread} (an HTML comment marker would change which lines are hidden)")


def _place_entries(
    doc: Document, given: dict[int, Entry], anchored: dict[int, list[Entry]]
) -> tuple[list[Line], bool, dict[int, int]]:
    """The document's lines with entries kept, rewritten, dropped or added; whether anything
    changed; and which lines were rewritten (index in the result -> the line they were)."""
    changed = bool(anchored) or set(given) != set(doc._entry_index)
    first_entry = min(doc._entry_index, default=None)
    out: list[Line] = []
    rewritten: dict[int, int] = {}
    for line in doc.lines:
        if line.number == first_entry:
            out.extend(_new_lines(anchored.get(0, []), doc))
        if line.entry is None:
            out.append(line)
            continue
        if line.number not in given:
            hidden = _kept_comments(line.text, None)
            if hidden:  # the entry goes; the lines its comments hide stay
                out.append(Line(LineKind.COMMENT, 0, hidden, line.ending))
            continue
        entry = given[line.number]
        if _same(entry, line.entry):
            out.append(line)
        else:
            changed = True
            text = _kept_comments(line.text, _checked_line(entry, doc.dialect))
            rewritten[len(out)] = line.number
            out.append(Line(LineKind.ENTRY, 0, text, line.ending, _entry_with(entry, raw=text + line.ending)))
        out.extend(_new_lines(anchored.get(line.number, []), doc))
    if first_entry is None and 0 in anchored:
        at = _fallback_insert_index(doc)
        out[at:at] = _new_lines(anchored[0], doc)
    return out, changed, rewritten


def _kept_comments(text: str, canonical: str | None) -> str:
    """What is left of an entry's text when it is rewritten to ``canonical`` (None: removed).

    An entry keeps its HTML comments: those before the entry's text stay in front, the others
    follow it. A one-line entry that is removed goes whole; one that takes up several lines of
    the file leaves its comments (they hold those lines).
    """
    if "<!--" not in text or ("\n" not in text and canonical is None):
        return canonical or ""
    spans = _comment_spans(text)
    lead = 0
    for start, end in spans:
        if trim_space(text[lead:start]):
            break
        lead = end
    rest = "".join(text[start:end] for start, end in spans if start >= lead)
    if canonical is None:
        return text[:lead] + rest
    return text[:lead] + canonical + (" " + rest if rest else "")


def _require_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be a timezone-aware datetime")


def _index_given(doc: Document, entries: Sequence[Entry]) -> dict[int, Entry]:
    given: dict[int, Entry] = {}
    for entry in entries:
        if not entry.line:
            continue
        if entry.line not in doc._entry_index:
            raise ValueError(f"line {entry.line} is not an entry of this document")
        if entry.line in given:
            raise ValueError(f"line {entry.line} is listed twice")
        given[entry.line] = entry
    return given


def _anchor_new(entries: Sequence[Entry]) -> dict[int, list[Entry]]:
    """New entries keyed by the line of the listed entry before them (0 = none before)."""
    anchored: dict[int, list[Entry]] = {}
    anchor = 0
    for entry in entries:
        if entry.line:
            anchor = entry.line
        else:
            anchored.setdefault(anchor, []).append(entry)
    return anchored


def _new_lines(entries: Sequence[Entry], doc: Document) -> list[Line]:
    out = []
    for entry in entries:
        text = _checked_line(entry, doc.dialect)
        out.append(Line(LineKind.ENTRY, 0, text, doc.newline, _entry_with(entry, raw=text + doc.newline)))
    return out


def _fallback_insert_index(doc: Document) -> int:
    """After the header and the blank lines under it; else at the end."""
    lines = doc.lines
    header = next((i for i, ln in enumerate(lines) if _is_header(ln, doc.kind)), None)
    if header is None:
        return len(lines)
    at = header + 1
    while at < len(lines) and lines[at].kind is LineKind.BLANK:
        at += 1
    return at


def _fix_endings(lines: list[Line], doc: Document) -> list[Line]:
    """Every line but the last ends with a newline; a missing final newline stays missing."""
    fixed = [
        _with_ending(ln, doc.newline) if not ln.ending and i < len(lines) - 1 else ln
        for i, ln in enumerate(lines)
    ]
    had_final_newline = not doc.lines or bool(doc.lines[-1].ending)
    if fixed and not had_final_newline and fixed[-1].number == 0:
        fixed[-1] = _with_ending(fixed[-1], "")
    return fixed


def _with_ending(line: Line, ending: str) -> Line:
    """The line with a new ending; a kept entry's raw text (which includes it) follows."""
    entry = line.entry
    if entry is not None and entry.raw is not None:
        entry = _entry_with(entry, raw=line.text + ending)
    return replace(line, ending=ending, entry=entry)


def _update_front_matter(lines: list[Line], doc: Document, count: int, now: datetime) -> list[Line] | None:
    """Set the count and updated_at lines; every other front-matter line stays as it was. None
    when a key is in the front matter but on no line of its own (a quoted or complex key, a flow
    mapping): a line added for it would repeat the key, which mistermorph's YAML refuses."""
    assert doc.front_matter is not None
    values = {
        "updated_at": f'"{_rfc3339(now)}"',
        doc.kind.count_key: str(count),
    }
    close = max(i for i, ln in enumerate(lines) if ln.kind is LineKind.FRONT_MATTER)
    out = list(lines)
    for key, value in values.items():
        pattern = re.compile(rf"{re.escape(key)}[ \t]*:(?:[ \t].*)?")
        hits = [i for i in range(1, close) if pattern.fullmatch(out[i].text)]
        for i in hits:
            out[i] = replace(out[i], text=f"{key}: {value}{_yaml_comment(out[i].text)}")
        if not hits:
            if key in doc.front_matter:
                return None
            out.insert(close, Line(LineKind.FRONT_MATTER, 0, f"{key}: {value}", doc.newline))
            close += 1
    return out


def _front_matter_kept(doc: Document, result: Document, count: int, now: datetime) -> bool:
    """Whether the front matter hb edited reads as the old one with its two keys set: every other
    key with the value it had (an anchor another key's alias named, or a value on more lines
    than the one hb set, would have lost it or broken the YAML)."""
    before, after = doc.front_matter, result.front_matter
    if before is None or after is None:
        return False
    owned = {"updated_at": _rfc3339(now), doc.kind.count_key: count}
    if set(after) != set(before) | set(owned):
        return False
    if any(after[k] != v or type(after[k]) is not type(v) for k, v in owned.items()):
        return False
    return all(after[k] == value for k, value in before.items() if k not in owned)


_YAML_QUOTED = re.compile(r"""[ \t]*(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*')""")
_YAML_COMMENT = re.compile(r"[ \t]+#.*")


def _yaml_comment(line: str) -> str:
    """The ``  # ...`` comment ending a ``key: value`` front-matter line ('' when there is none)."""
    rest = line.split(":", 1)[1]
    quoted = _YAML_QUOTED.match(rest)
    comment = _YAML_COMMENT.search(rest, quoted.end() if quoted else 0)
    return comment.group(0) if comment else ""


def _rfc3339(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_document(
    kind: TodoKind, entries: Sequence[Entry], *, now: datetime, dialect: str = "strict"
) -> Document:
    """The runtime's full form of a file that does not exist yet.

    Front matter (``created_at``, ``updated_at`` = now, the count), a blank
    line, the header, a blank line, the entries in the given order; ``\\n``
    endings. Raises InvalidInput for an entry that cannot be written readably.
    """
    _require_aware(now)
    stamp = _rfc3339(now)
    lines = [
        _FENCE,
        f'created_at: "{stamp}"',
        f'updated_at: "{stamp}"',
        f"{kind.count_key}: {len(entries)}",
        _FENCE,
        "",
        kind.header,
        "",
    ]
    for entry in entries:
        if entry.kind is not kind:
            raise InvalidInput(f"a {entry.kind} entry cannot go into {kind.filename}")
        lines.append(_checked_line(entry, dialect))
    doc = parse("\n".join(lines) + "\n", kind, dialect=dialect)
    if not _all_alike(doc.entries, entries):
        # only a comment marker in the content makes a checked line read otherwise here
        reason = "the entries would not read back as written (an HTML comment marker in one hides others)"
        raise CommentMarkerError(kind.filename, reason)
    return doc
