"""The sync report's dict, written by hand for speed, is the dataclass's every field."""

from __future__ import annotations

from dataclasses import asdict

from heartbeat.ops.sync.report import SyncReport


def test_a_sync_reports_dict_has_every_field_in_order_and_owns_its_lists() -> None:
    report = SyncReport(
        "todo",
        "/w/TODO.md",
        added=["todo-1"],
        updated=["todo-2"],
        completed=["todo-3"],
        removed=["todo-4"],
        conflicts=["todo-5"],
        preserved=["/w/TODO.md:9: bad timestamp"],
        written=True,
    )
    got = report.as_dict()
    assert got == asdict(report)
    assert list(got) == list(asdict(report))
    got["added"].append("todo-9")
    assert report.added == ["todo-1"]
