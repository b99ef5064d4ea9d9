"""The plain-SQL column shapes match the models (the schema's source of truth)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import JSON, Boolean

from heartbeat.db import models
from heartbeat.db.shape import SHAPES, TASKS, Shape
from heartbeat.db.types import UTCDateTime


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_shape_matches_the_model(shape: Shape) -> None:
    table = models.Base.metadata.tables[shape.name]
    assert shape.columns == tuple(c.key for c in table.columns)
    assert shape.times == {c.key for c in table.columns if isinstance(c.type, UTCDateTime)}
    assert shape.json == {c.key for c in table.columns if isinstance(c.type, JSON)}
    assert shape.flags == {c.key for c in table.columns if isinstance(c.type, Boolean)}
    assert shape.key == tuple(c.key for c in table.primary_key.columns)


def test_every_table_has_a_shape() -> None:
    assert {s.name for s in SHAPES} == set(models.Base.metadata.tables)


def test_decode_reads_sqlite_values_as_the_models_do() -> None:
    row = TASKS.decode(["2026-05-01 09:30:00.000000", '{"a": [1]}', 1], ["created_at", "extra", "follow_up"])
    when = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
    assert row == {"created_at": when, "extra": {"a": [1]}, "follow_up": True}
    snap = TASKS.snapshot(row)
    assert snap == {"follow_up": True, "created_at": "2026-05-01T09:30:00+00:00", "extra": {"a": [1]}}
