"""The plain-SQL data path: rows held to the models, the Db's unit of work, named statements."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from heartbeat import Ledger
from heartbeat.db import models
from heartbeat.db.rows import ROWS, Row, RunRow, SettingRow, TaskDependencyRow, TaskRow
from heartbeat.db.status import TaskStatus
from heartbeat.db.store import areas, parse, statements

NOW = datetime(2026, 5, 1, 9, 30, 15, 123456, tzinfo=UTC)


@pytest.mark.parametrize("cls", ROWS, ids=lambda c: c.__name__)
def test_row_fields_are_the_model_columns_with_its_defaults(cls: type[Row]) -> None:
    table = models.Base.metadata.tables[cls.shape.name]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    assert set(fields) == {c.key for c in table.columns}
    for column in table.columns:
        field = fields[column.key]
        required = field.default is dataclasses.MISSING
        if column.server_default is not None:
            default = column.server_default.arg
            text = getattr(default, "text", default)
            assert not required, column.key
            assert str(field.default).lower() == str(text).strip("'").lower(), column.key
        elif (column.nullable and not column.primary_key) or column.key == "pk":
            assert field.default is None, column.key


def test_every_table_has_a_row_class() -> None:
    assert {c.shape.name for c in ROWS} == set(models.Base.metadata.tables)


@pytest.fixture
def ledger(db_url: str, workspace: Any) -> Iterator[Ledger]:
    with Ledger.open(workspace, db=db_url, now=NOW) as opened:
        yield opened


def _task(task_id: str, **kw: Any) -> TaskRow:
    return TaskRow(
        id=task_id,
        title=f"title {task_id}",
        status=TaskStatus.TODO,
        source="cli",
        created_at=NOW,
        updated_at=NOW,
        **kw,
    )


def test_add_then_load_gives_back_every_value(ledger: Ledger) -> None:
    with ledger.ctx.write() as db:
        added = db.add(_task("t1", extra={"a": [1, "é"]}, follow_up=True, due_at=NOW, check_interval=60))
        assert isinstance(added.pk, int)
    with ledger.ctx.read() as db:
        (row,) = db.load(TaskRow, "SELECT * FROM tasks WHERE id = :id", {"id": "t1"})
    assert row.values() == added.values()
    assert row.status is TaskStatus.TODO and row.follow_up is True
    assert row.due_at == NOW and row.due_at.tzinfo is not None
    assert row.extra == {"a": [1, "é"]}


def test_a_changed_field_is_written_before_the_next_statement_and_at_commit(ledger: Ledger) -> None:
    with ledger.ctx.write() as db:
        db.add(_task("t1"))
        db.add(_task("t2"))
    with ledger.ctx.write() as db:
        row = db.first(TaskRow, "SELECT * FROM tasks WHERE id = :id", {"id": "t1"})
        assert row is not None
        row.title = "renamed"
        assert db.value("SELECT title FROM tasks WHERE id = 't1'") == "renamed"  # seen by the next query
        row.status = TaskStatus.DONE
        row.completed_at = NOW
    with ledger.ctx.read() as db:
        got = db.dicts("SELECT id, title, status, completed_at FROM tasks ORDER BY id")
    assert [(r["id"], r["title"], r["status"]) for r in got] == [
        ("t1", "renamed", "done"),
        ("t2", "title t2", "todo"),
    ]


def test_a_row_read_twice_is_the_same_object(ledger: Ledger) -> None:
    with ledger.ctx.write() as db:
        added = db.add(_task("t1"))
        again = db.first(TaskRow, "SELECT * FROM tasks")
        assert again is added
        assert db.get(TaskRow, added.pk) is added


def test_a_rolled_back_transaction_leaves_nothing(ledger: Ledger) -> None:
    with pytest.raises(RuntimeError), ledger.ctx.write() as db:
        db.add(_task("t1"))
        raise RuntimeError("stop")
    with ledger.ctx.read() as db:
        assert db.value("SELECT count(*) FROM tasks") == 0


def test_delete_list_parameters_and_keys_that_are_not_pk(ledger: Ledger) -> None:
    with ledger.ctx.write() as db:
        a, b, c = (db.add(_task(i)) for i in ("a", "b", "c"))
        db.add(TaskDependencyRow(task_pk=a.pk, depends_on_pk=b.pk))  # type: ignore[arg-type]
        db.add(SettingRow(key="lang", value="zh", updated_at=NOW))
        db.delete(c)
        ids = db.rows("SELECT id FROM tasks WHERE pk IN {ints:pks} ORDER BY id", {"pks": [a.pk, c.pk]})
        assert ids == [("a",)]
        names = db.rows("SELECT id FROM tasks WHERE id IN {texts:ids} ORDER BY id", {"ids": ["b", "zz"]})
        assert names == [("b",)]
        setting = db.get(SettingRow, "lang")
        assert setting is not None and setting.value == "zh"
        setting.value = {"nested": True}
    with ledger.ctx.read() as db:
        assert db.get(SettingRow, "lang").value == {"nested": True}  # type: ignore[union-attr]
        assert db.rows("SELECT task_pk, depends_on_pk FROM task_dependencies") == [(a.pk, b.pk)]


def test_a_settings_string_value_reads_back_as_a_string(ledger: Ledger) -> None:
    """psycopg decodes JSON itself: a JSON string must not be decoded twice."""
    with ledger.ctx.write() as db:
        db.add(SettingRow(key="quiet_hours", value="23:00-08:00", updated_at=NOW))
    with ledger.ctx.read() as db:
        assert db.get(SettingRow, "quiet_hours").value == "23:00-08:00"  # type: ignore[union-attr]


def test_add_all_inserts_in_bulk(ledger: Ledger) -> None:
    with ledger.ctx.write() as db:
        db.add_all([RunRow(kind="pop", status="ok", started_at=NOW, record={"n": i}) for i in range(50)])
    with ledger.ctx.read() as db:
        assert db.value("SELECT count(*) FROM runs WHERE kind = 'pop'") == 50
        assert [r.record for r in db.load(RunRow, "SELECT * FROM runs ORDER BY pk")][:2] == [
            {"n": 0},
            {"n": 1},
        ]


def test_a_read_transaction_cannot_write(ledger: Ledger) -> None:
    with pytest.raises(Exception, match=r"(?i)read.?only"), ledger.ctx.read() as db:
        db.execute("INSERT INTO settings (key, value, updated_at) VALUES ('x', '1', '2026-01-01')")
    with ledger.ctx.read() as db:
        assert db.value("SELECT count(*) FROM settings WHERE key = 'x'") == 0


def test_statement_files_parse_names_docs_and_bodies() -> None:
    text = (
        "-- name: one\n-- says what\nSELECT 1\n;\n\n-- name: two\nSELECT :a\n  -- a comment inside\nFROM t\n"
    )
    assert parse(text) == {"one": "SELECT 1", "two": "SELECT :a\n  -- a comment inside\nFROM t"}
    with pytest.raises(ValueError, match="repeated"):
        parse("-- name: one\nSELECT 1\n-- name: one\nSELECT 2\n")
    with pytest.raises(ValueError, match="empty"):
        parse("-- name: one\n-- only a comment\n")


_PARAM = re.compile(r"(?<![:\w]):(\w+)")
_MARKED = re.compile(r"\{(?:ints|texts|json):(\w+)\}")


def test_every_named_statement_prepares_against_the_schema_at_head(ledger: Ledger) -> None:
    """Each statement of every area is EXPLAINed on a fresh ledger at head: its tables and
    columns exist and it parses on this backend (PostgreSQL also types every parameter)."""
    names = [(area, name) for area in areas() for name in statements(area)]
    with ledger.ctx.read() as db:
        for area, name in names:
            if name.endswith("_pg") and db.sqlite:
                continue
            sql = statements(area)[name]
            params = {p: _sample(p, sql) for p in _PARAM.findall(sql) + _MARKED.findall(sql)}
            try:
                db.rows("EXPLAIN " + sql, params)
            except Exception as exc:
                raise AssertionError(f"{area}.sql {name}: {exc}") from exc
            if not db.sqlite:
                db.raw.rollback()
                db.raw.cursor().execute("SET TRANSACTION READ ONLY")


def _sample(param: str, sql: str) -> Any:
    """A parameter value EXPLAIN can bind: lists for list markers, NULL for the rest."""
    if re.search(r"\{(ints|texts):" + param + r"\}", sql):
        return [1] if "{ints:" + param in sql else ["x"]
    return None


def test_settings_first_read_inside_a_write_keep_the_write(ledger: Ledger, workspace: Any) -> None:
    """The settings (the zone) may be read for the first time inside a write transaction: that
    read must not end the transaction (PostgreSQL's driver began one for it otherwise)."""
    with Ledger.open(workspace, db=ledger.url, now=NOW) as fresh:
        with fresh.ctx.write() as db:
            db.add(_task("t1"))
            assert fresh.zone is not None  # the first read of the settings, mid-transaction
            db.add(_task("t2"))
        with fresh.ctx.read() as db:
            assert db.value("SELECT count(*) FROM tasks") == 2
