"""The shaping of hb mcp's results and errors, in-process (the stdio tests drive the whole server)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio

from heartbeat import Ledger
from heartbeat.errors import ClaimLost, InvalidInput, QueueExhausted, ScopeRequired, StaleClaims
from heartbeat.mcp_server import (
    MAX_RESULT,
    MAX_TEXT,
    LedgerCalls,
    brief,
    dumps,
    error_text,
    listing,
    slim_schema,
    table_of,
    unknown_arguments_error,
)


def test_error_text_puts_the_meaning_first_once() -> None:
    assert error_text(ScopeRequired(["_a_extension.q"])) == (
        "choose a scope: scoped queues exist; pass --scope with one of: _a_extension.q"
    )
    assert error_text(StaleClaims(["t1"])).startswith("stale claims: 1 stale in-progress task(s): t1;")
    lost = "claim lost: task 't1' is held by w2 under a newer claim since ...; nothing changed"
    assert error_text(ClaimLost(lost)) == lost  # hb's message says it already: not twice
    assert error_text(QueueExhausted("queue q is exhausted")) == "scope exhausted: queue q is exhausted"
    assert (
        error_text(InvalidInput("bad --lease 'x'\n(expected 30m)"))
        == "invalid input: bad --lease 'x' (expected 30m)"
    )
    assert (  # SQLite's busy timeout ran out: busy, as the guard is
        error_text(sqlite3.OperationalError("database is locked"))
        == "busy: another process held the ledger's database locked past 30 s; try again"
    )
    assert error_text(sqlite3.OperationalError("no such table: x")) == "database error: no such table: x"
    assert error_text(KeyError("pk")) == "internal error: KeyError: 'pk'"


def test_unknown_arguments_are_one_line_of_quoted_clipped_names_and_what_the_tool_takes() -> None:
    takes = ["id", "claim", "scope", "outcome"]
    assert unknown_arguments_error("complete", ["claimm"], takes) == (
        'invalid input: complete: unknown argument "claimm" (did you mean "claim"?); '
        "complete takes id, claim, scope, outcome; nothing was done"
    )
    # other capitals are a near miss too, however short the name
    assert '"ID" (did you mean "id"?)' in unknown_arguments_error("complete", ["ID"], takes)
    # a name is JSON-quoted (no line break or control character gets through) and clipped
    odd = unknown_arguments_error("complete", ["a\nb\x1b[31m", "x" * 500], takes)
    assert "\n" not in odd and "\x1b" not in odd and odd.isascii()
    assert '"a\\nb\\u001b[31m"' in odd and f'"{"x" * 40}..."' in odd and "x" * 41 not in odd
    many = unknown_arguments_error("due", [f"n{i}" for i in range(8)], ["limit"])
    assert many == (
        'invalid input: due: unknown arguments "n0", "n1", "n2", "n3", "n4", and 3 more; '
        "due takes limit; nothing was done"
    )
    assert unknown_arguments_error("t", ["x"], []).endswith("; t takes no arguments; nothing was done")


def test_a_listing_says_what_it_left_out_and_stays_under_the_result_limit() -> None:
    items = [{"id": f"t{i}"} for i in range(30)]
    assert listing("tasks", items, 20) == {"tasks": items[:20], "left_out": 10}
    assert listing("tasks", items, 50) == {"tasks": items, "left_out": 0}
    big = [{"id": f"t{i}", "title": "x" * 1_000} for i in range(100)]
    cut = listing("tasks", big, 100, columns=["id", "title"])
    assert len(json.dumps(cut, separators=(",", ":"))) <= MAX_RESULT
    assert cut["tasks"] == big[: len(cut["tasks"])] and cut["left_out"] == 100 - len(cut["tasks"]) > 0
    assert cut["columns"] == ["id", "title"]


def test_slim_schema_keeps_types_defaults_and_required_and_drops_titles_and_nulls() -> None:
    schema = {
        "title": "popArguments",
        "type": "object",
        "properties": {
            "scope": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Scope"},
            "limit": {"type": "integer", "minimum": 1, "default": 20, "title": "Limit"},
            "outcome": {
                "anyOf": [{"type": "object"}, {"type": "string"}, {"type": "null"}],
                "default": None,
                "description": "A JSON object, or text.",
            },
            "id": {"type": "string", "title": "Id"},
        },
        "required": ["id"],
    }
    assert slim_schema(schema) == {
        "type": "object",
        "properties": {
            "scope": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "default": 20},
            "outcome": {
                "anyOf": [{"type": "object"}, {"type": "string"}],
                "description": "A JSON object, or text.",
            },
            "id": {"type": "string"},
        },
        "required": ["id"],
    }


def _ticked(brief_text: str, messages: list[str], decisions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "brief": brief_text,
        "round": {"messages": messages, "decisions": decisions},
        "sync": {"reports": [{"preserved": []}]},
        "materialized": None,
    }


def test_the_brief_separates_the_checklist_from_the_messages() -> None:
    message = "Task: t1 Send the invoice\nStatus: todo / blocker: none / risk: P0\nSuggestion: email it"
    decision = {"id": "t1", "scope": None, "risk": "P0", "message": message, "decision": "sent"}
    checklist = "# HEARTBEAT.md\n- Run hb check"
    both = brief(_ticked(f"{checklist}\n\n{message}", [message], [decision]), [])
    assert both == {
        "ok": False,
        "checklist": checklist,
        "messages": [{"task_id": "t1", "risk": "P0", "text": message}],
    }
    only_message = brief(_ticked(message, [message], [decision]), [])
    assert "checklist" not in only_message and only_message["messages"][0]["task_id"] == "t1"
    assert brief(_ticked("HEARTBEAT_OK", [], []), []) == {"ok": True}
    recurring = brief(_ticked("HEARTBEAT_OK", [], []), [{"id": "morning_briefing"}])
    assert recurring == {"ok": False, "recurring": [{"id": "morning_briefing"}]}


def test_each_message_of_the_brief_is_labelled_with_its_own_task_when_two_queues_hold_one_id(
    tmp_path: Path,
) -> None:
    """Two queues each holding a task "same" with the same title send the same text: each message
    names its own queue (both were labelled with the second's, the decisions looked up by text)."""
    with Ledger.open(workspace=tmp_path, now="2026-05-01T10:00") as ledger:
        for scope in ("_a_extension.q", "_b_extension.q"):
            ledger.add(
                "Pay rent",
                scope=scope,
                task_id="same",
                due_at="2026-05-02T10:00",
                risk="P1",
                next_action="pay it",
            )
    with Ledger.open(workspace=tmp_path, now="2026-05-04T10:00") as ledger:
        ticked = ledger.heartbeat()
    messages = brief(ticked, [])["messages"]
    assert len(messages) == 2 and messages[0]["text"] == messages[1]["text"]
    assert [(m["task_id"], m["scope"]) for m in messages] == [
        ("same", "_a_extension.q"),
        ("same", "_b_extension.q"),
    ]
    hygiene = "run hb hygiene"  # a message of the round's own, after the tasks': no task to name
    ticked["round"]["messages"].append(hygiene)
    assert brief(ticked, [])["messages"][2] == {"text": hygiene}


def test_an_unforeseen_failure_is_one_line_to_the_client_and_the_log(tmp_path: Path) -> None:
    logged: list[str] = []
    with Ledger.open(workspace=tmp_path) as ledger:
        calls = LedgerCalls(ledger, logged.append)

        def broken(_ledger: Ledger) -> dict[str, Any]:
            raise RuntimeError("boom\nat line 2")

        async def main() -> None:
            result = await calls(broken)
            assert result.is_error
            assert result.content[0].text == "internal error: RuntimeError: boom at line 2"  # type: ignore[union-attr]
            ok = await calls(lambda lg: {"tasks": lg.list()})
            assert not ok.is_error and ok.structured_content == {"tasks": []}

        try:
            anyio.run(main)
        finally:
            calls.close()
    assert logged == ["internal error: RuntimeError: boom at line 2"]


def test_a_database_error_names_the_ledger_file_on_sqlite(tmp_path: Path) -> None:
    """The database's own words (a damaged ledger, a full disk) name no file: the tool error
    names the ledger's, as the command line does."""
    logged: list[str] = []
    with Ledger.open(workspace=tmp_path) as ledger:
        calls = LedgerCalls(ledger, logged.append)

        def damaged(_ledger: Ledger) -> dict[str, Any]:
            raise sqlite3.DatabaseError("database disk image is malformed")

        async def main() -> None:
            result = await calls(damaged)
            assert result.is_error
            file = tmp_path.resolve() / ".agent" / "state" / "heartbeat.db"
            assert result.content[0].text == f"{file}: database error: database disk image is malformed"  # type: ignore[union-attr]
            # a query's own fault, not the database's: no file
            refused = await calls(lambda lg: lg.sql("SELECT nothing FROM nowhere"))
            assert refused.is_error and not refused.content[0].text.startswith(str(file))  # type: ignore[union-attr]

        try:
            anyio.run(main)
        finally:
            calls.close()
    assert logged == []


def test_an_outcome_text_json_cannot_hold_is_stored_as_text() -> None:
    """The complete tool read ``"NaN"`` or ``"1e999"`` with plain json.loads: NaN and infinity were
    stored and written to last-run.json, which no JSON reader but Python's reads. As hb complete
    --outcome: such text is ``{"result": TEXT}``; JSON text is its value; an object stays as given."""
    from heartbeat.mcp_server import outcome_of

    for text in ("NaN", "Infinity", "1e999", '{"v": -1e999}'):
        assert outcome_of(text) == {"result": text}
    assert outcome_of('{"pages": 3}') == {"pages": 3}
    assert outcome_of("done") == {"result": "done"}
    assert outcome_of({"pages": 3}) == {"pages": 3}


def test_a_ledger_file_replaced_under_the_server_is_opened_again(tmp_path: Path) -> None:
    """hb mcp holds its ledger open. A backup moved into the ledger's place (``mv heartbeat.db.bak
    heartbeat.db``) left its connection on the file that was gone: every call after it answered
    from, and wrote to, a file nobody would read again. Each call now opens the file that is
    there (checked and upgraded as on start); a removed file is a tool error until one is back."""
    import shutil

    logged: list[str] = []
    state = tmp_path / ".agent" / "state"
    ledger_file = state / "heartbeat.db"
    with Ledger.open(workspace=tmp_path) as ledger:
        ledger.add("before the backup")
        with sqlite3.connect(state / "backup.db") as copy:
            ledger.raw.backup(copy)  # (raw: SQLite's own online backup)
        copy.close()
        ledger.add("after the backup")
        calls = LedgerCalls(ledger, logged.append)

        def titles(lg: Ledger) -> dict[str, Any]:
            return {"titles": [t["title"] for t in lg.list()]}

        async def main() -> None:
            first = await calls(titles)
            assert first.structured_content == {"titles": ["before the backup", "after the backup"]}
            shutil.move(state / "backup.db", ledger_file)  # the backup restored, a new inode
            restored = await calls(lambda lg: {"id": lg.add("on the restored ledger")["id"]})
            assert not restored.is_error
            again = await calls(titles)
            assert again.structured_content == {"titles": ["before the backup", "on the restored ledger"]}
            ledger_file.rename(state / "aside.db")
            gone = await calls(titles)
            assert gone.is_error and "no ledger at" in gone.content[0].text  # type: ignore[union-attr]
            (state / "aside.db").rename(ledger_file)
            back = await calls(titles)
            assert back.structured_content == {"titles": ["before the backup", "on the restored ledger"]}

        try:
            anyio.run(main)
        finally:
            calls.close()
    # what the server wrote after the restore is in the file that is there, read by anyone
    with Ledger.open(workspace=tmp_path) as reader:
        assert [t["title"] for t in reader.list()] == ["before the backup", "on the restored ledger"]
    # each line as the log writes it, after "hb mcp: " (the prefix was there twice)
    replaced = f"{ledger_file} is another file now (replaced); opened it again"
    assert logged == [replaced, replaced]


def test_the_sql_tool_holds_the_rows_it_lists_not_the_whole_answer(tmp_path: Path) -> None:
    """The sql tool read the whole answer into memory, then listed its first ``limit`` rows: a
    query of millions of rows took gigabytes of the server's memory (and ran on past its time
    limit), where ``hb sql`` streams. The rows past the limit are now counted as they pass."""
    import tracemalloc

    from heartbeat.mcp_server import build

    rows = 100_000  # of 1,000 characters each: about 100 MB held
    query = (
        f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {rows}) "
        "SELECT x, printf('%01000d', x) AS pad FROM c"
    )
    with Ledger.open(workspace=tmp_path) as ledger:
        server, calls = build(ledger)

        async def main() -> None:
            tracemalloc.start()
            try:
                result = await server.call_tool("sql", {"query": query, "limit": 2})
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert not result.is_error  # type: ignore[union-attr]
            listed = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert [row[0] for row in listed["rows"]] == [1, 2] and listed["left_out"] == rows - 2
            assert peak < 20 << 20, f"{peak / (1 << 20):.0f} MiB"

        try:
            anyio.run(main)
        finally:
            calls.close()


def test_a_json_cell_longer_than_a_text_may_be_is_clipped_as_its_json_text() -> None:
    """PostgreSQL hands json, jsonb and array cells over as objects and lists, which were never
    clipped: one of 30,000 characters left the sql tool's answer with no rows at all, the small
    row after it left out with it. Such a cell is now its JSON text, clipped as a text is."""
    big, long = {"a": "x" * 30_000}, ["x"] * 30_000
    records = [{"j": big, "n": 1}, {"j": {"a": "small"}, "n": 2}, {"j": long, "n": 3}]
    table = table_of(["j", "n"], records, 100)
    assert table["left_out"] == 0 and [row[1] for row in table["rows"]] == [1, 2, 3]
    for (cell, _n), value in zip(table["rows"][::2], (big, long), strict=True):
        text = dumps(value)
        assert cell == text[:MAX_TEXT] + f"… [{len(text) - MAX_TEXT} more characters]"
    assert table["rows"][1][0] == {"a": "small"}  # a short one stays as it is


def test_the_sql_tool_clips_a_large_json_cell_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    from heartbeat.mcp_server import build

    query = (
        "SELECT json_build_object('a', repeat('x', 30000)) AS j, 1 AS n "
        "UNION ALL SELECT json_build_object('a', 'small'), 2 "
        "UNION ALL SELECT to_json(array_fill('x'::text, ARRAY[30000])), 3"
    )
    with Ledger.open(workspace=tmp_path, db=pg_url) as ledger:
        server, calls = build(ledger)

        async def main() -> None:
            result = await server.call_tool("sql", {"query": query})
            assert not result.is_error  # type: ignore[union-attr]
            listed = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert listed["left_out"] == 0 and [row[1] for row in listed["rows"]] == [1, 2, 3]
            assert listed["rows"][0][0].startswith('{"a":"xxx') and listed["rows"][1][0] == {"a": "small"}
            assert listed["rows"][2][0].endswith(" more characters]")

        try:
            anyio.run(main)
        finally:
            calls.close()
