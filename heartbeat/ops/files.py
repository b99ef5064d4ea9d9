"""One-way hb import and hb export of a workspace file (SPEC.md section 2), one transaction each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heartbeat.context import Context
from heartbeat.errors import FileFormatError, InvalidInput, InvalidState, NotFound
from heartbeat.ops.sync import registry
from heartbeat.ops.sync.files import default_path, file_lock, lock_timeout, read_text


def import_file(ctx: Context, kind: str, path: str | Path | None = None) -> dict[str, Any]:
    """``hb import KIND [PATH]``: the file read into the ledger, all or nothing; its report."""
    importer = registry.importer(kind)
    target = Path(path) if path is not None else default_path(ctx.workspace, kind)
    text = read_text(target)
    now = ctx.now()
    with ctx.write() as db:
        report = importer(ctx, db, text, target, now)
    ctx.forget_settings()  # a state import may set settings
    result: dict[str, Any] = report.as_dict()
    return result


def export_text(ctx: Context, kind: str) -> str | None:
    """The file of this kind as the ledger has it now (None: nothing to write)."""
    renderer = registry.renderer(kind)
    with ctx.write() as db:
        text: str | None = renderer(ctx, db, None)
        return text


# the files whose export is checked by :func:`heartbeat.ops.sync.queue_files.check_export_target`
# (the Markdown and state renderers refuse what they would lose themselves)
JSON_KINDS = frozenset({"tasks-json", "errors-json", "last-run"})


def export_file(ctx: Context, kind: str, path: str | Path | None = None) -> dict[str, Any]:
    """``hb export KIND [PATH]``: the file written from the ledger (atomically; an unchanged file
    is not written), under the workspace lock. A file hb cannot read, or would lose entries of,
    is not written over (exit 1, naming it)."""
    from heartbeat.ops.sync.queue_files import check_export_target, remember
    from heartbeat.ops.sync.swap import replace_if

    renderer = registry.renderer(kind)
    target = Path(path) if path is not None else default_path(ctx.workspace, kind)
    if path is not None and not target.parent.is_dir():  # a typo is not a directory to create
        raise NotFound(f"{target.parent}: no such directory (hb export creates only the file)")
    synced = target.resolve() == default_path(ctx.workspace, kind).resolve()
    with file_lock(ctx.workspace, timeout=lock_timeout(ctx.settings.sync_lock_timeout)):
        try:
            current: str | None = read_text(target)
            if current is not None and current.strip() and kind in JSON_KINDS:
                check_export_target(ctx, kind, target, current, synced=synced)
            elif current is not None and kind == "state":
                _check_state_target(ctx, target, current, synced=synced)
        except NotFound:
            current = None
        except FileFormatError as exc:  # not text, or not this kind's: never written over
            raise InvalidInput(f"{exc}; hb export does not overwrite a file it cannot read") from None
        with ctx.write() as db:
            text = renderer(ctx, db, target)  # refuses a file it would lose an entry of
            if text is None:
                return {"kind": kind, "path": str(target), "written": False, "empty": True}
            by_sync = synced and kind in SYNCED_BY_FAMILY
            written = current != text and not by_sync
            if written and not replace_if(target, text, current).written:
                raise InvalidState(f"{target}: changed while hb exported it; nothing written (export again)")
            if synced and not by_sync:
                remember(db, kind, target, text, ctx.now())
    if by_sync:
        return _export_by_sync(ctx, kind)
    return {"kind": kind, "path": str(target), "written": written, "empty": False}


# Markdown files whose export onto their own workspace file is a sync of their family: TODO.md
# and TODO.DONE.md are one (a task completed in the ledger leaves the one for the other), and
# each row records the line and file it was last synced to. Written alone, without that
# bookkeeping, the next sync took the export for an edit: a task done in the ledger read as
# deleted from the file (removed), a recurrence or a completion as new (twice).
SYNCED_BY_FAMILY = frozenset({"todo", "done", "recur"})


def _export_by_sync(ctx: Context, kind: str) -> dict[str, Any]:
    """``hb export`` of a Markdown kind onto its workspace file, once the file passed the export's
    checks (no entry hb has not imported): the sync of its family, which writes the ledger's
    version of each file with the bookkeeping the next sync reads (an edit of an entry hb knows,
    made since the last sync, is taken in as a sync takes it)."""
    from heartbeat.ops.sync.engine import run

    result = run(ctx, only=[kind])
    [report] = [r for r in result["reports"] if r["kind"] == kind]
    if report.get("not_written"):
        raise InvalidState(f"{report['path']}: {report['not_written']}")
    return {"kind": kind, "path": report["path"], "written": bool(report["written"]), "empty": False}


def _check_state_target(ctx: Context, target: Path, current: str, *, synced: bool) -> None:
    """Before ``hb export state`` writes over ``current``: the text hb last read or wrote there is
    written over; a file holding no value (empty, ``{}``, ``null``, ``[]``) too. Any other is
    refused (nothing written): hb lays its settings over the file's, so a file it never read
    (or one edited since) would have its own (``proactiveChat.enabled``, ...) replaced by the
    ledger's defaults, and the next sync would take those in."""
    import json

    from heartbeat.ops.sync.files import digest
    from heartbeat.ops.sync.queue_files import known_digest

    try:
        if json.loads(current) in ({}, None, []):
            return
    except (ValueError, RecursionError):
        pass  # the renderer names what is wrong with it
    if known_digest(ctx, "state", target, synced=synced) == digest(current):
        return
    first = "hb sync" if synced else f"hb import state {target}"
    raise InvalidState(
        f"{target}: hb has not read this file as it is now, and would write its settings over the "
        f"file's; run {first} first (or move the file away); nothing written"
    )
