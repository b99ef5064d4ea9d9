"""hb mcp over stdio, driven by the MCP SDK's own client as an agent runtime drives it."""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from heartbeat import Ledger
from tests.conftest import Runner, strict_json
from tests.mcp.conftest import (
    EXAMPLE,
    INITIALIZE,
    ROOT,
    TOOLS,
    call,
    mcp_session,
    refused,
    result_text,
    run,
    server_params,
)

NOW = "2026-05-04T08:05"  # a Monday morning in the example workspace's week (Asia/Shanghai)


@pytest.fixture
def ledger_ws(workspace: Path) -> Path:
    with Ledger.open(workspace=workspace) as ledger:
        ledger.config_set("timezone", "Asia/Shanghai")
    return workspace


@pytest.fixture
def example_ws(workspace: Path) -> Path:
    shutil.copytree(EXAMPLE, workspace, dirs_exist_ok=True)
    with Ledger.open(workspace=workspace) as ledger:
        ledger.config_set("timezone", "Asia/Shanghai")
    return workspace


def outcomes(workspace: Path, task_id: str) -> list[dict[str, object]]:
    with Ledger.open(workspace=workspace) as ledger:
        return ledger.sql(f"SELECT success, result, claim FROM outcomes WHERE task_id = '{task_id}'")


def test_the_tools_are_listed_by_their_names_with_read_only_and_idempotent_marked(ledger_ws: Path) -> None:
    async def main() -> None:
        async with mcp_session(ledger_ws) as session:
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(listed) == TOOLS
            read_only = {name for name, t in listed.items() if t.annotations and t.annotations.read_only_hint}
            assert read_only == {"ready", "due", "sql", "report"}
            idempotent = {
                name for name, t in listed.items() if t.annotations and t.annotations.idempotent_hint
            }
            assert idempotent == {"renew", "recur_due"}
            assert all(t.annotations and t.annotations.open_world_hint is False for t in listed.values())
            pop = listed["pop"].input_schema
            assert set(pop["properties"]) == {"scope", "worker", "lease", "accept_stale", "id"}
            assert listed["renew"].input_schema["required"] == ["id", "claim"]

    run(main)


def test_add_pop_renew_complete_and_a_second_complete_with_the_old_claim_is_refused(ledger_ws: Path) -> None:
    async def main() -> None:
        async with mcp_session(ledger_ws, now="2026-05-01T10:00") as session:
            added = await call(session, "add", title="Write the weekly report", priority="high", key="weekly")
            expected = {
                "title": "Write the weekly report",
                "status": "todo",
                "priority": "high",
                "key": "weekly",
            }
            assert added == {"id": added["id"], **expected}
            again = await call(session, "add", title="Write the weekly report", key="weekly")
            assert again["id"] == added["id"] and again["notices"], "an idempotent add says it found the task"

            got = await call(session, "pop", worker="agent-7", lease="10m")
            task = got["task"]
            assert task["id"] == added["id"] and task["description"] == "Write the weekly report"
            assert len(task["claim"]) == 24 and task["lease_expires_at"] == "2026-05-01T10:10:00+08:00"

            renewed = await call(session, "renew", id=task["id"], claim=task["claim"], lease="1h")
            assert renewed["lease_expires_at"] == "2026-05-01T11:00:00+08:00"
            assert renewed["claimed_by"] == "agent-7"

            done = await call(session, "complete", id=task["id"], claim=task["claim"], outcome={"pages": 3})
            assert done == {"id": task["id"], "status": "done", "claim": task["claim"]}

            text = await refused(session, "complete", id=task["id"], claim=task["claim"], outcome="again")
            assert text.startswith("not possible now: ")
            assert "this claim has ended already (the task is done); nothing changed" in text
            assert await refused(session, "renew", id=task["id"], claim=task["claim"]) == text

        assert outcomes(ledger_ws, task["id"]) == [
            {"success": 1, "result": '{"pages": 3}', "claim": task["claim"]}
        ]

    run(main)


def test_a_tool_result_writes_what_a_terminal_acts_on_as_escapes_with_the_same_value(ledger_ws: Path) -> None:
    """A title with a C1 control (U+009B acts as ESC [), DEL and a right-to-left override: the
    result's text holds each as a \\u escape, and reads back as the title itself."""
    title = "pay \x9b2J \x7f \u202eevil\u202c done"

    async def main() -> None:
        async with mcp_session(ledger_ws, now="2026-05-01T10:00") as session:
            assert (await call(session, "add", title=title))["title"] == title
            text = await result_text(session, "pop", worker="agent-7")
            assert "\x9b" not in text and "\x7f" not in text and "\u202e" not in text
            assert "\\u009b2J \\u007f \\u202eevil\\u202c" in text
            assert json.loads(text)["task"]["description"] == title

    run(main)


def test_a_claim_taken_over_by_another_worker_is_lost_for_its_old_holder(ledger_ws: Path) -> None:
    with Ledger.open(workspace=ledger_ws) as ledger:
        task_id = ledger.add("Summarise the survey")["id"]

    async def main() -> None:
        async with mcp_session(ledger_ws, now="2026-05-01T10:00") as session:
            old = (await call(session, "pop", worker="agent-1", lease="5m"))["task"]["claim"]
            # an hour later the lease is long gone: another worker takes the task over
            with Ledger.open(workspace=ledger_ws, now="2026-05-01T11:00") as ledger:
                newer = ledger.pop(worker="agent-2", accept_stale=True)
            assert newer is not None and newer["claim"] != old
            for tool, extra in (("complete", {"outcome": "late"}), ("fail", {"reason": "x"}), ("renew", {})):
                text = await refused(session, tool, id=task_id, claim=old, **extra)
                assert text.startswith("claim lost: ") and "held by agent-2 under a newer claim" in text
                assert text.endswith("nothing changed")

        assert outcomes(ledger_ws, task_id) == []
        with Ledger.open(workspace=ledger_ws) as ledger:
            assert ledger.get(task_id)["claim"] == newer["claim"]

    run(main)


def test_heartbeat_on_the_example_workspace_returns_the_brief(example_ws: Path) -> None:
    async def main() -> None:
        async with mcp_session(example_ws, now=NOW) as session:
            await call(
                session, "add", title="Send the invoice", due="2026-05-04T07:00", next_action="email the PDF"
            )
            brief = await call(session, "heartbeat")
            assert brief["ok"] is False
            assert (
                brief["checklist"].startswith("# HEARTBEAT.md\n")
                and "## Every heartbeat" in brief["checklist"]
            )
            invoice = next(m for m in brief["messages"] if "task_id" in m)
            assert invoice["risk"] == "P0" and invoice["text"].startswith(f"Task: {invoice['task_id']} Send")
            assert {"text": "memory hygiene due"} in brief["messages"]
            assert [r["id"] for r in brief["recurring"]] == ["morning_briefing"]
            assert brief["recurring"][0]["period"] == "2026-05-04"
            assert any(w.endswith("TODO.md:11: unknown key Craeted") for w in brief["warnings"])

            # the reminder went out once: the repeat window holds it back on the next tick
            again = await call(session, "heartbeat")
            assert not any("task_id" in m for m in again.get("messages", []))

    run(main)
    # the tick synced the example's files into the ledger, as hb heartbeat does
    with Ledger.open(workspace=example_ws) as ledger:
        assert {r["id"] for r in ledger.recur_list()} >= {"morning_briefing", "renewal_watch"}


def test_heartbeat_with_nothing_to_do_or_say_is_ok_true(ledger_ws: Path) -> None:
    async def main() -> None:
        async with mcp_session(ledger_ws, now=NOW) as session:
            assert await call(session, "heartbeat") == {"ok": True}

    run(main)


def test_heartbeat_takes_the_workspace_guard_and_the_server_carries_on_when_busy(ledger_ws: Path) -> None:
    async def main() -> None:
        async with mcp_session(ledger_ws, now=NOW) as session:
            with Ledger.open(workspace=ledger_ws) as holder, holder.guard("heartbeat"):
                text = await refused(session, "heartbeat")
            assert text.startswith("busy: ")
            assert await call(session, "heartbeat") == {"ok": True}

    run(main)


def test_sql_refuses_a_write_and_reads_with_a_row_limit(ledger_ws: Path) -> None:
    with Ledger.open(workspace=ledger_ws) as ledger:
        for i in range(5):
            ledger.add(f"job {i}")

    async def main() -> None:
        async with mcp_session(ledger_ws) as session:
            for statement in ("DELETE FROM tasks", "UPDATE tasks SET title = 'x'", "DROP TABLE tasks"):
                text = await refused(session, "sql", query=statement)
                assert text.startswith("sql: ") and "readonly" in text.replace("-", "").replace(" ", "")
            rows = await call(session, "sql", query="SELECT title FROM tasks ORDER BY title", limit=3)
            assert rows == {"columns": ["title"], "rows": [["job 0"], ["job 1"], ["job 2"]], "left_out": 2}

    run(main)
    with Ledger.open(workspace=ledger_ws) as ledger:
        assert len(ledger.list()) == 5


def test_queue_errors_are_tool_errors_that_say_what_they_mean(ledger_ws: Path) -> None:
    with Ledger.open(workspace=ledger_ws, now="2026-05-01T09:00") as ledger:
        ledger.add("legacy job")
        ledger.add("first", scope="_ops_extension.build", task_id="b1")
        ledger.add("second", scope="_ops_extension.build", task_id="b2")
        ledger.pop(scope="_ops_extension.build", worker="gone", lease="5m")

    async def main() -> None:
        async with mcp_session(ledger_ws, now="2026-05-01T10:00") as session:
            assert (await refused(session, "pop")).startswith("choose a scope: scoped queues exist")
            assert (await refused(session, "pop", scope="_ops_extension.nope")).startswith("no such scope: ")
            stale = await refused(session, "pop", scope="_ops_extension.build")
            assert stale.startswith("stale claims: 1 stale in-progress task(s): b1")
            adopted = await call(session, "pop", scope="_ops_extension.build", accept_stale=True)
            assert adopted["task"]["id"] == "b1" and adopted["task"]["scope"] == "_ops_extension.build"
            second = await call(session, "pop", scope="_ops_extension.build")
            assert second["task"]["id"] == "b2"
            exhausted = await call(session, "pop", scope="_ops_extension.build")
            assert exhausted["task"] is None and exhausted["reason"].startswith(
                "scope exhausted: queue _ops_extension.build"
            )
            assert (await call(session, "pop", scope=""))["task"]["description"] == "legacy job"
            assert await call(session, "pop", scope="") == {"task": None, "reason": "no pending tasks"}
            assert (await refused(session, "complete", id="nope")).startswith(
                "not found: no task with id 'nope'"
            )
            assert (await refused(session, "pop", scope="", lease="soon")).startswith(
                "invalid input: bad --lease"
            )
            # arguments the type hints refuse never reach the ledger
            for tool, arguments in (
                ("ready", {"limit": 0}),
                ("add", {"title": "x", "priority": "urgent"}),
                ("complete", {}),
                ("fail", {"id": "b1", "final": "maybe"}),
            ):
                assert "validation error" in await refused(session, tool, **arguments)
            assert (await call(session, "ready", scope="_ops_extension.build", explain=True))["left_out"] == 0

    run(main)


def test_arguments_of_the_wrong_type_are_one_line_naming_the_argument_and_change_nothing(
    ledger_ws: Path,
) -> None:
    with Ledger.open(workspace=ledger_ws) as ledger:
        task_id = ledger.add("Keep me as I am")["id"]

    async def main() -> None:
        async with mcp_session(ledger_ws) as session:
            for tool, arguments, expected in (
                ("add", {"title": None}, "title: Input should be a valid string (got null)"),
                ("add", {"title": {"a": 1}}, "title: Input should be a valid string (got object)"),
                ("add", {"title": "x", "after": "a1"}, "after: Input should be a valid list (got string)"),
                ("complete", {}, "id: Field required"),
                (
                    "complete",
                    {"id": task_id, "outcome": [1, 2]},
                    "outcome: Input should be a valid dictionary or Input should be a valid string"
                    " (got array)",
                ),
                ("ready", {"limit": -1}, "limit: Input should be greater than or equal to 1"),
                ("fail", {"id": task_id, "final": "maybe"}, "final: Input should be a valid boolean"),
            ):
                text = await refused(session, tool, **arguments)
                assert text.startswith(f"invalid input: {tool}: validation error: {expected}"), text
                assert "\n" not in text and "pydantic" not in text and "maybe" not in text
            assert [t["id"] for t in (await call(session, "ready"))["tasks"]] == [task_id]

    run(main)
    with Ledger.open(workspace=ledger_ws) as ledger:
        assert ledger.sql("SELECT id, status FROM tasks") == [{"id": task_id, "status": "todo"}]


def test_fail_retries_then_fails_and_ready_due_explain(ledger_ws: Path) -> None:
    with Ledger.open(workspace=ledger_ws, now="2026-05-01T09:00") as ledger:
        flaky = ledger.add("Call the API", next_action="retry with backoff", due_at="2026-05-01T09:30")["id"]
        ledger.add("Deploy", after=[flaky], task_id="deploy")

    async def main() -> None:
        async with mcp_session(ledger_ws, now="2026-05-01T10:00") as session:
            explained = await call(session, "ready", explain=True)
            assert [(t["id"], t["ready"]) for t in explained["tasks"]] == [(flaky, True), ("deploy", False)]
            assert explained["tasks"][1]["reasons"] == ["waiting_for"]
            assert explained["tasks"][1]["waiting_for"] == [flaky]

            due = await call(session, "due")
            assert due["tasks"][0]["id"] == flaky and due["tasks"][0]["reasons"] == ["overdue"]
            assert due["tasks"][0]["next_action"] == "retry with backoff"

            claim = (await call(session, "pop"))["task"]["claim"]
            failed = await call(session, "fail", id=flaky, claim=claim, reason="503")
            assert failed == {"id": flaky, "status": "todo", "attempts": 1, "retry": True, "claim": claim}
            claim = (await call(session, "pop"))["task"]["claim"]
            final = await call(session, "fail", id=flaky, claim=claim, reason="410 gone", final=True)
            assert (final["status"], final["retry"]) == ("failed", False)

            failures = await call(session, "report", kind="failures", by="reason")
            assert (failures["report"], failures["by"]) == ("failures", "reason")
            at = failures["columns"].index("reason")
            assert sorted(row[at] for row in failures["rows"]) == ["410 gone", "503"]

    run(main)


def test_notify_and_proactive_decide_and_a_suppression_is_an_answer_not_an_error(example_ws: Path) -> None:
    async def main() -> None:
        async with mcp_session(example_ws, now=NOW) as session:
            await call(session, "heartbeat")  # the example's files into the ledger
            task = await call(session, "add", title="Renew the passport", next_action="book the appointment")
            sent = await call(session, "notify", id=task["id"], risk="P1", reason="expires in May")
            assert sent["decision"] == "sent" and "reason" not in sent
            assert sent["message"].startswith(f"Task: {task['id']} Renew the passport")
            held = await call(session, "notify", id=task["id"], risk="P1")
            assert (held["decision"], held["reason"]) == ("suppressed", "repeat_window")

            # the user spoke at 22:40 last night and the last proactive message was at 10:15 yesterday
            proactive = await call(session, "proactive", topic="passport", suggestion="book it today")
            assert proactive == {"decision": "sent", "message": proactive["message"], "sent_today": 1}
            again = await call(session, "proactive", topic="passport", suggestion="book it today")
            assert again["decision"] == "suppressed" and again["reason"] in ("daily_cap", "min_gap")

    run(main)


def test_recur_due_hands_out_once_per_period_and_recur_outcome_records_the_run(example_ws: Path) -> None:
    async def main() -> None:
        async with mcp_session(example_ws, now=NOW) as session:
            await call(session, "heartbeat")
            taken = await call(session, "recur_due", claim=True)
            assert [r["id"] for r in taken["rules"]] == ["morning_briefing"] and taken["left_out"] == 0
            assert (await call(session, "recur_due", claim=True))["rules"] == []
            recorded = await call(session, "recur_outcome", id="morning_briefing", result="sent the briefing")
            assert recorded == {
                "id": "morning_briefing",
                "run_count": 13,
                "last_run_at": "2026-05-04T08:05:00+08:00",
            }
            assert (await refused(session, "recur_outcome", id="nope", result="x")).startswith("not found: ")

    run(main)


def test_the_server_survives_an_unforeseen_failure_with_one_line(ledger_ws: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"

    async def main() -> None:
        async with mcp_session(ledger_ws, stderr=log) as session:
            # a statement SQLite cannot even parse: the database's refusal, in one line
            text = await refused(session, "sql", query="SELEC nothing")
            assert text.startswith("sql: ") and "\n" not in text
            assert (await call(session, "ready"))["tasks"] == []

    run(main)
    assert "Traceback" not in log.read_text()


def _whole(digits: str) -> int | str:
    """json.loads' ``parse_int``: a short integer, or a long one kept as its digits."""
    return int(digits) if len(digits) < 20 else digits


def test_a_request_the_sdk_cannot_parse_gets_an_error_answer_with_its_id_and_nothing_changes(
    ledger_ws: Path, tmp_path: Path
) -> None:
    """Valid JSON the SDK's parser refuses (nested past its depth limit, a lone surrogate
    escape) used to be dropped unanswered: the client waited for ever."""
    params = server_params(ledger_ws)
    deep = '{"a":' * 300 + "1" + "}" * 300
    big_id = "1" + "0" * 4400
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        '"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"complete",'
        f'"arguments":{{"id":"nope","outcome":{deep}}}}}}}',
        '{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"add",'
        '"arguments":{"title":"a\\ud800b"}}}',
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":' + deep + "}",
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ready","arguments":{}}}',
        # past Python's own json too (about 1,000 levels): the id, after the value, is still found
        '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"ready","arguments":{"x":'
        + "[" * 5000
        + '"]}\\\\"'
        + "]" * 5000
        + '}},"id":5}',
        # a number past the 4,300 digits Python and the SDK read: in the arguments, as the id
        '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ready","arguments":{"limit":'
        + "9" * 5000
        + "}}}",
        '{"jsonrpc":"2.0","id":-' + big_id + ',"method":"tools/list"}',
        # JSON with a method and an id that is not a JSON-RPC 2.0 request: Invalid Request
        '{"jsonrpc":"1.0","id":7,"method":"tools/list"}',
        '{"jsonrpc":"2.0","id":"eight","method":5}',
        '{"id":9,"method":"tools/list"}',
        # an id MCP does not take (JSON-RPC answers a request it cannot tell by its id with id
        # null): the SDK read each as a notification and answered nothing
        '{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
        '{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"add","arguments":{"title":"t"}}}',
        '{"jsonrpc":"2.0","method":"ping","id":true}',
        '{"jsonrpc":"2.0","id":[10],"method":"ping"}',
        # no id to answer with: a batch (MCP has none), null, not JSON; a blank line is skipped
        '[{"jsonrpc":"2.0","id":11,"method":"ping"}]',
        "null",
        "{nope",
        "",
        # an id that only looks odd inside a text: a request as any other
        '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"ready","arguments":{"scope":'
        '"\\"id\\": null"}}}',
    ]
    log = tmp_path / "server.log"
    with log.open("w") as errors:
        server = subprocess.Popen(
            [params.command, *params.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=params.env,
            text=True,
        )
        assert server.stdin is not None and server.stdout is not None
        answers: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: [answers.put(line) for line in server.stdout], daemon=True)
        reader.start()
        try:
            server.stdin.write("\n".join(lines) + "\n")
            server.stdin.flush()
            # queue.Empty: one unanswered (the big id read without int()'s 4,300-digit limit)
            got = [json.loads(answers.get(timeout=30), parse_int=_whole) for _ in range(19)]
        finally:
            server.stdin.close()
            server.wait(timeout=30)
            reader.join(timeout=30)
            server.stdout.close()
    answered = {answer["id"]: answer for answer in got if answer["id"] is not None}
    big = "-" + big_id
    assert sorted(answered, key=str) == [big, 1, 12, 2, 4, 5, 6, 7, 9, "eight", "three"]
    # in the order sent: the deep notification, the four odd ids, the batch, null, not JSON
    unanswerable = [answer["error"] for answer in got if answer["id"] is None]
    assert [error["code"] for error in unanswerable] == [-32700] + [-32600] * 6 + [-32700]
    assert "nested deeper than" in unanswerable[0]["message"]
    assert [error["message"].split("its id is ")[-1] for error in unanswerable[1:5]] == [
        "null; give a string or an integer",
        "a number with a fraction or an exponent; give a string or an integer",
        "a boolean; give a string or an integer",
        "an array; give a string or an integer",
    ]
    assert unanswerable[7]["message"] == "cannot read this request: not JSON"
    for request_id in (2, 5, 6, big, "three"):
        error = answered[request_id]["error"]
        assert error["code"] == -32700 and "\n" not in error["message"]
        assert error["message"].startswith("cannot read this request: "), error["message"]
    assert "nested deeper than" in answered[2]["error"]["message"]
    assert "nested deeper than" in answered[5]["error"]["message"]
    assert "surrogate" in answered["three"]["error"]["message"]
    assert answered[6]["error"]["message"].endswith("a number of more than 4,300 digits")
    assert answered[big]["error"]["message"].endswith("a number of more than 4,300 digits")
    for request_id, reason in ((7, '"jsonrpc" member is not "2.0"'), ("eight", '"method" is not a string')):
        error = answered[request_id]["error"]
        assert error == {"code": -32600, "message": f"not a JSON-RPC 2.0 request: its {reason}"}
    assert answered[9]["error"]["code"] == -32600
    assert answered[4]["result"]["structuredContent"] == {"tasks": [], "left_out": 0}
    assert answered[12]["result"]["content"][0]["text"].startswith("no such scope: --scope '\"id\": null'")
    assert "Traceback" not in log.read_text()
    with Ledger.open(workspace=ledger_ws) as ledger:  # the add under id 1.5 never ran
        assert ledger.list() == []


def test_a_closed_standard_input_is_a_usage_error_and_opens_no_ledger(tmp_path: Path) -> None:
    """``hb mcp <&-`` (a launcher that closed it) was exit 70, an AttributeError."""
    import os

    params = server_params(tmp_path / "ws")
    done = subprocess.run(
        [params.command, *params.args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=params.env,
        timeout=60,
        preexec_fn=lambda: os.close(0),
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: standard input is closed: hb mcp speaks MCP over stdio (or give --http)"
    )
    assert done.stdout == "" and not (tmp_path / "ws" / ".agent").exists()


def test_without_the_mcp_extra_hb_mcp_exits_1_naming_the_extra(ledger_ws: Path) -> None:
    script = (
        "import sys; sys.modules['mcp'] = None\n"  # the SDK is not installed: its import fails
        "from heartbeat.cli.main import main\n"
        f"main(['--workspace', {str(ledger_ws)!r}, 'mcp'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "hb: hb mcp needs the MCP SDK, an optional extra: pip install 'hb-ledger[mcp]'"
    ]


def test_http_options_without_http_are_a_usage_error(hb: Runner, ledger_ws: Path) -> None:
    result = hb("mcp", "--port", "9999", code=2)
    assert "--host, --port and --token-file go with --http" in result.stderr


def test_add_echoes_a_long_title_clipped_and_pop_hands_it_out_whole(ledger_ws: Path) -> None:
    """add's result echoed the whole title (5 MB for a 5 MB title); the caller has it already."""
    from heartbeat.mcp_server import MAX_TEXT

    title = " ".join(["word"] * 20_000)

    async def main() -> None:
        async with mcp_session(ledger_ws, now="2026-05-01T10:00") as session:
            added = await call(session, "add", title=title)
            assert added["title"] == title[:MAX_TEXT] + f"… [{len(title) - MAX_TEXT} more characters]"
            got = await call(session, "pop")
            assert got["task"]["description"] == title

    run(main)


def test_pop_returns_a_number_json_cannot_hold_as_its_string(ledger_ws: Path) -> None:
    """A tasks.json field ``1e999`` (infinity to Python) reaches the agent as "Infinity", in the
    text and in the structured result alike, as ``hb pop`` prints it."""
    state = ledger_ws / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    (state / "tasks.json").write_text(
        '{"pending": [{"id": "t1", "description": "one", "weight": 1e999, "spread": [-1e999, NaN]}]}\n'
    )
    with Ledger.open(workspace=ledger_ws) as ledger:
        ledger.sync()

    async def main() -> None:
        async with mcp_session(ledger_ws) as session:
            result = await session.call_tool("pop", {})
            assert not result.is_error, result.content
            text = result.content[0].text  # type: ignore[union-attr]
            task = strict_json(text)["task"]
            assert (task["id"], task["weight"], task["spread"]) == ("t1", "Infinity", ["-Infinity", "NaN"])
            assert result.structured_content == strict_json(text)

    run(main)


def test_pop_hands_out_hbs_id_and_scope_and_keeps_the_tasks_own_of_those_names_under_own(
    ledger_ws: Path,
) -> None:
    """A scoped entry with fields of its own named id and scope (a tracker's key, a team) was
    handed out with those in place of hb's: id 'GH-17', scope 'backend', and complete with them
    failed ("no such scope"). The id and scope are hb's, what complete takes; the task's own
    values of those names are under "own"; a legacy task's own scope too."""
    state = ledger_ws / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    entry = {"task_id": "s1", "order": 1, "id": "GH-17", "scope": "backend"}
    legacy = {"id": "t1", "description": "legacy", "scope": "frontend", "own": 1, "claim": "x"}
    tasks = {"pending": [legacy], "in_progress": [], "completed": [], "failed": []}
    (state / "tasks.json").write_text(json.dumps({**tasks, "_b_extension": {"q": [entry]}}))
    with Ledger.open(workspace=ledger_ws) as ledger:
        ledger.sync()

    async def main() -> None:
        async with mcp_session(ledger_ws, now="2026-05-01T10:00") as session:
            task = (await call(session, "pop", scope="_b_extension.q"))["task"]
            assert (task["id"], task["scope"], task["task_id"]) == ("s1", "_b_extension.q", "s1")
            assert task["own"] == {"id": "GH-17", "scope": "backend"} and task["order"] == 1
            done = await call(session, "complete", id=task["id"], scope=task["scope"], claim=task["claim"])
            assert (done["id"], done["scope"], done["status"]) == ("s1", "_b_extension.q", "done")

            task = (await call(session, "pop", scope=""))["task"]
            assert (task["id"], task["description"]) == ("t1", "legacy") and "scope" not in task
            assert task["own"] == {"scope": "frontend", "claim": "x", "own": 1}
            assert len(task["claim"]) == 24
            done = await call(session, "complete", id=task["id"], claim=task["claim"])
            assert (done["id"], done["status"]) == ("t1", "done")

    run(main)


def test_a_nul_in_a_tool_argument_is_invalid_input_naming_it_on_both_backends(
    workspace: Path, db_url: str
) -> None:
    """An agent's JSON can carry "\\u0000": PostgreSQL answered "database error" naming nothing,
    SQLite stored the worker or the reason with it. Both refuse it now, and nothing changes."""
    from tests.conftest import every_row

    with Ledger.open(workspace=workspace, db=db_url) as ledger:
        task_id = ledger.add("Keep me as I am")["id"]
    rows = every_row(db_url)
    tail = "which the ledger does not store; nothing changed"

    async def main() -> None:
        async with mcp_session(workspace, db=db_url) as session:
            for tool, arguments, expected in (
                ("pop", {"worker": "agent\x00"}, "worker holds a NUL character (at 6)"),
                ("complete", {"id": task_id + "\x00"}, "task id holds a NUL character (at 14)"),
                ("fail", {"id": task_id, "reason": "\x00"}, "reason holds a NUL character (at 1)"),
                ("add", {"title": "a\x00b"}, "title holds a NUL character (at 2)"),
                ("ready", {"scope": "_a_extension.\x00"}, "scope holds a NUL character (at 14)"),
                ("sql", {"query": "SELECT 1 -- \x00"}, "query holds a NUL character (at 13)"),
            ):
                text = await refused(session, tool, **arguments)
                assert text == f"invalid input: {expected}, {tail}", text

    run(main)
    assert every_row(db_url) == rows


def test_an_unknown_prompt_is_invalid_params_naming_it_and_logs_nothing(
    ledger_ws: Path, tmp_path: Path
) -> None:
    """hb offers no prompts: ``prompts/get`` answered code 0 and logged two tracebacks, each
    repeating the name as sent (10 KB of a client's text per request in the server's log)."""
    from mcp.shared.exceptions import MCPError

    log = tmp_path / "server.log"

    async def main() -> None:
        async with mcp_session(ledger_ws, stderr=log) as session:
            with pytest.raises(MCPError) as caught:
                await session.get_prompt("x" * 10_000)
            assert caught.value.error.code == -32602
            message = caught.value.error.message
            assert message.startswith("unknown prompt 'xxx") and message.endswith("': hb offers no prompts")
            assert len(message) < 200
            assert (await call(session, "ready"))["tasks"] == []  # and it serves on

    run(main)
    assert log.read_text() == ""


def test_the_sql_tool_takes_no_longer_timeout_than_the_setting(ledger_ws: Path) -> None:
    """The server's calls take turns on one ledger: a client that asked for a 100-year timeout
    held every other client's calls behind its query as long as it ran."""

    async def main() -> None:
        async with mcp_session(ledger_ws) as session:
            text = await refused(session, "sql", query="SELECT 1 AS one", timeout="1h")
            assert text == (
                "invalid input: timeout 1h is past the setting sql.timeout (30s), the most a client "
                "of hb mcp may ask for: the server's calls take turns"
            )
            assert (await call(session, "sql", query="SELECT 1 AS one", timeout="5s"))["rows"] == [[1]]
            assert (await call(session, "sql", query="SELECT 1 AS one", timeout="30s"))["rows"] == [[1]]

    run(main)


@contextmanager
def _serving(workspace: Path, db: str | None = None, **streams: object) -> Iterator[subprocess.Popen[bytes]]:
    """``hb mcp`` as a client launches it (its standard input a pipe the test holds open),
    killed if it still runs afterwards, its pipes closed."""
    params = server_params(workspace, db)
    options: dict[str, object] = {
        "stdin": subprocess.PIPE,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
    }
    proc = subprocess.Popen([params.command, *params.args], env=params.env, **{**options, **streams})  # type: ignore[call-overload]
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(20)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):  # (a pipe whose reader is gone)
                    stream.close()


def _ended(proc: subprocess.Popen[bytes]) -> tuple[int | None, str]:
    """The server's exit code within 20 s (None: it was still running, then killed) and its
    standard error."""
    try:
        code: int | None = proc.wait(20)
    except subprocess.TimeoutExpired:
        code = None
        proc.kill()
        proc.wait(20)
    assert proc.stderr is not None
    return code, proc.stderr.read().decode()


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (
            "SIGINT",
            130,
            "hb: interrupted: stopped before it finished (what it had not committed was rolled back)",
        ),
        ("SIGTERM", 0, "hb mcp: stopped"),
    ],
)
def test_a_signal_stops_a_serving_server_while_its_client_keeps_the_input_open(
    ledger_ws: Path, signum: str, code: int, said: str
) -> None:
    """Ctrl-C stopped the server only once the client closed its input (a thread reading it was
    waited for), then exit 0; SIGTERM killed it where it stood. Both stop it now: Ctrl-C as any
    command's (exit 130), SIGTERM as hb serve's (exit 0)."""
    import signal

    with _serving(ledger_ws) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving
        proc.send_signal(getattr(signal, signum))
        ended, log = _ended(proc)
    assert ended == code, log
    assert log.strip().splitlines() == [said]


def test_ctrl_c_cancels_a_running_sql_call_and_exits_130_at_once_on_both_backends(
    workspace: Path, db_url: str
) -> None:
    """Ctrl-C while the sql tool ran a long query waited for the query's time limit (exit 130
    after 29 s of the 30 s default): the call ran on the server's ledger thread, where hb sql's
    Ctrl-C handling does not reach. The query is cancelled (SQLite interrupted, PostgreSQL told)
    and the server exits 130 at once."""
    import signal
    import time

    with Ledger.open(workspace=workspace, db=db_url):
        pass
    endless = "with recursive r(n) as (select 1 union all select n + 1 from r) select count(*) from r"
    with _serving(workspace, db_url) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for message in (
            INITIALIZE,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "sql", "arguments": {"query": endless}},
            },
        ):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving
        time.sleep(1.5)  # the query runs
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        ended, log = _ended(proc)
        took = time.monotonic() - started
    assert ended == 130, log
    assert took < 5, f"stopped after {took:.1f} s"
    assert log.strip().splitlines() == [
        "hb: interrupted: stopped before it finished (what it had not committed was rolled back)"
    ]


def test_a_client_gone_from_the_output_ends_the_server_quietly_with_141(ledger_ws: Path) -> None:
    """A client that went away (its end of standard output closed) while its input stays open:
    the server's answer met EPIPE, which the SDK raised out of its task group, and the server
    waited for the input to close, then exited 70 (internal error: ExceptionGroup). It ends at
    once now, as any command whose reader stopped reading: exit 141, nothing said."""
    with _serving(ledger_ws) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdout.close()
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        ended, log = _ended(proc)
    assert (ended, log) == (141, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_standard_output_that_cannot_be_written_is_exit_74_in_one_line(ledger_ws: Path) -> None:
    """``hb mcp > /dev/full`` was exit 70 (internal error: ExceptionGroup); now as any command."""
    with open("/dev/full", "wb") as full, _serving(ledger_ws, stdout=full) as proc:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        ended, log = _ended(proc)
    assert ended == 74
    assert log.strip().splitlines() == ["hb: cannot write standard output: No space left on device"]


def test_a_closed_standard_output_is_exit_74_and_opens_no_ledger(tmp_path: Path) -> None:
    """``hb mcp >&-``: hb's start points descriptor 1 at /dev/null, so the server answered into it
    and exited 0 when the client left. It is refused before the ledger is opened, as README's
    exit 74 says for an output the caller closed."""
    import os

    params = server_params(tmp_path / "ws")
    done = subprocess.run(
        [params.command, *params.args],
        input=json.dumps(INITIALIZE) + "\n",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=params.env,
        timeout=60,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 74, done.stderr
    assert done.stderr.strip().splitlines() == [
        "hb: cannot write standard output: it was closed when hb started; hb mcp speaks MCP over "
        "stdio (or give --http)"
    ]
    assert not (tmp_path / "ws" / ".agent").exists()
