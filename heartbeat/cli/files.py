"""hb import / hb export: one-way moves between a workspace file and the ledger."""

from __future__ import annotations

import re

import click

from heartbeat.cli.base import emit, json_option, state, warn
from heartbeat.ops.sync.registry import KINDS


@click.command("import")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("path", required=False)
@json_option
def import_(kind: str, path: str | None) -> None:
    """Read a workspace file into the ledger (all or nothing).

    PATH defaults to the file's usual place in the workspace.

    \b
    Example:
      hb import tasks-json .agent/state/tasks.json
      hb import todo TODO.md
    """
    report = state().ledger().import_file(kind, path)
    for message in report.get("warnings", []):
        warn(_at_line(report["path"], message))
    emit(
        report,
        lambda r: (
            f"{r['path']}: {len(r['added'])} added, {len(r['updated'])} updated, {r['unchanged']} unchanged"
        ),
    )


def _at_line(path: str, message: str) -> str:
    """``line N: reason`` from a reader as ``path:N: reason`` (as hb sync reports lines)."""
    match = re.match(r"line (\d+): ", message)
    return f"{path}:{match.group(1)}: {message[match.end() :]}" if match else f"{path}: {message}"


@click.command("export")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("path", required=False)
@json_option
def export(kind: str, path: str | None) -> None:
    """Write a workspace file from the ledger (atomically; '-' prints it).

    PATH defaults to the file's usual place in the workspace. A TODO file is
    written over its own text and never over an entry hb has not imported (that
    is refused, naming the line: run hb sync first); a new one takes the text
    hb last imported, so 'hb import todo A; hb export todo B' copies A exactly.

    \b
    Example:
      hb export tasks-json .agent/state/tasks.json
      hb export todo -
    """
    ledger = state().ledger()
    if path == "-":
        text = ledger.export_text(kind)
        if state().json:  # one JSON document: the text inside it
            emit({"kind": kind, "path": "-", "text": text}, lambda r: "")
        else:
            click.echo(text or "", nl=False)
        return
    result = ledger.export_file(kind, path)
    emit(result, _export_line)


def _export_line(r: dict[str, object]) -> str:
    if r["empty"]:
        return f"{r['path']}: not written (the ledger holds nothing for this file yet)"
    return f"{r['path']}: " + ("written" if r["written"] else "unchanged")


COMMANDS = [import_, export]
