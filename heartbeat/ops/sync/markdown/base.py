"""What the Markdown sync works with: records, rows, entries, what the last sync stored.

Part of :mod:`heartbeat.ops.sync.markdown` (its docstring tells how the sync works).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.db.plain import Conn
from heartbeat.formats import go_text
from heartbeat.formats import todo as fmt
from heartbeat.formats.go_text import trim_space
from heartbeat.formats.todo import Entry, TodoKind
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.files import STATE, digest

if TYPE_CHECKING:
    pass

TODO_SOURCE = "todo"  # Task.source of Markdown TODO entries
RECUR_SOURCES = ("recur", "cli")  # Recurrence.source of rules that live in TODO.RECUR.md
TASK_KINDS = ("todo", "done")
ACTOR = "sync"

KIND_OF = {"todo": TodoKind.TODO, "done": TodoKind.DONE, "recur": TodoKind.RECUR}
ID_PATTERN = re.compile(r"(todo|recur)-[0-9a-f]{8}")
DUP_MARK = " ~"  # separates an identity key from the digest that tells duplicates apart
_BY = "markdown-sync"  # marks a sync_state row written by this module
TARGETED_MAX = 2000  # changed lines up to which a sync reads only the changed region
CHUNK_SIZE = 500  # ids per IN (...) query


# --- small helpers -----------------------------------------------------------------------


def on_top(first: int | None) -> int:
    """The position of an entry put on top of a list whose first position is ``first`` (None:
    empty), where mistermorph's Add and AddRecurring put a new one. The entries of a file not
    synced yet are read in from position 0, so it goes above 0 too."""
    return min(first if first is not None else 0, 0) - 1


def stamp_text(value: datetime | None) -> str | None:
    """A UTC instant as the files write it (minute precision)."""
    if value is None:
        return None
    v = value if value.tzinfo is UTC else value.astimezone(UTC)
    return str(v)[:16]  # "YYYY-MM-DD HH:MM:SS+00:00", cut


def wall_text(value: datetime | None) -> str | None:
    """A naive wall-clock time as ``YYYY-MM-DD HH:MM``."""
    if value is None:
        return None
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}"


def short_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def content_of(title: str) -> str:
    """A title as one entry line's content: one line (only LF ends one), trimmed as Go trims."""
    return " ".join(go_text.fields(title)) if "\n" in title else trim_space(title)


def entry_id(entry: Entry | None) -> str | None:
    if entry is None:
        return None
    for key, value in entry.extra:
        if key == "ID":
            return value
    return None


def split_lines(text: str) -> list[str]:
    """Lines with their endings; only LF ends a line (as formats.todo reads them)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def entry_body(line: str) -> str:
    """A line without its ending (LF or CRLF)."""
    if line.endswith("\r\n"):
        return line[:-2]
    return line[:-1] if line.endswith("\n") else line


def front_matter_end(lines: Sequence[str]) -> int:
    """How many lines a front matter spans (0: none; all: unterminated), also one after a BOM
    that the runtime reads as entry lines."""
    if not lines or trim_space(trim_space(entry_body(lines[0])).removeprefix(fmt.BOM)) != "---":
        return 0
    for index in range(1, len(lines)):
        if trim_space(entry_body(lines[index])) == "---":
            return index + 1
    return len(lines)


def read_dialect(current: str, stored: str | None) -> str:
    """Read with the extended dialect while leaving it, so lines with [ID] are still recognised."""
    return "extended" if "extended" in (current, stored) else "strict"


def chunked(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), CHUNK_SIZE):
        yield values[start : start + CHUNK_SIZE]


# --- records, rows, items ------------------------------------------------------------------


class EntryRecord:
    """The file-relevant values of a row or an entry; ``place`` is the file kind (None: no file)."""

    __slots__ = ("_digest", "place", "values")

    def __init__(self, place: str | None, values: tuple[str | None, ...]) -> None:
        self.place = place
        self.values = values
        self._digest: str | None = None

    @property
    def digest(self) -> str:
        if self._digest is None:
            text = "\x1f".join("\x00" if v is None else v for v in (self.place, *self.values))
            self._digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return self._digest

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EntryRecord) and (self.place, self.values) == (other.place, other.values)

    def __hash__(self) -> int:
        return hash((self.place, self.values))


@dataclass
class Stored:
    """What the last sync recorded about a file (sync_state)."""

    hash: str | None = None
    path: str | None = None
    mark: Any = None
    dialect: str | None = None
    warnings: list[tuple[int, str, str]] = field(default_factory=list)
    ours: bool = False  # written by this module's sync: a baseline to trust
    retry: bool = False  # the last sync left a ledger change it could not write: sync in full
    # (id, synced_hash) of each entry the ledger removed since (bookmarks.note_removed)
    removed: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def load(cls, db: Conn, kind: str) -> Stored:
        row = bookmarks.load(db, kind)
        if row is None:
            return cls()
        skeleton = row["skeleton"] or {}
        if skeleton.get("by") != _BY:
            return cls(hash=row["content_hash"], path=row["path"])
        return cls(
            hash=row["content_hash"],
            path=row["path"],
            mark=skeleton.get("mark"),
            dialect=skeleton.get("dialect"),
            warnings=[(int(n), str(t), str(r)) for n, t, r in skeleton.get("warnings", [])],
            ours=True,
            retry=bool(skeleton.get("retry")),
            removed=[(str(i), str(h)) for i, h in skeleton.get("removed", [])],
        )


def base_path(workspace: Path, kind: str) -> Path:
    return workspace / STATE / "sync" / f"{kind}.base"


def _next_copy(base: Path) -> Path:
    """Where a sync keeps its copy before its commit (see :func:`store_sync`)."""
    return base.with_name(f"{base.name}.next")


def base_text(workspace: Path, kind: str, recorded: str | None) -> str | None:
    """The text of the file as the last sync left it (or meant to): a copy kept beside the ledger,
    trusted only when its hash is ``recorded``, the one the ledger recorded (else None: the sync
    reads the whole file). The copy is the last commit's, or the one its sync wrote just before
    that commit, when the sync died before it could make that copy the last (:func:`store_sync`)."""
    if recorded is None:
        return None
    base = base_path(workspace, kind)
    for path in (base, _next_copy(base)):
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if digest(text) == recorded:
            if path != base:  # the sync that wrote it died before making it the last copy
                with contextlib.suppress(OSError):
                    os.replace(path, base)
            return text
    return None


def store_sync(
    db: Conn,
    kind: str,
    path: Path,
    text: str | None,
    now: datetime,
    *,
    mark: Any,
    dialect: str,
    warnings: Sequence[tuple[int, str, str]],
    base: Path | None,
    retry: bool = False,
) -> None:
    """Record how the sync leaves a file; ``base``: where to keep a copy of its text (None: the
    copy there is already this text); ``retry``: a ledger change could not be written, so the
    next sync must not take the ledger as unchanged."""
    skeleton: dict[str, Any] = {
        "by": _BY,
        "mark": mark,
        "dialect": dialect,
        "warnings": [list(w) for w in warnings],
    }
    if retry:
        skeleton["retry"] = True
    bookmarks.save(
        db,
        kind,
        path=str(path),
        content_hash=None if text is None else digest(text),
        size=None if text is None else len(text.encode("utf-8")),
        synced_at=now,
        skeleton=skeleton,
    )
    if base is not None:
        # the copy is written before the commit, beside the last one, and made the last one after
        # it: a sync killed in between leaves both, and the next finds the one of the recorded hash
        # (the copy written after the commit was the last one's text then, and the next sync read
        # the entries this one wrote as deleted from the file: a task added in the ledger was lost)
        if text is not None:
            _write_copy(_next_copy(base), text)
        db.after_commit.append(lambda: _keep_base(base, text))
        # hb 0.1.0 kept the copy in the database: drop it once the copy beside it exists
        db.execute("DELETE FROM sync_state WHERE kind = :kind", {"kind": f"{kind}.base"})


def _write_copy(path: Path, text: str) -> None:
    """Write a copy of a synced file's text (no temp file, no fsync: a torn copy fails its hash
    check like any other, and the rename after the commit makes it the last copy whole). One
    that could not be written only costs a sync a full read."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def _keep_base(base: Path, text: str | None) -> None:
    """After the commit: make the copy written before it the last one (or drop the copies)."""
    try:
        if text is None:
            base.unlink(missing_ok=True)
            _next_copy(base).unlink(missing_ok=True)
        else:
            os.replace(_next_copy(base), base)
    except OSError:
        with contextlib.suppress(OSError):
            base.unlink(missing_ok=True)
