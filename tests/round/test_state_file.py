"""memory/heartbeat-state.json: settings and facts in and out, unknown keys kept, edits in place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heartbeat.ops.sync import registry
from tests.conftest import Runner
from tests.round.conftest import decisions, open_ledger, runs, write

STATE = """{
  "todoWatch": {"lastScanAt": "2026-05-01T09:00:00+08:00", "nextScanAt": "2026-05-01T10:00:00+08:00"},
  "proactiveChat": {"enabled": true, "minHoursSinceLastConversation": 4,
                    "minHoursBetweenProactive": 12, "maxProactivePerDay": 1,
                    "lastProactiveAt": null, "lastConversationAt": "2026-05-01T08:30:00+08:00"},
  "memoryHygiene": {"enabled": true, "lastRunAt": null, "everyHours": 24},
  "lastChecks": {"email": 1714550400},
  "notes": ["keep me", {"nested": [1, 2.50, "x"]}]
}
"""


@pytest.fixture
def state_file(workspace: Path) -> Path:
    return write(workspace / "memory" / "heartbeat-state.json", STATE)


def test_import_reads_settings_and_facts(sh_db: Runner, state_file: Path) -> None:
    report = sh_db.json("--now", "2026-05-01T10:00", "import", "state")
    assert report["path"] == str(state_file)
    assert set(report["updated"]) == {
        "proactiveChat.enabled",
        "memoryHygiene.enabled",
        "proactiveChat.lastConversationAt",
        "todoWatch.lastScanAt",
    }
    assert sh_db("config", "get", "proactive.enabled").stdout.strip() == "true"
    assert sh_db("config", "get", "hygiene.enabled").stdout.strip() == "true"
    [seen] = runs(sh_db, "seen")
    assert seen["started_at"].isoformat() == "2026-05-01T00:30:00+00:00"
    [check] = runs(sh_db, "check")
    assert check["status"] == "imported"
    assert check["detail"]["nextScanAt"] == "2026-05-01T10:00:00+08:00"
    # the imported conversation holds proactive chat back
    got = json.loads(
        sh_db(
            "--now", "2026-05-01T11:00", "proactive", "--topic", "a", "--suggestion", "b", "--json", code=20
        ).stdout
    )
    assert got["reason"] == "recent_conversation"
    # hygiene enabled with no run recorded: due
    assert "memory hygiene due" in sh_db("--now", "2026-05-01T13:00", "check").stdout


def test_importing_twice_adds_no_second_fact(sh: Runner, state_file: Path) -> None:
    sh("--now", "2026-05-01T10:00", "import", "state")
    again = sh.json("--now", "2026-05-01T10:05", "import", "state")
    assert again["updated"] == []
    assert len(runs(sh, "seen")) == 1
    assert len(runs(sh, "check")) == 1


def test_older_fact_in_the_file_does_not_replace_a_newer_one(sh: Runner, state_file: Path) -> None:
    sh("--now", "2026-05-01T12:00", "seen")
    report = sh.json("--now", "2026-05-01T12:05", "import", "state")
    assert "proactiveChat.lastConversationAt" not in report["updated"]
    assert len(runs(sh, "seen")) == 1


def test_last_proactive_at_counts_toward_the_daily_cap(sh: Runner, workspace: Path) -> None:
    write(
        workspace / "memory" / "heartbeat-state.json",
        '{"proactiveChat": {"enabled": true, "minHoursBetweenProactive": 1,'
        ' "lastProactiveAt": 1777593600}}\n',  # 2026-05-01T00:00:00Z = 08:00 in Shanghai
    )
    sh("--now", "2026-05-01T12:00", "import", "state")
    [row] = decisions(sh, "proactive")
    assert (row["decision"], row["local_day"]) == ("sent", "2026-05-01")
    got = json.loads(
        sh(
            "--now", "2026-05-01T20:00", "proactive", "--topic", "a", "--suggestion", "b", "--json", code=20
        ).stdout
    )
    assert got["reason"] == "daily_cap"


def test_export_unchanged_ledger_leaves_the_file_byte_identical(sh: Runner, state_file: Path) -> None:
    sh("--now", "2026-05-01T10:00", "import", "state")
    result = sh.json("--now", "2026-05-01T10:00", "export", "state")
    assert result["written"] is False
    assert state_file.read_text() == STATE


def test_check_moves_the_watermark_written_back_in_place(sh: Runner, state_file: Path) -> None:
    sh("--now", "2026-05-01T10:00", "import", "state")
    sh("config", "set", "check_interval", "30m")
    sh("--now", "2026-05-01T10:15", "check")
    assert sh.json("--now", "2026-05-01T10:16", "export", "state")["written"] is True
    expected = STATE.replace(
        '"lastScanAt": "2026-05-01T09:00:00+08:00", "nextScanAt": "2026-05-01T10:00:00+08:00"',
        '"lastScanAt": "2026-05-01T10:15:00+08:00", "nextScanAt": "2026-05-01T10:45:00+08:00"',
    )
    assert state_file.read_text() == expected  # every other byte, unknown keys included, kept


def test_facts_from_the_ledger_are_written_in_the_workspace_offset(sh: Runner, state_file: Path) -> None:
    sh("--now", "2026-05-01T10:00", "import", "state")
    sh("--now", "2026-05-01T18:00:00Z", "seen")  # 02:00 the next day in Shanghai
    sh("--now", "2026-05-02T03:00", "hygiene", "done")
    sh("--now", "2026-05-02T09:00", "export", "state")
    doc = json.loads(state_file.read_text())
    assert doc["proactiveChat"]["lastConversationAt"] == "2026-05-02T02:00:00+08:00"
    assert doc["memoryHygiene"]["lastRunAt"] == "2026-05-02T03:00:00+08:00"
    assert doc["lastChecks"] == {"email": 1714550400}
    assert doc["notes"] == ["keep me", {"nested": [1, 2.5, "x"]}]
    assert '"nested": [1, 2.50, "x"]' in state_file.read_text()


def test_settings_set_in_the_ledger_are_exported(sh: Runner, state_file: Path) -> None:
    sh("--now", "2026-05-01T10:00", "import", "state")
    sh("config", "set", "proactive.max_per_day", "3")
    sh("--now", "2026-05-01T10:00", "export", "state")
    assert json.loads(state_file.read_text())["proactiveChat"]["maxProactivePerDay"] == 3
    assert '"maxProactivePerDay": 3}' not in state_file.read_text()  # edited in place: layout kept
    assert '"minHoursBetweenProactive": 12, "maxProactivePerDay": 3,' in state_file.read_text()


def test_export_over_a_file_the_ledger_never_read_is_refused(sh: Runner, state_file: Path) -> None:
    """A new ledger beside a runtime's heartbeat-state.json: ``hb export state`` laid the ledger's
    defaults over the file's settings (``proactiveChat.enabled`` true -> false), and the next sync
    took them in. Now refused, the file untouched, until hb has read it."""
    result = sh("--now", "2026-05-01T10:00", "export", "state", code=1)
    assert result.stderr == (
        f"hb: {state_file}: hb has not read this file as it is now, and would write its settings over "
        "the file's; run hb sync first (or move the file away); nothing written\n"
    )
    assert state_file.read_text() == STATE
    sh("--now", "2026-05-01T10:00", "sync")
    assert sh("config", "get", "proactive.enabled").stdout.strip() == "true"
    assert sh.json("--now", "2026-05-01T10:00", "export", "state")["written"] is False
    write(state_file, STATE.replace('"everyHours": 24', '"everyHours": 12'))  # edited since the sync
    assert "run hb sync first" in sh("--now", "2026-05-01T10:00", "export", "state", code=1).stderr
    other = write(state_file.parent / "other.json", STATE)
    refused = sh("--now", "2026-05-01T10:00", "export", "state", str(other), code=1).stderr
    assert f"run hb import state {other} first" in refused and other.read_text() == STATE
    write(other, "{}\n")  # a file that holds nothing is written
    assert sh.json("--now", "2026-05-01T10:00", "export", "state", str(other))["written"] is True


def test_export_without_a_file_writes_only_what_the_ledger_knows(sh: Runner, workspace: Path) -> None:
    assert sh.json("export", "state")["written"] is False  # nothing to say yet
    assert not (workspace / "memory" / "heartbeat-state.json").exists()
    sh("--now", "2026-05-01T10:00", "check")
    sh("--now", "2026-05-01T10:00", "export", "state")
    doc = json.loads((workspace / "memory" / "heartbeat-state.json").read_text())
    assert doc == {
        "todoWatch": {"lastScanAt": "2026-05-01T10:00:00+08:00", "nextScanAt": "2026-05-01T11:00:00+08:00"}
    }


def test_invalid_json_names_the_place_and_changes_nothing(sh: Runner, workspace: Path) -> None:
    path = write(
        workspace / "memory" / "heartbeat-state.json", '{\n  "proactiveChat": {"enabled": true,}\n}\n'
    )
    result = sh("import", "state", code=1)
    assert result.stderr.startswith(f"hb: {path}:2:")
    assert "Traceback" not in result.stderr
    assert sh("config", "get", "proactive.enabled").stdout.strip() == "false"


def test_wrong_value_type_names_the_key(sh: Runner, workspace: Path) -> None:
    path = write(
        workspace / "memory" / "heartbeat-state.json",
        '{"proactiveChat": {"enabled": true, "maxProactivePerDay": "two"}}',
    )
    result = sh("import", "state", code=1)
    assert result.stderr == (
        f"hb: {path}: proactiveChat.maxProactivePerDay: expected a whole number >= 0, got 'two'\n"
    )
    assert sh("config", "get", "proactive.enabled").stdout.strip() == "false"  # all or nothing


STATE_WITH_NULLS = """{
  "lastChecks": null,
  "proactiveChat": null,
  "memoryHygiene": {"enabled": false, "lastRunAt": null, "everyHours": 24},
  "todoWatch": null,
  "notes": [null, {"x": null}]
}
"""
TODO = "# TODO Work In Progress (WIP)\n\n- [ ] [Created](2026-05-01 08:00) | Send the invoice\n"


def test_a_null_object_is_read_as_empty_and_blocks_no_sync(sh_db: Runner, workspace: Path) -> None:
    """OpenClaw's own code never parses memory/heartbeat-state.json: the file is named only in
    its AGENTS.md workspace template, as a place where the agent itself may note when it last
    ran each check, and that template's example holds null for a check not run yet (checked in
    the openclaw sources at 8f8492d, April 2026). Nothing in OpenClaw breaks on a null there,
    and null reads as "nothing recorded". So hb reads a null proactiveChat / memoryHygiene /
    todoWatch as an empty object, with a warning naming the line, and the other files sync:
    before, one null there (once hb had a time to write into it) failed every hb sync and
    every heartbeat. hb replaces a null only where it writes a value; every other null and key
    keeps its bytes, lastChecks (which hb does not read) included."""
    path = write(workspace / "memory" / "heartbeat-state.json", STATE_WITH_NULLS)
    todo = write(workspace / "TODO.md", TODO)
    sh_db("--now", "2026-05-01T09:00", "check")  # a scan watermark hb must write into todoWatch
    queued = sh_db("--now", "2026-05-01T09:00", "add", "queued work").stdout.strip()
    result = sh_db("--now", "2026-05-01T09:05", "sync", "--json")
    reports = {r["kind"]: r for r in json.loads(result.stdout)["reports"]}
    assert [t["title"] for t in sh_db.json("list") if t["source"] == "todo"] == ["Send the invoice"]
    assert reports["tasks-json"]["added"] == [queued] and reports["tasks-json"]["written"] is True
    assert reports["state"]["written"] is True
    null_note = "is null: read as an empty object (hb replaces it only to write a value into it)"
    # the null hb wrote into is said once; the one it left is said at every sync, as warnings are
    assert reports["state"]["preserved"] == [f"{path}:3: proactiveChat {null_note}"]
    assert f"hb: warning: {path}:3: proactiveChat {null_note}\n" in result.stderr
    filled = (
        f"hb: warning: {path}:5: todoWatch was null: read as an empty object; "
        "hb writes todoWatch.lastScanAt, todoWatch.nextScanAt in its place\n"
    )
    assert filled in result.stderr
    assert "lastChecks" not in result.stderr and "Traceback" not in result.stderr
    # written where the null stood, laid out like its one-line neighbour memoryHygiene
    watermark = (
        '"todoWatch": {"lastScanAt": "2026-05-01T09:00:00+08:00", "nextScanAt": "2026-05-01T10:00:00+08:00"}'
    )
    synced = STATE_WITH_NULLS.replace('"todoWatch": null', watermark)
    assert path.read_text() == synced
    assert todo.read_text().startswith(TODO.rstrip("\n"))  # TODO.md is synced too (its id written in)
    # the next sync and a heartbeat: nothing more to write, the one null left still named
    again = sh_db("--now", "2026-05-01T09:10", "sync", "--json")
    state = next(r for r in json.loads(again.stdout)["reports"] if r["kind"] == "state")
    assert (state["written"], state["preserved"]) == (False, [f"{path}:3: proactiveChat {null_note}"])
    tick = sh_db("--now", "2026-05-01T09:20", "heartbeat")
    assert tick.stdout == "HEARTBEAT_OK\n" and "Traceback" not in tick.stderr
    assert path.read_text() == synced.replace("T09:00", "T09:20").replace("T10:00", "T10:20")


@pytest.mark.parametrize(
    ("text", "held"), [("", "is empty"), ("null\n", "holds null"), ("[]", "holds an empty array")]
)
def test_a_file_without_a_value_blocks_no_sync_and_becomes_an_object_when_hb_writes(
    sh_db: Runner, workspace: Path, text: str, held: str
) -> None:
    """An agent may create memory/heartbeat-state.json before it has anything to note in it
    (an empty file, or null / [] for "nothing yet"). That used to stop every hb sync (exit 1, or
    an internal error for the empty file) and so every heartbeat. Now it reads as a missing file
    does: the other files sync, a warning names the file's line 1, and the file keeps its bytes
    until hb has a value to write; then it is an object holding that value, said once."""
    path = write(workspace / "memory" / "heartbeat-state.json", text)
    write(workspace / "TODO.md", TODO)
    result = sh_db("--now", "2026-05-01T09:00", "sync", "--json")
    state = next(r for r in json.loads(result.stdout)["reports"] if r["kind"] == "state")
    note = f"{path}:1: the file {held}: read as an empty object (hb replaces it only to write a value)"
    assert (state["written"], state["preserved"]) == (False, [note])
    assert f"hb: warning: {note}\n" in result.stderr and "Traceback" not in result.stderr
    assert [t["title"] for t in sh_db.json("list") if t["source"] == "todo"] == ["Send the invoice"]
    assert path.read_text() == text
    sh_db("--now", "2026-05-01T09:05", "seen")  # a conversation time hb writes into the file
    result = sh_db("--now", "2026-05-01T09:10", "sync", "--json")
    was = "was empty" if held == "is empty" else held.replace("holds", "held")
    said = f"{path}:1: the file {was}: read as an empty object; hb writes an object in its place"
    assert f"hb: warning: {said}\n" in result.stderr
    written = json.loads(path.read_text())
    assert written == {"proactiveChat": {"lastConversationAt": "2026-05-01T09:05:00+08:00"}}
    again = sh_db("--now", "2026-05-01T09:15", "sync", "--json")
    state = next(r for r in json.loads(again.stdout)["reports"] if r["kind"] == "state")
    assert (state["written"], state["preserved"], again.stderr) == (False, [], "")


def test_export_writes_into_a_null_object_and_keeps_every_other_byte(sh_db: Runner, workspace: Path) -> None:
    """The round trip after the sync above: an export with nothing new leaves the file as it is;
    a setting set in the ledger replaces the null proactiveChat where it stands (an object holding
    just that value), and the file reads back into the ledger with nothing to change."""
    path = write(workspace / "memory" / "heartbeat-state.json", STATE_WITH_NULLS)
    sh_db("--now", "2026-05-01T09:00", "sync")
    assert path.read_text() == STATE_WITH_NULLS  # the ledger had nothing to write: every null kept
    exported = sh_db("--now", "2026-05-01T09:01", "export", "state", "--json")
    assert json.loads(exported.stdout)["written"] is False and path.read_text() == STATE_WITH_NULLS
    assert f"hb: warning: {path}:3: proactiveChat is null: read as an empty object" in exported.stderr
    sh_db("config", "set", "proactive.max_per_day", "2")
    exported = sh_db("--now", "2026-05-01T09:02", "export", "state", "--json")
    assert json.loads(exported.stdout)["written"] is True
    assert (
        f"hb: warning: {path}:3: proactiveChat was null: read as an empty object; "
        "hb writes proactiveChat.maxProactivePerDay in its place\n"
    ) in exported.stderr
    assert f"hb: warning: {path}:5: todoWatch is null: read as an empty object" in exported.stderr
    expected = STATE_WITH_NULLS.replace('"proactiveChat": null', '"proactiveChat": {"maxProactivePerDay": 2}')
    assert path.read_text() == expected
    state = next(
        r for r in sh_db.json("--now", "2026-05-01T09:03", "sync")["reports"] if r["kind"] == "state"
    )
    assert (state["written"], state["updated"], state["conflicts"]) == (False, [], [])
    assert sh_db("config", "get", "proactive.max_per_day").stdout.strip() == "2"
    imported = sh_db("--now", "2026-05-01T09:04", "import", "state", "--json")
    assert json.loads(imported.stdout)["warnings"] == [
        "line 5: todoWatch is null: read as an empty object (hb replaces it only to write a value into it)"
    ]
    assert f"hb: warning: {path}:5: todoWatch is null" in imported.stderr
    assert path.read_text() == expected


def test_an_object_holding_a_string_or_a_list_is_kept_and_blocks_no_sync(sh: Runner, workspace: Path) -> None:
    """Not null but not an object either: hb can neither read nor write what it would hold. The
    sync keeps it as written and says so, naming the line; the other files still sync. An
    explicit export, which would have to write there, is refused naming the line."""
    text = '{\n  "proactiveChat": "off",\n  "todoWatch": [1, 2]\n}\n'
    path = write(workspace / "memory" / "heartbeat-state.json", text)
    sh("--now", "2026-05-01T09:00", "check")
    sh("config", "set", "proactive.max_per_day", "2")
    queued = sh("--now", "2026-05-01T09:00", "add", "queued work").stdout.strip()
    result = sh("--now", "2026-05-01T09:05", "sync", "--json")
    reports = {r["kind"]: r for r in json.loads(result.stdout)["reports"]}
    assert reports["tasks-json"]["added"] == [queued] and reports["tasks-json"]["written"] is True
    assert reports["state"]["written"] is False
    kept = "not an object: nothing in it is read or written; kept as written"
    assert reports["state"]["preserved"] == [
        f"{path}:2: proactiveChat is a string, {kept}",
        f"{path}:3: todoWatch is an array, {kept}",
    ]
    assert path.read_text() == text
    refused = sh("--now", "2026-05-01T09:06", "export", "state", code=1)
    assert refused.stderr.endswith(
        f"hb: {path}:2: proactiveChat is not an object: cannot write proactiveChat.maxProactivePerDay\n"
    )
    assert path.read_text() == text


def test_a_value_hb_cannot_read_is_kept_and_does_not_stop_the_heartbeat(sh: Runner, workspace: Path) -> None:
    """The runtime owns the file: one odd value is a warning, not the end of every heartbeat."""
    text = '{"proactiveChat": {"enabled": true, "lastProactiveAt": "", "maxProactivePerDay": "lots"}}\n'
    path = write(workspace / "memory" / "heartbeat-state.json", text)
    tick = sh("--now", "2026-05-04T09:00", "heartbeat")
    assert tick.stdout == "HEARTBEAT_OK\n"
    assert (
        f"hb: warning: {path}: proactiveChat.lastProactiveAt: '' is not an ISO 8601 date-time" in tick.stderr
    )
    assert "proactiveChat.maxProactivePerDay: expected a whole number >= 0, got 'lots'" in tick.stderr
    assert sh("config", "get", "proactive.enabled").stdout.strip() == "true"  # the rest was read
    written = json.loads(path.read_text())["proactiveChat"]
    assert (written["lastProactiveAt"], written["maxProactivePerDay"]) == ("", "lots")  # kept as written
    sh("import", "state", code=1)  # an explicit import of the file stays all or nothing


def test_an_epoch_too_large_for_a_float_is_kept_and_does_not_stop_the_heartbeat(
    sh_db: Runner, workspace: Path
) -> None:
    """A 401-digit lastScanAt is a value hb cannot read, like 1e999: a warning naming the file
    and the key, the heartbeat goes on, and the number is written back digit for digit."""
    huge = "1" + "0" * 400
    text = f'{{"todoWatch": {{"lastScanAt": {huge}}}, "proactiveChat": {{"enabled": true}}}}\n'
    path = write(workspace / "memory" / "heartbeat-state.json", text)
    tick = sh_db("--now", "2026-05-04T09:00", "heartbeat")
    assert tick.stdout == "HEARTBEAT_OK\n"
    assert f"hb: warning: {path}: todoWatch.lastScanAt: {huge} is not a usable epoch time" in tick.stderr
    assert "Traceback" not in tick.stderr
    assert sh_db("config", "get", "proactive.enabled").stdout.strip() == "true"  # the rest was read
    assert f'"lastScanAt": {huge}' in path.read_text()  # kept as written
    result = sh_db("import", "state", code=1)  # an explicit import stays all or nothing
    assert result.stderr.startswith(f"hb: {path}: todoWatch.lastScanAt: {huge} is not a usable epoch time")


# --- the SYNCER (one step of hb sync) -------------------------------------------------


def sync_step(hb: Runner, path: Path, now: str) -> tuple[dict[str, object], str | None]:
    """Run the state syncer the way hb sync does: file text in, text to write out (then write it)."""
    syncer = registry.syncer("state")
    with open_ledger(hb, now) as ledger:
        text = path.read_text() if path.exists() else None
        with ledger.ctx.write() as db:
            report, new = syncer(ledger.ctx, db, path, text, ledger.now())
    if new is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new)
    return report.as_dict(), new


def test_sync_unchanged_writes_nothing(sh_db: Runner, state_file: Path) -> None:
    first, new = sync_step(sh_db, state_file, "2026-05-01T10:00")
    assert new is None and first["written"] is False
    assert "proactiveChat.enabled" in first["updated"]  # type: ignore[operator]
    second, new = sync_step(sh_db, state_file, "2026-05-01T10:01")
    assert new is None
    assert second["updated"] == [] and second["conflicts"] == []
    assert state_file.read_text() == STATE


def test_sync_ledger_change_goes_to_the_file(sh: Runner, state_file: Path) -> None:
    sync_step(sh, state_file, "2026-05-01T10:00")
    sh("--now", "2026-05-01T10:30", "config", "set", "proactive.min_hours_between", "6")
    sh("--now", "2026-05-01T10:30", "check")
    report, new = sync_step(sh, state_file, "2026-05-01T10:31")
    assert new == state_file.read_text()
    assert report["written"] is True and report["conflicts"] == []
    doc = json.loads(state_file.read_text())
    assert doc["proactiveChat"]["minHoursBetweenProactive"] == 6
    assert doc["todoWatch"]["lastScanAt"] == "2026-05-01T10:30:00+08:00"
    assert float(sh("config", "get", "proactive.min_hours_between").stdout) == 6


def test_sync_file_change_comes_into_the_ledger(sh: Runner, state_file: Path) -> None:
    sync_step(sh, state_file, "2026-05-01T10:00")
    state_file.write_text(STATE.replace('"maxProactivePerDay": 1', '"maxProactivePerDay": 2'))
    report, new = sync_step(sh, state_file, "2026-05-01T11:00")
    assert report["updated"] == ["proactiveChat.maxProactivePerDay"]
    assert new is None  # nothing for the ledger to add
    assert sh("config", "get", "proactive.max_per_day").stdout.strip() == "2"


def test_sync_setting_changed_on_both_sides_is_a_conflict_the_file_wins(sh: Runner, state_file: Path) -> None:
    sync_step(sh, state_file, "2026-05-01T10:00")
    sh("--now", "2026-05-01T10:30", "config", "set", "proactive.max_per_day", "5")
    state_file.write_text(STATE.replace('"maxProactivePerDay": 1', '"maxProactivePerDay": 2'))
    report, _ = sync_step(sh, state_file, "2026-05-01T11:00")
    assert report["conflicts"] == ["proactiveChat.maxProactivePerDay"]
    assert sh("config", "get", "proactive.max_per_day").stdout.strip() == "2"
    assert json.loads(state_file.read_text())["proactiveChat"]["maxProactivePerDay"] == 2


def test_a_conflict_stays_one_when_the_file_was_edited_just_after_hbs_write(
    sh_db: Runner, state_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit within a second of hb's write may come from a copy read before it: the sync takes
    the text before that write back as its base. It stamped that base with its own time, so a
    setting the ledger changed after the last sync no longer read as changed there: the file's
    value replaced it without a word. The base keeps the time of the sync that read it."""
    from heartbeat.ops.sync import writeback

    monkeypatch.setattr(writeback, "STALE_WRITE", 3_600_000_000_000)  # every edit counts as quick

    def sync(now: str) -> dict[str, Any]:
        reports = sh_db.json("--now", now, "sync", "--only", "state")["reports"]
        [report] = [r for r in reports if r["kind"] == "state"]
        return dict(report)

    sync("2026-05-01T10:00")
    sh_db("--now", "2026-05-01T10:10", "config", "set", "proactive.max_per_day", "3")
    assert sync("2026-05-01T10:20")["written"] is True
    new = state_file.read_text()
    assert json.loads(new)["proactiveChat"]["maxProactivePerDay"] == 3
    state_file.write_text(new.replace('"maxProactivePerDay": 3', '"maxProactivePerDay": 2'))
    sh_db("--now", "2026-05-01T10:30", "config", "set", "proactive.max_per_day", "5")
    report = sync("2026-05-01T10:40")
    assert report["conflicts"] == ["proactiveChat.maxProactivePerDay"]
    assert report["updated"] == []
    assert sh_db("config", "get", "proactive.max_per_day").stdout.strip() == "2"  # the file wins, said


def test_sync_creates_the_file_only_when_there_is_something_to_write(sh: Runner, workspace: Path) -> None:
    path = workspace / "memory" / "heartbeat-state.json"
    report, new = sync_step(sh, path, "2026-05-01T10:00")
    assert new is None and not path.exists()
    sh("--now", "2026-05-01T10:00", "seen")
    report, new = sync_step(sh, path, "2026-05-01T10:01")
    assert report["written"] is True
    assert json.loads(path.read_text()) == {
        "proactiveChat": {"lastConversationAt": "2026-05-01T10:00:00+08:00"}
    }


def test_sync_unreadable_file_raises_with_the_path(sh: Runner, workspace: Path) -> None:
    from heartbeat.errors import FileFormatError

    path = write(workspace / "memory" / "heartbeat-state.json", "[1, 2]\n")
    with pytest.raises(FileFormatError, match=r"heartbeat-state\.json:1:1: .*JSON object"):
        sync_step(sh, path, "2026-05-01T10:00")


def test_proactive_reads_what_the_runtime_wrote_since_the_last_sync(sh_db: Runner, workspace: Path) -> None:
    path = workspace / "memory" / "heartbeat-state.json"
    chat = {"enabled": True, "minHoursBetweenProactive": 12, "maxProactivePerDay": 3}
    write(path, json.dumps({"proactiveChat": {**chat, "lastProactiveAt": None}}))
    sh_db("--now", "2026-05-01T09:00Z", "sync")
    # the runtime spoke to the user itself at 09:30 and wrote it down; no hb sync since
    runtime = json.dumps({"proactiveChat": {**chat, "lastProactiveAt": "2026-05-01T09:30:00Z"}}, indent=1)
    write(path, runtime)
    got = json.loads(
        sh_db(
            "--now", "2026-05-01T10:00Z", "proactive", "--topic", "t", "--suggestion", "s", "--json", code=20
        ).stdout
    )
    assert (got["reason"], got["last_proactive_at"]) == ("min_gap", "2026-05-01T17:30:00+08:00")
    assert path.read_text() == runtime  # read, and nothing to write back


def test_a_repeated_key_is_a_warning_naming_its_line(sh: Runner, workspace: Path) -> None:
    """JSON readers take a repeated key's last value, and a change to its object writes the object
    out whole, the first value gone: tasks.json warned of that, heartbeat-state.json did not."""
    path = workspace / "memory" / "heartbeat-state.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text('{"note": 1,\n "note": 2, "lastChecks": {"email": 1714550400}}\n')
    warned = f"hb: warning: {path}:2: key 'note' is repeated in its object: the last value counts"
    assert warned in sh("sync").stderr
    assert path.read_text() == '{"note": 1,\n "note": 2, "lastChecks": {"email": 1714550400}}\n'


FRACTIONS = (
    '{"todoWatch": {"lastScanAt": "2026-05-01T09:00:00.5+08:00"},\n'
    ' "proactiveChat": {"lastConversationAt": 1777597200.5, "lastProactiveAt": "2026-05-01T00:00:00.250Z"},\n'
    ' "memoryHygiene": {"lastRunAt": 1777593600123}}\n'
)


def test_times_with_a_fraction_stay_as_written_until_the_ledger_has_a_newer_one(
    sh_db: Runner, workspace: Path
) -> None:
    """OpenClaw's agent may write fractions of a second, epoch floats or milliseconds, in any
    offset. The ledger keeps the exact instant, so a sync that only read them rewrites none."""
    state_file = write(workspace / "memory" / "heartbeat-state.json", FRACTIONS)
    first = sh_db.json("--now", "2026-05-01T12:00Z", "sync", "--only", "state")["reports"][0]
    assert first["written"] is False
    assert state_file.read_text() == FRACTIONS
    [seen] = runs(sh_db, "seen")
    assert seen["started_at"].isoformat() == "2026-05-01T01:00:00.500000+00:00"
    [check] = runs(sh_db, "check")
    assert check["started_at"].isoformat() == "2026-05-01T01:00:00.500000+00:00"
    again = sh_db.json("--now", "2026-05-01T12:01Z", "sync", "--only", "state")["reports"][0]
    assert again["written"] is False and again["updated"] == []
    assert state_file.read_text() == FRACTIONS
    # a newer conversation is written in whole seconds, as the runtime's kind (an epoch float)
    sh_db("--now", "2026-05-01T12:30:00.75Z", "seen")
    sh_db("--now", "2026-05-01T12:31Z", "sync", "--only", "state")
    assert state_file.read_text() == FRACTIONS.replace("1777597200.5", "1777638600.0")


def test_the_daily_cap_counts_the_day_in_the_zone_the_workspace_has_now(sh_db: Runner) -> None:
    sh = sh_db
    """A proactive message sent at 19:00 in New York (08:00 of the next day in Tokyo), then the
    workspace moved to Asia/Tokyo: a second message at 20:00 Tokyo time went out too, the first
    one counted for the New York day it was stored with. Both are on one Tokyo day."""
    sh("config", "set", "timezone", "America/New_York")
    sh("config", "set", "proactive.enabled", "true")
    ask = ("proactive", "--topic", "a", "--suggestion", "b", "--json")
    assert json.loads(sh("--now", "2026-05-04T19:00-04:00", *ask).stdout)["decision"] == "sent"
    sh("config", "set", "timezone", "Asia/Tokyo")
    held = json.loads(sh("--now", "2026-05-05T20:00+09:00", *ask, code=20).stdout)
    assert (held["decision"], held["reason"]) == ("suppressed", "daily_cap")
    # the next Tokyo day, the cap is free again
    assert json.loads(sh("--now", "2026-05-06T20:00+09:00", *ask).stdout)["decision"] == "sent"


def test_a_last_event_later_than_now_is_kept_as_written_and_not_read(sh_db: Runner, workspace: Path) -> None:
    """A ``lastProactiveAt`` typed as 2062 held proactive chat back until then, and once the
    user set it right in the file, the next heartbeat wrote 2062 back over the correction (only a
    newer time is taken). A last event later than now is a value hb does not read: a warning,
    the file's value kept as written, the ledger unchanged; the corrected value is read."""
    sh_db("config", "set", "proactive.enabled", "true")
    sh_db("config", "set", "quiet_hours", "off")
    text = '{"proactiveChat": {"lastProactiveAt": "2062-05-01T09:00:00+08:00"}, "memoryHygiene": {}}\n'
    path = write(workspace / "memory" / "heartbeat-state.json", text)

    tick = sh_db("--now", "2026-05-04T09:00", "sync")
    assert (
        f"hb: warning: {path}: proactiveChat.lastProactiveAt: '2062-05-01T09:00:00+08:00' is later than "
        "now: no last event yet to come: kept as written, not read"
    ) in tick.stderr
    kept = json.loads(path.read_text())["proactiveChat"]["lastProactiveAt"]
    assert kept == "2062-05-01T09:00:00+08:00"
    assert decisions(sh_db, "proactive") == []
    asked = sh_db("--now", "2026-05-04T09:00", "proactive", "--topic", "t", "--suggestion", "s", "--json")
    assert json.loads(asked.stdout)["decision"] == "sent"

    corrected = text.replace("2062-05-01T09:00:00", "2026-05-03T09:00:00")
    path.write_text(corrected)
    sh_db("--now", "2026-05-04T10:00", "sync")
    written = json.loads(path.read_text())["proactiveChat"]["lastProactiveAt"]
    assert written == "2026-05-04T09:00:00+08:00"  # the ledger's own, later one: no 2062
    sh_db("--now", "2026-05-04T10:00", "import", "state")  # read, where 2062 was refused
    path.write_text(text)
    result = sh_db("--now", "2026-05-04T10:00", "import", "state", code=1)
    assert "proactiveChat.lastProactiveAt: '2062-05-01T09:00:00+08:00' is later than now" in result.stderr


def test_a_huge_number_is_quoted_short_in_its_warning(sh: Runner, workspace: Path) -> None:
    """``"maxProactivePerDay": 1e308`` is read as a whole number of 309 digits: the warning
    quoted them all."""
    path = write(
        workspace / "memory" / "heartbeat-state.json", '{"proactiveChat": {"maxProactivePerDay": 1e308}}\n'
    )
    warned = [
        line
        for line in sh("sync").stderr.splitlines()
        if "maxProactivePerDay" in line or "max_per_day" in line
    ]
    assert warned == [
        f"hb: warning: {path}: setting proactive.max_per_day: Input should be less than or equal to 1000000 "
        "(got 1000000000000000010979063629... (309 characters)): kept as written, not read"
    ]
