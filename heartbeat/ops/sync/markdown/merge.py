"""The three-way merge of a file, the ledger and the last sync, and rendering the result.

Part of :mod:`heartbeat.ops.sync.markdown` (its docstring tells how the sync works).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from heartbeat.errors import InvalidInput
from heartbeat.formats import todo as fmt
from heartbeat.formats.todo import Entry
from heartbeat.ops.sync.markdown.base import (
    DUP_MARK,
    KIND_OF,
    EntryRecord,
    Stored,
    base_path,
    entry_id,
    store_sync,
)
from heartbeat.ops.sync.markdown.family import Family, Item, ParsedFile, Row
from heartbeat.ops.sync.markdown.reading import doc_warnings, known_file, parse_doc, read_file
from heartbeat.ops.sync.report import SyncReport

if TYPE_CHECKING:
    pass

# --- matching ------------------------------------------------------------------------------


def match_entries(family: Family, items: Sequence[Item], rows: Sequence[Row], *, importing: bool) -> None:
    """Pair entries with rows (``item.row``); see the module docstring for the order."""
    claimed = {it.row.pk for it in items if it.row is not None}
    free = sorted(
        (r for r in rows if r.pk not in claimed and (importing or r.base_place or r.record.place)),
        key=lambda r: (r.position, r.pk),
    )

    def claim(item: Item, row: Row) -> None:
        item.row = row
        claimed.add(row.pk)

    def pair(index: dict[Any, list[Row]], item: Item, key: Any, ok: Callable[[Row], bool]) -> None:
        for row in index.get(key, ()):
            if row.pk not in claimed and ok(row):
                claim(item, row)
                return

    for it in items:
        if it.entry is not None and it.record is None:
            it.record = family.entry_record(it.kind, it.entry)
    anything = lambda _row: True  # noqa: E731
    by_line: dict[Any, list[Row]] = {}
    by_id: dict[Any, list[Row]] = {}
    by_key: dict[Any, list[Row]] = {}
    for row in free:
        if row.base_place and row.base_line is not None:
            by_line.setdefault((row.base_place, row.base_line), []).append(row)
        by_id.setdefault(row.id, []).append(row)
        if row.key:
            by_key.setdefault(row.key, []).append(row)
    open_items = [it for it in items if it.row is None]
    # 1. the exact line last synced; of identical lines (one of them edited or deleted), the
    # row whose entry stood nearest this one's place, so an edit is not taken for a conflict
    item_rank: dict[int, int] = {}
    seen: dict[str, int] = {}
    for it in items:
        item_rank[id(it)] = seen.get(it.kind, 0)
        seen[it.kind] = item_rank[id(it)] + 1
    row_rank: dict[int, int] = {}
    placed: dict[str | None, int] = {}
    for row in free:
        row_rank[row.pk] = placed.get(row.base_place, 0)
        placed[row.base_place] = row_rank[row.pk] + 1
    # each group of identical lines: its unclaimed rows by rank (the lists are in rank order),
    # the nearest found by bisection (a tie goes to the lower rank, as a scan in order gives)
    ranks: dict[Any, list[int]] = {}
    for it in open_items:
        rows_of_line = by_line.get((it.kind, it.raw))
        if not rows_of_line:
            continue
        group = ranks.get((it.kind, it.raw))
        if group is None:
            group = ranks[(it.kind, it.raw)] = [i for i, r in enumerate(rows_of_line) if r.pk not in claimed]
        if not group:
            continue
        want = item_rank[id(it)]
        at = bisect.bisect_left(group, want, key=lambda i: row_rank[rows_of_line[i].pk])
        if at == len(group) or (
            at > 0
            and want - row_rank[rows_of_line[group[at - 1]].pk] <= row_rank[rows_of_line[group[at]].pk] - want
        ):
            at -= 1
        claim(it, rows_of_line[group.pop(at)])
    for it in open_items:  # 2. the extended dialect's [ID]
        if it.row is None and (wanted := entry_id(it.entry)):
            pair(by_id, it, wanted, anything)
    assign_keys(family, items)
    for it in open_items:  # 3. the identity key

        def same(row: Row, record: EntryRecord | None = it.record) -> bool:
            return bool(row.synced_hash) or importing or row.record == record

        if it.row is None:
            pair(by_key, it, it.key, same)
    rest = [it for it in open_items if it.row is None]
    if not rest:
        return
    by_alt: dict[Any, list[Row]] = {}
    for row in free:
        if row.pk not in claimed and row.synced_hash and (row.base_place or importing):
            by_alt.setdefault(row.alt, []).append(row)
    for it in rest:  # 4. the fallback key of the line last synced (an edited line)
        pair(by_alt, it, it.alt, anything)


def assign_keys(family: Family, items: Sequence[Item]) -> None:
    plain: list[str] = []
    for it in items:
        if it.record is not None:
            key, it.alt = family.keys(it.record)
        else:
            assert it.row is not None
            key = (it.row.key or "").split(DUP_MARK, 1)[0]
        plain.append(key)
    counts: dict[str, int] = {}
    for key in plain:
        counts[key] = counts.get(key, 0) + 1
    for it, key in zip(items, plain, strict=True):
        if it.record is None:
            assert it.row is not None
            it.key = it.row.key or key
        else:
            it.key = family.dup_key(key, it.record) if counts[key] > 1 else key


# --- the two-way sync ----------------------------------------------------------------------


@dataclass(eq=False)
class Slot:
    """One entry line of a file after the sync: a file entry (``item``) or a row written in."""

    kind: str
    item: Item | None
    row: Row | None
    record: EntryRecord  # the final version
    raw: str = ""
    number: int = 0


def labels_of(path: Path, warnings: Iterable[tuple[int, str, str]]) -> list[str]:
    return [f"{path}:{n}: {reason}" for n, _text, reason in warnings]


def checked_entry(entry: Entry, dialect: str, *, comments: bool = False) -> str | None:
    """Why ``entry`` cannot be written as a readable line (None: it can). ``comments``: a
    ``<!--`` in the content is allowed (the whole file is checked when it is rendered)."""
    try:
        text = fmt.render_entry(entry, comments=comments)
        back = fmt.parse_entry(text, entry.kind, dialect=dialect)
    except (InvalidInput, ValueError) as exc:
        return str(exc)
    if back.content != entry.content:
        return "the content would not read back"
    return line_size_problem(text)


def line_size_problem(text: str, where: str = "") -> str | None:
    """Why a line hb would write is too long for mistermorph's reader (None: it is not);
    ``where``: the file, for the message (`` in TODO.DONE.md``).

    Counted with a CR, so the line fits whichever ending its file has: hb never writes a line
    the runtime's bufio.Scanner stops at (FORMATS.md), whichever file the entry ends up in."""
    if not fmt.over_scanner_limit(text, "\r\n"):
        return None
    return (
        f"its line{where} would be {len(text.encode('utf-8', 'surrogatepass')):,} bytes: mistermorph's "
        "reader stops at a line of 64 KiB and loses every line after it"
    )


def full_sync(
    family: Family,
    given: dict[str, tuple[Path, str | None]],
    stored: dict[str, Stored],
    reports: dict[str, SyncReport],
    dialect: str,
    ledger_same: bool,
    unchanged: Callable[[str], bool],
) -> dict[str, tuple[SyncReport, str | None]]:
    rows = family.load()
    files: dict[str, ParsedFile] = {}
    for k in family.kinds:
        path, text = given[k]
        if ledger_same and unchanged(k):
            files[k] = known_file(k, path, text, rows, stored[k])
        else:
            files[k] = read_file(k, path, text, dialect)
    items = [it for k in family.kinds for it in files[k].items]
    match_entries(family, items, rows, importing=False)
    _drop_removed(files, stored, reports)
    label = {id(it): f"{files[it.kind].path}:{it.number}" for it in items}

    changes: list[tuple[Row, Item, bool]] = []
    incoming: dict[str, list[Row]] = {k: [] for k in family.kinds}
    final: dict[int, EntryRecord] = {}  # row pk -> its version after the sync
    for it in items:
        row = it.row
        if row is None:
            continue
        base, ctx = row.synced_hash, row.record
        file_rec = it.record
        if file_rec is None or file_rec.digest == ctx.digest:
            final[row.pk] = ctx
            if it.entry is not None and family.dialect == "strict" and entry_id(it.entry):
                it.fate = "rewrite"  # leaving the extended dialect: drop the [ID] key
            continue
        file_changed = file_rec.digest != base
        ledger_changed = ctx.digest != base
        if file_changed and not ledger_changed:
            changes.append((row, it, False))
            final[row.pk] = file_rec
            getattr(reports[it.kind], family.report_kind(ctx.place, it.kind)).append(row.id)
        elif ledger_changed and not file_changed:
            final[row.pk] = ctx
            target = ctx.place
            if target == it.kind:
                it.fate = "rewrite"
                reports[it.kind].updated.append(row.id)
            else:
                it.fate = "drop"
                if target is None:
                    reports[it.kind].removed.append(row.id)
                else:
                    incoming[target].append(row)
                    getattr(reports[target], family.report_kind(it.kind, target)).append(row.id)
        else:
            merged = family.merge(row, it.entry) if it.entry is not None else None
            if merged is not None:
                it.entry, it.record, it.fate = merged, family.entry_record(it.kind, merged), "merged"
                file_rec = it.record
            changes.append((row, it, True))
            final[row.pk] = file_rec
            reports[it.kind].conflicts.append(row.id)

    matched = {it.row.pk for it in items if it.row is not None}
    removed: list[Row] = []
    removed_conflicts: set[int] = set()
    for row in rows:
        if row.pk in matched or not (row.base_place or row.record.place):
            continue
        place = row.base_place
        if place is not None and files[place].text is not None:
            removed.append(row)
            reports[place].removed.append(row.id)
            if row.record.digest != row.synced_hash:
                removed_conflicts.add(row.pk)
                reports[place].conflicts.append(row.id)
        elif row.record.place is not None:
            incoming[row.record.place].append(row)
            final[row.pk] = row.record
            getattr(reports[row.record.place], family.report_kind(None, row.record.place)).append(row.id)
        else:
            final[row.pk] = row.record  # in no file, now or before

    texts, slots, retry = _render_all(family, files, incoming, final, dialect, reports, items, label)

    family.apply(changes, label)
    family.remove(removed, removed_conflicts)
    finish_sync(family, slots, rows, final, label, reports)
    mark_after = family.mark()
    for k in family.kinds:
        f = files[k]
        out = texts[k] if texts[k] is not None else f.text
        warnings = f.warnings
        if texts[k] is not None:
            assert f.written is not None  # the text's own reading: no need to read it again
            warnings = doc_warnings(f.written)
        reports[k].preserved = labels_of(f.path, warnings) + reports[k].preserved
        store_sync(
            family.db,
            k,
            f.path,
            out,
            family.now,
            mark=mark_after,
            dialect=family.dialect,
            warnings=warnings,
            base=None if ledger_same and unchanged(k) else base_path(family.ctx.workspace, k),
            retry=retry,
        )
    return {k: (reports[k], texts[k]) for k in family.kinds}


def _drop_removed(
    files: dict[str, ParsedFile], stored: dict[str, Stored], reports: dict[str, SyncReport]
) -> None:
    """An entry the ledger removed since the last sync (``hb recur remove``) leaves the file: a
    line that matches no row and still reads as that sync left the entry is dropped, not
    taken for a new one (which would bring the entry back). One line per removal."""
    for kind, f in files.items():
        gone = list(stored[kind].removed)
        for it in f.items if gone else ():
            if it.row is not None or it.record is None:
                continue
            hit = next((g for g in gone if g[1] == it.record.digest), None)
            if hit is not None:
                gone.remove(hit)
                it.fate = "drop"
                reports[kind].removed.append(hit[0])


def _render_all(
    family: Family,
    files: dict[str, ParsedFile],
    incoming: dict[str, list[Row]],
    final: dict[int, EntryRecord],
    dialect: str,
    reports: dict[str, SyncReport],
    items: Sequence[Item],
    label: dict[int, str],
) -> tuple[dict[str, str | None], dict[str, list[Slot]], bool]:
    """Every file of the family after the sync, and whether a ledger change was left unwritten
    (the next sync retries it). An entry that cannot be written into the file it moves to
    keeps its line where it is (the files render again with that line kept): hb never drops a
    line whose entry it cannot write elsewhere."""
    moving = {row.pk for rows in incoming.values() for row in rows}
    leaving = {
        it.row.pk: it for it in items if it.fate == "drop" and it.row is not None and it.row.pk in moving
    }
    # what rendering changes, to start over from when a line has to stay
    fates = {id(it): it.fate for it in items}
    final_before = dict(final)
    reports_before = {k: r.as_dict() for k, r in reports.items()}
    held: dict[int, tuple[str, str]] = {}  # row pk -> (the file it could not go to, why)
    while True:
        texts: dict[str, str | None] = {}
        slots: dict[str, list[Slot]] = {}
        refused: dict[int, str] = {}
        for k in family.kinds:
            texts[k], slots[k] = render_file(
                family, files[k], incoming[k], final, dialect, reports[k], leaving, refused
            )
        stay = {pk: problem for pk, problem in refused.items() if pk in leaving and pk not in held}
        if not stay:
            return texts, slots, bool(refused or held)
        for pk, problem in stay.items():
            target = next(k for k, rows in incoming.items() if any(r.pk == pk for r in rows))
            held[pk] = (target, problem)
        for it in items:
            it.fate = fates[id(it)]
        final.clear()
        final.update(final_before)
        for k, values in reports_before.items():
            for name, value in values.items():
                setattr(reports[k], name, list(value) if isinstance(value, list) else value)
        for pk, (target, problem) in held.items():
            it = leaving[pk]
            assert it.row is not None and it.record is not None
            it.fate = "keep"
            final[pk] = it.record  # the line stays as it is: the next sync tries again
            incoming[target] = [r for r in incoming[target] if r.pk != pk]
            _unreport(reports[target], it.row.id)
            reports[target].preserved.append(
                f"{files[target].path}: {it.row.id} not written: {problem}; its line stays at {label[id(it)]}"
            )


_HIDES = (
    "the result would not read back as written (an HTML comment marker would change which lines are hidden)"
)


def _marked(text: str) -> bool:
    """Whether the text holds an HTML comment marker."""
    return "<!--" in text or "-->" in text


def render_file(
    family: Family,
    f: ParsedFile,
    incoming: list[Row],
    final: dict[int, EntryRecord],
    dialect: str,
    report: SyncReport,
    leaving: dict[int, Item] | None = None,
    refused: dict[int, str] | None = None,
) -> tuple[str | None, list[Slot]]:
    """The file's entries after the sync, and its new text (None: leave the file as it is).

    A content keeps a ``<!--`` only where it already stood in the files (on the line itself,
    or, by row pk in ``leaving``, on the line of another file a row arriving here leaves),
    and only when the file reads back exactly as written. A line that cannot be rewritten
    stays as it is, a row that cannot arrive is not written; both go to ``refused`` (pk ->
    why). Raises CommentMarkerError, naming the line, when a line that goes or changes
    without a marker in the change itself would move an HTML comment.
    """
    kind = f.kind
    f.written = None
    leaving = leaving or {}
    refused = {} if refused is None else refused

    def item_slot(it: Item) -> Slot:
        record = final[it.row.pk] if it.row is not None else it.record
        assert record is not None
        return Slot(kind, it, it.row, record, it.raw, it.number)

    def keep_line(it: Item, problem: str) -> None:
        assert it.row is not None and it.record is not None
        it.fate = "keep"  # the ledger's version cannot be written: keep the line, say why
        report.preserved.append(f"{f.path}:{it.number}: {it.row.id} not rewritten: {problem}")
        _unreport(report, it.row.id)
        final[it.row.pk] = it.record  # the line stays: the next sync tries again
        refused[it.row.pk] = problem

    def refuse(row: Row, problem: str) -> None:
        report.preserved.append(f"{f.path}: {row.id} not written: {problem}")
        _unreport(report, row.id)
        final.pop(row.pk, None)
        refused[row.pk] = problem

    writes: dict[int, Entry] = {}
    risky: list[Item | tuple[Row, Entry]] = []  # changes with a comment marker in them
    for it in f.items:
        if it.fate not in ("rewrite", "merged"):
            continue
        assert it.row is not None and it.entry is not None
        entry = it.entry if it.fate == "merged" else family.entry(it.row, kind)
        problem = checked_entry(entry, family.dialect, comments=entry.content == it.entry.content)
        if problem is not None:
            keep_line(it, problem)
            continue
        writes[id(it)] = entry
        if _marked(it.raw) or _marked(entry.content):
            risky.append(it)
    arriving: list[tuple[Row, Entry]] = []
    for row in family.incoming_order(kind, incoming):
        entry = family.entry(row, kind)
        left = leaving.get(row.pk)
        moved = left is not None and left.entry is not None and left.entry.content == entry.content
        problem = checked_entry(entry, family.dialect, comments=moved)
        if problem is not None:
            refuse(row, problem)
            continue
        arriving.append((row, entry))
        if _marked(entry.content):
            risky.append(arriving[-1])
    kept = [it for it in f.items if it.fate != "drop"]
    if not writes and not arriving and len(kept) == len(f.items):
        return None, [item_slot(it) for it in f.items]

    order: list[Item | tuple[Row, Entry]] = []
    arrive = family.arrivals(kind)
    if arrive == "top":
        order = [*arriving, *kept]
    elif arrive == "end":
        order = [*kept, *arriving]
    else:
        pending = list(arriving)
        # a row placed below every one the file's lines are known by goes on top of the list,
        # above lines new in the file too (mistermorph puts a new entry and a materialised one
        # there); with none known yet (a file never synced), below position 0
        known = [it.row.position for it in kept if it.row is not None]
        lowest = min(known) if known else 0
        while pending and pending[0][0].position < lowest:
            order.append(pending.pop(0))
        for it in kept:
            position = it.row.position if it.row is not None else None
            while pending and position is not None and pending[0][0].position < position:
                order.append(pending.pop(0))
            order.append(it)
        order.extend(pending)
    if f.text is not None and f.doc is None:
        f.doc = parse_doc(kind, f.path, f.text, dialect)
    by_line = {ln.number: ln.entry for ln in f.doc.lines if ln.entry is not None} if f.doc else {}

    def document(skip: set[int]) -> fmt.Document | None:
        """The file with every change but those in ``skip`` (ids); None: no file, no entry."""
        entries: list[Entry] = []
        for slot in order:
            if isinstance(slot, Item):
                if id(slot) in writes and id(slot) not in skip:
                    entries.append(Entry(**{**writes[id(slot)].__dict__, "line": slot.number}))
                else:
                    # a file is only rendered after it was read (never one known unchanged)
                    assert slot.number in by_line, f"{f.path}: line {slot.number} was not read"
                    entries.append(by_line[slot.number])
            elif id(slot) not in skip:
                entries.append(slot[1])
        if f.doc is not None:
            return fmt.with_entries(f.doc, entries, now=family.now)
        if entries:
            return fmt.new_document(KIND_OF[kind], entries, now=family.now, dialect=dialect)
        return None

    skip: set[int] = set()
    try:
        try:
            doc = document(skip)
        except fmt.CommentMarkerError:
            if not risky:
                raise
            skip = {id(change) for change in risky}
            doc = document(skip)  # still refused: a line that goes or changes is in the way
            for change in risky:  # take back, in file order, each change the file can take
                try:
                    doc = document(skip - {id(change)})
                except fmt.CommentMarkerError:
                    continue
                skip.discard(id(change))
    except fmt.CommentMarkerError as exc:
        raise exc.at_path(str(f.path)) from None
    for change in risky:
        if id(change) not in skip:
            continue
        if isinstance(change, Item):
            del writes[id(change)]
            keep_line(change, _HIDES)
        else:
            order.remove(change)
            refuse(change[0], _HIDES)
    if doc is None:
        return None, []
    if doc is f.doc:  # every change was refused
        return None, [item_slot(it) for it in f.items]
    lines = [ln for ln in doc.lines if ln.entry is not None]
    if len(lines) != len(order):
        raise InvalidInput(f"{f.path}: the entries did not come out as written")
    out: list[Slot] = []
    for slot, line in zip(order, lines, strict=True):
        made = item_slot(slot) if isinstance(slot, Item) else Slot(kind, None, slot[0], final[slot[0].pk])
        made.raw, made.number = line.text, line.number
        out.append(made)
    f.written = doc  # with_entries and new_document read back the text they make
    return fmt.render(doc), out


def _unreport(report: SyncReport, row_id: str) -> None:
    for name in ("added", "updated", "completed", "removed"):
        values = getattr(report, name)
        if row_id in values:
            values.remove(row_id)


def _positions(slots: Sequence[Slot]) -> list[int]:
    """File order as strictly increasing positions, changing as few rows as possible: the
    longest run of rows whose positions are already in order keep theirs (entries that
    arrived on top of a list go below the first of them), the others fit in after."""
    current = [slot.row.position if slot.row is not None else None for slot in slots]
    keep = _in_order(current)
    first = min(keep, default=None)
    out: list[int] = []
    prev: int | None = None
    for index, position in enumerate(current):
        if index in keep:
            assert position is not None
            value = position if prev is None or position > prev else prev + 1  # no room left: it moves
        elif prev is not None:
            value = prev + 1
        elif first is not None:
            value = cast(int, current[first]) - (first - index)
        else:
            value = index
        out.append(value)
        prev = value
    return out


def _in_order(values: Sequence[int | None]) -> set[int]:
    """The indices of a longest strictly increasing run of the known values (not contiguous)."""
    known = [(i, v) for i, v in enumerate(values) if v is not None]
    if all(a[1] < b[1] for a, b in itertools.pairwise(known)):
        return {i for i, _ in known}  # the usual case: already in order

    tails: list[int] = []  # the smallest last value of a run of each length
    tail_index: list[int] = []
    parent: dict[int, int | None] = {}
    for i, v in known:
        at = bisect.bisect_left(tails, v)
        parent[i] = tail_index[at - 1] if at else None
        if at == len(tails):
            tails.append(v)
            tail_index.append(i)
        else:
            tails[at] = v
            tail_index[at] = i
    out: set[int] = set()
    cursor: int | None = tail_index[-1] if tail_index else None
    while cursor is not None:
        out.add(cursor)
        cursor = parent[cursor]
    return out


def finish_sync(
    family: Family,
    slots: dict[str, list[Slot]],
    rows: Sequence[Row],
    final: dict[int, EntryRecord],
    label: dict[int, str],
    reports: dict[str, SyncReport],
) -> None:
    """Record what each row looks like in the files now; add the rows for new entries."""
    every = [s for k in slots for s in slots[k]]
    plain = [family.keys(s.record)[0] for s in every]
    counts: dict[str, int] = {}
    for key in plain:
        counts[key] = counts.get(key, 0) + 1
    positions: dict[int, int] = {}
    for k in slots:
        for slot, position in zip(slots[k], _positions(slots[k]), strict=True):
            positions[id(slot)] = position
    placed: dict[int, dict[str, Any]] = {}
    new_items: list[Item] = []
    for slot, key in zip(every, plain, strict=True):
        full = family.dup_key(key, slot.record) if counts[key] > 1 else key
        where = {"file": slot.kind, "line": slot.raw}
        if slot.row is None:
            assert slot.item is not None
            slot.item.key = full
            slot.item.final_extra = where
            slot.item.final_hash = slot.record.digest
            positions[id(slot.item)] = positions[id(slot)]
            new_items.append(slot.item)
        else:
            placed[slot.row.pk] = {
                "synced_hash": slot.record.digest,
                "extra": {**slot.row.extra, **where},
                "external_key": full,
                "position": positions[id(slot)],
            }
    updates: list[tuple[Row, dict[str, Any]]] = []
    for row in rows:
        values = placed.get(row.pk)
        if values is None:
            record = final.get(row.pk)
            if record is None or record.place is not None:
                continue  # removed, or not written: it stays as it was
            values = {
                "synced_hash": record.digest,
                "extra": {k: v for k, v in row.extra.items() if k not in ("file", "line")},
                "external_key": row.key,
                "position": row.position,
            }
        if (
            values["synced_hash"] != row.synced_hash
            or values["extra"] != row.extra
            or values["external_key"] != row.key
            or values["position"] != row.position
        ):
            updates.append((row, values))
    family.bookkeeping(updates)
    for it, new_id in zip(new_items, family.insert(new_items, positions, label), strict=True):
        reports[it.kind].added.append(new_id)
