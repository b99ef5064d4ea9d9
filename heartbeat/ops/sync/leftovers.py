"""The temporary files a killed write of hb left beside the workspace files, as the next hb sync
finds them (the queue files': with ``sync.auto_export``, the next queue operation's export, before
it reads their edits and so moves their record on from the text a leftover was made from).

hb writes a file by swapping its new text in (:mod:`heartbeat.ops.sync.swap`): the text goes to
``.NAME.<tag>-XXXXXXXX.tmp`` first, ``<tag>`` the start of the digest of the text hb expects to
replace, and the exchange puts the file that was in place at that name. Killed before the
exchange, the leftover holds hb's own new text (the ledger holds what it says). Killed after it,
the leftover is the file the exchange displaced: the text hb expected, or another program's edit
of it, saved between hb's read and the exchange (heartbeat.py completing a task), which the
swap's own follow-up would have put back and merged. Deleting it would lose that edit: the task
would run twice.

So a leftover is deleted only when it is hb's own: the file's text, the text the swap expected
(the tag), the text hb last wrote or read for the file (its record, the text a write-back read or
wrote), or a write that never swapped (the file still holds the expected text). Any other
leftover is the other writer's version, made from the expected text: merged as the swap's
follow-up would have merged it, when hb still holds that text (the queue files' edit imported by
their own sync against it, the others merged by lines into the file), else moved beside the file
(``.NAME.<time>.hb-kept``) with a warning naming it. A leftover without a tag (an older hb's) is
never merged: the text it was made from is not known.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from heartbeat.errors import HbError, one_line
from heartbeat.ops.sync import writeback
from heartbeat.ops.sync.files import digest, read_quiet
from heartbeat.ops.sync.registry import baseline_text, syncer, validator
from heartbeat.ops.sync.swap import NO_FILE, keep_aside, replace_if, stale_temps, tag_of, target_of

if TYPE_CHECKING:
    from heartbeat.context import Context


def exist(paths: Iterable[Path]) -> bool:
    """Whether a killed write of hb left a temporary file beside any of these files: one listing
    of each directory (a queue operation's export looks before it reads the files' edits)."""
    wanted: dict[Path, list[str]] = {}
    for path in paths:
        try:
            target = target_of(path)
        except OSError:
            continue
        wanted.setdefault(target.parent, []).append(f".{target.name}.")
    for directory, prefixes in wanted.items():
        try:
            with os.scandir(directory) as entries:
                if any(e.name.endswith(".tmp") and e.name.startswith(tuple(prefixes)) for e in entries):
                    return True
        except OSError:
            continue
    return False


def settle(ctx: Context, paths: dict[str, Path]) -> None:
    """Delete each leftover that is hb's own, merge or keep aside each that is not (see the
    module's docstring). The caller holds the workspace lock: no write of hb's is under way."""
    for kind, path in paths.items():
        try:
            target = target_of(path)
            leftovers = stale_temps(target)
        except OSError:
            continue
        for leftover in leftovers:
            try:
                _settle_one(ctx, kind, path, target, leftover)
            except FileNotFoundError:
                continue
            except OSError as exc:
                ctx.notices.append(f"{leftover}: {one_line(exc)}; left as it is")


def _text(path: Path) -> str | None:
    try:
        return read_quiet(path).decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None


def _settle_one(
    ctx: Context,
    kind: str,
    path: Path,
    target: Path,
    leftover: Path,
) -> None:
    displaced = _text(leftover)
    if displaced is None:
        return
    current = _text(target)
    tag = tag_of(leftover.name, target.name)
    with ctx.read() as db:
        known = baseline_text(ctx, db, kind)
        pending = writeback.pending(db, [kind]).get(kind)
        kept = () if pending is None else (pending.before_text, *pending.older)
    if _own(displaced, current, tag, known, kept, pending):
        leftover.unlink()
        return
    base = _base(tag, (known, *kept))
    if base is None or current is None:
        _keep(ctx, path, target, leftover, "the text it was made from is not known")
        return
    if kind in _QUEUE_KINDS:
        _import(ctx, kind, path, target, leftover, displaced, base)
        return
    from heartbeat.ops.sync.textmerge import merge3

    merged = merge3(base, current, displaced)
    valid = validator(kind)
    if merged != current and valid is not None and not valid(merged):
        _keep(ctx, path, target, leftover, "merged with the file by lines, it does not parse")
        return
    if merged != current and not replace_if(path, merged, current, valid=valid).written:
        _keep(ctx, path, target, leftover, "the file changed while hb merged it")
        return
    leftover.unlink()
    ctx.notices.append(_merged(path, leftover))


def _own(
    displaced: str,
    current: str | None,
    tag: str | None,
    known: str | None,
    kept: tuple[str | None, ...],
    pending: writeback.Pending | None,
) -> bool:
    """Whether the leftover holds a text of hb's, or the one hb's write expected to displace."""
    if displaced in (current, known, *kept):
        return True
    if pending is not None and digest(displaced) == pending.after:
        return True  # the text a sync was writing when it was killed
    if tag is None:
        return False
    if tag == NO_FILE:
        return True  # a new file's text: hb's own (the file is created by a link, never exchanged)
    # the text the write expected (displaced unedited), or a write killed before its exchange
    # (the file still holds the text it expected; the leftover is hb's new text)
    return digest(displaced).startswith(tag) or (current is not None and digest(current).startswith(tag))


def _base(tag: str | None, texts: tuple[str | None, ...]) -> str | None:
    """Of the texts hb still holds, the one the swap expected (the leftover was made from it)."""
    if tag is None or tag == NO_FILE:
        return None
    return next((t for t in texts if t is not None and digest(t).startswith(tag)), None)


_QUEUE_KINDS = frozenset(("tasks-json", "errors-json", "last-run"))


def _import(
    ctx: Context, kind: str, path: Path, target: Path, leftover: Path, displaced: str, base: str
) -> None:
    """A queue file's displaced edit, imported as that file's sync imports an edit: against the
    text it was made from. The file's own text was made from that text too (hb's write over it,
    and whatever came after): its sync that follows reads it against the same text (an earlier
    write-back's record, which would take it for a stale copy of an older text, is dropped), so
    the two edits both reach the ledger, and the file is written with both."""
    from heartbeat.db.rows import SyncStateRow
    from heartbeat.ops.sync.report import sync_notices

    now: datetime = ctx.now()
    try:
        with ctx.write() as db:
            writeback.rebase(db, kind, path, base, now)
            db.forget(SyncStateRow, kind)
            report, _text_out = syncer(kind)(ctx, db, path, displaced, now)
            # the file in place was made from that text too, by the killed write: read against it,
            # not as a stale copy of what an earlier write of hb's read
            writeback.rebase(db, kind, path, base, now)
            writeback.clear(db, [kind])
            db.forget(SyncStateRow, kind)
    except HbError as exc:
        _keep(ctx, path, target, leftover, f"it cannot be read ({one_line(exc)})")
        return
    leftover.unlink()
    ctx.notices.append(_merged(path, leftover))
    for notice in sync_notices(report):
        ctx.notices.append(f"{notice} (the edit merged from {leftover.name})")


def _merged(path: Path, leftover: Path) -> str:
    return (
        f"{path}: merged in the edit another program saved while a killed hb was writing the file "
        f"(left in {leftover.name})"
    )


def _keep(ctx: Context, path: Path, target: Path, leftover: Path, why: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        kept = keep_aside(target, leftover)
        ctx.notices.append(
            f"{path}: {leftover.name}, left by a killed hb write, holds another program's edit hb "
            f"could not merge ({why}); kept in {kept}: compare it with the file"
        )
