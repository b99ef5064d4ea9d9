"""Bad input at the edges: a failed init, a blank quiet_hours, text that is not UTF-8.

Each is one line on stderr, exit 1, and no change to the ledger or the files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click.testing
import pytest

from heartbeat.cli.main import cli
from tests.conftest import Runner, every_row, workspace_files


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hb: "), stderr
    return lines[0]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- hb init --------------------------------------------------------------------------


@pytest.mark.parametrize("zone", ["Bad/Zone", "", "  "])
def test_a_failed_init_creates_nothing(hb: Runner, workspace: Path, zone: str) -> None:
    result = hb("init", "--timezone", zone, code=1)

    assert "timezone" in _one_line(result.stderr)
    assert list(workspace.iterdir()) == []  # no .agent/state, no heartbeat.db


@pytest.mark.parametrize("command", [["init"], ["list"], ["sync"]])
def test_a_bad_now_creates_no_ledger(hb: Runner, workspace: Path, command: list[str]) -> None:
    result = hb("--now", "garbage", *command, code=1)

    assert _one_line(result.stderr).startswith("hb: bad --now time 'garbage'")
    assert list(workspace.iterdir()) == []


def test_a_failed_init_leaves_an_existing_ledger_untouched(hb: Runner, workspace: Path) -> None:
    hb("init", "--timezone", "Asia/Tokyo")
    before = _snapshot(workspace)

    result = hb("init", "--timezone", "Bad/Zone", code=1)

    assert "Bad/Zone" in _one_line(result.stderr)
    assert _snapshot(workspace) == before
    assert hb("config", "get", "timezone").stdout.strip() == "Asia/Tokyo"


def test_init_with_a_good_zone_still_sets_it(hb: Runner) -> None:
    hb("init", "--timezone", "America/New_York")
    assert hb("config", "get", "timezone").stdout.strip() == "America/New_York"


# --- hb config set quiet_hours ----------------------------------------------------------


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_a_blank_quiet_hours_is_refused(hb: Runner, blank: str) -> None:
    hb("config", "set", "quiet_hours", "22:00-07:00")

    result = hb("config", "set", "quiet_hours", blank, code=1)

    line = _one_line(result.stderr)
    assert "quiet_hours" in line and "use off" in line
    assert hb("config", "get", "quiet_hours").stdout.strip() == "22:00-07:00"


@pytest.mark.parametrize("off", ["off", "OFF", " off "])
def test_off_still_turns_quiet_hours_off(hb: Runner, off: str) -> None:
    assert hb.json("config", "set", "quiet_hours", off)["value"] == "off"
    assert hb("config", "get", "quiet_hours").stdout.strip() == "off"


# --- text that is not UTF-8 ---------------------------------------------------------------


def _no_tasks(hb: Runner) -> None:
    assert hb.json("list", "--all") == []


def test_poke_stdin_that_is_not_utf8_is_refused(hb: Runner) -> None:
    hb("init")
    # stdin is read as bytes and decoded as UTF-8 whatever the locale: the bad byte is named
    result = click.testing.CliRunner().invoke(
        cli, ["poke", "-"], input=b"ok \xff\xfe", catch_exceptions=False
    )

    assert result.exit_code == 1, result.stderr
    assert _one_line(result.stderr) == "hb: <stdin>:1:4: not UTF-8 text (byte 3)"
    _no_tasks(hb)


def test_poke_argument_with_surrogate_escapes_is_refused(hb: Runner) -> None:
    hb("init")
    # What Python makes of argv b"caf\xe9": the bad byte as a lone surrogate.
    result = hb("poke", "caf\udce9", "au lait", code=1)

    assert _one_line(result.stderr) == "hb: TEXT is not valid UTF-8 text (byte 3)"
    _no_tasks(hb)


def test_poke_stdin_not_utf8_in_a_real_process(hb: Runner, workspace: Path) -> None:
    """The reported case, in a real process (in UTF-8 mode a text stdin would have surrogates)."""
    hb("init")
    env = {**os.environ, "PYTHONUTF8": "1", "HB_WORKSPACE": str(workspace)}
    proc = subprocess.run(
        [sys.executable, "-m", "heartbeat", "poke", "-"],
        input=b"\xff\xfe",
        capture_output=True,
        env=env,
        check=False,
    )

    assert proc.returncode == 1, proc.stderr
    assert _one_line(proc.stderr.decode()) == "hb: <stdin>:1:1: not UTF-8 text (byte 0)"
    _no_tasks(hb)


@pytest.mark.parametrize("command", [["poke", "-"], ["sql", "-"]])
def test_an_endless_standard_input_is_refused_in_a_real_process(
    hb: Runner, workspace: Path, command: list[str]
) -> None:
    """``yes | hb poke -`` read until memory ran out; standard input is read up to 1 MiB."""
    hb("init")
    env = {**os.environ, "HB_WORKSPACE": str(workspace)}
    with subprocess.Popen(["yes", "check the build"], stdout=subprocess.PIPE) as endless:
        proc = subprocess.run(
            [sys.executable, "-m", "heartbeat", *command],
            stdin=endless.stdout,
            capture_output=True,
            env=env,
            check=False,
            timeout=120,
        )
        endless.kill()

    assert proc.returncode == 1, proc.stderr
    assert _one_line(proc.stderr.decode()) == (
        "hb: <stdin>: more than 1 MiB (hb reads at most that from standard input)"
    )
    _no_tasks(hb)


def test_a_poke_text_of_exactly_one_mib_is_taken(hb: Runner) -> None:
    hb("init")
    text = "x" * (1 << 20)
    assert hb.json("poke", "-", input=text)["title"].startswith("xxx")
    refused = hb("poke", "-", input=text + "x", code=1)
    assert (
        _one_line(refused.stderr)
        == "hb: <stdin>: more than 1 MiB (hb reads at most that from standard input)"
    )


def test_poke_with_utf8_text_still_works(hb: Runner) -> None:
    hb("init")
    task = hb.json("poke", "-", input="Café au lait ☕")
    assert task["title"].startswith("Café")


def test_a_negative_duration_is_a_bad_value_not_a_help_request(hb: Runner) -> None:
    for key in ("check_interval", "queue.lease"):
        before = hb.json("config", "get", key)["value"]
        result = hb("config", "set", key, "-1h", code=1)
        reason = "bad duration '-1h' (expected e.g. 30m, 6h, 2d, 1w or PT6H)"
        assert result.stderr == f"hb: setting {key}: {reason}\n"
        assert hb.json("config", "get", key)["value"] == before
    assert "Validate and store a setting." in hb("config", "set", "--help").stdout


# --- values that used to be accepted: refused, each with one line ---------------------------------


@pytest.mark.parametrize("value", ["", "  ", "30 m", "1h 30m", "١h", "٣٠m", "PT١H", "30 minutes", "0.5s"])
def test_durations_that_are_typos_are_refused(hb: Runner, value: str) -> None:
    hb("init")
    task = hb.json("add", "check the build", "--check-interval", "2h")
    result = hb("update", task["id"], "--check-interval", value, code=1)
    assert _one_line(result.stderr).startswith("hb: ")
    assert hb.json("show", task["id"])["check_interval"] == "2h"  # unchanged
    assert hb("config", "set", "queue.lease", value, code=1).stderr.startswith("hb: setting queue.lease")


def test_a_duration_is_still_cleared_with_none(hb: Runner) -> None:
    hb("init")
    task = hb.json("add", "check the build", "--check-interval", "2h")
    assert hb.json("update", task["id"], "--check-interval", "none")["check_interval"] is None
    for empty in ("--due", "--next-check", "--stale-after"):
        result = hb("update", task["id"], empty, "", code=1)
        assert "use none to clear it" in _one_line(result.stderr), empty
    for choice in ("--priority", "--risk"):  # an empty choice is a usage error
        assert "is not one of" in hb("update", task["id"], choice, "", code=2).stderr


def test_an_empty_now_is_a_usage_error_not_the_system_clock(hb: Runner, workspace: Path) -> None:
    result = hb("--now", "", "init", code=2)
    assert "--now" in result.stderr and "empty value" in result.stderr
    assert list(workspace.iterdir()) == []


@pytest.mark.parametrize("zone", ["posixrules", "Factory", "factory", "localtime", "right/Asia/Tokyo"])
def test_zone_files_that_are_not_places_are_refused(hb: Runner, workspace: Path, zone: str) -> None:
    result = hb("init", "--timezone", zone, code=1)
    assert f"unknown timezone {zone!r}" in _one_line(result.stderr)
    hb("init", "--timezone", "Asia/Tokyo")
    assert hb("config", "set", "timezone", zone, code=1).stderr.startswith("hb: setting timezone")
    assert hb("config", "get", "timezone").stdout.strip() == "Asia/Tokyo"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--due", "0001-01-01T00:00"),
        ("--due", "9999-12-31T23:59:59"),
        ("--due", "1969-12-31T23:59:59Z"),
        ("--next-check", "2201-01-01"),
    ],
)
def test_times_outside_1970_to_2200_are_refused(hb: Runner, option: str, value: str) -> None:
    hb("init")
    result = hb("add", "far away", option, value, code=1)
    assert "outside the years 1970 to 2200" in _one_line(result.stderr)
    _no_tasks(hb)
    assert hb("--now", value, "list", code=1).stderr.count("\n") == 1
    edge = hb.json("add", "at the edge", "--due", "2200-12-31T23:59")
    assert edge["due_at"].startswith("2200-12-31T23:59")


def test_a_nul_in_a_poke_body_is_refused(hb: Runner) -> None:
    hb("init")
    result = click.testing.CliRunner().invoke(cli, ["poke", "-"], input=b"wake\x00up", catch_exceptions=False)
    assert result.exit_code == 1, result.stderr
    assert _one_line(result.stderr) == "hb: poke text holds a control character (U+0000) at 5"
    escape = hb("poke", "-", input="colour \x1b[31mred", code=1)
    assert "U+001B" in _one_line(escape.stderr)
    _no_tasks(hb)
    assert hb.json("poke", "-", input="tab\there\nand a second line")["title"].startswith("tab\there")


def test_a_fifo_heartbeat_md_without_a_writer_reads_as_empty_at_once(hb: Runner, workspace: Path) -> None:
    hb("init")
    os.mkfifo(workspace / "HEARTBEAT.md")
    assert hb("heartbeat").stdout == "HEARTBEAT_OK\n"


def test_a_fifo_heartbeat_md_that_never_ends_is_refused_in_bounded_time(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heartbeat.ops.sync import files

    monkeypatch.setattr(files, "STREAM_SECONDS", 0.5)
    hb("init")
    fifo = workspace / "HEARTBEAT.md"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDWR)  # a writer that never writes nor closes
    try:
        result = hb("heartbeat", code=1)
    finally:
        os.close(held)
    assert _one_line(result.stderr) == f"hb: {fifo}: a pipe that did not end within 0.5s"
    assert hb("heartbeat").stdout == "HEARTBEAT_OK\n"  # the guard was given back


# --- JSON that used to crash the reader (exit 70) ------------------------------------------------


def _files(workspace: Path) -> dict[str, bytes]:
    """The workspace's files, but its ledger and lock (tests check the ledger by its tasks)."""
    return {k: v for k, v in _snapshot(workspace).items() if not k.endswith((".lock", ".db"))}


def _queue_file(workspace: Path) -> Path:
    path = workspace / ".agent" / "state" / "tasks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ('{"pending": [{"id": "t1", "n": 1' + "7" * 5000 + "}]}\n", ":1:32", "a number with 5001 digits"),
        ('{"pending": [\n' + "[" * 20000 + "]" * 20000 + "\n]}\n", ":2:499", "nested too deeply"),
    ],
)
def test_json_the_reader_cannot_convert_is_one_line_naming_the_place(
    hb: Runner, workspace: Path, text: str, where: str, reason: str
) -> None:
    hb("init")
    path = _queue_file(workspace)
    path.write_text(text)

    before = _files(workspace)
    for command in (["sync"], ["import", "tasks-json"], ["heartbeat"]):
        result = hb(*command, code=1)
        line = _one_line(result.stderr)
        assert line.startswith(f"hb: {path}{where}: invalid JSON: {reason}"), (command, line)
        assert _files(workspace) == before
    _no_tasks(hb)


def test_an_escaped_lone_surrogate_is_one_line_naming_the_place(hb: Runner, workspace: Path) -> None:
    """``"\\udc80"`` is JSON Python reads as half a UTF-16 pair, which no UTF-8 ledger can store:
    it was reported as "a text argument is not valid UTF-8 text", naming no file."""
    hb("init")
    path = _queue_file(workspace)
    path.write_text(
        '{"pending": [{"id": "ok", "description": "fine \\ud83d\\ude00"},\n'
        '  {"id": "t2", "description": "x\\udc80y"}]}\n'
    )
    before = _files(workspace)
    for command in (["sync"], ["import", "tasks-json"], ["heartbeat"]):
        result = hb(*command, code=1)
        assert _one_line(result.stderr) == (
            f"hb: {path}:2:33: a lone UTF-16 surrogate (half of an escaped pair) is not text"
        ), command
        assert _files(workspace) == before
    _no_tasks(hb)
    state = workspace / "memory" / "heartbeat-state.json"
    state.parent.mkdir()
    state.write_text('{"lastChecks": {"\\ud800email": 1}}\n')
    result = hb("import", "state", code=1)
    assert _one_line(result.stderr).startswith(f"hb: {state}:1:18: a lone UTF-16 surrogate")


def test_a_scoped_order_past_what_the_ledger_holds_is_kept(hb_db: Runner, workspace: Path) -> None:
    """An ``order`` of 2**63 failed the sync ("Python int too large to convert to SQLite INTEGER",
    naming no file; 2**31 did on PostgreSQL). Such an entry is placed by its index, and its order
    is never rewritten."""
    path = _queue_file(workspace)
    text = (
        '{"_b_extension":{"q":[{"order":9223372036854775808,"task_id":"a"},'
        '{"order":2147483648,"task_id":"b"},{"order":-5,"task_id":"c"}]}}'
    )
    path.write_text(text)
    hb_db("sync")
    assert path.read_text() == text
    popped = [hb_db.json("pop", "--scope", "_b_extension.q")["task_id"] for _ in range(3)]
    assert popped == ["c", "a", "b"]
    orders = [e["order"] for e in json.loads(path.read_text())["_b_extension"]["q"]]
    assert orders == [2**63, 2**31, -5]


def test_a_state_file_number_too_long_is_one_line(hb: Runner, workspace: Path) -> None:
    hb("init")
    path = workspace / "memory" / "heartbeat-state.json"
    path.parent.mkdir()
    path.write_text('{"lastChecks": {"email": ' + "9" * 5000 + "}}\n")
    result = hb("import", "state", code=1)
    assert _one_line(result.stderr).startswith(f"hb: {path}:1:26: invalid JSON: a number with 5000 digits")


def test_an_outcome_number_too_long_is_kept_as_text(hb: Runner) -> None:
    hb("init")
    task = hb.json("add", "measure")
    hb("pop")
    text = "1" * 5000
    hb("complete", task["id"], "--outcome", text)
    [row] = hb.json("sql", "SELECT result FROM outcomes", "--format", "json")
    assert json.loads(row["result"]) == {"result": text}


@pytest.mark.parametrize("text", ["NaN", "-Infinity", '{"score": Infinity}', "1e999", '{"v": -1e999}'])
def test_an_outcome_json_cannot_hold_is_kept_as_text(hb: Runner, workspace: Path, text: str) -> None:
    """Python reads NaN and Infinity as JSON; no other reader does, and last-run.json carried them."""

    def strict(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    hb("init")
    task = hb.json("add", "measure")
    hb("pop")
    hb("complete", task["id"], "--outcome", text)
    hb("sync")
    record = json.loads((workspace / ".agent" / "state" / "last-run.json").read_text(), parse_constant=strict)
    assert record["outcome"] == {"result": text}


# --- YAML that used to hang hb sync or crash it ---------------------------------------------------

_BOMB = "\n".join(
    ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"{x}: &{x} [{', '.join([f'*{p}'] * 9)}]" for p, x in zip("abcdefgh", "bcdefghi", strict=True)]
)


def _proactive(block: str) -> str:
    return (
        "---\nversion: 1\n---\n\n# Proactive\n\n<!-- PROACTIVE_TASKS_START -->\n"
        "### [DAILY] Briefing\n```yaml\nid: briefing\nfrequency: daily\ninstruction: brief me\n"
        f"{block}\n```\n<!-- PROACTIVE_TASKS_END -->\n"
    )


@pytest.mark.parametrize(
    ("block", "line", "reason"),
    [
        (_BOMB, 18, "aliases expand to more than 100,000 nodes"),
        ("deep: " + "[" * 10_000 + "]" * 10_000, 13, "nested more than 100 deep"),
    ],
)
def test_a_hostile_proactive_block_is_kept_and_the_other_tasks_read(
    hb: Runner, workspace: Path, block: str, line: int, reason: str
) -> None:
    """A block past hb's YAML bounds is one task hb does not read, kept as written with a
    warning naming the file and line; it no longer stops the file's other tasks (every sync and
    heartbeat of the workspace failed on it)."""
    hb("init")
    path = workspace / "PROACTIVE.md"
    other = "### [DAILY] Other\n```yaml\nid: other\nfrequency: daily\ninstruction: hello\n```\n"
    path.write_text(
        _proactive(block).replace("<!-- PROACTIVE_TASKS_END -->", other + "<!-- PROACTIVE_TASKS_END -->")
    )
    before = path.read_bytes()
    for command in (["sync"], ["import", "proactive"], ["heartbeat"]):
        result = hb(*command)
        assert (
            f"{path}:8: not a task, kept as written: yaml block past what hb reads (line {line}): {reason}"
            in (result.stderr)
        ), command
        assert path.read_bytes() == before
    assert [rule["id"] for rule in hb.json("recur", "list")] == ["other"]


def test_an_alias_bomb_in_todo_front_matter_is_kept_and_the_entries_read(hb: Runner, workspace: Path) -> None:
    """mistermorph's YAML reader refuses excessive aliasing and reads the entries anyway."""
    hb("init")
    entry = "- [ ] [Created](2026-05-01 12:41) | Send the report\n"
    text = f"---\n{_BOMB}\n---\n\n# TODO Work In Progress (WIP)\n\n{entry}"
    path = workspace / "TODO.md"
    path.write_text(text)
    result = hb("sync")
    assert f"{path}:7:" in result.stderr and "aliases expand to more than 100,000 nodes" in result.stderr
    assert [t["title"] for t in hb.json("list")] == ["Send the report"]
    assert path.read_text() == text


def test_a_nul_in_a_title_id_text_field_or_key_is_refused_alike_on_both_backends(
    db_url: str, workspace: Path
) -> None:
    """A NUL character can come from the Python API or an MCP client (a command line cannot pass
    one). PostgreSQL's text columns cannot hold it ("database error", naming nothing), and SQLite
    stored it: both refuse it now, naming the field, and nothing changes."""
    from heartbeat import Ledger
    from heartbeat.errors import InvalidInput

    with Ledger.open(workspace, db=db_url) as ledger:
        ledger.add("kept", task_id="k")
        for call, named in (
            (lambda: ledger.add("a\x00b"), "title holds a NUL character (at 2)"),
            (lambda: ledger.add("fine", task_id="id\x00"), "task id holds a NUL character (at 3)"),
            (lambda: ledger.add("fine", key="\x00key"), "--key holds a NUL character (at 1)"),
            (lambda: ledger.update("k", next_action="call\x00"), "next-action holds a NUL character (at 5)"),
            (lambda: ledger.update("k", title="t\x00"), "title holds a NUL character (at 2)"),
        ):
            with pytest.raises(InvalidInput, match=r"^" + named.replace("(", r"\(").replace(")", r"\)")):
                call()
        assert [(t["id"], t["title"]) for t in ledger.list(status="all")] == [("k", "kept")]
        assert ledger.get("k")["next_action"] is None


def test_a_nul_in_any_argument_is_refused_by_name_on_both_backends_and_nothing_changes(
    db_url: str, workspace: Path
) -> None:
    """An id, scope, worker, reason, filter, query or path holding a NUL character (the Python
    API, hb mcp and hb serve pass one; a command line cannot) is InvalidInput naming the argument,
    alike on both backends. PostgreSQL said "database error" naming nothing; SQLite stored a worker
    or a reason with it, or looked the id up and found nothing. No text the ledger holds has a
    NUL, so a lookup by one could name nothing either: it is refused as the bad input it is."""
    from heartbeat import Ledger
    from heartbeat.errors import InvalidInput
    from tests.conftest import every_row

    n = "\x00"
    tail = "which the ledger does not store; nothing changed"
    with Ledger.open(workspace, db=db_url, now="2026-05-04T10:00:00Z") as ledger:
        ledger.add("kept", task_id="k")
        ledger.add("waiting", task_id="w")
        claim = ledger.pop(worker="agent")["claim"]  # type: ignore[index]
        ledger.recur_add("Water the plants", repeat="daily", next="2026-05-05T09:00")
        rows = every_row(db_url)
        calls = {
            "get": (lambda: ledger.get("k" + n), f"task id holds a NUL character (at 2), {tail}"),
            "get scope": (lambda: ledger.get("k", scope=n), f"scope holds a NUL character (at 1), {tail}"),
            "update after": (
                lambda: ledger.update("w", after=["k", n]),
                f"after holds a NUL character (at 1), {tail}",
            ),
            "done": (lambda: ledger.done(n + "k"), f"task id holds a NUL character (at 1), {tail}"),
            "list text": (lambda: ledger.list(text="ke" + n), f"text holds a NUL character (at 3), {tail}"),
            "pop worker": (
                lambda: ledger.pop(worker="agent" + n),
                f"worker holds a NUL character (at 6), {tail}",
            ),
            "pop scope": (
                lambda: ledger.pop(scope="_a_extension.q" + n),
                f"scope holds a NUL character (at 15), {tail}",
            ),
            "complete": (
                lambda: ledger.complete("k" + n, claim=claim),
                f"task id holds a NUL character (at 2), {tail}",
            ),
            "fail reason": (
                lambda: ledger.fail("k", reason="disk" + n),
                f"reason holds a NUL character (at 5), {tail}",
            ),
            "renew claim": (
                lambda: ledger.renew("k", claim + n),
                f"claim holds a NUL character (at 25), {tail}",
            ),
            "ready": (lambda: ledger.ready(scope=n), f"scope holds a NUL character (at 1), {tail}"),
            "clear-stale": (lambda: ledger.clear_stale(n), f"scope holds a NUL character (at 1), {tail}"),
            "notify": (
                lambda: ledger.notify("k", "P0", reason="late" + n),
                f"reason holds a NUL character (at 5), {tail}",
            ),
            "proactive": (
                lambda: ledger.proactive("topic" + n, "go"),
                f"topic holds a NUL character (at 6), {tail}",
            ),
            "recur get": (
                lambda: ledger.recur_get("recur-" + n),
                f"rule id holds a NUL character (at 7), {tail}",
            ),
            "recur add": (
                lambda: ledger.recur_add("t" + n, repeat="daily"),
                f"title holds a NUL character (at 2), {tail}",
            ),
            "config": (
                lambda: ledger.config_set("timezone", "UTC" + n),
                f"value holds a NUL character (at 4), {tail}",
            ),
            "import": (
                lambda: ledger.import_file("todo", workspace / ("T" + n)),
                f"path holds a NUL character (at {len(str(workspace)) + 3}), {tail}",
            ),
            "sql": (
                lambda: ledger.sql("SELECT 'a" + n + "'"),
                f"query holds a NUL character (at 10), {tail}",
            ),
        }
        for name, (call, message) in calls.items():
            with pytest.raises(InvalidInput) as refused:
                call()
            assert refused.value.message == message, name
        assert every_row(db_url) == rows
        # what the ledger keeps as JSON keeps a NUL on both backends: an outcome
        done = ledger.complete("k", outcome={"note": "a" + n + "b"}, claim=claim)
        assert done["status"] == "done"
        stored = ledger.sql("SELECT result FROM outcomes")[0]["result"]  # SQLite: the JSON text
        assert (json.loads(stored) if isinstance(stored, str) else stored) == {"note": "a" + n + "b"}


def test_hb_sql_refuses_a_query_holding_a_nul_on_both_backends(hb_db: Runner, db_url: str) -> None:
    """From standard input a query can hold a NUL: PostgreSQL's client cut the query there (ran
    `SELECT 1 -- ` as `SELECT 1`), SQLite refused it in its own words."""
    from tests.conftest import every_row

    hb_db("init")
    rows = every_row(db_url)
    for query in (b"SELECT 1 -- \x00 then more", b"SELECT 'a\x00b'"):
        refused = hb_db("sql", "-", input=query, code=1)
        assert refused.stdout == ""
        at = query.index(b"\x00") + 1
        assert _one_line(refused.stderr) == (
            f"hb: query holds a NUL character (at {at}), which the ledger does not store; nothing changed"
        )
    assert every_row(db_url) == rows


def test_a_nul_the_checks_did_not_foresee_is_still_named_as_input_not_as_a_database_error() -> None:
    """The last line of defence: psycopg's own refusal of a NUL, from a path no check covers,
    is one line saying what is wrong (exit 1), not "database error: PostgreSQL text fields ..."."""
    psycopg = pytest.importorskip("psycopg")
    from heartbeat.errors import describe

    refusal = psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
    assert describe(refusal) == (
        "a text value holds a NUL character, which the ledger does not store; nothing changed",
        1,
    )
    other = psycopg.DataError("value too long for type character varying(16)")
    assert describe(other) == ("database error: value too long for type character varying(16)", 1)


@pytest.mark.parametrize(
    ("key", "stored", "reason"),
    [
        ("timezone", "5", "setting timezone: Input should be a valid string (got 5)"),
        ("quiet_hours", "[1, 2]", "setting quiet_hours: Input should be a valid string (got [1, 2])"),
        ("reminder.repeat_hours", '"abc"', "setting reminder.repeat_hours: Input should be a valid number"),
        ("proactive.enabled", '"maybe"', "setting proactive.enabled: Input should be a valid boolean"),
        ("queue.lease", '"soon"', "setting queue.lease: "),
    ],
)
def test_a_setting_edited_by_hand_in_the_table_is_named_with_its_mend(
    hb_db: Runner, db_url: str, key: str, stored: str, reason: str
) -> None:
    """The settings table is validated as it is read: a value stored by another tool is one line
    naming the setting (exit 1) for every command that reads settings, not an internal error,
    and `hb config set` mends it."""
    from sqlalchemy import create_engine, text

    from heartbeat.db.engine import normalize_url

    hb_db("init")
    engine = create_engine(normalize_url(db_url))
    value = "CAST(:v AS json)" if engine.dialect.name != "sqlite" else ":v"
    with engine.begin() as con:
        con.execute(text("DELETE FROM settings WHERE key = :k"), {"k": key})
        con.execute(
            text(f"INSERT INTO settings (key, value, updated_at) VALUES (:k, {value}, :t)"),
            {"k": key, "v": stored, "t": "2026-05-01 00:00:00"},
        )
    engine.dispose()
    mend = f"; `hb config set {key} VALUE` or `hb config unset {key}` mends it\n"
    for command in (("check",), ("pop",), ("list",), ("config", "get", key), ("heartbeat",)):
        result = hb_db(*command, code=1)
        said = result.stderr
        assert said.startswith(f"hb: the ledger's settings table: {reason}"), (command, said)
        assert result.stderr.endswith(mend) and result.stderr.count("\n") == 1
    hb_db("config", "unset", key)
    assert hb_db("check").stdout.strip() == "HEARTBEAT_OK"


def test_a_setting_that_is_not_json_in_the_sqlite_table_is_named(hb: Runner, workspace: Path) -> None:
    """SQLite keeps the settings as JSON text, which another tool may break (PostgreSQL's json
    column refuses such text itself)."""
    import sqlite3
    from contextlib import closing

    hb("init")
    with closing(sqlite3.connect(workspace / ".agent" / "state" / "heartbeat.db")) as con:
        con.execute("INSERT INTO settings VALUES ('timezone', 'not json', '2026-05-01 00:00:00')")
        con.commit()
    result = hb("pop", code=1)
    assert result.stderr == (
        "hb: the ledger's settings table: setting timezone: 'not json' is not JSON; "
        "`hb config set timezone VALUE` or `hb config unset timezone` mends it\n"
    )
    hb("config", "set", "timezone", "UTC")
    assert hb("config", "get", "timezone").stdout.strip() == "UTC"


@pytest.mark.parametrize("command", [["list"], ["ready"], ["report", "outcomes"]])
def test_a_limit_past_a_64_bit_integer_is_a_usage_error_naming_the_option(
    hb_db: Runner, command: list[str]
) -> None:
    """It was each backend's own overflow message (SQLite: "Python int too large to convert to
    SQLite INTEGER"), exit 1, naming no option."""
    hb_db("list")  # the ledger made (hb report only reads one)
    result = hb_db(*command, "--limit", "99999999999999999999999", code=2)
    assert "Invalid value for '--limit'" in result.stderr
    big = hb_db(*command, "--limit", str(2**63 - 1), code=None)
    assert big.exit_code in (0, 20), big.stderr


@pytest.mark.parametrize(
    ("front", "reason"),
    [
        (_BOMB, "aliases expand to more than 100,000 nodes"),
        ("foo: &a [*a]", "refers to a node that holds it"),
        ("deep: " + "[" * 200 + "]" * 200, "nested more than 100 deep"),
    ],
)
def test_a_hostile_proactive_front_matter_is_kept_and_the_tasks_read(
    hb: Runner, workspace: Path, front: str, reason: str
) -> None:
    """As in a TODO file: it stopped every sync and heartbeat of the workspace (exit 1)."""
    hb("init")
    path = workspace / "PROACTIVE.md"
    text = _proactive("").replace("---\nversion: 1\n---", f"---\nversion: 1\n{front}\n---", 1)
    path.write_text(text)
    for command in (["sync"], ["heartbeat"]):
        result = hb(*command)
        assert f"{path}:" in result.stderr and reason in result.stderr, command
        assert "kept as written, the tasks are read" in result.stderr
        assert path.read_text() == text
    assert [rule["id"] for rule in hb.json("recur", "list")] == ["briefing"]


def test_long_ids_skills_and_workers_are_stored_alike_on_both_backends(
    hb_db: Runner, workspace: Path
) -> None:
    """PostgreSQL's VARCHAR(255) columns refused what SQLite stored ("database error: value too
    long for type character varying(255)", naming neither file nor field): a tasks.json with a
    300-character skill synced on one backend and stopped every sync on the other."""
    long = "s" * 300
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    pending = [
        {"id": "t" * 300, "priority": "p" * 40, "description": "from the file", "assigned_skill": long}
    ]
    (state / "tasks.json").write_text(
        json.dumps({"pending": pending, "in_progress": [], "completed": [], "failed": []}, indent=2) + "\n"
    )
    hb_db("sync")
    hb_db("add", "by hand", "--id", "i" * 300, "--skill", long)
    popped = hb_db.json("pop", "--worker", "w" * 300)
    assert popped["id"] == "t" * 300 and popped["assigned_skill"] == long
    hb_db("complete", popped["id"])
    shown = hb_db.json("show", "i" * 300)
    assert shown["skill"] == long
    rows = hb_db.json("sql", "SELECT worker FROM outcomes")
    assert [r["worker"] for r in rows] == ["w" * 300]


@pytest.mark.parametrize("outcome", ['"42"', '"hi"', '"null"', '"{\\"a\\": 1}"', '""'])
def test_an_outcome_that_is_a_json_string_stays_a_string_on_both_backends(
    hb_db: Runner, workspace: Path, outcome: str
) -> None:
    """PostgreSQL's driver decodes a json column itself; hb read the value again: "42" became 42
    in last-run.json, and "hi" stopped hb sync, hb heartbeat and hb export last-run with exit 70."""
    hb_db("add", "a task", "--id", "t1")
    hb_db("pop")
    hb_db("complete", "t1", "--outcome", outcome)
    exported = json.loads(hb_db("export", "last-run", "-").stdout)
    assert exported["outcome"] == json.loads(outcome)
    hb_db("sync")
    hb_db("heartbeat")


@pytest.mark.parametrize("outcome", ['{"a": "\\ud800"}', "a\udcffb"])
def test_an_outcome_holding_a_lone_surrogate_is_refused_alike_and_nothing_changes(
    hb_db: Runner, workspace: Path, outcome: str
) -> None:
    """SQLite refused it; PostgreSQL's json type stored the escape, and every hb sync and
    hb heartbeat after it failed, naming nothing, until another completion (a byte that is not
    UTF-8 in the argument went into last-run.json as it was)."""
    hb_db("add", "a task", "--id", "t1")
    hb_db("pop")
    refused = hb_db("complete", "t1", "--outcome", outcome, code=1)
    assert refused.stderr == "hb: a text argument is not valid UTF-8 text\n"
    assert hb_db.json("show", "t1")["status"] == "doing"
    hb_db("complete", "t1", "--outcome", '{"ok": "😀"}')
    hb_db("sync")
    hb_db("heartbeat")
    assert json.loads(hb_db("export", "last-run", "-").stdout)["outcome"] == {"ok": "😀"}


def test_a_recurrence_outcome_holding_a_byte_that_is_not_utf8_is_refused_alike(
    hb_db: Runner, workspace: Path, db_url: str
) -> None:
    """``hb recur outcome ID --result $'bad \\xff'`` was stored on SQLite (JSON escapes the byte
    as ``\\udcff``); the next sync could not write it into PROACTIVE.md for CraftBot, and every
    hb sync and hb heartbeat failed until five more outcomes pushed it out of the history.
    PostgreSQL refused it. Both refuse it now, and nothing changes."""
    example = Path(__file__).resolve().parents[2] / "examples" / "workspace" / "PROACTIVE.md"
    (workspace / "PROACTIVE.md").write_bytes(example.read_bytes())
    hb_db("--now", "2026-05-04T07:00", "sync")
    rule = hb_db.json("recur", "list")[0]["id"]
    files, rows = workspace_files(workspace), every_row(db_url)
    outcome = ("--now", "2026-05-04T08:05", "recur", "outcome", rule, "--result")
    refused = hb_db(*outcome, "bad \udcff byte", code=1)
    assert refused.stderr == "hb: a text argument is not valid UTF-8 text\n"
    assert (workspace_files(workspace), every_row(db_url)) == (files, rows)
    hb_db(*outcome, "done 😀")
    hb_db("--now", "2026-05-04T08:06", "sync")
    assert "done 😀" in (workspace / "PROACTIVE.md").read_text(encoding="utf-8")
    hb_db("--now", "2026-05-04T09:00", "heartbeat")


def test_a_duration_past_68_years_is_stored_alike_on_both_backends(hb_db: Runner, workspace: Path) -> None:
    """hb reads durations up to 100 years; PostgreSQL's int4 columns stopped at 68 ("database
    error: integer out of range", naming nothing) where SQLite stored them."""
    task = hb_db("add", "a", "--check-interval", "3600w").stdout.strip()
    hb_db("update", task, "--stale-after", "PT2147483648S")
    shown = hb_db.json("show", task)
    assert (shown["check_interval"], shown["stale_after"]) == ("3600w", "2147483648s")


@pytest.mark.parametrize("query", ["ΣΊΣΥΦΟΣ", "ΣΊΣΥΦΟΣ rock", "İSTANBUL", "İstanbul trip", "ROCK"])
def test_list_text_finds_a_title_by_its_own_letters_on_both_backends(
    hb_db: Runner, workspace: Path, query: str
) -> None:
    """The pattern was put in lower case by Python, the title by the database: on PostgreSQL
    (C.UTF-8) a final sigma and a dotted capital I came out otherwise, so a title's own text did
    not find it. Both sides are put in lower case by the same hand now."""
    hb_db("add", "ΣΊΣΥΦΟΣ rock")
    hb_db("add", "İstanbul trip")
    titles = [t["title"] for t in hb_db.json("list", "--text", query)]
    wanted = {"ΣΊΣΥΦΟΣ": "ΣΊΣΥΦΟΣ rock", "ΣΊΣΥΦΟΣ rock": "ΣΊΣΥΦΟΣ rock", "ROCK": "ΣΊΣΥΦΟΣ rock"}
    assert titles == [wanted.get(query, "İstanbul trip")]


# --- a workspace file larger than hb reads ---------------------------------------------------------

_EVERY_FILE = [
    "TODO.md",
    "TODO.DONE.md",
    "TODO.RECUR.md",
    ".agent/state/tasks.json",
    ".agent/state/errors.json",
    ".agent/state/last-run.json",
    "PROACTIVE.md",
    "memory/heartbeat-state.json",
    "HEARTBEAT.md",
]


_TODO = "# TODO Work In Progress (WIP)\n\n"
_ENTRY = "- [ ] [Created](2026-05-03 12:05) | {}\n"


def _oversized(workspace: Path, name: str) -> Path:
    """``name`` as a sparse file one byte past the largest hb reads (no byte of it is written)."""
    from heartbeat.ops.sync.files import FILE_MAX

    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.truncate(FILE_MAX + 1)
    return path


@pytest.mark.parametrize("name", _EVERY_FILE)
def test_a_file_larger_than_hb_reads_is_refused_at_once_and_nothing_changes(
    hb_db: Runner, db_url: str, workspace: Path, name: str
) -> None:
    """A runaway writer or a sparse file of gigabytes took tens of seconds and several GB of memory
    to read before its first byte was refused; it is refused by its size, before it is read."""
    hb_db("add", "kept", "--id", "t1")
    (workspace / "TODO.md").write_text(_TODO + _ENTRY.format("Call Ann"))
    path = _oversized(workspace, name)
    files, rows = workspace_files(workspace), every_row(db_url)

    command = "heartbeat" if name == "HEARTBEAT.md" else "sync"
    result = hb_db(command, code=1)

    assert _one_line(result.stderr) == f"hb: {path}: 268,435,457 bytes, more than hb reads (at most 256 MiB)"
    assert workspace_files(workspace) == files
    if command == "sync":
        assert every_row(db_url) == rows


def test_a_file_of_exactly_the_limit_is_read(
    hb: Runner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heartbeat.ops.sync import files

    hb("init")
    todo = workspace / "TODO.md"
    todo.write_text(_TODO + _ENTRY.format("Call Ann"))
    monkeypatch.setattr(files, "FILE_MAX", todo.stat().st_size)
    hb("sync")
    assert [t["title"] for t in hb.json("list")] == ["Call Ann"]

    todo.write_text(todo.read_text() + _ENTRY.format("Call Bo"))
    assert _one_line(hb("sync", code=1).stderr).endswith("more than hb reads (at most 0 MiB)")
    assert [t["title"] for t in hb.json("list")] == ["Call Ann"]


def test_an_oversized_tasks_json_leaves_an_auto_exported_pop_standing(hb: Runner, workspace: Path) -> None:
    """With sync.auto_export, a file that does not read is left as it is with a warning, and the
    queue operation still counts (README: choices where the contract is silent)."""
    hb("config", "set", "sync.auto_export", "true")
    hb("add", "first", "--id", "t1")
    path = _oversized(workspace, ".agent/state/tasks.json")

    result = hb("pop")

    assert json.loads(result.stdout)["id"] == "t1"
    assert "more than hb reads (at most 256 MiB): left as it is" in result.stderr
    assert path.stat().st_size == (256 << 20) + 1
    assert hb.json("show", "t1")["status"] == "doing"


# --- a ledger file that is not one, or is damaged ---------------------------------------------------


def _garbage(path: Path) -> None:
    path.write_bytes(b"these are not the bytes of a database\n" * 200)


def _cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    ("damage", "reason"),
    [(_garbage, "file is not a database"), (_cut_in_half, "database disk image is malformed")],
)
@pytest.mark.parametrize("command", [["list"], ["add", "more"], ["sync"], ["heartbeat"]])
def test_a_damaged_ledger_file_is_named_in_one_line_and_left_as_it_is(
    hb: Runner, workspace: Path, damage: Callable[[Path], None], reason: str, command: list[str]
) -> None:
    """It was "hb: database error: file is not a database", naming no file: with --db, or a
    workspace given by HB_WORKSPACE, the user could not tell which file hb had opened."""
    hb("init")
    for n in range(40):
        hb("add", f"task {n}")
    ledger = workspace / ".agent" / "state" / "heartbeat.db"
    damage(ledger)
    for sidecar in ("-wal", "-shm"):
        ledger.with_name(ledger.name + sidecar).unlink(missing_ok=True)
    before = ledger.read_bytes()

    result = hb(*command, code=1)

    assert _one_line(result.stderr) == f"hb: {ledger}: database error: {reason}"
    assert ledger.read_bytes() == before


def test_another_file_named_by_db_is_named_too(hb: Runner, workspace: Path) -> None:
    other = workspace / "notes.db"
    _garbage(other)
    result = hb("--db", str(other), "list", code=1)
    assert _one_line(result.stderr) == f"hb: {other}: database error: file is not a database"


# --- Ctrl-C ------------------------------------------------------------------------------------------

_INTERRUPTED = "hb: interrupted: stopped before it finished (what it had not committed was rolled back)"


def test_ctrl_c_during_a_sync_is_exit_130_and_the_import_is_rolled_back(
    hb_db: Runner, db_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was click's "Aborted!" and exit 1, the code of bad input."""
    from heartbeat.formats import tasks_json

    hb_db("add", "kept", "--id", "t1")
    queue = _queue_file(workspace)
    queue.write_text(json.dumps({"pending": [{"id": "t2", "description": "new", "priority": "high"}]}))
    files, rows = workspace_files(workspace), every_row(db_url)

    def ctrl_c(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(tasks_json, "parse", ctrl_c)
        result = hb_db("sync", code=130)

    assert result.stderr == _INTERRUPTED + "\n"
    assert workspace_files(workspace) == files
    assert every_row(db_url) == rows
    hb_db("sync")
    assert {t["id"] for t in hb_db.json("list")} == {"t1", "t2"}


def test_ctrl_c_during_a_heartbeat_in_a_real_process_gives_the_guard_back(
    hb: Runner, workspace: Path
) -> None:
    """A HEARTBEAT.md that is a pipe whose writer never writes holds the heartbeat for up to 15 s:
    Ctrl-C then stops it at a known place."""
    import signal
    import time

    hb("init")
    fifo = workspace / "HEARTBEAT.md"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDWR)  # a writer that never writes
    env = {**os.environ, "HB_WORKSPACE": str(workspace)}
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "heartbeat", "heartbeat"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        time.sleep(2)  # (the pipe holds it for 15 s)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        os.close(held)
    os.unlink(fifo)

    assert proc.returncode == 130, err
    assert err.decode() == _INTERRUPTED + "\n"
    assert hb("heartbeat").stdout == "HEARTBEAT_OK\n"  # the guard was given back
    runs = json.loads(
        hb(
            "sql", "SELECT status, detail FROM runs WHERE kind = 'heartbeat' ORDER BY pk", "--format", "json"
        ).stdout
    )
    assert [r["status"] for r in runs] == ["error", "ok"]
    assert json.loads(runs[0]["detail"])["error"] == "interrupted (Ctrl-C)"


@pytest.mark.parametrize("name", ["ws?x=1", "ws#notes", "ws%20pct", "ws%3Fq", "ws name é"])
def test_a_workspace_path_with_characters_that_mean_something_in_a_url(tmp_path: Path, name: str) -> None:
    """A workspace directory named ``ws?x=1`` had its schema made in a file ``ws`` beside it (the
    path became a URL whose ``?`` began a query), and one holding ``%20`` in a directory that does
    not exist (the escape was read): the ledger is the workspace's own file, and what ``hb init``
    shows is a URL that ``--db`` takes back."""
    ws = tmp_path / name
    ws.mkdir()
    todo = "# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-03 12:05) | Buy milk\n"
    (ws / "TODO.md").write_text(todo)
    hb = Runner({"HB_WORKSPACE": str(ws)})

    hb("sync")
    hb("add", "Write the report")

    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing made beside it
    assert (ws / ".agent" / "state" / "heartbeat.db").is_file()
    assert sorted(t["title"] for t in hb.json("list")) == ["Buy milk", "Write the report"]
    assert hb.json("sql", "SELECT count(*) AS n FROM tasks") == [{"n": 2}]
    url = hb.json("init")["database"]
    listed = hb.json("--db", url, "list")
    assert sorted(t["title"] for t in listed) == ["Buy milk", "Write the report"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize("kind", ["file", "dangling symlink"])
def test_a_state_directory_that_is_no_directory_is_one_line(tmp_path: Path, kind: str) -> None:
    """``.agent/state`` a file said "File exists", as if all were well; a symlink to nothing said
    "--db ...: no directory", naming an option nobody gave."""
    ws = tmp_path / "ws"
    (ws / ".agent").mkdir(parents=True)
    state = ws / ".agent" / "state"
    if kind == "file":
        state.write_text("notes\n")
    else:
        state.symlink_to(tmp_path / "nowhere")
    before = _snapshot(tmp_path)
    hb = Runner({"HB_WORKSPACE": str(ws)})

    for command in (["sync"], ["list"], ["add", "x"], ["db", "upgrade"]):
        line = _one_line(hb(*command, code=1).stderr)
        if kind == "file":
            assert line == f"hb: {state}: exists and is not a directory (hb needs a directory there)"
        else:
            assert line == (
                f"hb: {state}: a symlink to {tmp_path / 'nowhere'}, which does not exist; hb makes no "
                "directory through it (create the directory it names, or remove the link)"
            )
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "nowhere").exists()


def test_a_ledger_sqlite_cannot_open_says_why_when_its_directory_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's "unable to open database file" names no cause: in WAL mode it creates the -wal
    and -shm files beside the ledger even to read, which a read-only file system refuses."""
    from heartbeat.errors import at_ledger

    ledger = str(tmp_path / "heartbeat.db")
    unable = "database error: unable to open database file"
    assert at_ledger(unable, ledger) == f"{ledger}: {unable}"  # a writable directory: no cause guessed
    real = os.statvfs

    class ReadOnly:
        def __init__(self, path: str) -> None:
            self.f_flag = real(path).f_flag | os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", ReadOnly)
    said = at_ledger(unable, ledger)
    assert said.startswith(f"{ledger}: {unable} (its directory is on a read-only file system,")
    assert said.endswith("copy the ledger to a writable place and pass it with --db)")
    other = "database error: file is not a database"
    assert at_ledger(other, ledger) == f"{ledger}: {other}"


def test_a_workspace_on_a_read_only_mount_is_one_line_and_a_copy_of_its_ledger_reads(tmp_path: Path) -> None:
    """The whole path, on a read-only bind mount (a private mount namespace: needs root, as CI
    runs): every command said "unable to open database file"; now it says why, and the way out
    it names works."""
    import shutil

    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a read-only bind in a private namespace")
    ws = tmp_path / "ws"
    ws.mkdir()
    Runner({"HB_WORKSPACE": str(ws)})("add", "Water the plants")
    hb = f"{sys.executable} -m heartbeat --workspace {ws}"
    script = (
        f"mount --bind -o ro {ws} {ws} || exit 99; {hb} list; echo rc=$?; "
        f"cp {ws}/.agent/state/heartbeat.db {tmp_path}/copy.db; {hb} --db {tmp_path}/copy.db list --json"
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode == 99 or "unshare failed" in done.stderr:
        pytest.skip(f"no private read-only mount here: {done.stderr.strip()[:200]}")
    line = [x for x in done.stderr.splitlines() if "unable to open" in x]
    assert len(line) == 1 and "its directory is on a read-only file system" in line[0], done.stderr
    assert "rc=1" in done.stdout
    listed = json.loads(done.stdout[done.stdout.index("[") :])
    assert [t["title"] for t in listed] == ["Water the plants"]


def test_a_postgresql_server_that_never_answers_is_one_line_in_bounded_time(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libpq waits without end for a server that took the connection and never answers (or a
    host that drops packets): hb gives a connection CONNECT_TIMEOUT seconds (10; 1 here) unless
    the URL or PGCONNECT_TIMEOUT says otherwise, then says so in one line."""
    import socket
    import threading
    import time

    from heartbeat.db import engine

    monkeypatch.setattr(engine, "CONNECT_TIMEOUT", 1)
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections wait in its backlog, unanswered
    closing = threading.Timer(60, silent.close)  # (without a timeout hb would wait until then)
    closing.start()
    port = silent.getsockname()[1]
    hb = Runner()
    try:
        for url, env in (
            (f"postgresql://postgres@127.0.0.1:{port}/x", {}),
            (f"postgresql://postgres@127.0.0.1:{port}/x?connect_timeout=2", {}),
            (f"postgresql://postgres@127.0.0.1:{port}/x", {"PGCONNECT_TIMEOUT": "2"}),
        ):
            started = time.monotonic()
            result = hb("--db", url, "list", code=1, **env)
            assert time.monotonic() - started < 30
            assert _one_line(result.stderr) == "hb: database error: connection timeout expired"
    finally:
        closing.cancel()
        silent.close()


@pytest.mark.postgres
def test_a_lock_another_postgresql_session_holds_is_busy_not_a_hang(
    pg_url: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session left in a transaction holding a lock (or a LOCK TABLE by hand) made hb wait
    without end on PostgreSQL, where SQLite's busy timeout says busy (exit 75) after 30 s: hb's
    connections now set that lock_timeout (1 s here), and the refusal is the same."""
    import psycopg

    from heartbeat.db import sqlite

    hb = Runner()
    hb("--db", pg_url, "add", "Water the plants")
    monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", 1000)
    with psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://", 1)) as holder:
        holder.execute("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE")
        for command in (["add", "Feed the cat"], ["list"], ["pop"]):
            line = _one_line(hb("--db", pg_url, *command, code=75).stderr)
            assert line.startswith("hb: busy: another session held a lock on the ledger past its lock_")
        # PGOPTIONS (or the URL's options) naming a lock_timeout is the user's: hb's (an hour
        # now) is not set over it
        monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", 3_600_000)
        busy = hb("--db", pg_url, "list", code=75, PGOPTIONS="-c lock_timeout=1000")
        assert _one_line(busy.stderr).startswith("hb: busy: ")
        holder.rollback()
    hb("--db", pg_url, "add", "Feed the cat")
    assert sorted(t["title"] for t in hb.json("--db", pg_url, "list")) == ["Feed the cat", "Water the plants"]


@pytest.mark.parametrize("escaped", ["\\ud800", "\\udc80 alone", "\\ud83d\\ude00"])
def test_a_proactive_block_with_a_surrogate_escape_is_that_block_refused_with_its_line(
    hb: Runner, workspace: Path, escaped: str
) -> None:
    """A double-quoted YAML escape \\ud800-\\udfff (a JSON-style pair too: YAML reads each escape
    as a character) is a text no UTF-8 file or database holds: the sync stopped with "a text
    argument is not valid UTF-8 text", naming no file. Now that block is not read, with a warning
    naming the file and line, and the file's other tasks are."""
    text = (
        "# Proactive\n\n<!-- PROACTIVE_TASKS_START -->\n\n### [DAILY] Bad\n\n```yaml\nid: bad\n"
        f'frequency: daily\ninstruction: "x {escaped} y"\n```\n\n### [DAILY] Good\n\n```yaml\nid: good\n'
        'frequency: daily\ninstruction: "caf\\u00e9 \\U0001F600"\n```\n\n<!-- PROACTIVE_TASKS_END -->\n'
    )
    (workspace / "PROACTIVE.md").write_text(text)
    hb("init")

    result = hb("sync")

    warning = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and warning[0].startswith(f"hb: warning: {workspace / 'PROACTIVE.md'}:5: ")
    assert "(line 10): an escape \\ud800 to \\udfff is half of a UTF-16 pair, not text" in warning[0]
    assert [(r["id"], r["title"]) for r in hb.json("recur", "list")] == [("good", "Good")]
    assert (workspace / "PROACTIVE.md").read_text() == text


def test_a_database_url_that_does_not_read_is_refused_without_its_password(hb: Runner) -> None:
    """A password in a URL that does not read as one (a port that is no number, a bracket left
    open) was quoted whole in the refusal, on a terminal or in an agent's log."""
    from heartbeat.errors import without_password

    for url in ("postgresql://agent:s3cret@db.internal:notaport/hb", "postgresql://agent:s3c@r@t@[::1/hb"):
        line = _one_line(hb("--db", url, "list", code=1).stderr)
        assert "s3c" not in line and "agent:***@" in line, line
    assert without_password("postgresql+psycopg://u@h:1/db") == "postgresql+psycopg://u@h:1/db"
    assert without_password("postgresql://u:p@h/db?x=1") == "postgresql://u:***@h/db?x=1"
    assert without_password("sqlite:///tmp/a:b@c/heartbeat.db") == "sqlite:///tmp/a:b@c/heartbeat.db"


@pytest.mark.postgres
def test_hb_sql_refuses_a_reader_url_that_does_not_read_without_its_password(pg_url: str) -> None:
    hb = Runner()
    hb("--db", pg_url, "init")
    reader = hb(
        "--db", pg_url, "sql", "SELECT 1", code=1, HB_SQL_DATABASE_URL="postgresql://reader:s3cret@h:bad/hb"
    )
    assert _one_line(reader.stderr) == "hb: bad database URL 'postgresql://reader:***@h:bad/hb'"


# --- numbers past int()'s 4,300 digits ---------------------------------------------------

BIG = "9" * 4301


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["add", "x", "--check-interval", f"P{BIG}D"],
            f"hb: bad check-interval 'P{'9' * 29}'...'{'9' * 9}D' (4303 characters): longer than 100 years",
        ),
        (
            ["add", "x", "--check-interval", f"PT{BIG}S"],
            f"hb: bad check-interval 'PT{'9' * 28}'...'{'9' * 9}S' (4304 characters): longer than 100 years",
        ),
        (
            ["config", "set", "queue.max_attempts", BIG],
            f"hb: setting queue.max_attempts: expected a number, got '{'9' * 30}'...'{'9' * 10}' "
            "(4301 characters)",
        ),
    ],
)
def test_a_number_of_thousands_of_digits_is_refused_in_one_short_line(
    hb_db: Runner, db_url: str, workspace: Path, args: list[str], message: str
) -> None:
    """Python's int() refuses a string of more than 4,300 digits with a ValueError of its own:
    an ISO 8601 duration or a setting of that many digits exited 70 (internal error), as did the
    MCP tools' lease; hb sql's printf width said that int() failed. The refusal quotes the
    input's two ends, not its 4,300 characters."""
    hb_db("init")
    before = (every_row(db_url), workspace_files(workspace))
    result = hb_db(*args, code=1)
    assert _one_line(result.stderr) == message
    assert (every_row(db_url), workspace_files(workspace)) == before


def test_hb_sql_printf_of_a_width_of_thousands_of_digits_is_too_big(hb: Runner) -> None:
    """SQLite's printf (hb runs it after checking the widths): a width past int()'s digits."""
    hb("init")
    result = hb("sql", f"SELECT printf('%{BIG}c', 'a')", code=1)
    assert _one_line(result.stderr) == (
        "hb: sql: string or blob too big (hb sql makes values of up to 256 MiB)"
    )


def test_leading_zeros_do_not_count_as_digits(hb: Runner) -> None:
    hb("init")
    task = hb.json("add", "x", "--check-interval", f"P{'0' * 4400}1D")
    assert task["check_interval"] == "1d"
    precision = "0" * 4400 + "3"
    assert hb.json("sql", f"SELECT printf('%.{precision}c', 'a') AS x") == [{"x": "aaa"}]
