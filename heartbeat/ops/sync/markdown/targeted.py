"""A few lines changed in TODO.md / TODO.DONE.md and nothing in the ledger: only those lines.

Part of :mod:`heartbeat.ops.sync.markdown` (its docstring tells how the sync works).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from heartbeat.db.plain import in_list
from heartbeat.errors import NUL
from heartbeat.formats import todo as fmt
from heartbeat.formats.todo import Entry
from heartbeat.ops.sync.markdown.base import (
    DUP_MARK,
    KIND_OF,
    Stored,
    base_path,
    chunked,
    entry_body,
    store_sync,
)
from heartbeat.ops.sync.markdown.family import Item, Row
from heartbeat.ops.sync.markdown.merge import labels_of, match_entries
from heartbeat.ops.sync.markdown.reading import Diff, classify_line, refuse_nul
from heartbeat.ops.sync.markdown.tasks import TaskFamily
from heartbeat.ops.sync.report import SyncReport

if TYPE_CHECKING:
    pass

# --- a few lines changed in the files, nothing in the ledger --------------------------------


def targeted(
    family: TaskFamily,
    given: dict[str, tuple[Path, str | None]],
    stored: dict[str, Stored],
    diffs: dict[str, Diff],
    reports: dict[str, SyncReport],
    dialect: str,
) -> dict[str, tuple[SyncReport, str | None]] | None:
    """Sync only the changed regions: their old lines name the rows that left, their new lines
    are the entries that arrived. None when the ledger does not look as the last sync left it
    (the caller then does a full sync)."""
    gone: list[Row] = []
    items: list[Item] = []
    warnings: dict[str, list[tuple[int, str, str]]] = {}
    for kind, d in diffs.items():
        rows = _rows_of_lines(family, kind, d, dialect)
        if rows is None:
            return None
        gone.extend(rows)
        todo_kind = KIND_OF[kind]
        found: list[tuple[int, str, str]] = []
        for index in range(d.p, d.new_end):
            raw = entry_body(d.new[index])
            got = classify_line(todo_kind, raw, dialect)
            if isinstance(got, Entry):
                if NUL in raw:
                    refuse_nul(given[kind][0], index + 1, got)
                items.append(Item(kind, index + 1, raw, got))
                note = fmt.entry_note(got)
                if note is not None:
                    found.append((index + 1, raw, note))
            elif got is not None:
                found.append((index + 1, raw, got))
        delta = d.new_end - d.old_end
        before = [w for w in stored[kind].warnings if w[0] <= d.p]
        after = [(n + delta, t, r) for n, t, r in stored[kind].warnings if n > d.old_end]
        warnings[kind] = before + found + after
    if any(row.record.digest != row.synced_hash for row in gone):
        return None  # the ledger moved after all
    match_entries(family, items, gone, importing=False)
    path_of = {k: given[k][0] for k in family.kinds}
    label = {id(it): f"{path_of[it.kind]}:{it.number}" for it in items}
    changes: list[tuple[Row, Item, bool]] = []
    keep: list[tuple[Row, Item]] = []
    for it in items:
        row = it.row
        if row is None:
            continue
        assert it.record is not None
        if it.record.digest != row.synced_hash:
            changes.append((row, it, False))
            getattr(reports[it.kind], family.report_kind(row.base_place, it.kind)).append(row.id)
        keep.append((row, it))
    matched = {it.row.pk for it in items if it.row is not None}
    removed = [row for row in gone if row.pk not in matched]
    for row in removed:
        assert row.base_place is not None
        reports[row.base_place].removed.append(row.id)

    family.apply(changes, label)
    family.remove(removed, set())
    _region_keys(family, items, {row.pk for row in gone})
    positions = _region_positions(family, items, diffs, dialect)
    updates = []
    for row, it in keep:
        assert it.record is not None
        values = {
            "synced_hash": it.record.digest,
            "extra": {**row.extra, "file": it.kind, "line": it.raw},
            "external_key": it.key,
            "position": positions[id(it)],
        }
        if (values["synced_hash"], values["extra"], values["external_key"], values["position"]) != (
            row.synced_hash,
            row.extra,
            row.key,
            row.position,
        ):
            updates.append((row, values))
    family.bookkeeping(updates)
    new_items = [it for it in items if it.row is None]
    for it in new_items:
        assert it.record is not None
        it.final_extra = {"file": it.kind, "line": it.raw}
        it.final_hash = it.record.digest
    for it, new_id in zip(new_items, family.insert(new_items, positions, label), strict=True):
        reports[it.kind].added.append(new_id)
    mark_after = family.mark()
    for k in family.kinds:
        path, text = given[k]
        w = warnings.get(k, stored[k].warnings)
        reports[k].preserved = labels_of(path, w)
        store_sync(
            family.db,
            k,
            path,
            text,
            family.now,
            mark=mark_after,
            dialect=family.dialect,
            warnings=w,
            base=base_path(family.ctx.workspace, k) if k in diffs else None,
        )
    return {k: (reports[k], None) for k in family.kinds}


def _rows_of_lines(family: TaskFamily, kind: str, d: Diff, dialect: str) -> list[Row] | None:
    """The rows whose lines were in the changed region of the old text (None: not found,
    the ledger does not look as the last sync left it)."""
    todo_kind = KIND_OF[kind]
    wanted: list[tuple[int, str]] = []
    keys: set[str] = set()
    for index in range(d.p, d.old_end):
        raw = entry_body(d.old[index])
        got = classify_line(todo_kind, raw, dialect)
        if isinstance(got, Entry):
            record = family.entry_record(kind, got)
            plain = family.keys(record)[0]
            keys.update((plain, family.dup_key(plain, record)))
            wanted.append((index, raw))
    if not wanted:
        return []
    rows: list[Row] = []
    for chunk in chunked(sorted(keys)):
        frag, params = in_list("k", chunk)
        rows.extend(family.load(f"external_key IN {frag}", params))
    by_line: dict[str, list[Row]] = {}
    for row in sorted(rows, key=lambda r: (r.position, r.pk)):
        if row.base_place == kind and row.base_line is not None:
            by_line.setdefault(row.base_line, []).append(row)
    out: list[Row] = []
    for index, raw in wanted:
        candidates = by_line.get(raw, [])
        if len(candidates) == 1:
            out.append(candidates[0])
            continue
        nth = sum(1 for line in d.old[:index] if entry_body(line) == raw)  # identical lines: in file order
        if nth >= len(candidates):
            return None
        out.append(candidates[nth])
    if len({r.pk for r in out}) != len(out):
        return None
    return out


def _region_keys(family: TaskFamily, items: Sequence[Item], gone: set[int]) -> None:
    """An arriving entry whose Created + ChatID another entry already has gets the long key."""
    plains = {it.key.split(DUP_MARK, 1)[0] for it in items}
    if not plains:
        return
    taken: set[str] = set()
    for chunk in chunked(sorted(plains)):
        frag, params = in_list("k", chunk)
        ranges = []
        for i, k in enumerate(chunk):
            ranges.append(f" OR external_key BETWEEN :lo{i} AND :hi{i}")
            params[f"lo{i}"], params[f"hi{i}"] = k + DUP_MARK, k + DUP_MARK + "g"
        for row in family.load(f"external_key IN {frag}{''.join(ranges)}", params):
            if row.pk not in gone and row.key:
                taken.add(row.key.split(DUP_MARK, 1)[0])
    for it in items:
        plain = it.key.split(DUP_MARK, 1)[0]
        if plain in taken and it.key == plain:
            assert it.record is not None
            it.key = family.dup_key(plain, it.record)


def _region_positions(
    family: TaskFamily, items: Sequence[Item], diffs: dict[str, Diff], dialect: str
) -> dict[int, int]:
    """Positions for the entries of the changed regions: a row that stayed in its file keeps
    its own; an arriving one takes its upper neighbour's (ties are listed by creation)."""
    out: dict[int, int] = {}
    for kind, d in diffs.items():
        prev = _neighbour(family, kind, d.new, range(d.p - 1, -1, -1), dialect)
        after = _neighbour(family, kind, d.new, range(d.new_end, len(d.new)), dialect)
        for it in (x for x in items if x.kind == kind):
            if it.row is not None and it.row.base_place == kind:
                value = it.row.position
            elif prev is not None:
                value = prev
            else:
                value = after - 1 if after is not None else 0
            out[id(it)] = value
            prev = value
    return out


def _neighbour(family: TaskFamily, kind: str, lines: Sequence[str], order: range, dialect: str) -> int | None:
    """The position of the nearest unchanged entry line in ``order`` (a few lines looked at)."""
    todo_kind = KIND_OF[kind]
    for looked, index in enumerate(order):
        if looked > 50:
            return None
        raw = entry_body(lines[index])
        got = classify_line(todo_kind, raw, dialect, first=index == 0)
        if not isinstance(got, Entry):
            continue
        record = family.entry_record(kind, got)
        plain = family.keys(record)[0]
        frag, params = in_list("k", [plain, family.dup_key(plain, record)])
        rows = family.load(f"external_key IN {frag}", params)
        for row in rows:
            if row.base_place == kind and row.base_line == raw:
                return row.position
        return None
    return None
