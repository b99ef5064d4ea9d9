"""hb sync with TODO.RECUR.md: entries <-> recurrence rules, comments kept, cron only when extended."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from heartbeat.db.models import Recurrence
from tests.conftest import Runner
from tests.sync.helpers import events, ledger, read, recur_text, recurrences, report, write

NOW = "2026-05-01T00:00:00Z"
TENNIS = "- [ ] [Next](2026-05-07 15:00), [Repeat](weekly), [TZ](Asia/Tokyo) | Play tennis."
QUEUE = "- [ ] [Next](2026-05-02 09:00), [Repeat](every 6 hours) | Check the report queue."
STANDUP = "- [ ] [Next](2026-05-04 09:30), [Repeat](Daily), [ChatID](tg:-100123) | Stand-up notes."
MONTHLY = "- [ ] [Next](2026-05-04 09:30), [Repeat](monthly) | Pay rent."


def sync(hb: Runner, *args: str, now: str = NOW) -> dict[str, Any]:
    return json.loads(hb("sync", "--json", *args, HB_NOW=now).stdout)


@pytest.fixture
def recur(workspace: Path) -> Path:
    path = workspace / "TODO.RECUR.md"
    write(path, recur_text(TENNIS, QUEUE, MONTHLY, STANDUP))
    return path


def by_title(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["title"]: r for r in rows}


def set_rule(workspace: Path, db: str | None, rule_id: str, **values: Any) -> None:
    with ledger(workspace, db) as led, led.write() as s:
        row = s.scalars(select(Recurrence).where(Recurrence.id == rule_id)).one()
        for name, value in values.items():
            setattr(row, name, value)
        row.updated_at = datetime(2026, 5, 2, tzinfo=UTC)


def test_entries_become_rules_and_the_file_is_kept(
    hb_db: Runner, recur: Path, workspace: Path, db_url: str
) -> None:
    hb_db("config", "set", "timezone", "America/New_York")
    before = recur.read_bytes()
    out = sync(hb_db)
    rep = report(out, "recur")
    assert len(rep["added"]) == 3 and rep["written"] is False
    assert rep["preserved"] == [
        f"{recur}:14: bad Repeat 'monthly': expected daily, weekly, every N days or every N hours"
    ]
    assert recur.read_bytes() == before
    rows = by_title(recurrences(workspace, db_url))
    assert set(rows) == {"Play tennis.", "Check the report queue.", "Stand-up notes."}
    tennis = rows["Play tennis."]
    assert tennis["id"].startswith("recur-") and len(tennis["id"]) == 14
    assert (tennis["source"], tennis["rule"], tennis["tz"], tennis["next_local"]) == (
        "recur",
        "weekly",
        "Asia/Tokyo",
        "2026-05-07 15:00",
    )
    assert tennis["next_at"] == datetime(2026, 5, 7, 6, 0, tzinfo=UTC)
    queue = rows["Check the report queue."]
    assert queue["tz"] is None and queue["next_at"] == datetime(
        2026, 5, 2, 13, 0, tzinfo=UTC
    )  # New York, EDT
    standup = rows["Stand-up notes."]
    assert (standup["rule"], standup["chat_id"], standup["enabled"]) == ("Daily", "tg:-100123", True)
    assert [r["title"] for r in recurrences(workspace, db_url)] == [
        "Play tennis.",
        "Check the report queue.",
        "Stand-up notes.",
    ]
    assert sync(hb_db)["changed"] is False


def test_a_ledger_side_next_is_written_back_and_nothing_else_moves(
    hb_db: Runner, recur: Path, workspace: Path, db_url: str
) -> None:
    sync(hb_db)
    queue = by_title(recurrences(workspace, db_url))["Check the report queue."]
    set_rule(workspace, db_url, queue["id"], next_local="2026-05-02 21:00")
    out = sync(hb_db, now="2026-05-02T20:00:00Z")
    assert report(out, "recur")["updated"] == [queue["id"]] and report(out, "recur")["written"] is True
    expected = recur_text(TENNIS, QUEUE.replace("2026-05-02 09:00", "2026-05-02 21:00"), MONTHLY, STANDUP)
    expected = expected.replace('updated_at: "2026-05-02T00:00:00Z"', 'updated_at: "2026-05-02T20:00:00Z"')
    assert read(recur) == expected.replace("recurring_count: 4", "recurring_count: 3")


def test_editing_an_entry_updates_the_same_rule(hb: Runner, recur: Path, workspace: Path) -> None:
    hb("config", "set", "timezone", "UTC")
    sync(hb)
    before = by_title(recurrences(workspace))
    write(recur, read(recur).replace("[Repeat](every 6 hours)", "[Repeat](every 4 hours)"))
    write(recur, read(recur).replace("Play tennis.", "Play tennis with Ann."))
    out = sync(hb)
    assert sorted(report(out, "recur")["updated"]) == sorted(
        [before["Check the report queue."]["id"], before["Play tennis."]["id"]]
    )
    after = {r["id"]: r for r in recurrences(workspace)}
    assert after[before["Check the report queue."]["id"]]["rule"] == "every 4 hours"
    assert after[before["Play tennis."]["id"]]["title"] == "Play tennis with Ann."
    write(
        recur,
        read(recur).replace(
            "[Next](2026-05-04 09:30), [Repeat](Daily)", "[Next](2026-05-05 07:00), [Repeat](Daily)"
        ),
    )
    out = sync(hb)
    standup = after[before["Stand-up notes."]["id"]]
    assert report(out, "recur")["updated"] == [standup["id"]]
    got = {r["id"]: r for r in recurrences(workspace)}[standup["id"]]
    assert got["next_local"] == "2026-05-05 07:00" and got["next_at"] == datetime(
        2026, 5, 5, 7, 0, tzinfo=UTC
    )


def test_both_sides_changed_is_a_conflict_kept_in_history(
    hb_db: Runner, recur: Path, workspace: Path, db_url: str
) -> None:
    sync(hb_db)
    tennis = by_title(recurrences(workspace, db_url))["Play tennis."]
    set_rule(workspace, db_url, tennis["id"], next_local="2026-05-14 15:00")
    write(recur, read(recur).replace("Play tennis.", "Play squash."))
    out = sync(hb_db)
    assert report(out, "recur")["conflicts"] == [tennis["id"]]
    got = {r["id"]: r for r in recurrences(workspace, db_url)}[tennis["id"]]
    assert (got["title"], got["next_local"]) == ("Play squash.", "2026-05-07 15:00")
    [conflict] = events(workspace, tennis["id"], db_url)
    assert conflict["kind"] == "conflict" and conflict["before"]["next_local"] == "2026-05-14 15:00"


def test_a_deleted_entry_removes_its_rule(hb_db: Runner, recur: Path, workspace: Path, db_url: str) -> None:
    sync(hb_db)
    tennis = by_title(recurrences(workspace, db_url))["Play tennis."]
    write(recur, read(recur).replace(TENNIS + "\n", ""))
    out = sync(hb_db)
    assert report(out, "recur")["removed"] == [tennis["id"]]
    assert tennis["id"] not in {r["id"] for r in recurrences(workspace, db_url)}
    [removed] = events(workspace, tennis["id"], db_url)
    assert removed["kind"] == "removed" and removed["before"]["title"] == "Play tennis."


def test_cron_rules_are_written_only_in_the_extended_dialect(
    hb: Runner, recur: Path, workspace: Path
) -> None:
    sync(hb)
    with ledger(workspace) as led, led.write() as s:
        for rule_id, rule in (("recur-0000c001", "cron 0 9 * * 1-5"), ("recur-0000c002", "every 2 days")):
            s.add(
                Recurrence(
                    id=rule_id,
                    source="cli",
                    title=f"cli rule {rule}",
                    rule=rule,
                    tz="Europe/London",
                    next_local="2026-05-04 09:00",
                    next_at=datetime(2026, 5, 4, 8, 0, tzinfo=UTC),
                    position=100,
                    created_at=datetime(2026, 5, 1, tzinfo=UTC),
                    updated_at=datetime(2026, 5, 1, tzinfo=UTC),
                )
            )
    out = sync(hb)
    assert report(out, "recur")["added"] == ["recur-0000c002"]
    text = read(recur)
    assert text.endswith(
        "- [ ] [Next](2026-05-04 09:00), [Repeat](every 2 days), [TZ](Europe/London)"
        " | cli rule every 2 days\n"
    )
    assert "cron" not in text
    hb("config", "set", "todo.dialect", "extended")
    out = sync(hb)
    assert report(out, "recur")["added"] == ["recur-0000c001"]
    assert read(recur).endswith(
        "- [ ] [Next](2026-05-04 09:00), [Repeat](cron 0 9 * * 1-5), [TZ](Europe/London), "
        "[ID](recur-0000c001) | cli rule cron 0 9 * * 1-5\n"
    )
    hb("config", "set", "todo.dialect", "strict")
    out = sync(hb)
    assert report(out, "recur")["removed"] == ["recur-0000c001"]
    assert "cron" not in read(recur)
    assert "recur-0000c001" in {r["id"] for r in recurrences(workspace)}  # the rule stays in the ledger


def test_a_next_inside_a_daylight_saving_gap_fires_when_the_gap_ends(hb: Runner, workspace: Path) -> None:
    write(
        workspace / "TODO.RECUR.md",
        "- [ ] [Next](2026-03-08 02:30), [Repeat](daily), [TZ](America/New_York) | Gap.\n"
        "- [ ] [Next](2026-11-01 01:30), [Repeat](daily), [TZ](America/New_York) | Twice.\n",
    )
    sync(hb)
    rows = by_title(recurrences(workspace))
    assert rows["Gap."]["next_at"] == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)  # 03:00 EDT
    assert rows["Twice."]["next_at"] == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # the first 01:30 (EDT)


def test_import_and_export_recur(hb: Runner, recur: Path, workspace: Path) -> None:
    result = hb("import", "recur", str(recur))
    assert (
        f"{recur}:14: bad Repeat 'monthly': expected daily, weekly, every N days or every N hours"
        in result.stderr
    )
    got = hb.json("import", "recur", str(recur))
    assert got["added"] == [] and got["unchanged"] == 3
    assert hb("export", "recur", "-").stdout == read(recur)
    assert sync(hb)["changed"] is False


def test_an_edit_that_left_next_alone_does_not_bring_back_a_fired_occurrence(
    hb: Runner, workspace: Path
) -> None:
    path = workspace / "TODO.RECUR.md"
    write(path, recur_text("- [ ] [Next](2026-05-03 09:00), [Repeat](daily) | Water plants."))
    hb("init", "--timezone", "UTC")
    sync(hb, now="2026-05-03T08:00:00Z")
    hb("recur", "materialize", HB_NOW="2026-05-03T09:00:00Z")  # fires 05-03 09:00; Next -> 05-04
    # a hand edit of the text made after it (materialize syncs an edit made before it first)
    write(path, read(path).replace("Water plants.", "Water the plants."))
    out = sync(hb, now="2026-05-03T09:00:00Z")
    [rule] = recurrences(workspace)
    assert report(out, "recur")["conflicts"] == [rule["id"]]
    assert (rule["title"], rule["next_local"]) == ("Water the plants.", "2026-05-04 09:00")
    assert "- [ ] [Next](2026-05-04 09:00), [Repeat](daily) | Water the plants.\n" in read(path)
    hb("recur", "materialize", HB_NOW="2026-05-03T09:30:00Z")
    sync(hb, now="2026-05-03T09:30:00Z")
    todo = read(workspace / "TODO.md")
    assert todo.count("| 2026-05-03 09:00 ") == 1, todo  # that occurrence fired once
    assert [e["kind"] for e in events(workspace, rule["id"])][-1] == "conflict"


def test_an_edit_that_moved_next_wins_over_the_ledgers_next(hb: Runner, workspace: Path) -> None:
    path = workspace / "TODO.RECUR.md"
    write(path, recur_text("- [ ] [Next](2026-05-03 09:00), [Repeat](daily) | Water plants."))
    hb("init", "--timezone", "UTC")
    sync(hb, now="2026-05-03T08:00:00Z")
    write(path, read(path).replace("2026-05-03 09:00", "2026-05-10 07:00"))  # the user reschedules
    hb("recur", "materialize", HB_NOW="2026-05-03T09:00:00Z")
    sync(hb, now="2026-05-03T09:00:00Z")
    [rule] = recurrences(workspace)
    assert rule["next_local"] == "2026-05-10 07:00"
    assert "[Next](2026-05-10 07:00)" in read(path)


def test_a_zone_of_the_database_that_is_no_place_is_read_as_the_runtime_reads_it(
    hb_db: Runner, workspace: Path
) -> None:
    """Go's LoadLocation loads ``Factory`` and ``posixrules`` (files of the zone database that
    are no place), so mistermorph runs such a rule. hb refuses them as its workspace timezone;
    in TODO.RECUR.md it takes them as the runtime does. One such line stopped every hb sync
    and heartbeat of the workspace ("unknown timezone 'Factory'", no file or line named)."""
    hb_db("config", "set", "timezone", "Asia/Tokyo")
    write(
        workspace / "TODO.RECUR.md",
        "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | Tokyo.\n"
        "- [ ] [Next](2026-05-01 09:00), [Repeat](daily), [TZ](Factory) | Factory.\n"
        "- [ ] [Next](2026-05-01 09:00), [Repeat](daily), [TZ](posixrules) | Posix rules.\n",
    )
    write(workspace / "TODO.md", "- [ ] [Created](2026-05-01 00:00) | A task.\n")
    synced = sync(hb_db)
    added = {r["kind"]: len(r["added"]) for r in synced["reports"]}
    assert (added["todo"], added["recur"]) == (1, 3)
    rules = {r["title"]: r for r in json.loads(hb_db("recur", "list", "--json").stdout)}
    assert rules["Tokyo."]["next_at"] == "2026-05-01T09:00:00+09:00"
    assert rules["Factory."]["next_at"] == "2026-05-01T18:00:00+09:00"  # 09:00 at offset 0
    assert (
        rules["Posix rules."]["next_at"] == "2026-05-01T22:00:00+09:00"
    )  # 09:00 EDT, as posixrules is New York
    due = json.loads(hb_db("recur", "due", "--json", HB_NOW="2026-05-01T10:00:00Z").stdout)
    assert sorted(d["title"] for d in due) == ["Factory.", "Tokyo."]
    assert hb_db("heartbeat", HB_NOW="2026-05-01T10:00:00Z").exit_code == 0
    hb_db("report", "recurrences", HB_NOW="2026-05-01T10:00:00Z")
