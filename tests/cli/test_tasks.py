"""Task CRUD through the CLI: names of SPEC.md 2.1, errors, the injectable clock."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import Runner

REQUIRED = {
    "id",
    "title",
    "status",
    "scope",
    "source",
    "priority",
    "risk",
    "due_at",
    "next_check_at",
    "check_interval",
    "stale_after",
    "last_checked_at",
    "created_at",
    "updated_at",
    "completed_at",
    "attempts",
}
ISO_WITH_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")


def test_init_creates_the_database_at_head(hb: Runner, workspace: Path) -> None:
    hb("init")
    db = workspace / ".agent" / "state" / "heartbeat.db"
    assert db.is_file()
    from heartbeat.db.migrate import HEAD

    with closing(sqlite3.connect(db)) as con:
        assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert con.execute("SELECT version_num FROM alembic_version").fetchone() == (HEAD,)
    hb("init")  # idempotent


def test_add_list_round_trip(hb_db: Runner) -> None:
    added = hb_db.json(
        "add",
        "Write",
        "the",
        "report",
        "--priority",
        "high",
        "--due",
        "2026-05-02T17:00:00Z",
        "--check-interval",
        "6h",
        "--stale-after",
        "PT30M",
        "--risk",
        "p1",
        "--skill",
        "deep-research",
        "--project-id",
        "claude-skills",
        "--agent-id",
        "antigravity",
        "--user-id",
        "matthias",
        "--next-action",
        "draft section 2",
        "--fallback-action",
        "ask for an extension",
        "--blocker",
        "no data yet",
        "--follow-up",
    )
    assert set(added) >= REQUIRED
    assert re.fullmatch(r"task-[0-9a-f]{8}", added["id"])
    assert added["title"] == "Write the report"
    assert (added["status"], added["priority"], added["risk"]) == ("todo", "high", "P1")
    assert (added["check_interval"], added["stale_after"]) == ("6h", "30m")
    assert added["due_at"] == "2026-05-02T17:00:00+00:00"
    assert added["follow_up"] is True and added["attempts"] == 0
    listed = hb_db.json("list")
    assert listed == [added]
    assert hb_db.json("show", added["id"]) == added


def test_list_filters(hb: Runner) -> None:
    a = hb.json("add", "Pay rent", "--due", "2026-05-01T10:00Z")
    b = hb.json("add", "Call the bank", "--due", "2026-06-01T10:00Z", "--scope", "_r1_extension.q")
    c = hb.json("add", "Old thing")
    hb("done", c["id"])
    ids = lambda rows: [r["id"] for r in rows]  # noqa: E731
    assert ids(hb.json("list")) == [a["id"], b["id"]]
    assert ids(hb.json("list", "--all")) == [a["id"], c["id"], b["id"]]
    assert ids(hb.json("list", "--status", "done")) == [c["id"]]
    assert ids(hb.json("list", "--status", "all")) == [a["id"], c["id"], b["id"]]
    assert ids(hb.json("list", "--scope", "_r1_extension.q")) == [b["id"]]
    assert ids(hb.json("list", "--text", "BANK")) == [b["id"]]
    assert ids(hb.json("list", "--due-before", "2026-05-15")) == [a["id"]]
    assert ids(hb.json("list", "--source", "cli")) == [a["id"], b["id"]]
    assert hb.json("list", "--source", "todo") == []


def test_list_text_is_any_case_for_every_letter_on_both_backends(hb_db: Runner) -> None:
    """SQLite's lower() and LIKE fold ASCII only: ``--text ÄRGER`` missed "ärger" on SQLite, and
    ``--text émile`` missed "Émile's report", where PostgreSQL found both."""
    emile = hb_db.json("add", "Émile's report")["id"]
    anger = hb_db.json("add", "ärger im Büro")["id"]
    hb_db.json("add", "plain ascii")
    for text, found in (("émile", emile), ("ÉMILE", emile), ("ÄRGER", anger), ("BÜRO", anger)):
        assert [t["id"] for t in hb_db.json("list", "--text", text)] == [found], text
    assert [t["id"] for t in hb_db.json("list", "--text", "_")] == []  # LIKE's wildcards are text


def test_update_keeps_history(hb: Runner) -> None:
    t = hb.json("add", "Draft")
    hb("update", t["id"], "--title", "Draft v2", "--status", "blocked", "--blocker", "legal review")
    shown = hb.json("show", t["id"], "--history")
    assert (shown["title"], shown["status"], shown["blocker"], shown["version"]) == (
        "Draft v2",
        "blocked",
        "legal review",
        2,
    )
    kinds = [e["kind"] for e in shown["history"]]
    assert kinds == ["created", "updated"]
    assert shown["history"][1]["before"]["title"] == "Draft"
    hb("update", t["id"], "--blocker", "none")
    assert hb.json("show", t["id"])["blocker"] is None


def test_done_and_cancel(hb: Runner) -> None:
    t = hb.json("add", "A")
    done = hb.json("--now", "2026-05-01T12:00:00Z", "done", t["id"])
    assert done["status"] == "done" and done["completed_at"] == "2026-05-01T12:00:00+00:00"
    result = hb("done", t["id"], code=1)
    assert result.stderr == f"hb: task '{t['id']}' is already done\n"
    u = hb.json("add", "B")
    assert hb.json("cancel", u["id"])["status"] == "cancelled"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "task-deadbeef"], "no task with id 'task-deadbeef'"),
        (["update", "task-deadbeef", "--note", "x"], "no task with id 'task-deadbeef'"),
        (["add", "x", "--due", "tomorrow-ish"], "bad due time 'tomorrow-ish'"),
        (["add", "x", "--check-interval", "6 fortnights"], "bad check-interval '6 fortnights'"),
        (["config", "set", "timezone", "Mars/Olympus"], "unknown timezone 'Mars/Olympus'"),
        (["config", "set", "quiet_hours", "25:00-08:00"], "setting quiet_hours"),
        (["config", "set", "queue.max_attempts", "zero"], "expected a number"),
        (["config", "set", "reminder.repeat_hours", "-1"], "Input should be greater than 0 (got -1)"),
        (["add", "x", "--scope", "nope"], "scope 'nope' is not a _<batch>_extension.<queue> path"),
        (["config", "get", "no.such.key"], "unknown setting 'no.such.key'"),
        (["--now", "yesterday", "add", "x"], "bad --now time 'yesterday'"),
        (["--now", "2026-13-45", "list"], "bad --now time '2026-13-45'"),
    ],
)
def test_bad_input_is_one_line_exit_1_and_changes_nothing(
    hb: Runner, workspace: Path, args: list[str], message: str
) -> None:
    hb("init")
    hb("add", "existing")
    before = hb.json("list", "--all")
    result = hb(*args, code=1)
    assert result.stdout == ""
    assert result.stderr.startswith("hb: ") and message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert hb.json("list", "--all") == before


def test_a_missing_workspace_is_an_error_not_a_new_ledger(hb: Runner, tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "ws"
    result = hb("--workspace", str(missing), "list", code=1)
    assert result.stderr == f"hb: workspace {missing} is not a directory (create it, or pass --workspace)\n"
    assert not missing.exists() and not missing.parent.exists()
    db = tmp_path / "typo" / "x.db"  # the same for --db: its directory must exist
    result = hb("--db", str(db), "list", code=1)
    assert result.stderr == f"hb: --db {db}: no directory {db.parent}\n"
    assert not db.parent.exists()
    hb("--db", str(tmp_path / "x.db"), "list")  # a new file in an existing directory is a new ledger
    assert (tmp_path / "x.db").exists()


def test_usage_errors_exit_2(hb: Runner) -> None:
    assert hb("add", code=2).exit_code == 2
    assert hb("frobnicate", code=2).exit_code == 2
    assert hb("update", code=2).exit_code == 2
    # an empty title and an update without a field are usage errors too; nothing is written
    assert hb("add", "", code=2).stderr.endswith("TITLE is empty: give the task a title\n")
    assert hb("add", "  ", code=2).exit_code == 2
    t = hb.json("add", "Draft")
    assert "nothing to update" in hb("update", t["id"], code=2).stderr
    assert [x["title"] for x in hb.json("list")] == ["Draft"]
    assert hb.json("show", t["id"])["version"] == 1


def test_now_drives_every_timestamp(hb: Runner) -> None:
    t = hb.json("--now", "2026-05-01T09:00:00+08:00", "add", "pinned")
    assert t["created_at"] == t["updated_at"] == t["last_update_at"] == "2026-05-01T01:00:00+00:00"
    u = hb.json("update", t["id"], "--note", "halfway", HB_NOW="2026-05-01T02:30:00Z")
    assert u["updated_at"] == u["last_update_at"] == "2026-05-01T02:30:00+00:00"
    assert u["created_at"] == "2026-05-01T01:00:00+00:00"
    history = hb.json("show", t["id"], "--history")["history"]
    assert [h["at"] for h in history] == ["2026-05-01T01:00:00+00:00", "2026-05-01T02:30:00+00:00"]
    d = hb.json("done", t["id"], HB_NOW="2026-05-01T03:00:00Z")
    assert d["completed_at"] == "2026-05-01T03:00:00+00:00"


def test_naive_times_are_in_the_workspace_timezone(hb: Runner) -> None:
    hb("config", "set", "timezone", "Asia/Tokyo")
    t = hb.json("--now", "2026-05-01T09:00", "add", "tokyo", "--due", "2026-05-01T18:00")
    assert t["created_at"] == "2026-05-01T09:00:00+09:00"
    assert t["due_at"] == "2026-05-01T18:00:00+09:00"


def test_config_round_trip(hb: Runner) -> None:
    assert hb.json("config", "get", "queue.lease") == {"key": "queue.lease", "value": "30m"}
    hb("config", "set", "proactive.max_per_day", "2")
    hb("config", "set", "proactive.enabled", "yes")
    listing = hb.json("config", "list")
    assert listing["proactive.max_per_day"]["value"] == 2
    assert listing["proactive.enabled"] == {**listing["proactive.enabled"], "value": True, "set": True}
    assert listing["quiet_hours"]["value"] == "23:00-08:00" and listing["quiet_hours"]["set"] is False
    hb("config", "unset", "proactive.max_per_day")
    assert hb.json("config", "get", "proactive.max_per_day")["value"] == 1
    expected = {
        "timezone",
        "quiet_hours",
        "reminder.repeat_hours",
        "proactive.enabled",
        "proactive.max_per_day",
        "proactive.min_hours_between",
        "proactive.min_hours_since_conversation",
        "queue.lease",
        "queue.max_attempts",
        "todo.dialect",
        "sync.auto_export",
        "recur.materialize",
        "lang",
    }
    assert expected <= set(listing)


def test_an_unset_timezone_reads_as_the_machine_zone_it_stands_for(hb: Runner) -> None:
    assert hb.json("config", "get", "timezone", TZ="America/New_York")["value"] == "America/New_York"
    listing = hb.json("config", "list", TZ="Asia/Tokyo")["timezone"]
    assert listing["value"] == "Asia/Tokyo" and listing["set"] is False and listing["default"] is None
    hb("config", "set", "timezone", "Europe/London")
    assert hb("config", "get", "timezone", TZ="Asia/Tokyo").stdout == "Europe/London\n"


@pytest.mark.parametrize(
    ("typed", "stored"),
    [("23:00-8:00", "23:00-08:00"), (" 22:30 - 07:30 ", "22:30-07:30"), ("OFF", "off")],
)
def test_quiet_hours_are_stored_in_the_form_they_read_back(hb: Runner, typed: str, stored: str) -> None:
    assert hb.json("config", "set", "quiet_hours", typed)["value"] == stored
    assert hb("config", "get", "quiet_hours").stdout == stored + "\n"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("check_interval", "100000000d"),
        ("queue.lease", "99999999999w"),
        ("proactive.min_hours_between", "1e300"),
        ("reminder.repeat_hours", "1e300"),
        ("queue.max_attempts", "99999999999999999999999"),
    ],
)
def test_settings_too_large_to_use_are_refused_when_set(hb: Runner, key: str, value: str) -> None:
    # accepted, they made every later hb check / hb heartbeat fail with an overflow
    before = hb.json("config", "get", key)
    result = hb("config", "set", key, value, code=1)
    assert result.stderr.startswith(f"hb: setting {key}: ") and result.stderr.count("\n") == 1
    assert hb.json("config", "get", key) == before
    hb("--now", "2026-05-01T00:00", "heartbeat")


def test_an_unforeseen_failure_is_one_line_exit_70_and_v_shows_the_traceback(
    hb: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heartbeat.ledger import Ledger

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("something hb did not foresee\nsecond line")

    monkeypatch.setattr(Ledger, "iter_list", broken)
    result = hb("list", code=70)
    assert result.stderr == (
        "hb: internal error: RuntimeError: something hb did not foresee second line (hb -v ... shows where)\n"
    )
    with pytest.raises(RuntimeError, match="did not foresee"):
        hb("-v", "list")


def test_a_date_past_the_calendar_is_a_one_line_error(hb: Runner) -> None:
    # refused when typed (years 1970-2200), before it can break a later round
    result = hb("add", "a", "--due", "9999-12-31T23:59", "--next-check", "9999-12-31T23:00", code=1)
    assert (
        result.stderr == "hb: due time '9999-12-31T23:59' is outside the years 1970 to 2200 that hb handles\n"
    )
    assert hb.json("list", "--all") == []
    result = hb("--now", "9999-12-31T23:30", "check", code=1)
    assert (
        result.stderr
        == "hb: --now time '9999-12-31T23:30' is outside the years 1970 to 2200 that hb handles\n"
    )


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["add", "x", "--priority", "urgent"], "--priority"),
        (["add", "x", "--status", "finished"], "--status"),
        (["add", "x", "--risk", "P7"], "--risk"),
        (["list", "--status", "paused"], "--status"),
        (["add", "x", "--source", "mail"], "--source"),
    ],
)
def test_a_value_outside_the_choices_is_a_usage_error(hb: Runner, args: list[str], option: str) -> None:
    result = hb(*args, code=2)
    assert f"Invalid value for '{option}'" in result.stderr and "is not one of" in result.stderr
    assert hb.json("list", "--all") == []


def test_priority_must_be_one_the_queue_orders_by(hb: Runner) -> None:
    # a typo would have popped as medium without a word
    result = hb("add", "x", "--priority", "hgih", code=2)
    assert "Invalid value for '--priority': 'hgih' is not one of" in result.stderr
    assert hb.json("list", "--all") == []
    task = hb.json("add", "y", "--priority", " HIGH ")
    assert task["priority"] == "high"
    hb("update", task["id"], "--priority", "!!", code=2)
    assert hb.json("show", task["id"])["priority"] == "high"
    hb("update", task["id"], "--priority", "none")
    assert hb.json("show", task["id"])["priority"] is None


def test_arguments_and_sql_that_are_not_utf8_are_one_line_errors(hb: Runner) -> None:
    # what Python makes of argv b"caf\xe9": the bad byte as a lone surrogate
    result = hb("add", "caf\udce9", code=1)
    assert result.stderr == "hb: a text argument is not valid UTF-8 text\n"
    assert hb.json("list", "--all") == []
    result = hb("sql", "-", input=b"SELECT 1 AS \xff", code=1)
    assert result.stderr == "hb: <stdin>:1:13: not UTF-8 text (byte 12)\n"


def test_every_command_has_help_with_an_example(hb: Runner) -> None:
    import click

    from heartbeat.cli.main import cli

    def walk(group: click.Group, prefix: list[str]) -> list[list[str]]:
        out = []
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            out.append([*prefix, name])
            if isinstance(cmd, click.Group):
                out.extend(walk(cmd, [*prefix, name]))
        return out

    for path in walk(cli, []):
        result = hb(*path, "--help")
        assert "Example" in result.stdout, f"hb {' '.join(path)} --help has no example"


def test_a_deleted_current_directory_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        "import os, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "from heartbeat.cli.main import run\n"
        "sys.argv = ['hb', 'list']\n"
        "run()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HB_")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip() == "hb: the current directory no longer exists; cd to a directory that does"


def test_add_refuses_a_scope_tasks_json_cannot_hold(hb: Runner, workspace: Path) -> None:
    hb("add", "legacy")
    result = hb("add", "x", "--scope", "nope", code=1)
    assert result.stderr == "hb: scope 'nope' is not a _<batch>_extension.<queue> path\n"
    assert [t["title"] for t in hb.json("list")] == ["legacy"]
    hb("sync")  # the workspace stays usable
    assert json.loads(hb("pop").stdout)["description"] == "legacy"


def test_list_refuses_an_unknown_source(hb: Runner) -> None:
    hb("add", "a queue task")
    result = hb("list", "--source", "bogus", code=2)
    assert "'bogus' is not one of" in result.stderr
    assert [t["title"] for t in hb.json("list", "--source", "cli")] == ["a queue task"]
    assert hb.json("list", "--source", "todo") == []


def test_an_empty_task_id_is_refused(hb: Runner) -> None:
    for blank in ("", "  "):
        result = hb("add", "job", "--id", blank, code=1)
        assert result.stderr == "hb: a task id cannot be empty (tasks.json could not hold it)\n"
    assert hb.json("list", "--all") == []
    hb("sync")  # nothing it would write could stop a later sync


@pytest.mark.parametrize(
    ("task_id", "reason"),
    [
        ("a\nb", "task id 'a\\nb' holds the control character U+000A; give an id without it"),
        ("c\x1b[31md", "task id 'c\\x1b[31md' holds the control character U+001B; give an id without it"),
        ("tab\there", "task id 'tab\\there' holds the control character U+0009; give an id without it"),
    ],
)
def test_a_task_id_a_line_cannot_show_is_refused(
    hb_db: Runner, db_url: str, workspace: Path, task_id: str, reason: str
) -> None:
    """``hb add --id $'a\\nb'`` was taken: every list, brief and log line that showed the id then
    broke in two (or ran a terminal escape). Refused with one line, nothing written."""
    from tests.conftest import every_row, workspace_files

    hb_db("add", "first")
    before = (every_row(db_url), workspace_files(workspace))
    result = hb_db("add", "job", "--id", task_id, code=1)
    assert result.stderr == f"hb: {reason}\n"
    assert (every_row(db_url), workspace_files(workspace)) == before
    assert hb_db("add", "job", "--id", "a b\u00e9").stdout.strip() == "a b\u00e9"  # a blank is no control


def test_pop_with_a_field_the_task_lacks_claims_nothing(hb_db: Runner, db_url: str, workspace: Path) -> None:
    """``hb pop --fields nope`` (or ``--fields id,claim`` on a scoped queue, whose entries say
    ``task_id``) exited 2, a usage error, after the claim was committed: the task stayed doing
    under a token no one was shown, for the whole lease. Now the claim is undone."""
    from tests.conftest import every_row, workspace_files

    task = hb_db("add", "only task").stdout.strip()
    hb_db("sync")

    def state() -> tuple[object, ...]:  # (sync_state's bookkeeping of a pre-sync aside)
        rows = every_row(db_url)
        return workspace_files(workspace), [rows[t] for t in ("tasks", "task_events", "runs", "outcomes")]

    before = state()
    refused = hb_db("pop", "--fields", "id,nope", code=2)
    assert "unknown field(s) nope" in refused.stderr and refused.stdout == ""
    assert state() == before
    assert hb_db.json("show", task)["status"] == "todo"
    popped = json.loads(hb_db("pop", "--fields", "id,claim").stdout)
    assert popped["id"] == task and popped["claim"]


def test_fields_and_limit_make_lean_json(hb: Runner) -> None:
    for n in range(5):
        hb("add", f"task {n}", "--priority", "high")
    full = hb.json("list")
    assert len(full) == 5 and len(full[0]) > 20  # the default JSON stays complete
    lean = hb.json("list", "--fields", "id,title,status", "--limit", "2")
    assert lean == [{"id": t["id"], "title": t["title"], "status": "todo"} for t in full[:2]]
    one = hb.json("show", full[0]["id"], "--fields", "status,title")
    assert one == {"status": "todo", "title": "task 0"}
    popped = json.loads(hb("pop", "--fields", "id,claim").stdout)
    assert list(popped) == ["id", "claim"] and popped["claim"]
    assert hb.json("due", "--fields", "id", "--limit", "1") in (
        [],
        [{"id": full[1]["id"]}],
        [{"id": full[0]["id"]}],
    )
    bad = hb("list", "--fields", "id,colour", code=2)
    assert "unknown field(s) colour" in bad.stderr and "known: id" in bad.stderr
    assert hb("list", "--fields", "id", "--limit", "0", code=2).stderr
    table = hb("list", "--fields", "id,title").stdout.splitlines()
    assert table[0].split() == ["id", "title"] and len(table) == 2 + 5  # the popped one is active too
