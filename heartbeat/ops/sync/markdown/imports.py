"""One-way hb import and hb export of the Markdown TODO files.

Part of :mod:`heartbeat.ops.sync.markdown` (its docstring tells how the sync works).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from heartbeat.db.plain import Conn
from heartbeat.errors import FileFormatError, InvalidInput
from heartbeat.formats import todo as fmt
from heartbeat.ops.sync import bookmarks
from heartbeat.ops.sync.files import default_path, digest, read_optional
from heartbeat.ops.sync.markdown.base import KIND_OF, EntryRecord, Stored, base_text, read_dialect
from heartbeat.ops.sync.markdown.family import Family, Item, Row
from heartbeat.ops.sync.markdown.merge import (
    Slot,
    assign_keys,
    finish_sync,
    labels_of,
    match_entries,
    render_file,
)
from heartbeat.ops.sync.markdown.reading import read_file
from heartbeat.ops.sync.report import ImportReport, SyncReport

if TYPE_CHECKING:
    pass


def import_family(family: Family, kind: str, path: Path, text: str) -> ImportReport:
    """Read one file into the ledger: the file's version of every entry wins; nothing is removed.

    Importing the workspace's own file (its default path) also records the
    entries as synced, so the next ``hb sync`` sees no change on either side.
    The text is recorded with the row of each entry (:class:`ImportedText`), in
    the same transaction, for ``hb export`` to give it back.
    """
    baseline = path.resolve() == default_path(family.ctx.workspace, kind).resolve()
    f = read_file(kind, path, text, family.dialect)
    report = ImportReport(kind, str(path))
    report.warnings = [f"line {n}: {reason}" for n, _t, reason in f.warnings]
    report.preserved = labels_of(path, f.warnings)
    rows = family.load()
    match_entries(family, f.items, rows, importing=True)
    label = {id(it): f"{path}:{it.number}" for it in f.items}
    changes: list[tuple[Row, Item, bool]] = []
    final: dict[int, EntryRecord] = {}
    for it in f.items:
        assert it.record is not None
        if it.row is None:
            continue
        final[it.row.pk] = it.record
        if it.record.digest != it.row.record.digest:
            changes.append((it.row, it, False))
            report.updated.append(it.row.id)
        else:
            report.unchanged += 1
    family.actor = "import"
    family.apply(changes, label)
    slots = [Slot(kind, it, it.row, it.record, it.raw, it.number) for it in f.items if it.record is not None]
    reports = {kind: SyncReport(kind=kind, path=str(path))}
    new_items = [s.item for s in slots if s.row is None and s.item is not None]
    if baseline:
        finish_sync(family, {kind: slots}, rows, final, label, reports)
    else:
        new = [s for s in slots if s.row is None]
        assign_keys(family, [s.item for s in new if s.item is not None])
        start = max((r.position for r in rows), default=-1) + 1
        positions: dict[int, int] = {}
        for index, s in enumerate(new):
            assert s.item is not None
            s.item.final_extra, s.item.final_hash = {}, None
            positions[id(s.item)] = start + index
        items = [s.item for s in new if s.item is not None]
        reports[kind].added.extend(family.insert(items, positions, label))
    report.added = reports[kind].added
    lines = {it.number: it.row.id for it in f.items if it.row is not None}
    lines.update({it.number: new_id for it, new_id in zip(new_items, report.added, strict=True)})
    ImportedText(str(path), text, lines, Stored.load(family.db, kind).hash).save(family.db, kind, family.now)
    return report


@dataclass(frozen=True)
class ImportedText:
    """The text of the file hb last imported (``hb import``) or exported to (``hb export``) for a
    kind, with the row each of its entries went to: what ``hb export`` to a new file lays the
    ledger over, so ``hb import todo SRC; hb export todo DST`` gives back SRC's text."""

    path: str
    text: str
    rows: dict[int, str]  # line number -> row id
    base: str | None  # the hash of the text hb had synced then (a later sync makes that newer)

    @property
    def text_hash(self) -> str:
        return digest(self.text)

    @staticmethod
    def load(db: Conn, kind: str) -> ImportedText | None:
        row = bookmarks.load(db, f"{kind}{_LAYOUT}")
        skeleton = (row or {}).get("skeleton") or {}
        if row is None or skeleton.get("by") != _LAYOUT_BY or not isinstance(skeleton.get("text"), str):
            return None
        rows = {int(n): str(i) for n, i in skeleton.get("rows", [])}
        return ImportedText(row["path"], skeleton["text"], rows, skeleton.get("base"))

    def save(self, db: Conn, kind: str, now: datetime) -> None:
        skeleton = {"by": _LAYOUT_BY, "text": self.text, "rows": sorted(self.rows.items()), "base": self.base}
        size = len(self.text.encode("utf-8"))
        bookmarks.save(
            db,
            f"{kind}{_LAYOUT}",
            path=self.path,
            content_hash=digest(self.text),
            size=size,
            synced_at=now,
            skeleton=skeleton,
        )


_LAYOUT = ".layout"  # sync_state kind suffix of an ImportedText
_LAYOUT_BY = "markdown-layout"


def render_family(family: Family, kind: str, target: Path | None = None) -> str:
    """The file as the ledger has it now, laid over a text hb knows; never over an entry hb
    has not imported.

    The text laid over is the target's own (``target`` None: the workspace's
    file); for a file that does not exist, the newer of the text hb last
    imported or exported (:class:`ImportedText`) and the text it last synced.
    Every entry of an existing target must be one hb read, as written: an entry
    the ledger has not imported (or a target hb cannot read) makes it refuse,
    with InvalidInput naming path:line, so an export never loses an entry. With
    ``target`` (a file about to be written), the result is recorded as the text
    last exported.
    """
    db = family.db
    stored = Stored.load(db, kind)
    workspace_file = default_path(family.ctx.workspace, kind)
    path = target if target is not None else workspace_file
    dialect = read_dialect(family.dialect, stored.dialect)
    try:
        current = read_optional(path)
    except FileFormatError as exc:
        if path.is_dir():
            raise
        raise InvalidInput(f"{exc}; hb export does not overwrite a file it cannot read") from None
    imported = ImportedText.load(db, kind)
    base = base_text(family.ctx.workspace, kind, stored.hash) if stored.ours else None
    rows = family.load()
    by_id = {row.id: row for row in rows}
    numbered: dict[int, str] | None = None  # the laid-over text is the imported one: its line -> row id
    if current is not None:
        laid = current
        if imported is not None and digest(current) == imported.text_hash:
            numbered = imported.rows
    elif imported is not None and (base is None or imported.base == stored.hash):
        laid, numbered = imported.text, imported.rows
    elif base is not None:
        laid = base
    elif path.resolve() != workspace_file.resolve():
        try:  # never synced: a copy of the workspace's file
            laid = read_optional(workspace_file) or ""
        except FileFormatError:
            laid = ""
    else:
        laid = ""
    f = read_file(kind, path, laid if laid or current is not None else None, dialect)
    known = _known_lines(kind, rows, base, imported, dialect) if numbered is None else Counter()
    seen: Counter[str] = Counter()
    by_line: dict[str, list[Row]] = {}
    for row in sorted(rows, key=lambda r: (r.position, r.pk)):
        if row.base_place == kind and row.base_line is not None:
            by_line.setdefault(row.base_line, []).append(row)
    if imported is not None and numbered is None:
        for number, raw in _entry_lines(kind, imported.text, dialect):
            found = by_id.get(imported.rows.get(number, ""))
            if found is not None:
                by_line.setdefault(raw, []).append(found)
    final: dict[int, EntryRecord] = {}
    taken: set[int] = set()
    for it in f.items:
        it.record = family.entry_record(kind, it.entry) if it.entry is not None else None
        if numbered is not None:
            found = by_id.get(numbered.get(it.number, ""))
        else:
            found = next((r for r in by_line.get(it.raw, ()) if r.pk not in taken), None)
            seen[it.raw] += 1
            if found is None and current is not None and seen[it.raw] > known[it.raw]:
                raise InvalidInput(
                    f"{path}:{it.number}: this entry is not in the ledger (hb has not imported it), and "
                    f"hb export does not overwrite it: run hb sync, or hb import {kind} {path}, first"
                )
        if found is None or found.pk in taken or found.record.place != kind:
            it.fate = "drop"  # imported, and since then removed or moved in the ledger
            continue
        taken.add(found.pk)
        it.row = found
        final[found.pk] = found.record
        if it.record != found.record:
            it.fate = "rewrite"
    incoming = [r for r in rows if r.pk not in taken and r.record.place == kind]
    for row in incoming:
        final[row.pk] = row.record
    report = SyncReport(kind=kind, path=str(path))
    text, slots = render_file(family, f, incoming, final, dialect, report)
    if text is None:
        text = (
            f.text
            if f.text is not None
            else fmt.render(fmt.new_document(KIND_OF[kind], [], now=family.now, dialect=dialect))
        )
    if target is not None:
        lines = {slot.number: slot.row.id for slot in slots if slot.row is not None and slot.number}
        ImportedText(str(path), text, lines, stored.hash).save(db, kind, family.now)
    return text


def _entry_lines(kind: str, text: str, dialect: str) -> list[tuple[int, str]]:
    """(line number, text as written) of every entry of a text."""
    return [(it.number, it.raw) for it in read_file(kind, Path(kind), text, dialect).items]


def _known_lines(
    kind: str, rows: Sequence[Row], base: str | None, imported: ImportedText | None, dialect: str
) -> Counter[str]:
    """How often hb has read each entry line, as written: in the text it last synced, in the
    text it last imported or exported, and the lines its rows were last synced from."""
    known = Counter(row.base_line for row in rows if row.base_place == kind and row.base_line is not None)
    for text in (base, imported.text if imported is not None else None):
        if text is not None:
            known |= Counter(raw for _number, raw in _entry_lines(kind, text, dialect))
    return known
