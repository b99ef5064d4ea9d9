"""hb mcp is lean: the tool list and every result are measured here, as the client receives them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from heartbeat import Ledger
from heartbeat.mcp_server import MAX_RESULT, MAX_TEXT, TOOL_LIST_BUDGET
from tests.mcp.conftest import EXAMPLE, call, mcp_session, result_text, run

LONG = 3 * MAX_TEXT  # a title or note longer than a listed item keeps
TASKS = 300


def test_the_whole_tool_list_is_under_12000_characters(workspace: Path) -> None:
    async def main() -> None:
        async with mcp_session(workspace) as session:
            listed = await session.list_tools()
            wire = listed.model_dump_json(by_alias=True, exclude_none=True)
            assert TOOL_LIST_BUDGET == 12_000
            assert len(wire) < TOOL_LIST_BUDGET, len(wire)
            for tool in listed.tools:
                assert tool.description and len(tool.description) <= 500, tool.name
                for name, schema in tool.input_schema["properties"].items():
                    assert "title" not in schema, (tool.name, name)

    run(main)


def test_lists_stay_under_the_result_limit_and_say_how_many_were_left_out(workspace: Path) -> None:
    with Ledger.open(workspace=workspace, now="2026-05-01T09:00") as ledger:
        for i in range(TASKS):
            ledger.add(f"{i:03d} " + "x" * LONG, next_action="y" * LONG, due_at="2026-05-01T08:00")

    async def main() -> None:
        async with mcp_session(workspace, now="2026-05-01T10:00") as session:
            for tool, arguments, key in (
                ("ready", {"explain": True, "limit": 200}, "tasks"),
                ("due", {"limit": 200}, "tasks"),
                ("sql", {"query": "SELECT * FROM tasks", "limit": 1000}, "rows"),
                ("sql", {"query": "SELECT id FROM tasks", "limit": 1000}, "rows"),
                ("report", {"kind": "queue", "limit": 200}, "rows"),
            ):
                text = await result_text(session, tool, **arguments)
                assert len(text) <= MAX_RESULT, (tool, len(text))
                result = json.loads(text)
                total = 1 if tool == "report" else TASKS
                assert len(result[key]) + result["left_out"] == total, tool
                for value in json.dumps(result[key], ensure_ascii=False).split('"'):
                    assert len(value) <= MAX_TEXT + 40, (tool, "a text was not clipped")
            short = await call(session, "sql", query="SELECT id FROM tasks", limit=10)
            assert (len(short["rows"]), short["left_out"]) == (10, TASKS - 10)
            listed = await call(session, "ready", limit=5)
            assert listed["tasks"][0]["title"].endswith(f"… [{LONG + 4 - MAX_TEXT} more characters]")

    run(main)


def test_everyday_results_are_a_few_hundred_characters(workspace: Path) -> None:
    shutil.copytree(EXAMPLE, workspace, dirs_exist_ok=True)
    with Ledger.open(workspace=workspace) as ledger:
        ledger.config_set("timezone", "Asia/Shanghai")

    async def main() -> None:
        async with mcp_session(workspace, now="2026-05-04T08:05") as session:
            sizes = {"heartbeat": len(await result_text(session, "heartbeat"))}
            task = (await call(session, "pop", scope=""))["task"]
            sizes["pop"] = len(json.dumps({"task": task}, ensure_ascii=False, separators=(",", ":")))
            sizes["renew"] = len(await result_text(session, "renew", id=task["id"], claim=task["claim"]))
            sizes["complete"] = len(
                await result_text(session, "complete", id=task["id"], claim=task["claim"])
            )
            sizes["ready"] = len(await result_text(session, "ready", scope=""))
            sizes["due"] = len(await result_text(session, "due"))
            sizes["recur_due"] = len(await result_text(session, "recur_due"))
            # the example's HEARTBEAT.md checklist is most of the brief; everything else is small
            assert sizes["heartbeat"] <= 2_000, sizes
            assert max(sizes["pop"], sizes["renew"], sizes["complete"]) <= 400, sizes
            assert max(sizes["ready"], sizes["due"], sizes["recur_due"]) <= 1_000, sizes

    run(main)
