"""hb heartbeat: one tick — guard, sync, materialise, round, export, run record, brief (SPEC.md 7)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.round.conftest import decisions, runs, write

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "workspace"
NOW = "2026-05-04T09:30"  # Asia/Shanghai, a Monday


@pytest.fixture
def example(sh: Runner, workspace: Path) -> Runner:
    """The example workspace, copied, in Shanghai time."""
    shutil.copytree(EXAMPLE, workspace, dirs_exist_ok=True)
    return sh


def test_example_workspace_brief_is_the_checklist_plus_hygiene(example: Runner, workspace: Path) -> None:
    checklist = (workspace / "HEARTBEAT.md").read_text()
    todo_before = (workspace / "TODO.md").read_bytes()
    result = example("--now", NOW, "heartbeat")
    assert result.stdout == checklist.strip() + "\n\nmemory hygiene due\n"
    assert f"{workspace / 'TODO.md'}:11: unknown key Craeted" in result.stderr  # kept, and said so
    assert (workspace / "TODO.md").read_bytes() == todo_before
    # the sync brought everything in; the state file's limits became settings
    titles = {t["title"] for t in example.json("list")}
    assert "Renew the domain name before 2026-05-10 (registrar: Gandi)." in titles
    assert "Deep research the current state of local LLM orchestration." in titles
    assert example("config", "get", "proactive.enabled").stdout.strip() == "true"
    # the export moved the scan watermark in heartbeat-state.json, in place
    state = (workspace / "memory" / "heartbeat-state.json").read_text()
    assert (
        '"todoWatch": {"lastScanAt": "2026-05-04T09:30:00+08:00", "nextScanAt": "2026-05-04T10:30:00+08:00"}'
        in state
    )
    assert '"lastChecks": {"email": 1777852800, "calendar": 1777852800}' in state
    [run] = runs(example, "heartbeat")
    assert (run["status"], run["guard"]) == ("ok", None)
    assert run["detail"]["checklist"] is True and run["detail"]["checked"] == 0
    # hygiene done: the checklist alone
    example("--now", "2026-05-04T09:35", "hygiene", "done")
    assert example("--now", "2026-05-04T09:40", "heartbeat").stdout == checklist.strip() + "\n"


def test_periodic_tasks_come_due_by_their_intervals_as_openclaw_gives_them(
    sh: Runner, workspace: Path
) -> None:
    """OpenClaw 2026.6's tasks: block: a task never run is due; then once its interval has passed
    since the tick that gave it out. While none is due the checklist is not given at all (OpenClaw
    makes no model call), and with one due, the rest of the file comes after the tasks due."""
    write(
        workspace / "HEARTBEAT.md",
        "# Checks\n\ntasks:\n  - name: inbox\n    interval: 2h\n    prompt: Check the inbox\n"
        "  - name: build\n    interval: 30m\n    prompt: Check the build\n\nBe brief.\n",
    )
    head = "Run the following periodic tasks (only those due based on their intervals):\n\n"
    both = head + "- inbox: Check the inbox\n- build: Check the build\n\n# Checks\n\nBe brief.\n"
    build = head + "- build: Check the build\n\n# Checks\n\nBe brief.\n"
    ok = "HEARTBEAT_OK\n"
    ticks = {"09:00": both, "09:20": ok, "09:30": build, "09:59": ok, "11:00": both}
    for at, brief in ticks.items():
        assert sh("--now", f"2026-05-04T{at}", "heartbeat").stdout == brief, at
    details = [run["detail"] for run in runs(sh, "heartbeat")]
    assert [d["periodic_due"] for d in details] == [["inbox", "build"], [], ["build"], [], ["inbox", "build"]]
    assert [d["checklist"] for d in details] == [True, False, True, False, True]


def test_a_comment_opened_after_text_hides_no_instruction(sh: Runner, workspace: Path) -> None:
    """``<!--`` after a heading's text opens no comment for OpenClaw (nor for mistermorph, which
    needs its ``-->``): the instruction below it is the checklist. hb took the rest of the file for
    a comment and answered HEARTBEAT_OK, so the agent never checked the inbox."""
    checklist = "# Checks <!-- todo: tidy\n\nCheck the inbox for invoices.\n"
    write(workspace / "HEARTBEAT.md", checklist)
    result = sh("--now", "2026-05-01T10:00", "heartbeat")
    assert result.stdout == checklist.strip() + "\n"
    [run] = runs(sh, "heartbeat")
    assert run["detail"]["checklist"] is True


@pytest.mark.parametrize(
    "checklist",
    [
        None,
        "",
        "# HEARTBEAT.md\n\n## Every heartbeat\n- \n- [ ]\n* [x]\n<!-- nothing to do\n     for now -->\n",
        "\ufeff# HEARTBEAT.md\n",  # a byte order mark is no content
        "```markdown\n# Keep this file empty to skip heartbeats.\n```\n",  # OpenClaw's fenced template
    ],
)
def test_effectively_empty_checklist_and_nothing_to_send_is_heartbeat_ok(
    sh: Runner, workspace: Path, checklist: str | None
) -> None:
    if checklist is not None:
        write(workspace / "HEARTBEAT.md", checklist)
    add = sh("--now", "2026-05-01T08:00", "add", "Routine", "--next-check", "2026-05-01T09:00")
    result = sh("--now", "2026-05-01T10:00", "heartbeat")
    assert result.stdout == "HEARTBEAT_OK\n"
    task = sh.json("show", add.stdout.strip())
    assert task["last_checked_at"] == "2026-05-01T10:00:00+08:00"  # the round ran
    [run] = runs(sh, "heartbeat")
    assert run["detail"]["checklist"] is False


def test_a_heartbeat_md_that_is_a_directory_is_no_checklist_and_says_so(sh: Runner, workspace: Path) -> None:
    """Read as no checklist, as a missing file is; it was so without a word."""
    (workspace / "HEARTBEAT.md").mkdir()
    result = sh("--now", "2026-05-01T10:00", "heartbeat")
    assert result.stdout == "HEARTBEAT_OK\n"
    assert f"{workspace / 'HEARTBEAT.md'}: a directory, not a file: no checklist read" in result.stderr


@pytest.mark.parametrize(
    ("data", "shown", "where"),
    [
        (
            b"# Checks\n- check \xff mail\n",
            "# Checks\n- check \ufffd mail\n",
            "2:9: not UTF-8 text (byte 17)",
        ),
        (b"# Checks\n\xc3\n", "\ufffd", "2:1: not UTF-8 text (byte 9)"),  # a lone byte is content
    ],
)
def test_a_byte_that_is_not_utf8_in_heartbeat_md_is_read_as_openclaw_reads_it(
    sh: Runner, workspace: Path, data: bytes, shown: str, where: str
) -> None:
    """OpenClaw's readFile(..., "utf-8") reads it as U+FFFD, mistermorph reads the bytes: the
    checklist stands. hb stopped the heartbeat (exit 1) for one byte of a file it only reads."""
    (workspace / "HEARTBEAT.md").write_bytes(data)
    result = sh("--now", "2026-05-01T10:00", "heartbeat")
    assert shown in result.stdout
    [warning] = [line for line in result.stderr.splitlines() if "not UTF-8" in line]
    assert warning.endswith(f"{workspace / 'HEARTBEAT.md'}:{where}: read as U+FFFD, as OpenClaw reads it")
    assert (workspace / "HEARTBEAT.md").read_bytes() == data


def test_reminder_for_a_todo_entry_follows_the_checklist(sh_db: Runner, workspace: Path) -> None:
    write(workspace / "HEARTBEAT.md", "# Checklist\n- Look at TODO.md.\n")
    write(
        workspace / "TODO.md",
        "# TODO Work In Progress (WIP)\n\n"
        "- [ ] [Created](2026-05-01 01:00), [ChatID](tg:-100123) | Renew the passport.\n",
    )
    sh_db("--now", "2026-05-01T09:00", "sync")
    [task] = sh_db.json("list")
    sh_db(
        "update",
        task["id"],
        "--due",
        "2026-05-01T09:30",
        "--next-action",
        "book the appointment online",
        "--fallback-action",
        "call the office",
    )
    todo = (workspace / "TODO.md").read_bytes()
    out = sh_db("--now", "2026-05-01T10:00", "heartbeat").stdout
    assert out == (
        "# Checklist\n- Look at TODO.md.\n\n"
        f"Task: {task['id']} Renew the passport.\n"
        "Status: todo / blocker: none / risk: P0\n"
        "Suggestion: book the appointment online; fallback: call the office\n"
    )
    assert (workspace / "TODO.md").read_bytes() == todo  # the check fields stay in the ledger
    again = sh_db("--now", "2026-05-01T10:00:30", "heartbeat").stdout
    assert again == "# Checklist\n- Look at TODO.md.\n"  # same minute: nothing new to send
    assert [r["decision"] for r in decisions(sh_db)] == ["sent", "suppressed"]


def test_chinese_brief(sh: Runner) -> None:
    tid = sh(
        "--now",
        "2026-05-01T08:00",
        "add",
        "续签护照",
        "--due",
        "2026-05-01T09:00",
        "--next-action",
        "网上预约",
    )
    out = sh("--now", "2026-05-01T10:00", "heartbeat", "--lang", "zh").stdout
    assert out == f"任务：{tid.stdout.strip()} 续签护照\n状态：todo / 阻塞：无 / 风险：P0\n建议：网上预约\n"


def test_materialises_due_recurrences_when_enabled(sh: Runner, workspace: Path) -> None:
    entry = "- [ ] [Next](2026-05-01 09:00), [Repeat](every 6 hours) | Check the report queue.\n"
    recur = write(workspace / "TODO.RECUR.md", "# TODO Recurring\n\n" + entry)
    todo = workspace / "TODO.md"
    sh("--now", "2026-05-01T10:00", "heartbeat")
    assert recur.read_text().endswith(entry)  # recur.materialize is off by default
    assert "Check the report queue" not in (todo.read_text() if todo.exists() else "")
    sh("config", "set", "recur.materialize", "true")
    got = sh.json("--now", "2026-05-01T10:05", "heartbeat")
    assert got["materialized"] is not None
    assert "| 2026-05-01 09:00 Check the report queue.\n" in todo.read_text()
    assert "[Next](2026-05-01 15:00)" in recur.read_text()  # advanced, phase kept, written back


def test_json_output(sh: Runner, workspace: Path) -> None:
    write(workspace / "HEARTBEAT.md", "- Check the inbox.\n")
    tid = sh(
        "--now", "2026-05-01T08:00", "add", "Report", "--due", "2026-05-01T09:00", "--next-action", "send"
    )
    got = sh.json("--now", "2026-05-01T10:00", "heartbeat")
    assert got["ok"] is False
    assert got["brief"].startswith("- Check the inbox.\n\nTask: " + tid.stdout.strip())
    assert got["round"]["sent"] == 1
    assert got["round"]["decisions"][0]["id"] == tid.stdout.strip()
    assert {r["kind"] for r in got["sync"]["reports"]} >= {"todo", "tasks-json", "state"}
    assert got["started_at"] == "2026-05-01T10:00:00+08:00"
    assert isinstance(got["run"], int)


def test_unreadable_file_fails_the_tick_and_releases_the_guard(sh: Runner, workspace: Path) -> None:
    path = write(workspace / ".agent" / "state" / "tasks.json", '{"pending": [\n  {"id": "x",}\n]}\n')
    result = sh("--now", "2026-05-01T10:00", "heartbeat", code=1)
    assert result.stderr.startswith(f"hb: {path}:2:")
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    [run] = runs(sh, "heartbeat")
    assert (run["status"], run["guard"]) == ("error", None)
    assert runs(sh, "check") == []  # the round never ran
    path.write_text('{"pending": []}\n')
    sh("--now", "2026-05-01T10:01", "heartbeat")  # the guard is free


@pytest.mark.slow
def test_two_heartbeats_started_together_one_runs_to_the_end(db_url: str, workspace: Path) -> None:
    hb = Runner({"HB_DATABASE_URL": db_url})
    hb("init", "--timezone", "Asia/Shanghai")
    fifo = workspace / "HEARTBEAT.md"
    os.mkfifo(fifo)  # the holder waits reading it (up to 15 s) until the test writes the checklist
    held_open = os.open(fifo, os.O_RDWR)  # a writer: without one the pipe reads as empty at once
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "HB_DATABASE_URL": db_url, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "heartbeat", "heartbeat"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        deadline = time.monotonic() + 60
        while all(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        [loser] = [p for p in procs if p.poll() is not None]
        [winner] = [p for p in procs if p is not loser]
        _, err = loser.communicate()
        assert loser.returncode == 75 and err.startswith("hb: busy: a heartbeat")
        with open(fifo, "w") as pipe:  # unblocks the holder
            pipe.write("- Look at TODO.md.\n")
        os.close(held_open)
        held_open = -1
        out, err = winner.communicate(timeout=60)
        assert winner.returncode == 0, err
        assert out == "- Look at TODO.md.\n"
    finally:
        if held_open >= 0:
            os.close(held_open)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert [(r["status"], r["guard"]) for r in runs(hb, "heartbeat")] == [("ok", None)]
    assert json.loads(hb("--json", "list").stdout) == []


def test_a_failed_write_back_still_prints_the_messages_the_round_sent(
    sh: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The round records its reminder as sent; a file that cannot be written back afterwards
    must not swallow it (the next tick would stay silent for the repeat window)."""
    from heartbeat import Ledger
    from heartbeat.context import Context
    from heartbeat.errors import InvalidInput
    from heartbeat.ops.sync import engine

    sh("add", "urgent", "--due", "2026-05-01T09:00Z", "--next-action", "pay now")
    real_run = engine.run
    calls: list[int] = []

    def sync_that_fails_the_second_time(ctx: Context, **kwargs: object) -> dict[str, object]:
        calls.append(1)
        if len(calls) == 2:
            raise InvalidInput("memory/heartbeat-state.json: Operation not permitted")
        return real_run(ctx, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "run", sync_that_fails_the_second_time)
    with Ledger.open(workspace=workspace, now="2026-05-01T10:00Z") as ledger:
        tick = ledger.heartbeat()
        assert "pay now" in tick["brief"] and tick["export"] is None
        assert ledger.notices == [
            "the files were not written back (memory/heartbeat-state.json: Operation not permitted); "
            "the next sync retries"
        ]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_tick_stopped_during_its_export_has_printed_the_messages_the_round_sent(
    sh: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    """The round records its reminder as sent, then the closing export takes its time (seconds
    on a large workspace). A tick stopped there (Ctrl-C, or SIGTERM from a supervisor) had
    printed nothing, and the next ticks held the reminder back as sent: the brief now goes out
    as soon as the round has committed, and ``--json`` prints the round's document, marked
    interrupted."""
    from heartbeat.ops import round as round_ops

    sh("add", "urgent", "--due", "2026-05-01T09:00Z", "--next-action", "pay now")

    def stopped(*args: object) -> None:
        raise KeyboardInterrupt

    args = ("--json",) if as_json else ()
    with monkeypatch.context() as patched:
        patched.setattr(round_ops, "_export_after_round", stopped)
        result = sh(*args, "--now", "2026-05-01T10:00Z", "heartbeat", code=130)
    if as_json:
        doc = json.loads(result.stdout)
        assert doc["interrupted"] is True and doc["export"] is None
        assert doc["round"]["sent"] == 1 and "pay now" in doc["brief"]
    else:
        assert "pay now" in result.stdout
    assert [d["decision"] for d in decisions(sh)] == ["sent"]
    assert [r["status"] for r in runs(sh, "heartbeat")] == ["error"]  # and the guard given back
    assert sh("--now", "2026-05-01T10:05Z", "heartbeat").stdout == "HEARTBEAT_OK\n"


def test_sigterm_stops_a_heartbeat_as_ctrl_c_does_and_gives_the_guard_back(
    sh: Runner, workspace: Path
) -> None:
    """``timeout hb heartbeat`` (or a supervisor) sends SIGTERM: by default the process died
    holding the workspace guard, and every heartbeat and poke exited 75 for the guard's whole
    lifetime (10 minutes). It now stops as on Ctrl-C, with exit 143."""
    import signal

    fifo = workspace / "HEARTBEAT.md"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDWR)  # a writer that never writes: the tick waits on it (15 s)
    env = {**os.environ, "HB_WORKSPACE": str(workspace)}
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "heartbeat", "heartbeat"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        deadline = time.monotonic() + 10
        while not runs(sh, "heartbeat") and time.monotonic() < deadline:
            time.sleep(0.05)  # until it holds the guard
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        os.close(held)
    fifo.unlink()

    assert proc.returncode == 143, err
    assert err.decode() == (
        "hb: terminated (SIGTERM): stopped before it finished (what it had not committed was rolled back)\n"
    )
    assert sh("heartbeat").stdout == "HEARTBEAT_OK\n"  # the guard was given back
    assert sh("poke", "hello").exit_code == 0
    first = runs(sh, "heartbeat")[0]
    assert first["status"] == "error" and first["detail"]["error"] == "terminated (SIGTERM)"


def test_periodic_tasks_keep_their_last_runs_while_the_tasks_block_is_out(
    sh: Runner, workspace: Path
) -> None:
    """The last runs of HEARTBEAT.md's periodic tasks were looked for in the last 20 heartbeats
    only: a weekly task, its block taken out for a day's rework (48 ticks), was given out again
    the day it came back. Every tick now carries the last runs on."""
    block = "tasks:\n  - name: review\n    interval: 7d\n    prompt: Weekly review\n"
    write(workspace / "HEARTBEAT.md", block)
    assert "review: Weekly review" in sh("--now", "2026-05-04T09:00", "heartbeat").stdout
    write(workspace / "HEARTBEAT.md", "# Checks\n\n- Look at the inbox\n")
    start = datetime(2026, 5, 4, 9, 30)
    for n in range(48):  # every half hour until 09:00 the next day
        sh("--now", (start + timedelta(minutes=30 * n)).isoformat(), "heartbeat")
    write(workspace / "HEARTBEAT.md", block)
    assert sh("--now", "2026-05-06T09:00", "heartbeat").stdout == "HEARTBEAT_OK\n"
    assert "review: Weekly review" in sh("--now", "2026-05-11T09:00", "heartbeat").stdout


@pytest.mark.parametrize("checklist", ["\x85", "\x1f\n", "\u0085\u001c"])
def test_a_checklist_of_characters_python_trims_is_no_blank_brief(
    sh: Runner, workspace: Path, checklist: str
) -> None:
    """OpenClaw trims with JavaScript's whitespace, which has no U+0085 or U+001C..U+001F: such a
    HEARTBEAT.md is an instruction to it, so the brief is it, never an empty line."""
    write(workspace / "HEARTBEAT.md", checklist)
    tick = sh.json("heartbeat")
    assert tick["ok"] is False
    assert tick["brief"] == checklist.strip("\n")


def test_a_heartbeat_reports_a_read_only_file_as_not_written(sh: Runner, workspace: Path) -> None:
    """The tick's sync and its write-back after the round say "written" only of a file that was
    written; a read-only TODO.md is left as it is, and the reports, the warnings and the MCP
    heartbeat tool's notices all say so (hb heartbeat --json said "written": true)."""
    from heartbeat import Ledger
    from heartbeat.mcp_server import LedgerCalls, brief

    todo = write(
        workspace / "TODO.md",
        "# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 08:00) | Send the invoice\n",
    )
    sh("--now", "2026-05-01T09:00", "sync")
    [task] = sh.json("list")
    sh("--now", "2026-05-01T09:00", "done", task["id"])
    todo.chmod(0o444)
    before = todo.read_bytes()
    result = sh("--now", "2026-05-01T09:30", "heartbeat", "--json")
    tick = json.loads(result.stdout)
    refused = "read-only (mode 0444): left as it is; hb sync writes it once it may"
    for step in ("sync", "export"):
        [report] = [r for r in tick[step]["reports"] if r["kind"] == "todo"]
        assert (step, report["written"], report["not_written"]) == (step, False, refused)
    assert f"hb: warning: {todo}: {refused}\n" in result.stderr
    with Ledger.open(workspace=workspace, now="2026-05-01T10:00") as ledger:
        got = LedgerCalls(ledger, log=print).result(lambda lg: brief(lg.heartbeat(), []))
    assert not got.is_error and got.structured_content is not None
    assert f"{todo}: {refused}" in got.structured_content["notices"]
    assert todo.read_bytes() == before
    todo.chmod(0o644)
    tick = sh.json("--now", "2026-05-01T10:30", "heartbeat")
    [report] = [r for r in tick["sync"]["reports"] if r["kind"] == "todo"]
    assert (report["written"], report["not_written"]) == (True, None)
    assert "Send the invoice" not in todo.read_text()
