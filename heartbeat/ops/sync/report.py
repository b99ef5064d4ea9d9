"""What an import or a sync did, per file: the report users read and scripts parse."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SyncReport:
    """The changes of one file kind in one ``hb sync`` (ids or file:line labels)."""

    kind: str
    path: str
    added: list[str] = field(default_factory=list)  # new in the file -> ledger, or new in the ledger -> file
    updated: list[str] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)
    removed: list[str] = field(
        default_factory=list
    )  # gone from the file: removed from the ledger (history kept)
    conflicts: list[str] = field(default_factory=list)  # changed on both sides: the file won
    preserved: list[str] = field(default_factory=list)  # "path:line: reason" kept verbatim, not understood
    written: bool = False  # the file was (or, with --dry-run, would be) rewritten
    # why a write the sync meant to make did not land (read-only, a write error, a file that kept
    # changing): the file is left as it was, and the next sync writes it. None otherwise.
    not_written: str | None = None

    def as_dict(self) -> dict[str, Any]:
        # by hand: dataclasses.asdict deep-copies every id of a large first sync
        return {
            "kind": self.kind,
            "path": self.path,
            "added": list(self.added),
            "updated": list(self.updated),
            "completed": list(self.completed),
            "removed": list(self.removed),
            "conflicts": list(self.conflicts),
            "preserved": list(self.preserved),
            "written": self.written,
            "not_written": self.not_written,
        }

    def merge(self, later: SyncReport) -> None:
        """Add what a later round of the same sync did to this file (a concurrent edit merged)."""
        for name in ("added", "updated", "completed", "removed", "conflicts"):
            mine = getattr(self, name)
            mine.extend(x for x in getattr(later, name) if x not in mine)
        self.preserved = later.preserved or self.preserved
        self.written = self.written or later.written
        self.not_written = later.not_written or self.not_written

    @property
    def changed(self) -> bool:
        return bool(
            self.added or self.updated or self.completed or self.removed or self.conflicts or self.written
        )


@dataclass
class ImportReport:
    """What one ``hb import KIND`` did (ids or labels), and the lines kept but not understood."""

    kind: str
    path: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    warnings: list[str] = field(default_factory=list)  # readable but odd: kept as written
    preserved: list[str] = field(default_factory=list)  # "path:line: reason", kept verbatim

    def as_dict(self) -> dict[str, Any]:
        # by hand, as SyncReport's: dataclasses.asdict deep-copies every id of a large import
        return {
            "kind": self.kind,
            "path": self.path,
            "added": list(self.added),
            "updated": list(self.updated),
            "removed": list(self.removed),
            "unchanged": self.unchanged,
            "warnings": list(self.warnings),
            "preserved": list(self.preserved),
        }


def sync_notices(report: SyncReport) -> list[str]:
    """What an edited file's sync did that the caller should hear of (hb sync would report it)."""
    path = report.path
    notices = [f"{path}: changed here and in the ledger, the file won: {k}" for k in report.conflicts]
    notices.extend(f"{path}: deleted from the file, removed from the ledger: {k}" for k in report.removed)
    notices.extend(report.preserved)
    return notices
