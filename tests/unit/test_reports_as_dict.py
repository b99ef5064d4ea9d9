"""The sync and import reports write themselves out by hand (dataclasses.asdict deep-copies every id
of a large first sync): every field, as asdict would, and a copy of each list."""

from __future__ import annotations

from dataclasses import asdict, fields

import pytest

from heartbeat.ops.sync.report import ImportReport, SyncReport


@pytest.mark.parametrize("kind", [SyncReport, ImportReport])
def test_as_dict_is_asdict(kind: type) -> None:
    report = kind("tasks-json", "/w/tasks.json")
    for f in fields(report):
        value = getattr(report, f.name)
        if isinstance(value, list):
            value.extend([f"{f.name}-1", f"{f.name}-2"])
        elif isinstance(value, bool):
            setattr(report, f.name, True)
        elif isinstance(value, int):
            setattr(report, f.name, 3)
    out = report.as_dict()
    assert out == asdict(report)
    assert list(out) == [f.name for f in fields(report)]
    out["added"].append("later")  # a copy: the report itself is not changed through it
    assert "later" not in report.added
