"""Reading a Markdown TODO file: its entries, its warnings, what changed since the last sync.

Part of :mod:`heartbeat.ops.sync.markdown` (its docstring tells how the sync works).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from heartbeat.errors import NUL, FileFormatError, nul_reason
from heartbeat.formats import todo as fmt
from heartbeat.formats.todo import Entry, TodoKind
from heartbeat.ops.sync.markdown.base import (
    KIND_OF,
    TARGETED_MAX,
    Stored,
    entry_body,
    front_matter_end,
    split_lines,
)
from heartbeat.ops.sync.markdown.family import Item, ParsedFile, Row

if TYPE_CHECKING:
    pass

# --- reading the files ---------------------------------------------------------------------


def classify_line(kind: TodoKind, raw: str, dialect: str, *, first: bool = False) -> Entry | str | None:
    """What the runtime makes of a line outside any HTML comment: an entry, a reason it is
    not one (a malformed line), or None (blank or heading). ``first``: line 1 (a BOM)."""
    return fmt.classify(raw, kind, dialect, first=first)


def refuse_nul(path: Path, number: int, entry: Entry) -> None:
    """FileFormatError naming ``path:number`` when a text of ``entry`` the ledger would store
    holds a NUL character (the runtime reads such an entry; the ledger does not store the
    character: see :func:`heartbeat.errors.nul_reason`). Lines hb keeps as written without
    reading them (comments, front matter, lines that are no entry) may hold one."""
    for what, value in (
        ("content", entry.content),
        ("ChatID", entry.chat_id),
        ("TZ", entry.tz),
        ("Repeat", entry.repeat),
        *entry.extra,
    ):
        if value is not None and NUL in value:
            raise FileFormatError(nul_reason(f"the entry's {what}", value), path=str(path), line=number)


def read_file(kind: str, path: Path, text: str | None, dialect: str) -> ParsedFile:
    """Read a whole file. Without HTML comments the lines are read one by one (what
    formats.todo.parse does, minus building the document, which waits for a render).
    FileFormatError for an entry holding a NUL character (:func:`refuse_nul`)."""
    if text is None:
        return ParsedFile(kind, path, None, [], [])
    todo_kind = KIND_OF[kind]
    items: list[Item] = []
    nul = NUL in text
    if "<!--" in text:
        doc = parse_doc(kind, path, text, dialect)
        items = [Item(kind, ln.number, ln.text, ln.entry) for ln in doc.lines if ln.entry is not None]
        if nul:
            for it in items:
                assert it.entry is not None
                refuse_nul(path, it.number, it.entry)
        return ParsedFile(kind, path, text, items, doc_warnings(doc), doc)
    lines = split_lines(text)
    bodies = [entry_body(line) for line in lines]
    front = fmt.read_front_matter(bodies)
    warnings = [(w.line, w.text, w.reason) for w in front.notes]
    for index in range(front.end, len(lines)):
        raw = bodies[index]
        got = classify_line(todo_kind, raw, dialect, first=index == 0)
        if isinstance(got, Entry):
            if nul:
                refuse_nul(path, index + 1, got)
            items.append(Item(kind, index + 1, raw, got))
            note = fmt.entry_note(got)
            if note is not None:
                warnings.append((index + 1, raw, note))
        elif got is not None and index >= front.shadow:  # the shadow: front matter as written
            warnings.append((index + 1, raw, got))
    if front.scanned and max(map(len, bodies)) * 4 >= fmt.SCANNER_LIMIT - 1:
        long = next((i for i in range(1, len(lines)) if _over_limit(lines[i], bodies[i])), None)
        if long is not None:
            warnings.append((long + 1, bodies[long], fmt.scanner_note(long < front.end)))
            warnings.sort(key=lambda w: w[0])
    return ParsedFile(kind, path, text, items, warnings)


def _over_limit(line: str, body: str) -> bool:
    """Whether mistermorph's line scanner stops at this line (see formats.todo.SCANNER_LIMIT)."""
    return fmt.over_scanner_limit(body, "\r\n" if line.endswith("\r\n") else "")


def doc_warnings(doc: fmt.Document) -> list[tuple[int, str, str]]:
    """The lines kept but not understood, and what else the reader says about lines."""
    return [(w.line, w.text, w.reason) for w in doc.warnings]


def parse_doc(kind: str, path: Path, text: str, dialect: str) -> fmt.Document:
    try:
        return fmt.parse(text, KIND_OF[kind], dialect=dialect)
    except FileFormatError as exc:
        raise exc.at_path(str(path)) from None


def known_file(kind: str, path: Path, text: str | None, rows: Sequence[Row], stored: Stored) -> ParsedFile:
    """A file unchanged since the last sync: its entries are the rows last synced into it."""
    mine = sorted((r for r in rows if r.base_place == kind), key=lambda r: (r.position, r.pk))
    items = [Item(kind, 0, r.base_line or "", None, row=r) for r in mine]
    return ParsedFile(kind, path, text, items, list(stored.warnings))


@dataclass
class Diff:
    """Where a file differs from the text the last sync left: old[p:old_end] became new[p:new_end]."""

    old: list[str]
    new: list[str]
    p: int
    old_end: int
    new_end: int


def diff_since_sync(stored: Stored, base: str | None, text: str | None, dialect: str) -> Diff | None:
    """The changed region, when reading only it gives what a full read would; else None."""
    if not stored.ours or base is None or text is None or stored.dialect != dialect:
        return None
    if "<!--" in base or "<!--" in text:  # (base: the text of the hash recorded, see base_text)
        return None
    old, new = split_lines(base), split_lines(text)
    limit = min(len(old), len(new))
    p = 0
    while p < limit and old[p] == new[p]:
        p += 1
    s = 0
    while s < limit - p and old[-1 - s] == new[-1 - s]:
        s += 1
    if p == 0 or p < max(front_matter_end(old), front_matter_end(new)):
        return None  # the first line (a BOM) or the front matter changed
    if len(old) - s - p > TARGETED_MAX or len(new) - s - p > TARGETED_MAX:
        return None
    if any(_over_limit(line, entry_body(line)) for line in (*old[p : len(old) - s], *new[p : len(new) - s])):
        return None  # which line mistermorph's scanner stops at may move: read the whole file
    return Diff(old, new, p, len(old) - s, len(new) - s)
