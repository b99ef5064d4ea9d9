"""The dashboard's JSON is strict JSON: a number JSON cannot hold is the string "Infinity",
"-Infinity" or "NaN", as everywhere hb prints JSON; its HTML shows such a value as its JSON does."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from heartbeat import Ledger
from heartbeat.web import app
from tests.conftest import strict_json


def test_the_dashboard_s_json_and_html_show_such_a_number_as_its_string(workspace: Path) -> None:
    """An outcome given through the Python API as an object holding infinity and NaN."""
    with Ledger.open(workspace=workspace) as ledger:
        task = ledger.add("Score the run")
        ledger.pop()
        ledger.complete(task["id"], outcome={"score": math.inf, "spread": [-math.inf, math.nan]})

    def open_ledger() -> Ledger:
        return Ledger.open(workspace=workspace)

    answer = app.page(open_ledger, "/task.json", f"id={task['id']}", None)
    assert answer.status == 200
    [outcome] = strict_json(answer.body.decode("utf-8"))["outcomes"]
    assert outcome["result"] == {"score": "Infinity", "spread": ["-Infinity", "NaN"]}

    pytest.importorskip("jinja2")
    html = app.page(open_ledger, "/task", f"id={task['id']}", "text/html").body.decode("utf-8")
    assert '<td class="msg">{"score": "Infinity", "spread": ["-Infinity", "NaN"]}</td>' in html
