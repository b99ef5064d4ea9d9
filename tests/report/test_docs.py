"""docs/sql.md's queries run against demo data on both backends; docs/schema.md is current."""

from __future__ import annotations

import re

import pytest

from heartbeat.db.views import VIEW_NAMES
from tests.report.conftest import ROOT, Demo, load_script

SQL_DOC = ROOT / "docs" / "sql.md"


def sql_blocks() -> list[str]:
    return re.findall(r"```sql\n(.*?)```", SQL_DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_page_has_at_least_ten_questions() -> None:
    blocks = sql_blocks()
    assert len(blocks) >= 10
    assert len(set(blocks)) == len(blocks)


@pytest.mark.parametrize("number", range(len(sql_blocks())))
def test_every_example_query_answers_on_demo_data(demo: Demo, number: int) -> None:
    query = sql_blocks()[number]
    with demo.ledger() as ledger:
        rows = ledger.sql(query)
    assert rows, f"docs/sql.md query {number + 1} returned nothing:\n{query}"


def test_the_views_are_the_ones_described(demo: Demo) -> None:
    from sqlalchemy import inspect

    with demo.ledger() as ledger, ledger.engine.connect() as conn:
        assert sorted(inspect(conn).get_view_names()) == sorted(VIEW_NAMES)


def test_schema_doc_is_current() -> None:
    generated = load_script("gen_schema_doc").render()
    current = (ROOT / "docs" / "schema.md").read_text(encoding="utf-8")
    assert current == generated, "docs/schema.md is out of date: run python scripts/gen_schema_doc.py"
    for name in VIEW_NAMES:
        assert f"### {name}" in current
