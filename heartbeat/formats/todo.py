"""TODO.md, TODO.DONE.md and TODO.RECUR.md: a lossless line parser and renderer.

FORMATS.md section 1. A file is optional YAML front matter, a header line and
one entry per line. The runtime that owns these files silently drops every line
it cannot read; hb keeps every line it does not understand verbatim, in place,
and reports it as a :class:`LineWarning`. ``render(parse(text, kind)) == text``
for any text that parses.

Pure: no I/O, no clock. ``now`` is always a parameter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from heartbeat.errors import FileFormatError, InvalidInput
from heartbeat.rules.repeat import parse_repeat

__all__ = [
    "DIALECTS",
    "CommentMarkerError",
    "Document",
    "Entry",
    "Line",
    "LineKind",
    "LineWarning",
    "TodoKind",
    "comments_opened_in_entries",
    "new_document",
    "parse",
    "parse_entry",
    "render",
    "render_entry",
    "with_entries",
]

DIALECTS = ("strict", "extended")  # strict = what the runtime reads; extended adds ID and cron

BOM = "\ufeff"
_FENCE = "---"
_SEPARATOR = " | "
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_TUPLE = re.compile(rf"\[({_KEY.pattern})\]\(([^()]+)\)")
# Go's "2006-01-02 15:04" layout reads a one-digit hour too
_STAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{1,2}):([0-9]{2})")
_CHAT_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]*:\S+")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)  # the runtime strips these before reading lines
_MARKERS = ("<!--", "-->")
_CORE_KEYS = ("Created", "Done", "Next", "Repeat", "TZ", "ChatID")
_EXTENDED_KEYS = ("ID",)


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
    """One entry line. Which fields apply depends on ``kind`` (FORMATS.md 1)."""

    kind: TodoKind
    content: str  # text after the first " | ", trimmed
    created: datetime | None = None  # aware UTC (TODO, DONE)
    done: datetime | None = None  # aware UTC (DONE)
    next: datetime | None = None  # naive wall-clock time in the entry's zone (RECUR)
    repeat: str | None = None  # RECUR, as written
    tz: str | None = None  # RECUR, as written; None = the workspace zone
    chat_id: str | None = None
    extra: tuple[tuple[str, str], ...] = ()  # extended-dialect keys, in file order
    line: int = 0  # 1-based line in the parsed text; 0 = a new entry
    raw: str | None = None  # the exact original line with its ending; None = new/changed


@dataclass(frozen=True)
class LineWarning:
    """A line hb keeps verbatim but cannot read as an entry."""

    line: int  # 1-based
    text: str  # the line without its ending
    reason: str


class LineKind(StrEnum):
    FRONT_MATTER = "front_matter"  # a YAML front-matter line, both fences included
    HEADING = "heading"  # starts with '#': the header and any other heading
    BLANK = "blank"
    COMMENT = "comment"  # nothing outside an HTML comment
    ENTRY = "entry"
    MALFORMED = "malformed"  # kept verbatim and reported


@dataclass(frozen=True)
class Line:
    """One line of a document, exactly as it was read."""

    kind: LineKind
    number: int  # 1-based line in the parsed text; 0 = added
    text: str  # without the line ending (a BOM stays on line 1)
    ending: str  # "\n", "\r\n" or "" (last line without a newline)
    entry: Entry | None = None
    warning: LineWarning | None = None
    continues_comment: bool = False  # an HTML comment is open at this line's end


@dataclass(frozen=True)
class Document:
    """A parsed TODO file: every line, in order, plus what was read from it."""

    kind: TodoKind
    lines: tuple[Line, ...]
    front_matter: dict[Any, Any] | None = None  # parsed YAML; None = no front matter
    dialect: str = "strict"
    newline: str = "\n"  # the ending used for lines hb adds
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
        """One warning per line that is kept but could not be read."""
        return [ln.warning for ln in self.lines if ln.warning is not None]

    @property
    def header(self) -> Line | None:
        """The first line that is this file's header, if any."""
        return next((ln for ln in self.lines if _is_header(ln, self.kind)), None)


# --- reading -------------------------------------------------------------------------


def parse(text: str, kind: TodoKind, *, dialect: str = "strict") -> Document:
    """Read a TODO file; every line is kept, unreadable ones with a LineWarning.

    Raises FileFormatError (with the line) only when the front matter is
    unterminated, not YAML, or not a mapping; InvalidInput for an unknown dialect.
    """
    _is_extended(dialect)  # reject an unknown dialect before reading
    raw_lines = list(_split_lines(text))
    front_matter, fm_end = _read_front_matter(raw_lines)
    lines = [Line(LineKind.FRONT_MATTER, n, body, end) for n, body, end in raw_lines[:fm_end]]
    body_lines = raw_lines[fm_end:]
    for (number, body, ending), seen in zip(body_lines, _visibility(body_lines), strict=True):
        line = _classify(number, body, ending, seen, kind, dialect)
        lines.append(replace(line, continues_comment=seen.open_after) if seen.open_after else line)
    return Document(kind, tuple(lines), front_matter, dialect, _newline_of(raw_lines))


# The canonical TODO.md / TODO.DONE.md line, as the runtime writes it: read in one match. Only
# lines the general reader below accepts, with the same result, match (the ChatID value
# excludes what that reader would split or reject); anything else takes the general reader.
_TIME = r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{1,2}):([0-9]{2})"
_CHAT = r"(?:, \[ChatID\]\(([A-Za-z][A-Za-z0-9_-]*:[^\s(),]+)\))?"
_CANONICAL = {
    TodoKind.TODO: re.compile(rf"- \[ \] \[Created\]\({_TIME}\){_CHAT} \| (.*)", re.DOTALL),
    TodoKind.DONE: re.compile(
        rf"- \[x\] \[Created\]\({_TIME}\), \[Done\]\({_TIME}\){_CHAT} \| (.*)", re.DOTALL
    ),
}


def parse_entry(line: str, kind: TodoKind, *, dialect: str = "strict") -> Entry:
    """Read one entry line as the runtime does; raise ValueError(reason) if it is not one.

    The line may carry its ending and surrounding whitespace. The entry is new
    (``line`` 0, ``raw`` None). Comments are not removed here: that is the
    document's job.
    """
    stripped = line.strip()
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
    content = g[-1].strip()
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
    return Entry(kind=kind, content=content, created=created, done=done, chat_id=g[-2])


def _parse_entry(stripped: str, kind: TodoKind, dialect: str) -> Entry:
    """The general reader: any key order and spacing the runtime's reader takes."""
    extended = _is_extended(dialect)
    if not stripped.startswith(kind.prefix):
        raise ValueError("not an entry")
    rest = stripped[len(kind.prefix) :].strip()
    if _SEPARATOR not in rest:
        raise ValueError(f"missing {_SEPARATOR!r}")
    meta_text, content = (part.strip() for part in rest.split(_SEPARATOR, 1))
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
        item = part.strip()
        if not item:
            raise ValueError("empty metadata item")
        match = _TUPLE.fullmatch(item)
        if match is None:
            raise ValueError(f"bad metadata {item!r}")
        key, value = match.group(1), match.group(2).strip()
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
            raise ValueError(f"bad timestamp {value!r} in {key}")
        stamps[key] = stamp
    repeat = meta.get("Repeat")
    if repeat is not None:
        try:
            parse_repeat(repeat, allow_cron=extended)
        except ValueError:
            raise ValueError(f"bad Repeat {repeat!r}") from None
    tz = meta.get("TZ")
    if tz is not None and not _valid_zone(tz):
        raise ValueError(f"bad TZ {tz!r}")
    chat_id = meta.get("ChatID")
    if chat_id is not None and not _CHAT_ID.fullmatch(chat_id):
        raise ValueError(f"bad ChatID {chat_id!r}")
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
    """A naive datetime for a real ``YYYY-MM-DD HH:MM``, else None."""
    match = _STAMP.fullmatch(value)
    if match is None:
        return None
    year, month, day, hour, minute = (int(g) for g in match.groups())
    try:
        return datetime(year, month, day, hour, minute)  # noqa: DTZ001 - zone applied by caller
    except ValueError:
        return None


def _valid_zone(name: str) -> bool:
    if name.upper() == "UTC":
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


def _is_fence(number: int, text: str) -> bool:
    if number == 1:
        text = text.removeprefix(BOM)
    return text.strip() == _FENCE


def _read_front_matter(
    raw_lines: Sequence[tuple[int, str, str]],
) -> tuple[dict[Any, Any] | None, int]:
    """The parsed front matter and the number of lines it spans (0 = none)."""
    if not raw_lines or not _is_fence(1, raw_lines[0][1]):
        return None, 0
    close = next((i for i, (n, t, _) in enumerate(raw_lines) if i and _is_fence(n, t)), None)
    if close is None:
        raise FileFormatError("front matter has no closing '---'", line=1)
    simple = _simple_front_matter([text for _, text, _ in raw_lines[1:close]])
    if simple is not None:
        return simple, close + 1
    # one text line per file line, so YAML's marks map to file lines
    source = "".join(text + "\n" for _, text, _ in raw_lines[1:close])
    import yaml  # only a file with front matter needs it (a one-line sync may not)

    try:
        loaded = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        from heartbeat.formats.yaml_errors import describe

        reason, line, column = describe(exc)
        raise FileFormatError(
            f"front matter is not valid YAML: {reason}", line=line + 2, column=column + 1
        ) from None
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
        # PyYAML's constructors fail this way on e.g. `a: 2026-13-01` or `!!int x`
        raise FileFormatError(f"front matter is not valid YAML: {exc}", line=1) from None
    if loaded is None:
        loaded = {}  # empty front matter, as the runtime reads it
    if not isinstance(loaded, dict):
        raise FileFormatError("front matter is not a YAML mapping", line=2)
    return loaded, close + 1


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


@dataclass(frozen=True)
class _Visibility:
    text: str  # the line with HTML comments cut out (and a leading BOM dropped)
    touched: bool  # part of the line lies inside a comment
    open_after: bool  # a comment spans this line's ending


def _visibility(lines: Sequence[tuple[int, str, str]]) -> Iterator[_Visibility]:
    """What the runtime sees of each line once it has stripped HTML comments."""
    body = "".join(text + ending for _, text, ending in lines)
    spans = [m.span() for m in _COMMENT.finditer(body)]
    first = 0
    offset = 0
    for number, text, ending in lines:
        start, end = offset, offset + len(text)
        while first < len(spans) and spans[first][1] <= start:
            first += 1
        pieces: list[str] = []
        cursor = start
        index = first
        while index < len(spans) and spans[index][0] < end:
            span_start, span_end = spans[index]
            if span_start > cursor:
                pieces.append(body[cursor:span_start])
            cursor = max(cursor, span_end)
            index += 1
        if cursor < end:
            pieces.append(body[cursor:end])
        visible = "".join(pieces)
        # an empty line counts as touched when a comment spans its ending
        touched = first < len(spans) and spans[first][0] < max(end, start + 1)
        open_after = bool(ending) and any(s <= end < e for s, e in spans[first : index + 1])
        yield _Visibility(visible.removeprefix(BOM) if number == 1 else visible, touched, open_after)
        offset = end + len(ending)


def _classify(number: int, text: str, ending: str, seen: _Visibility, kind: TodoKind, dialect: str) -> Line:
    stripped = seen.text.strip()
    if not stripped:
        return Line(LineKind.COMMENT if seen.touched else LineKind.BLANK, number, text, ending)
    if stripped.startswith("#"):
        return Line(LineKind.HEADING, number, text, ending)
    try:
        entry = parse_entry(stripped, kind, dialect=dialect)
    except ValueError as exc:
        warning = LineWarning(number, text, str(exc))
        return Line(LineKind.MALFORMED, number, text, ending, warning=warning)
    entry = replace(entry, line=number, raw=text + ending)
    return Line(LineKind.ENTRY, number, text, ending, entry=entry)


def _is_header(line: Line, kind: TodoKind) -> bool:
    text = line.text.removeprefix(BOM) if line.number == 1 else line.text
    return line.kind is LineKind.HEADING and text.strip() == kind.header


def comments_opened_in_entries(doc: Document) -> list[tuple[int, int]]:
    """(line, last) for each entry line that opens an HTML comment reaching past its end:
    the comment hides the rest of that line and lines ``line + 1`` to ``last`` (up to its
    ``-->``). The runtime reads the entry only up to the ``<!--``."""
    reach = _comment_reach(doc.lines)
    return [
        (ln.number, reach[ln.number])
        for ln in doc.lines
        if ln.entry is not None and reach.get(ln.number, 0) > ln.number
    ]


def _comment_reach(lines: Sequence[Line]) -> dict[int, int]:
    """For each line that opens an HTML comment spanning its ending: the line the comment ends on."""
    out: dict[int, int] = {}
    carried = False  # a comment is open at the start of the line
    for index, line in enumerate(lines):
        # a comment open at the line's start ends at its first "-->": one still open at its end
        # was opened on this line
        if line.continues_comment and (not carried or "-->" in line.text):
            end = next((ln.number for ln in lines[index + 1 :] if "-->" in ln.text), line.number)
            out[line.number] = end
        carried = line.continues_comment
    return out


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
    return render_entry(entry, comments=True) + line.ending  # lines added or changed were checked


def render_entry(entry: Entry, *, comments: bool = False) -> str:
    """The canonical line for an entry, without a newline.

    Keys in canonical order (extended keys last), timestamps at minute
    precision (``Created``/``Done`` in UTC). Raises InvalidInput for an entry
    that cannot be written as one readable line. ``comments``: the content may
    hold ``<!--``; whether the line still reads as written then depends on the
    rest of the file, which the caller must check (as :func:`with_entries` does).
    """
    pairs = _metadata_pairs(entry)
    content = entry.content
    if not content or content != content.strip():
        raise InvalidInput(f"entry content {content!r} must be non-empty and trimmed")
    if "\n" in content:  # only LF ends a line: a CR inside the content is part of it
        raise InvalidInput(f"entry content {content!r} must be one line")
    if "<!--" in content and not comments:
        raise InvalidInput(f"entry content {content!r} must not open an HTML comment")
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
            parse_repeat(entry.repeat)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        return _checked_value(key, entry.repeat)
    if key == "TZ":
        assert entry.tz is not None
        if not _valid_zone(entry.tz):
            raise InvalidInput(f"TZ {entry.tz!r} is not an IANA time zone")
        return _checked_value(key, entry.tz)
    assert entry.chat_id is not None
    if not _CHAT_ID.fullmatch(entry.chat_id):
        raise InvalidInput(f"ChatID {entry.chat_id!r} is not like tg:-100123")
    return _checked_value(key, entry.chat_id)


def _format_stamp(stamp: datetime) -> str:
    # f-string, not strftime: strftime does not pad years below 1000 on every libc
    return f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d} {stamp.hour:02d}:{stamp.minute:02d}"


def _checked_value(key: str, value: str) -> str:
    """A metadata value must survive the reader: no comma, parenthesis or separator."""
    if not value or value != value.strip():
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

    return replace(
        entry,
        created=minute(entry.created, to_utc=True),
        done=minute(entry.done, to_utc=True),
        next=minute(entry.next, to_utc=False),
        line=0,
        raw=None,
    )


def _same(given: Entry, original: Entry) -> bool:
    try:
        return _canonical(given) == _canonical(original)
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
    entry line, or after the header, or at the end; never inside an HTML
    comment). Listing existing entries in another order does not move them. If
    anything changed, the front matter's count and ``updated_at`` lines are set.
    The result is re-parsed, so its entries carry their new line numbers.
    Raises ValueError for a naive ``now`` or a ``line`` that is not an entry of
    ``doc``; InvalidInput for an entry that cannot be written readably in the
    document's dialect; CommentMarkerError (naming the line in the way) for a
    change that would alter how other lines read. An entry's content may hold
    ``<!--`` when the result still reads exactly as written.
    """
    _require_aware(now)
    for entry in entries:
        if entry.kind is not doc.kind:
            raise InvalidInput(f"a {entry.kind} entry cannot go into {doc.kind.filename}")
    given = _index_given(doc, entries)
    out, changed = _place_entries(doc, given, _anchor_new(entries))
    if not changed:
        return doc
    out = _keep_bom_first(_fix_endings(out, doc), doc)
    if doc.front_matter is not None:
        count = sum(1 for ln in out if ln.kind is LineKind.ENTRY)
        out = _update_front_matter(out, doc, count, now)
    result = parse("".join(_line_text(ln) for ln in out), doc.kind, dialect=doc.dialect)
    expected = [_canonical(ln.entry) for ln in out if ln.entry is not None]
    if [_canonical(e) for e in result.entries] != expected:
        # an HTML comment marker in a removed, changed or added line moved a comment
        raise _comment_error(doc, given, out)
    return result


def _comment_error(doc: Document, given: dict[int, Entry], out: Sequence[Line]) -> CommentMarkerError:
    """Why the result of with_entries reads otherwise: the first removed or rewritten line
    with a comment marker (else the first new one)."""
    name = doc.kind.filename
    unread = "the result would not read back as written"
    kept = {ln.number for ln in out if ln.number}
    reach = _comment_reach(doc.lines)
    for line in doc.lines:
        if line.number in kept or not any(m in line.text for m in _MARKERS):
            continue
        verb = "rewriting" if line.number in given else "removing"
        end = reach.get(line.number)
        if end is not None and end > line.number:
            hidden = f"line {end}" if end == line.number + 1 else f"lines {line.number + 1}-{end}"
            what = f"{verb} this line would uncover {hidden}, hidden by the HTML comment it opens"
        else:
            what = f"{verb} this line would move an HTML comment marker it holds"
        return CommentMarkerError(name, f"{unread}: {what}; close or remove the comment here", line.number)
    for line in out:
        if line.number == 0 and line.entry is not None and any(m in line.text for m in _MARKERS):
            what = f"the new entry {line.entry.content!r} holds an HTML comment marker"
            return CommentMarkerError(name, f"{unread}: {what} that would change which lines are hidden")
    return CommentMarkerError(name, f"{unread} (an HTML comment marker would change which lines are hidden)")


def _place_entries(
    doc: Document, given: dict[int, Entry], anchored: dict[int, list[Entry]]
) -> tuple[list[Line], bool]:
    """The document's lines with entries kept, rewritten, dropped or added; and whether
    anything changed."""
    changed = bool(anchored) or set(given) != set(doc._entry_index)
    first_entry = min(doc._entry_index, default=None)
    out: list[Line] = []
    pending: list[Line] = []  # new lines waiting for an open comment to close
    open_before = False
    for line in doc.lines:
        if line.number == first_entry:
            (pending if open_before else out).extend(_new_lines(anchored.get(0, []), doc))
        if line.entry is None:
            out.append(line)
        elif line.number in given:
            entry = given[line.number]
            if _same(entry, line.entry):
                out.append(line)
            else:
                changed = True
                text = _checked_line(entry, doc.dialect)
                out.append(Line(LineKind.ENTRY, 0, text, line.ending, replace(entry, raw=None)))
        if line.entry is not None:
            pending.extend(_new_lines(anchored.get(line.number, []), doc))
        if pending and not line.continues_comment:
            out.extend(pending)
            pending = []
        open_before = line.continues_comment
    out.extend(pending)
    if first_entry is None and 0 in anchored:
        at = _fallback_insert_index(doc)
        out[at:at] = _new_lines(anchored[0], doc)
    return out, changed


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
    return [
        Line(LineKind.ENTRY, 0, _checked_line(e, doc.dialect), doc.newline, replace(e, raw=None))
        for e in entries
    ]


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
        fixed[-1] = replace(fixed[-1], ending="")
    return fixed


def _with_ending(line: Line, ending: str) -> Line:
    """The line with a new ending; a kept entry's raw text (which includes it) follows."""
    entry = line.entry
    if entry is not None and entry.raw is not None:
        entry = replace(entry, raw=line.text + ending)
    return replace(line, ending=ending, entry=entry)


def _keep_bom_first(lines: list[Line], doc: Document) -> list[Line]:
    """A BOM belongs to the start of the file, whichever line now comes first."""
    had_bom = bool(doc.lines) and doc.lines[0].text.startswith(BOM)
    if not had_bom or not lines or lines[0].number == 1:
        return lines
    out = [_bom_moved(ln, add=False) if ln.number == 1 else ln for ln in lines]
    out[0] = _bom_moved(out[0], add=True)
    return out


def _bom_moved(line: Line, *, add: bool) -> Line:
    text = BOM + line.text if add else line.text.removeprefix(BOM)
    entry = line.entry
    if entry is not None:
        entry = replace(entry, raw=text + line.ending)
    return replace(line, text=text, entry=entry)


def _update_front_matter(lines: list[Line], doc: Document, count: int, now: datetime) -> list[Line]:
    """Set the count and updated_at lines; every other front-matter line stays as it was."""
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
            out.insert(close, Line(LineKind.FRONT_MATTER, 0, f"{key}: {value}", doc.newline))
            close += 1
    return out


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
    if [_canonical(e) for e in doc.entries] != [_canonical(e) for e in entries]:
        # only a comment marker in the content makes a checked line read otherwise here
        reason = "the entries would not read back as written (an HTML comment marker in one hides others)"
        raise CommentMarkerError(kind.filename, reason)
    return doc
