"""hb sync: every kind of workspace file against the ledger, in one transaction.

The engine reads every selected file first (a file that cannot be read at all
stops the sync before anything changes), runs each kind's syncer (see
:mod:`heartbeat.ops.sync.registry`) inside ONE write transaction, makes sure no
file changed underneath while it worked (else it starts over), commits, and
only then writes the files whose text changed, atomically. ``dry_run`` runs
the same steps, rolls the transaction back and writes nothing.

Kinds whose module defines ``SYNC_GROUPS`` are synced as a group (TODO.md and
TODO.DONE.md: completing an entry moves it from one to the other, so neither
can be synced alone); ``--only todo`` therefore syncs TODO.DONE.md too.

Every step runs on the driver connection (:class:`heartbeat.db.store.Db`, named
statements): hb sync never loads SQLAlchemy.

The seal. A full sync on SQLite also records, in the same transaction, the
hash of every file as it leaves it and a fingerprint of every table a file
is rendered from, in parts, each part with the kinds whose file shows it
(:data:`_PARTS`). The next ``hb sync`` first compares both, with one SQL
statement: when nothing moved on either side it reports exactly that and
touches nothing. Otherwise just the kinds whose file changed, or whose part of
the ledger did, are synced (the same checks, the seal renewed inside the
transaction): after a heartbeat's round, which records a check run, only
heartbeat-state.json is read and written. When those syncs change a part
another kind's file shows, the sync starts over with every kind. ``--only``,
``--dry-run`` and PostgreSQL take the full path.

Idle kinds. A full sync leaves out a kind whose file does not exist while the
ledger holds nothing that file shows (:func:`heartbeat.ops.sync.registry.holds_sql`):
its syncer would change and write nothing, so its module is not even loaded.
Both conditions are checked again inside the transaction; if either
no longer holds, the sync starts over with every kind.

The syncers' modules load on demand.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heartbeat.db.plain import Conn
from heartbeat.errors import FileFormatError, InvalidInput, one_line
from heartbeat.ops.sync import bookmarks, writeback
from heartbeat.ops.sync.files import (
    default_path,
    digest,
    file_lock,
    lock_timeout,
    read_optional,
    read_text,
    same_place,
)
from heartbeat.ops.sync.registry import (
    FACT_RUNS,
    KINDS,
    MODULES,
    RECORD_RUNS,
    STATE_SETTINGS,
    baseline_text,
    holds_sql,
    hook,
    validator,
)
from heartbeat.ops.sync.report import SyncReport

if TYPE_CHECKING:
    from heartbeat.context import Context
    from heartbeat.db.store import Db

Results = dict[str, tuple[SyncReport, str | None]]
ATTEMPTS = 3  # rounds of merging a file another program keeps changing while hb writes it
SEAL = "sync.seal"  # the sync_state row of the seal

# What the files are rendered from, as one consistent snapshot (a single statement), in parts:
# each part with the kinds whose file shows it. The same text runs on the driver connection
# (check) and in the sync's transaction (write), so its values compare as they are; an order
# SQLite happens to change only costs a sync of those kinds, never a skipped one.
_QUEUE = "scope <> '' OR source <> 'todo'"  # tasks.json's tasks; the rest are TODO entries
# the queue's files: a sync of one of them syncs all three (the other two are small), so that what
# one changes in the parts they share (a completion's task, outcome and record) leaves none behind
_TASK_FILES = ("tasks-json", "errors-json", "last-run")
_ALL = KINDS
_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # versions only grow: these sums see every task change. A task is removed only by the sync of
    # the file it was taken out of, whose text then differs from the seal's: so a new task that
    # takes a removed one's pk (and version) again cannot hide the removal from that file
    (
        "(SELECT count(*) || ':' || coalesce(max(pk), 0) || ':' || coalesce(sum(version), 0) || ':' || "
        f"coalesce(sum(pk * version), 0) FROM tasks WHERE {_QUEUE})",
        _TASK_FILES,
    ),
    (
        "(SELECT count(*) || ':' || coalesce(max(pk), 0) || ':' || coalesce(sum(version), 0) || ':' || "
        f"coalesce(sum(pk * version), 0) FROM tasks WHERE NOT ({_QUEUE}))",
        ("todo", "done"),
    ),
    *(
        (
            "(SELECT group_concat(pk || '|' || id || '|' || source || '|' || title || '|' || rule || '|' || "
            "coalesce(tz, '') || '|' || coalesce(next_local, '') || '|' || coalesce(chat_id, '') || '|' || "
            "position || '|' || enabled || '|' || run_count || '|' || updated_at, char(30)) "
            f"FROM (SELECT * FROM recurrences WHERE {where} ORDER BY pk))",
            kinds,
        )
        for where, kinds in (("source = 'proactive'", ("proactive",)), ("source <> 'proactive'", ("recur",)))
    ),
    (
        "(SELECT count(*) || ':' || coalesce(max(pk), 0) FROM outcomes WHERE recurrence_pk IS NULL)",
        _TASK_FILES,
    ),
    (
        "(SELECT count(*) || ':' || coalesce(max(pk), 0) FROM outcomes WHERE recurrence_pk IS NOT NULL)",
        ("proactive",),
    ),
    (
        "(SELECT count(*) || ':' || coalesce(max(pk), 0) || ':' || coalesce(sum(resolved), 0) FROM errors)",
        _TASK_FILES,
    ),
    # the runs a file is rendered from: last-run.json's records, heartbeat-state.json's times. The
    # heartbeat's and a poke's own run (its guard, released after the tick's export) is in no file:
    # counting it would break the seal the export just made, and the next tick would sync in full
    *(
        (
            "(SELECT count(*) || ':' || coalesce(max(pk), 0) || ':' || coalesce(max(started_at), '') "
            "|| ':' || coalesce(max(finished_at), '') || ':' || count(record) || ':' || count(finished_at) "
            f"FROM runs WHERE {where})",
            kinds,
        )
        for where, kinds in ((RECORD_RUNS, ("last-run",)), (FACT_RUNS, ("state",)))
    ),
    ("(SELECT count(*) || ':' || coalesce(max(pk), 0) FROM notifications)", ("state",)),
    *(
        (
            "(SELECT group_concat(key || '=' || value, char(30)) "
            f"FROM (SELECT key, value FROM settings WHERE {where} ORDER BY key))",
            kinds,
        )
        for where, kinds in (
            (f"key IN ({STATE_SETTINGS})", ("state",)),
            (f"key NOT IN ({STATE_SETTINGS})", _ALL),
        )
    ),
)
_FINGERPRINT = tuple(sql for sql, _ in _PARTS)
_FINGERPRINT_SQL = "SELECT " + ", ".join(_FINGERPRINT)
_CHECK_SQL = f"SELECT (SELECT skeleton FROM sync_state WHERE kind = '{SEAL}'), " + ", ".join(_FINGERPRINT)


@dataclass(frozen=True)
class _Unit:
    """Kinds synced by one call of ``run(ledger, db, files, now, sealed=...)`` (``sealed``: the
    seal vouches for the ledger). An ``idle`` unit (no file, nothing in the ledger) has none."""

    kinds: tuple[str, ...]
    run: Callable[..., Results] | None
    idle: bool = False


class _Rollback(Exception):
    def __init__(self, results: tuple[Results, dict[str, str]]) -> None:
        super().__init__("dry run")
        self.results = results


def _single(kind: str, syncer: Any) -> Callable[..., Results]:
    def run(
        ctx: Context, db: Db, files: dict[str, tuple[Path, str | None]], now: datetime, *, sealed: bool
    ) -> Results:
        path, text = files[kind]
        report, out = syncer(ctx, db, path, text, now)
        return {kind: (report, out)}

    return run


class _NotIdle(Exception):
    """A kind planned as idle got a file or ledger rows before the sync's transaction."""


def _idle_kinds(ctx: Context) -> frozenset[str]:
    """The kinds with no file and nothing in the ledger (read outside any transaction)."""
    import sqlite3

    idle = set()
    for kind in KINDS:
        sql = holds_sql(kind)
        if sql is None or default_path(ctx.workspace, kind).exists():
            continue
        try:
            if ctx.raw.execute(sql).fetchone() is None:
                idle.add(kind)
        except sqlite3.Error:
            continue
    return frozenset(idle)


def _still_idle(db: Conn, kind: str, text: str | None) -> bool:
    sql = holds_sql(kind)
    return text is None and sql is not None and db.one(sql) is None


def plan(only: Iterable[str] | None, idle: frozenset[str] = frozenset()) -> tuple[list[_Unit], list[str]]:
    """The sync units for the selected kinds (default: all), and the kinds hb cannot sync yet.

    Kinds in ``idle`` get a unit that syncs nothing (their module is not loaded)."""
    selected = list(KINDS) if not only else list(dict.fromkeys(only))
    for kind in selected:
        if kind not in MODULES:
            raise InvalidInput(f"unknown file kind {kind!r} (expected one of: {', '.join(KINDS)})")
    units: list[_Unit] = []
    skipped: list[str] = []
    covered: set[str] = set()
    for kind in KINDS:
        if kind not in selected or kind in covered:
            continue
        if kind in idle:
            units.append(_Unit((kind,), None, idle=True))
            covered.add(kind)
            continue
        try:
            module = importlib.import_module(MODULES[kind])
        except ModuleNotFoundError as exc:
            if exc.name != MODULES[kind]:
                raise
            skipped.append(kind)
            continue
        group = next((g for g in getattr(module, "SYNC_GROUPS", {}) if kind in g), None)
        if group is not None:
            units.append(_Unit(tuple(group), module.SYNC_GROUPS[group]))
            covered.update(group)
        elif kind in getattr(module, "SYNCERS", {}):
            units.append(_Unit((kind,), _single(kind, module.SYNCERS[kind])))
            covered.add(kind)
        else:
            skipped.append(kind)
    return units, skipped


def run(ctx: Context, *, dry_run: bool = False, only: Iterable[str] | None = None) -> dict[str, Any]:
    """One ``hb sync``: returns ``{"dry_run", "changed", "reports": [...], "skipped": [...]}``."""
    selected = list(only) if only else None
    sealable = not dry_run and selected is None and ctx.sqlite
    prior = _check_seal(ctx) if sealable else None
    if prior is not None and _leftovers(ctx):
        prior = None  # a killed write's leftover may hold another program's edit: sync every kind
    if prior is not None and not prior.changed:
        return _result(False, [_sealed_report(prior.seal, k) for k in prior.seal["order"]], prior.skipped)
    idle = _idle_kinds(ctx) if sealable and prior is None else frozenset()
    try:
        return _run(ctx, dry_run, selected, sealable, prior, idle)
    except (_Unsealed, _NotIdle):
        return _run(ctx, dry_run, selected, sealable, None, frozenset())


def sync_edited(ctx: Context, kinds: list[str]) -> None:
    """Sync first the files of ``kinds`` that changed since hb last read or wrote them (their
    digest against ``sync_state``), so a decision taken from the ledger sees what the runtime or
    the user wrote there since (a file that does not exist is left to the next sync). Nothing is
    read but the files' digests when none changed."""
    paths = {kind: default_path(ctx.workspace, kind) for kind in kinds}
    paths = {kind: path for kind, path in paths.items() if path.is_file()}
    if not paths:
        return
    with ctx.read() as db:
        edited = [kind for kind, path in paths.items() if bookmarks.edited(db, kind, path, read_text(path))]
    if edited:
        run(ctx, only=edited)


def _run(
    ctx: Context,
    dry_run: bool,
    only: list[str] | None,
    sealable: bool,
    prior: _Seal | None,
    idle: frozenset[str],
) -> dict[str, Any]:
    units, skipped = plan(prior.changed if prior is not None else only, idle)
    paths = {k: default_path(ctx.workspace, k) for unit in units for k in unit.kinds}
    seal = (prior, prior.skipped if prior is not None else skipped) if sealable else None
    with file_lock(ctx.workspace, timeout=lock_timeout(ctx.settings.sync_lock_timeout)):
        if not dry_run:
            _remove_temps(ctx, paths)
        results, texts, writes = _transaction(ctx, units, paths, dry_run, seal)
        if dry_run:  # would be written
            for kind in writes:
                results[kind][0].written = True
        else:  # written only once it landed; else not_written says why
            _write_back(ctx, units, paths, results, texts, writes)
    ctx.forget_settings()  # a synced file may carry settings (heartbeat-state.json)
    if prior is not None:  # the kinds the seal vouched for are reported as they were
        order = prior.seal["order"]
        reports = [results[k][0] if k in results else _sealed_report(prior.seal, k) for k in order]
        return _result(dry_run, reports, prior.skipped)
    reports = [results[k][0] for unit in units for k in unit.kinds if k in results]
    return _result(dry_run, reports, skipped)


def _result(dry_run: bool, reports: Sequence[SyncReport], skipped: list[str]) -> dict[str, Any]:
    return {
        "dry_run": dry_run,
        "changed": any(r.changed for r in reports),
        "reports": [r.as_dict() for r in reports],
        "skipped": skipped,
    }


def _transaction(
    ctx: Context,
    units: list[_Unit],
    paths: dict[str, Path],
    dry_run: bool,
    seal: tuple[_Seal | None, list[str]] | None,
) -> tuple[Results, dict[str, str | None], dict[str, str]]:
    """The sync's transaction: (the reports and texts the syncers returned, the files' texts as
    read, the texts to write back)."""
    prior = seal[0] if seal is not None else None
    kinds = [k for unit in units for k in unit.kinds]
    texts = {k: read_optional(p) for k, p in paths.items()}
    now = ctx.now()
    try:
        with ctx.write() as db:
            if prior is not None and _moved(db, prior):
                raise _Unsealed  # the ledger moved since the check: sync every kind
            # (a write-back another file left: a workspace sharing this ledger; its texts are not
            # this file's, nor is clearing its guard this sync's business. One left at this file's
            # place before the workspace moved with its ledger is this file's)
            waiting = {
                k: p for k, p in writeback.pending(db, kinds).items() if same_place(db, p.path, paths[k])
            }
            _say_if_shared(ctx, db, kinds, paths)
            inputs = _inputs(ctx, db, waiting, texts, paths, now)
            results: Results = {}
            for unit in units:
                given = {k: (paths[k], inputs[k]) for k in unit.kinds}
                if unit.idle:
                    if not all(_still_idle(db, k, texts[k]) for k in unit.kinds):
                        raise _NotIdle
                    results.update({k: (SyncReport(k, str(paths[k])), None) for k in unit.kinds})
                else:
                    assert unit.run is not None
                    # ``sealed``: no part of the ledger this unit's files show moved since the seal
                    sealed = prior is not None and not set(unit.kinds) & prior.moved
                    results.update(unit.run(ctx, db, given, now, sealed=sealed))
            # a file another program changes from here on is merged in by the write-back
            # (a compare-and-swap against ``texts``), not written over
            writes = _writes(results, texts, inputs)
            if dry_run:
                raise _Rollback((results, writes))
            for k, text in writes.items():  # what the files must become, with the ledger's change
                writeback.record(db, k, paths[k], texts[k], text, now)
            # (a file this sync leaves as hb wrote it moments ago keeps its row: a stale copy of
            # it may land yet, as of a file hb's previous sync wrote beside the one this one does)
            writeback.clear(db, [k for k in waiting if k not in writes and not waiting[k].guarding(texts[k])])
            if seal is not None:
                _seal(ctx, db, units, paths, {**texts, **writes}, results, seal, now)
    except _Rollback as done:
        return done.results[0], texts, done.results[1]
    return results, texts, writes


def _say_if_shared(ctx: Context, db: Conn, kinds: Sequence[str], paths: dict[str, Path]) -> None:
    """A notice when the ledger last synced one of the files with another workspace's, still
    there: one ledger holds one set of sync records, so two workspaces on it each read the
    other's last text as their own base. (A workspace moved or copied with its ledger inside
    it is no other user: :func:`same_place`, the rule by which its files keep their base.)"""
    synced = bookmarks.paths(db)
    for kind in kinds:
        other = synced.get(kind)
        if other and not same_place(db, other, paths[kind]) and Path(other).exists():
            ctx.notices.append(
                f"{paths[kind]}: this ledger last synced {other}, another workspace's file: a ledger "
                "serves one workspace (each reads the other's changes as its own edits); give each "
                "workspace its own database"
            )
            return


def _inputs(
    ctx: Context,
    db: Conn,
    waiting: dict[str, writeback.Pending],
    texts: dict[str, str | None],
    paths: dict[str, Path],
    now: datetime,
) -> dict[str, str | None]:
    """The text each kind's syncer reads: the file's, unless the last sync's write-back did not
    land (:mod:`heartbeat.ops.sync.writeback`). Then a file that still holds what that sync read is
    read as the text it meant to write (the ledger's version is rendered again, not undone);
    one edited since was edited from the old text, so it is synced against that: the JSON
    files and PROACTIVE.md take it back as their baseline, the Markdown TODO files read the
    edit merged by lines into the text hb meant to write."""
    from heartbeat.ops.sync.textmerge import merge3, merge3_under_front_matter

    inputs = dict(texts)
    for kind, pending in waiting.items():
        state = pending.state(texts[kind], _mtime(paths[kind]))
        if state in ("landed", "done"):
            continue
        meant = baseline_text(ctx, db, kind)
        if meant is not None and digest(meant) != pending.after:
            meant = None  # the baseline moved on since: the pending write is not what it holds
        if state == "unwritten":
            if meant is not None:
                inputs[kind] = meant
            continue
        edited = texts[kind]
        before_text = pending.before_text
        # hb's write created the file: a TODO file's copy made before it was made from nothing (a
        # tasks.json's, see Pending.made_from_nothing, is synced as a file hb never read)
        if before_text is None and pending.before is None and kind not in _STRUCTURED:
            before_text = ""
        if pending.landed is not None and (
            meant is None
            or (before_text is None and not pending.made_from_nothing(meant, edited or ""))
            or (before_text is not None and merge3(before_text, meant, edited or "") == edited)
            or (
                kind not in _STRUCTURED
                and _from_hbs_text(kind, edited or "", meant, (before_text or "", *pending.older), texts)
            )
        ):
            # changed right after hb's write, but from hb's text: it holds hb's changes, or (a TODO
            # file mistermorph rewrote whole, dropping the lines it cannot read) more of them than
            # of the text before. A JSON file's lines repeat too much to tell by lines.
            continue
        if kind in _STRUCTURED:
            source = pending.source_of(edited)
            writeback.rebase(db, kind, paths[kind], source, now)
            rebase_rows = hook(kind, "REBASERS")
            if rebase_rows is not None and source is not None:
                rebase_rows(db, source)  # a kind whose rows keep the file's version themselves
        elif meant is not None and before_text is not None and edited is not None:
            base = _copy_base(kind, edited, (before_text, *pending.older), texts)
            merged = merge3_under_front_matter(base, meant, edited)
            recount = hook(kind, "RECOUNTERS")  # the copy's count is not the merged text's
            inputs[kind] = merged if recount is None else recount(ctx, merged, now)
    return inputs


def _from_hbs_text(
    kind: str, edited: str, ours: str, bases: Sequence[str], texts: dict[str, str | None]
) -> bool:
    """Whether ``edited``, a TODO file changed moments after hb wrote ``ours`` over each of
    ``bases`` (the texts read before hb's writes in quick succession), was made from ``ours``
    rather than from any of them (:func:`~heartbeat.ops.sync.textmerge.closer_to_ours`). Told by
    the entries (``ENTRY_KEYS``), not by lines such as the heading, which a copy of an empty file
    holds too: an entry hb added that is, as it was, in the file the runtime moves entries to
    (``MOVED_TO``: mistermorph's Complete) was seen by the editor; so was a rule hb added that is
    there with only its Next changed (mistermorph's materialisation)."""
    from heartbeat.ops.sync.textmerge import closer_to_ours

    entries = hook(kind, "ENTRY_KEYS")
    mine, now = entries(ours), entries(edited)
    sibling = hook(kind, "MOVED_TO")
    moved_text = texts.get(sibling) if sibling is not None else None
    moved_entries = hook(sibling, "ENTRY_KEYS")(moved_text) if moved_text is not None else None
    for base in bases:
        old = entries(base)
        moved = None
        if moved_entries is not None:  # hb's new entries, as they were, in the done file now
            new = _whole(mine) - _whole(old)
            moved = Counter(whole for whole, _ in moved_entries if new[whole])
        if closer_to_ours(_whole(now), _whole(mine), _whole(old), moved) or _edits_a_moved_rule(
            kind, edited, ours, base
        ):
            continue
        ours_loose, base_loose = _loose(mine), _loose(old)
        if not ours_loose or ours_loose == base_loose:  # hb added no entry that can be found so
            return False
        if not closer_to_ours(_loose(now), ours_loose, base_loose):
            return False
    return True


def _edits_a_moved_rule(kind: str, edited: str, ours: str, base: str) -> bool:
    """Whether ``edited`` changed the text of a rule whose Next hb's write (``ours``, over
    ``base``) moved on: it lacks the rule's line as either text had it and holds a rule of
    another text on the schedule hb gave it (its new Next, its Repeat, TZ and ChatID). A copy
    made from ``base`` holds the rule's old line, or hb's new one where the runtime materialised
    it too; a rule of another text on hb's new Next was written by someone who read ``ours``."""
    schedules = hook(kind, "SCHEDULES")
    if schedules is None:
        return False
    mine, now = schedules(ours), schedules(edited)
    was = {loose: whole for whole, loose, _ in schedules(base)}
    lines = {whole for whole, _, _ in now}
    texts = {loose for _, loose, _ in mine}
    for whole, loose, schedule in mine:
        before = was.get(loose)
        if before is None or before == whole or before in lines or whole in lines:
            continue  # a rule hb added or left as it was, or one the file holds as a text had it
        if any(at == schedule and other not in texts for _, other, at in now):
            return True
    return False


def _copy_base(kind: str, edited: str, kept: Sequence[str], texts: dict[str, str | None]) -> str:
    """Which of ``kept`` (the texts read before hb's writes in quick succession, newest first) a
    stale copy ``edited`` of a TODO file was made from: the one whose entries differ least from
    the copy's (by the runtime's own change: an entry added; one it moved to the done file, where
    it is now, and a rule's Next moved on count as no difference), the newest on a tie. Merged
    against a newer text than its own, what hb's earlier writes changed reads as undone by the
    copy: an entry hb added taken out, one it completed open again."""
    if len(kept) < 2:
        return kept[0]
    entries = hook(kind, "ENTRY_KEYS")

    def keys(text: str) -> Counter[str]:  # a rule without its Next: a materialisation moves it on
        return Counter(loose if loose is not None else whole for whole, loose in entries(text))

    now = keys(edited)
    sibling = hook(kind, "MOVED_TO")
    moved_text = texts.get(sibling) if sibling is not None else None
    moved = _whole(hook(sibling, "ENTRY_KEYS")(moved_text)) if moved_text is not None else Counter()

    def apart(text: str) -> int:
        was = keys(text)
        return ((was - now - moved) + (now - was)).total()

    return min(kept, key=apart)


def _whole(entries: list[tuple[str, str | None]]) -> Counter[str]:
    return Counter(whole for whole, _ in entries)


def _loose(entries: list[tuple[str, str | None]]) -> Counter[str]:
    return Counter(loose for _, loose in entries if loose is not None)


def _writes(results: Results, texts: dict[str, str | None], inputs: dict[str, str | None]) -> dict[str, str]:
    """The files to write: what a syncer returned, or the text it read in place of the file's
    (a write-back still to land, a merge), when that is not what the file holds."""
    writes: dict[str, str] = {}
    for kind, (_report, out) in results.items():
        wanted = out if out is not None else inputs.get(kind)
        if wanted is not None and wanted != texts[kind]:
            writes[kind] = wanted
    return writes


def _write_back(
    ctx: Context,
    units: list[_Unit],
    paths: dict[str, Path],
    results: Results,
    texts: dict[str, str | None],
    writes: dict[str, str],
) -> None:
    """Write each file as a compare-and-swap against the text the sync read. A file another
    program changed meanwhile is merged again (its edit against what hb read) and written in
    a new round, at most :data:`ATTEMPTS` times; a file hb may not write (read-only, a
    dangling symlink) is left as it is with a notice, its write-back kept for the next sync.
    Each report says ``written`` only for a file whose write landed; for one left as it was,
    ``not_written`` says why."""
    from heartbeat.ops.sync.swap import ReadOnlyFile, replace_if

    def refused(kind: str, reason: str, notice: str) -> None:
        results[kind][0].not_written = reason
        ctx.notices.append(notice)

    for _round in range(ATTEMPTS):
        landed: dict[str, Path] = {}
        moved: dict[str, str | None] = {}
        for kind, text in writes.items():
            try:
                done = replace_if(paths[kind], text, texts[kind], valid=validator(kind))
            except ReadOnlyFile as exc:
                reason = f"{exc.strerror}; hb sync writes it once it may"
                refused(kind, reason, f"{paths[kind]}: {reason}")
                continue
            except OSError as exc:
                reason = f"{exc.strerror or one_line(exc)}; the next hb sync tries again"
                refused(kind, reason, f"{one_line(exc)}: not written; the next hb sync tries again")
                continue
            if done.kept is not None:
                ctx.notices.append(
                    f"{paths[kind]}: a concurrent edit hb could not merge is kept in {done.kept}"
                )
            if done.written:
                landed[kind] = paths[kind]
                results[kind][0].written = True
            else:
                moved[kind] = done.found
        _landed(ctx, landed)
        if not moved:
            return
        # another round: the write-backs still pending make it sync each moved file against the
        # text this round read (see _inputs)
        again = [u for u in units if any(k in moved for k in u.kinds) and not u.idle]
        subset = {k: paths[k] for u in again for k in u.kinds}
        retried, texts, writes = _transaction(ctx, again, subset, False, None)
        for kind, (report, _out) in retried.items():
            results[kind][0].merge(report)
    for kind in writes:
        results[kind][0].not_written = "it kept changing while hb wrote it; left as it is (run hb sync)"
    ctx.notices.append(
        "the workspace files kept changing while hb wrote them; left as they are (run hb sync)"
    )


_STRUCTURED = frozenset(("tasks-json", "errors-json", "last-run", "state", "proactive"))


def _landed(ctx: Context, written: dict[str, Path]) -> None:
    """Mark the write-backs of files now written (one small transaction)."""
    if not written:
        return
    with ctx.write() as db:
        writeback.mark_landed(db, written)


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _leftovers(ctx: Context) -> bool:
    """Whether a killed write of hb left a temporary file beside a workspace file."""
    from heartbeat.ops.sync import leftovers

    return leftovers.exist(default_path(ctx.workspace, k) for k in KINDS)


def _remove_temps(ctx: Context, paths: dict[str, Path]) -> None:
    """Temporary files a killed write of hb left beside the workspace files (hb holds the
    workspace lock: no write of its own is under way): hb's own are deleted; one holding the
    file another program saved just before a killed swap is merged, or kept beside the file
    with a warning (:mod:`heartbeat.ops.sync.leftovers`)."""
    from heartbeat.ops.sync import leftovers

    leftovers.settle(ctx, paths)


# --- the seal ------------------------------------------------------------------------------


def _fingerprint(values: Sequence[Any]) -> str:
    from heartbeat import __version__
    from heartbeat.clock import machine_zone_name

    h = hashlib.sha256(f"{__version__}\x1e{machine_zone_name()}\x1e{','.join(KINDS)}".encode())
    for value in values:
        h.update(b"\x1e" + str(value).encode("utf-8"))
    return h.hexdigest()


def _part_digests(values: Sequence[Any]) -> list[str]:
    """A short digest of each part of the fingerprint (see :data:`_PARTS`)."""
    return [hashlib.sha256(str(value).encode("utf-8")).hexdigest()[:24] for value in values]


def _moved_kinds(before: Sequence[str], after: Sequence[str]) -> set[str]:
    """The kinds whose file shows a part that differs between two lists of part digests."""
    return {
        kind
        for (_, kinds), old, new in zip(_PARTS, before, after, strict=True)
        if old != new
        for kind in kinds
    }


def _file_hash(text: str | None) -> str | None:
    return None if text is None else digest(text)


@dataclass(frozen=True)
class _Seal:
    """The last full sync's seal, where it still holds: the kinds whose file changed since, or
    whose part of the ledger did (``moved``); the seal vouches for every other kind."""

    seal: dict[str, Any]
    changed: list[str]
    data_version: int | None = None  # SQLite's PRAGMA data_version when the check began
    current: str = ""  # the ledger's fingerprint when checked
    parts: tuple[str, ...] = ()  # and its parts' digests
    moved: frozenset[str] = frozenset()

    @property
    def skipped(self) -> list[str]:
        return list(self.seal["skipped"])


class _Unsealed(Exception):
    """The ledger changed between the seal check and the sync's transaction, or the kinds synced
    changed a part of it that a kind left to the seal shows."""


def _moved(db: Conn, prior: _Seal) -> bool:
    """Whether the ledger changed since the seal was checked (on the same connection)."""
    if db.sqlite and prior.data_version is not None:
        row = db.one("PRAGMA data_version")
        if row is not None and row[0] == prior.data_version:
            return False  # no other connection committed since: the check still holds
    return _fingerprint(_fingerprint_values(db)) != prior.current


def _fingerprint_values(db: Conn) -> Sequence[Any]:
    row = db.one(_FINGERPRINT_SQL)
    assert row is not None
    return row


def _seal(
    ctx: Context,
    db: Conn,
    units: list[_Unit],
    paths: dict[str, Path],
    texts: dict[str, str | None],
    results: Results,
    seal: tuple[_Seal | None, list[str]],
    now: datetime,
) -> None:
    """Record, in the sync's transaction, how it leaves the files and the ledger.

    After a sync of some kinds only, a part of the ledger those syncs changed must be one no
    other kind's file shows, else the seal would vouch for a file that no longer says what the
    ledger does: :class:`_Unsealed` then starts the sync over with every kind."""
    prior, skipped = seal
    synced = [k for unit in units for k in unit.kinds]
    values = _fingerprint_values(db)
    parts = _part_digests(values)
    if prior is not None and not _moved_kinds(prior.parts, parts) <= set(synced):
        raise _Unsealed
    files: dict[str, Any] = dict(prior.seal["files"]) if prior is not None else {}
    preserved: dict[str, Any] = dict(prior.seal["preserved"]) if prior is not None else {}
    for k in synced:
        out = results[k][1] if k in results else None
        files[k] = [str(paths[k]), _file_hash(out if out is not None else texts[k])]
        if k in results:
            preserved[k] = results[k][0].preserved
    skeleton = {
        "fingerprint": _fingerprint(values),
        "head": _fingerprint(()),
        "parts": parts,
        "files": files,
        "order": prior.seal["order"] if prior is not None else synced,
        "skipped": skipped,
        "preserved": preserved,
    }
    path = str(ctx.workspace)
    bookmarks.save(db, SEAL, path=path, content_hash=None, size=None, synced_at=now, skeleton=skeleton)


def _check_seal(ctx: Context) -> _Seal | None:
    """The seal, where the ledger is as the last full sync left it (None: no seal, or one that
    vouches for no kind). A kind is left to sync when its file changed since, or a part of the
    ledger its file shows did (:data:`_PARTS`)."""
    import sqlite3

    try:
        # read before the check: a commit landing in between then shows as a new version
        (version,) = ctx.raw.execute("PRAGMA data_version").fetchone()
        row = ctx.raw.execute(_CHECK_SQL).fetchone()
    except sqlite3.Error:
        return None
    if row is None or row[0] is None:
        return None
    seal = json.loads(row[0])
    if not isinstance(seal, dict):
        return None
    values = row[1:]
    current = _fingerprint(values)
    parts = _part_digests(values)
    moved: set[str] = set()
    if seal.get("fingerprint") != current:
        before = seal.get("parts")
        if seal.get("head") != _fingerprint(()) or not isinstance(before, list) or len(before) != len(parts):
            return None  # another hb's seal, or one of every table at once: sync in full
        moved = _moved_kinds(before, parts)
    changed = []
    for kind in seal["order"]:
        path, expected = seal["files"][kind]
        if path != str(default_path(ctx.workspace, kind)):
            return None
        if kind in moved:
            changed.append(kind)
            continue
        try:
            current_hash = _file_hash(read_optional(Path(path)))
        except FileFormatError:
            current_hash = "unreadable"  # the sync of that kind says where and why
        if current_hash != expected:
            changed.append(kind)
    if any(kind in _TASK_FILES for kind in changed):  # the queue's files share their parts
        changed = [kind for kind in seal["order"] if kind in changed or kind in _TASK_FILES]
    if moved and len(changed) == len(seal["order"]):
        return None  # the seal vouches for nothing: the full path (it also leaves idle kinds out)
    return _Seal(seal, changed, version, current, tuple(parts), frozenset(moved))


def _sealed_report(seal: dict[str, Any], kind: str) -> SyncReport:
    path = seal["files"][kind][0]
    return SyncReport(kind=kind, path=path, preserved=list(seal["preserved"].get(kind, [])))
