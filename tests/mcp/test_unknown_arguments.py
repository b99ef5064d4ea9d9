"""hb mcp refuses an argument a tool does not take: the SDK's argument models ignore extra names,
so a misspelt ``scope`` or ``claim`` would make the call without it (a pop in the wrong queue, a
completion without its fence). Driven over stdio by the SDK's own client, on each backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heartbeat import Ledger
from heartbeat.db.models import Base
from tests.mcp.conftest import TOOLS, call, mcp_session, refused, run


def snapshot(workspace: Path, db: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of every ledger table, as read by another connection."""
    with Ledger.open(workspace=workspace, db=db) as ledger:
        return {name: ledger.sql(f"SELECT * FROM {name} ORDER BY 1") for name in sorted(Base.metadata.tables)}


def test_a_misspelt_argument_to_pop_complete_or_ready_is_refused_and_nothing_happens(
    db_url: str, workspace: Path
) -> None:
    with Ledger.open(workspace=workspace, db=db_url, now="2026-05-01T09:00") as ledger:
        held = ledger.add("Ship the release", task_id="t1")["id"]
        ledger.add("Legacy chore", task_id="t2")
        claim = ledger.pop(worker="agent-1", lease="2h", task_id=held)["claim"]

    async def main() -> None:
        async with mcp_session(workspace, db=db_url, now="2026-05-01T10:00") as session:
            before = snapshot(workspace, db_url)
            # without its scope this pop would hand out the legacy list's t2
            text = await refused(session, "pop", scop="_ops_extension.build")
            assert text == (
                'invalid input: pop: unknown argument "scop" (did you mean "scope"?); '
                "pop takes scope, worker, lease, accept_stale, id; nothing was done"
            )
            # without its fence this completion would finish t1 under anyone's claim
            text = await refused(session, "complete", id=held, claimm="not-the-claim", outcome="done")
            assert text == (
                'invalid input: complete: unknown argument "claimm" (did you mean "claim"?); '
                "complete takes id, claim, scope, outcome; nothing was done"
            )
            text = await refused(session, "complete", id=held, Claim=claim, reslt="x", outcome="done")
            assert text == (
                'invalid input: complete: unknown arguments "Claim" (did you mean "claim"?), "reslt"; '
                "complete takes id, claim, scope, outcome; nothing was done"
            )
            text = await refused(session, "ready", scope="", limt=1)
            assert text == (
                'invalid input: ready: unknown argument "limt" (did you mean "limit"?); '
                "ready takes scope, explain, limit; nothing was done"
            )
            # an unknown name is refused before the types are checked: one thing to fix at a time
            text = await refused(session, "fail", id=held, final="maybe", claim_token=claim)
            assert text.startswith('invalid input: fail: unknown argument "claim_token"'), text
            assert snapshot(workspace, db_url) == before

            # the server carries on, and the same calls spelt right work
            listed = await call(session, "ready", scope="", limit=1)
            assert [t["id"] for t in listed["tasks"]] == ["t2"] and listed["left_out"] == 0
            done = await call(session, "complete", id=held, claim=claim, outcome="done")
            assert done["status"] == "done"

    run(main)
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        assert ledger.get("t2")["status"] == "todo"
        assert ledger.sql("SELECT task_id, claim FROM outcomes") == [{"task_id": held, "claim": claim}]


def test_every_tool_refuses_an_argument_it_does_not_take_naming_the_ones_it_takes(
    db_url: str, workspace: Path
) -> None:
    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        ledger.add("Keep me as I am", task_id="k1")

    async def main() -> None:
        async with mcp_session(workspace, db=db_url) as session:
            before = snapshot(workspace, db_url)
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == TOOLS
            for name, tool in sorted(tools.items()):
                takes = ", ".join(tool.input_schema["properties"])
                text = await refused(session, name, id_="k1", bogus=True)
                assert text.startswith(f'invalid input: {name}: unknown arguments "id_"'), text
                assert text.endswith(f', "bogus"; {name} takes {takes}; nothing was done'), text
            assert snapshot(workspace, db_url) == before

    run(main)
