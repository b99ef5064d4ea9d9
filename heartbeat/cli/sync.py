"""hb sync: the workspace files and the ledger, both ways."""

from __future__ import annotations

from typing import Any

import click

from heartbeat.cli.base import emit, info, json_option, state, warn
from heartbeat.ops.sync.registry import KINDS

_SHOWN = 20  # ids listed per kind of change in the text report

_LISTS = (
    ("added", "added"),
    ("updated", "updated"),
    ("completed", "completed"),
    ("removed", "removed"),
    ("conflicts", "conflict"),
)


def _human(result: dict[str, Any]) -> str:
    lines: list[str] = []
    verb = "would write" if result["dry_run"] else "written"
    for report in result["reports"]:
        counts = [
            f"{len(report[key])} {word if len(report[key]) == 1 else key}"
            for key, word in _LISTS
            if report[key]
        ]
        unwritten = report["not_written"]
        if not counts and not report["written"] and not unwritten:
            continue
        head = f"{report['path']}: " + (", ".join(counts) if counts else "re-rendered")
        if report["written"]:
            head += f" ({verb})"
        elif unwritten:  # the ledger has the change; the file does not yet
            head += f" (not written: {unwritten})"
        lines.append(head)
        for key, word in _LISTS:
            names = report[key]
            lines.extend(f"  {word:<9} {name}" for name in names[:_SHOWN])
            if len(names) > _SHOWN:
                lines.append(f"  {word:<9} ... and {len(names) - _SHOWN} more (--json lists all)")
    if not lines:
        kept = sum(len(report["preserved"]) for report in result["reports"])
        if kept:  # the warnings above name lines the files hold that the ledger does not
            return f"No changes; {kept} warning{'s' if kept != 1 else ''} above."
        return "Everything is in sync."
    return "\n".join(lines)


def _kinds(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """Kinds as given: repeated, comma-separated, or listed after --only (SPEC: ``--only KIND...``)."""
    kinds = tuple(k.strip() for v in values for k in v.split(",") if k.strip())
    for kind in kinds:
        if kind not in KINDS:
            raise click.BadParameter(f"{kind!r} is not one of {', '.join(KINDS)}", ctx, param)
    return kinds


@click.command()
@click.option("--dry-run", is_flag=True, help="Report what would change; change nothing.")
@click.option(
    "--only",
    "only",
    multiple=True,
    callback=_kinds,
    metavar="KIND...",
    help=f"Only these kinds: {', '.join(KINDS)} (todo and done go together). "
    "Repeat it, separate kinds with commas, or list them after it.",
)
@click.argument("more", nargs=-1, callback=_kinds, metavar="")
@json_option
def sync(dry_run: bool, only: tuple[str, ...], more: tuple[str, ...]) -> None:
    """Two-way sync of the workspace files with the ledger.

    Imports what changed in the files since the last sync, writes the ledger's
    changes back (atomically; unchanged files are not touched) and reports what
    moved. A record changed on both sides is a conflict: the file wins and the
    ledger's version is kept in the task's history. A line deleted from a file
    removes its task from the ledger (history kept). Lines hb cannot read are
    kept verbatim and reported as warnings.

    \b
    Example:
      hb sync
      hb sync --dry-run --json
      hb sync --only todo recur
    """
    if more and not only:
        raise click.UsageError("name the kinds to sync after --only (e.g. hb sync --only todo recur)")
    only = only + more
    result = state().ledger().sync(dry_run=dry_run, only=only or None)
    for report in result["reports"]:
        for message in report["preserved"]:
            warn(message)
    if result["skipped"] and only:
        info(f"not synced (hb cannot sync these yet): {', '.join(result['skipped'])}")
    if dry_run:
        info("dry run: nothing was changed")
    emit(result, _human)


COMMANDS: list[click.Command] = [sync]
