"""Repeat rules (TODO.RECUR.md entries and `hb recur add`): due, claim, missed runs, materialise."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from heartbeat.db.models import Run, Task, TaskStatus
from tests.conftest import Runner
from tests.recur.conftest import due_ids, open_ledger, rule


def _add(hb: Runner, title: str, *options: str, now: str = "2026-04-01T00:00Z") -> str:
    added = hb.json("--now", now, "recur", "add", title, *options)
    rule_id: str = added["id"]
    return rule_id


# --- FORMATS.md section 1: the runtime's own examples ---------------------------------------


def test_every_6_hours_next_0900_now_2000_moves_to_2100(hb_db: Runner) -> None:
    hb_db("init")  # the machine zone: UTC
    rid = _add(hb_db, "Check the report queue.", "--repeat", "every 6 hours", "--next", "2026-05-02 09:00")
    result = hb_db.json("--now", "2026-05-02T20:00Z", "recur", "materialize")
    assert result["advanced"] == [
        {"id": rid, "next": "2026-05-02 09:00", "new_next": "2026-05-02 21:00", "missed": 1, "entries": 1}
    ]
    assert rule(hb_db, rid)["next"] == "2026-05-02 21:00"
    assert rule(hb_db, rid)["next_at"] == "2026-05-02T21:00:00+00:00"


def test_every_3_days_next_0501_now_0509_moves_to_0510(hb_db: Runner) -> None:
    hb_db("init")  # the machine zone: UTC
    rid = _add(hb_db, "Water the plants.", "--repeat", "every 3 days", "--next", "2026-05-01 09:00")
    result = hb_db.json("--now", "2026-05-09T10:00Z", "recur", "materialize")
    assert [a["new_next"] for a in result["advanced"]] == ["2026-05-10 09:00"]
    assert [e["title"] for e in result["created"]] == ["2026-05-01 09:00 Water the plants."]
    assert rule(hb_db, rid)["next"] == "2026-05-10 09:00"


def test_weekly_tokyo_is_due_inclusive_and_next_is_a_week_later(hb_db: Runner) -> None:
    hb_db("init")  # the machine zone: UTC
    rid = _add(
        hb_db, "Play tennis.", "--repeat", "weekly", "--next", "2026-05-07 15:00", "--tz", "Asia/Tokyo"
    )
    assert due_ids(hb_db, "2026-05-07T05:59Z") == []
    [due] = hb_db.json("--now", "2026-05-07T06:00Z", "recur", "due")  # 15:00 JST exactly
    assert (due["id"], due["occurrences"], due["missed"]) == (rid, ["2026-05-07T06:00:00+00:00"], 0)
    result = hb_db.json("--now", "2026-05-07T06:00Z", "recur", "materialize")
    assert [e["title"] for e in result["created"]] == ["2026-05-07 15:00 (Asia/Tokyo) Play tennis."]
    assert rule(hb_db, rid)["next"] == "2026-05-14 15:00"
    assert rule(hb_db, rid)["tz"] == "Asia/Tokyo"


# --- materialise ------------------------------------------------------------------------------


def test_materialize_folds_missed_periods_into_one_entry_at_the_top(hb_db: Runner) -> None:
    hb_db("init")  # the machine zone: UTC
    rid = _add(
        hb_db,
        "Stretch | then drink water",
        "--repeat",
        "daily",
        "--next",
        "2026-05-01 09:00",
        "--chat-id",
        "tg:-100123",
    )
    with open_ledger(hb_db) as ledger, ledger.write() as s:
        now = ledger.now()
        for position, title in ((0, "older entry"), (1, "newer entry")):
            s.add(
                Task(
                    id=f"todo-0000000{position}",
                    scope="",
                    source="todo",
                    title=title,
                    status=TaskStatus.TODO,
                    position=position,
                    created_at=now,
                    updated_at=now,
                )
            )
    result = hb_db.json("--now", "2026-05-04T10:00Z", "recur", "materialize")  # 3 periods missed
    [entry] = result["created"]
    assert entry["title"] == "2026-05-01 09:00 Stretch | then drink water"  # no TZ: no label
    assert result["advanced"][0]["missed"] == 3
    assert rule(hb_db, rid)["next"] == "2026-05-05 09:00"  # first occurrence after now, phase kept

    task = hb_db.json("show", entry["id"])
    assert (task["source"], task["status"], task["scope"]) == ("todo", "todo", None)
    assert task["created_at"] == "2026-05-04T10:00:00+00:00"
    with open_ledger(hb_db) as ledger, ledger.read() as s:
        rows = s.scalars(select(Task).where(Task.source == "todo").order_by(Task.position)).all()
        assert [t.id for t in rows] == [entry["id"], "todo-00000000", "todo-00000001"]
        assert rows[0].position == -1
        assert rows[0].chat_id == "tg:-100123"
        [run] = s.scalars(select(Run).where(Run.kind == "materialize")).all()
        assert run.status == "ok"
        assert run.detail == {
            "created": [entry["id"]],
            "advanced": [{"id": rid, "next": "2026-05-01 09:00", "new_next": "2026-05-05 09:00"}],
        }

    # nothing is due any more: a second call creates nothing and records an empty run
    assert hb_db.json("--now", "2026-05-04T10:05Z", "recur", "materialize")["created"] == []
    assert hb_db("--now", "2026-05-04T10:05Z", "recur", "materialize").stdout == "Nothing due.\n"


def test_materialize_puts_each_new_entry_above_the_last(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    first = _add(hb, "A", "--repeat", "daily", "--next", "2026-05-01 08:00")
    second = _add(hb, "B", "--repeat", "daily", "--next", "2026-05-01 09:00")
    hb("--now", "2026-05-01T08:30Z", "recur", "materialize")
    hb("--now", "2026-05-01T09:30Z", "recur", "materialize")
    with open_ledger(hb) as ledger, ledger.read() as s:
        titles = s.scalars(select(Task.title).where(Task.source == "todo").order_by(Task.position)).all()
    assert titles == ["2026-05-01 09:00 B", "2026-05-01 08:00 A"]
    assert {rule(hb, first)["next"], rule(hb, second)["next"]} == {"2026-05-02 08:00", "2026-05-02 09:00"}


def test_materialize_dry_run_changes_nothing(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    rid = _add(hb, "Report", "--repeat", "every 2 hours", "--next", "2026-05-01 08:00")
    result = hb.json("--now", "2026-05-01T09:00Z", "recur", "materialize", "--dry-run")
    assert result["dry_run"] is True
    assert result["created"] == [
        {"id": None, "title": "2026-05-01 08:00 Report", "recurrence": rid, "chat_id": None}
    ]
    assert result["advanced"][0]["new_next"] == "2026-05-01 10:00"
    assert rule(hb, rid)["next"] == "2026-05-01 08:00"
    assert hb.json("list", "--all") == []


def test_materialize_keeps_wall_clock_across_daylight_saving(hb: Runner) -> None:
    hb("init", "--timezone", "America/New_York")
    rid = _add(hb, "Standup", "--repeat", "daily", "--next", "2026-03-07 09:00")
    # 2026-03-08 is the spring-forward day: 09:00 EDT is 13:00 UTC
    result = hb.json("--now", "2026-03-08T13:30Z", "recur", "materialize")
    assert rule(hb, rid)["next"] == "2026-03-09 09:00"
    assert rule(hb, rid)["next_at"] == "2026-03-09T09:00:00-04:00"
    assert result["advanced"][0]["missed"] == 1


def test_missed_policy_all_and_skip_when_materialising(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    every = _add(hb, "Every", "--repeat", "daily", "--next", "2026-05-01 09:00", "--missed", "all")
    skip = _add(hb, "Skip", "--repeat", "daily", "--next", "2026-05-01 09:00", "--missed", "skip")
    result = hb.json("--now", "2026-05-03T10:00Z", "recur", "materialize")
    assert [e["title"] for e in result["created"]] == [
        "2026-05-01 09:00 Every",
        "2026-05-02 09:00 Every",
        "2026-05-03 09:00 Every",
    ]
    assert rule(hb, every)["next"] == rule(hb, skip)["next"] == "2026-05-04 09:00"
    # skip, on time (only one occurrence due): it runs. In TODO.RECUR.md's order: the rule added
    # last is on top, where mistermorph's AddRecurring puts a new one
    result = hb.json("--now", "2026-05-04T09:00Z", "recur", "materialize")
    assert [e["title"] for e in result["created"]] == ["2026-05-04 09:00 Skip", "2026-05-04 09:00 Every"]


# --- recur due and claims -------------------------------------------------------------------


def test_claim_prevents_a_second_hand_out_in_the_same_period(hb_db: Runner) -> None:
    hb_db("init")  # the machine zone: UTC
    rid = _add(hb_db, "Check the queue", "--repeat", "every 6 hours", "--next", "2026-05-02 09:00")
    assert due_ids(hb_db, "2026-05-02T08:59Z") == []
    [claimed] = hb_db.json("--now", "2026-05-02T09:10Z", "recur", "due", "--claim")
    assert (claimed["id"], claimed["claimed"], claimed["period"]) == (rid, True, "2026-05-02T09:00:00Z")
    assert due_ids(hb_db, "2026-05-02T09:40Z", "--claim") == []  # the next heartbeat: not again
    assert due_ids(hb_db, "2026-05-02T14:59Z") == []
    assert due_ids(hb_db, "2026-05-02T15:00Z", "--claim") == [rid]  # a new period: handed out again
    assert due_ids(hb_db, "2026-05-02T15:30Z") == []
    # claims do not move Next (the file keeps the runtime's view); materialise does
    assert rule(hb_db, rid)["next"] == "2026-05-02 09:00"
    assert rule(hb_db, rid)["claimed_period"] == "2026-05-02T15:00:00Z"


def test_listing_without_claim_hands_out_again(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    rid = _add(hb, "Check", "--repeat", "daily", "--next", "2026-05-02 09:00")
    assert due_ids(hb, "2026-05-02T09:10Z") == [rid]
    assert due_ids(hb, "2026-05-02T09:40Z") == [rid]


def test_missed_policies_when_handing_out(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    ids = {
        policy: _add(hb, policy, "--repeat", "daily", "--next", "2026-05-01 09:00", "--missed", policy)
        for policy in ("once", "all", "skip")
    }
    due = {r["title"]: r for r in hb.json("--now", "2026-05-04T10:00Z", "recur", "due", "--claim")}
    assert set(due) == {"once", "all"}  # skip: periods were missed, none runs
    assert due["once"]["occurrences"] == ["2026-05-04T09:00:00+00:00"]
    assert (due["once"]["runs"], due["once"]["missed"]) == (1, 3)
    assert due["all"]["occurrences"] == [f"2026-05-0{d}T09:00:00+00:00" for d in (1, 2, 3, 4)]
    assert due["all"]["runs"] == 4
    # the skipped periods were consumed by the claim: the next one runs on time for every policy
    assert rule(hb, ids["skip"])["claimed_period"] == "2026-05-04T09:00:00Z"
    assert due_ids(hb, "2026-05-04T23:00Z") == []
    assert sorted(due_ids(hb, "2026-05-05T09:05Z")) == sorted(ids.values())


def test_skip_policy_runs_a_single_late_occurrence(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    rid = _add(hb, "Late", "--repeat", "daily", "--next", "2026-05-01 09:00", "--missed", "skip")
    assert due_ids(hb, "2026-05-01T20:00Z") == [rid]


def test_cron_rule_across_spring_forward_fires_once_when_the_gap_ends(hb_db: Runner) -> None:
    hb_db("init")  # the machine zone: UTC; the rule has its own
    added = hb_db.json(
        "--now", "2026-03-01T12:00Z", "recur", "add", "Nightly backup", "--repeat", "cron 30 2 * * *",
        "--next", "2026-03-07 00:00", "--tz", "America/New_York",
    )  # fmt: skip
    rid = added["id"]
    assert (added["rule"], added["next"]) == ("cron 30 2 * * *", "2026-03-07 02:30")  # first match
    assert due_ids(hb_db, "2026-03-07T07:30Z", "--claim") == [rid]  # 02:30 EST
    # 2026-03-08 02:30 does not exist (02:00 -> 03:00): it fires once, at 03:00 EDT = 07:00 UTC
    assert due_ids(hb_db, "2026-03-08T06:59Z") == []
    [due] = hb_db.json("--now", "2026-03-08T07:00Z", "recur", "due", "--claim")
    assert due["occurrences"] == ["2026-03-08T07:00:00+00:00"]
    assert due_ids(hb_db, "2026-03-08T07:45Z") == []
    assert due_ids(hb_db, "2026-03-09T06:29Z") == []
    assert due_ids(hb_db, "2026-03-09T06:30Z") == [rid]  # 02:30 EDT


@pytest.mark.parametrize("next_", [None, "2026-03-28 12:00"])
def test_a_cron_rules_first_match_in_the_gap_is_not_skipped(hb: Runner, next_: str | None) -> None:
    """hb recur add works Next out itself: it is the match's wall time, 02:30, as in the file."""
    hb("init", "--timezone", "Europe/Berlin")
    extra = [] if next_ is None else ["--next", next_]
    added = hb.json(
        "--now", "2026-03-28T12:00", "recur", "add", "Backup", "--repeat", "cron 30 2 * * *", *extra
    )
    assert added["next"] == "2026-03-29 02:30"  # a time the spring-forward night skips
    assert due_ids(hb, "2026-03-29T00:59Z") == []
    [due] = hb.json("--now", "2026-03-29T01:00Z", "recur", "due")  # 03:00 CEST, the gap's end
    assert due["occurrences"] == ["2026-03-29T03:00:00+02:00"]
    made = hb.json("--now", "2026-03-29T12:00", "recur", "materialize")
    assert [e["recurrence"] for e in made["created"]] == [added["id"]]
    assert [r["next"] for r in hb.json("recur", "list")] == ["2026-03-30 02:30"]


def test_cron_rule_across_fall_back_fires_once_the_first_time(hb: Runner) -> None:
    hb("init", "--timezone", "America/New_York")
    rid = _add(hb, "Ledger close", "--repeat", "cron 30 1 * * *", "--next", "2026-10-31 01:30")
    assert due_ids(hb, "2026-10-31T05:30Z", "--claim") == [rid]
    # 2026-11-01 01:30 happens twice (05:30 UTC in EDT, 06:30 UTC in EST): only the first fires
    [due] = hb.json("--now", "2026-11-01T05:30Z", "recur", "due", "--claim")
    assert due["occurrences"] == ["2026-11-01T01:30:00-04:00"]
    assert due_ids(hb, "2026-11-01T06:30Z") == []
    assert due_ids(hb, "2026-11-02T06:29Z") == []
    assert due_ids(hb, "2026-11-02T06:30Z") == [rid]


def _ticks(start: str, end: str, minutes: int) -> list[str]:
    from datetime import datetime, timedelta

    at, stop = datetime.fromisoformat(start), datetime.fromisoformat(end)
    out = []
    while at <= stop:
        out.append(f"{at:%Y-%m-%dT%H:%M}Z")
        at += timedelta(minutes=minutes)
    return out


def test_every_hour_across_fall_back_materialises_each_elapsed_hour_once(hb: Runner) -> None:
    # 2026-11-01 01:30 New York happens twice: 05:30 UTC (EDT) and 06:30 UTC (EST). The Next text
    # reads 01:30 both times; the ledger knows which one it means.
    hb("init", "--timezone", "America/New_York")
    rid = _add(hb, "Check the queue.", "--repeat", "every 1 hours", "--next", "2026-11-01 00:30")
    titles: list[str] = []
    due_at: list[str] = []
    reported: list[str] = []
    for now in _ticks("2026-11-01T04:00", "2026-11-01T08:00", 10):
        due_at += [now for _ in hb.json("--now", now, "recur", "due")]
        [row] = hb.json("--now", now, "report", "recurrences")["rows"]
        reported += [now] if row["due"] else []
        titles += [e["title"] for e in hb.json("--now", now, "recur", "materialize")["created"]]
    assert titles == [
        "2026-11-01 00:30 Check the queue.",
        "2026-11-01 01:30 Check the queue.",
        "2026-11-01 01:30 Check the queue.",
        "2026-11-01 02:30 Check the queue.",
    ]
    assert due_at == [  # `recur due` (without --claim) lists it only at the ticks that materialise
        "2026-11-01T04:30Z",
        "2026-11-01T05:30Z",
        "2026-11-01T06:30Z",
        "2026-11-01T07:30Z",
    ]
    assert reported == due_at
    assert rule(hb, rid)["next_at"] == "2026-11-01T03:30:00-05:00"
    assert len(hb.json("list", "--source", "todo")) == 4


def test_a_synced_edit_in_the_repeated_hour_keeps_the_second_instant(hb: Runner, workspace: Path) -> None:
    recur = workspace / "TODO.RECUR.md"
    recur.write_text("# TODO Recurring\n\n- [ ] [Next](2026-11-01 01:30), [Repeat](every 1 hours) | Ping.\n")
    hb("init", "--timezone", "America/New_York")
    hb("--now", "2026-11-01T05:00Z", "sync")
    [created] = hb.json("--now", "2026-11-01T05:30Z", "recur", "materialize")["created"]
    assert created["title"] == "2026-11-01 01:30 Ping."
    hb("--now", "2026-11-01T05:31Z", "sync")
    assert "[Next](2026-11-01 01:30)" in recur.read_text()  # the second 01:30: the text reads the same
    recur.write_text(recur.read_text().replace("| Ping.", "| Ping the queue."))
    hb("--now", "2026-11-01T05:40Z", "sync")
    [rule_row] = hb.json("recur", "list")
    assert (rule_row["title"], rule_row["next_at"]) == ("Ping the queue.", "2026-11-01T01:30:00-05:00")
    assert hb.json("--now", "2026-11-01T05:50Z", "recur", "materialize")["created"] == []
    [again] = hb.json("--now", "2026-11-01T06:30Z", "recur", "materialize")["created"]
    assert again["title"] == "2026-11-01 01:30 Ping the queue."


def test_add_without_next_starts_now_and_cron_waits_for_its_match(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    daily = hb.json("--now", "2026-05-01T10:17:42Z", "recur", "add", "Now", "--repeat", "Daily")
    assert (daily["rule"], daily["next"], daily["source"]) == ("daily", "2026-05-01 10:17", "cli")
    assert daily["id"].startswith("recur-") and len(daily["id"]) == len("recur-") + 8
    cron = hb.json("--now", "2026-05-01T10:17Z", "recur", "add", "W", "--repeat", "cron 0 9 * * 1,3")
    assert (cron["rule"], cron["next"]) == ("cron 0 9 * * 1;3", "2026-05-04 09:00")  # Monday
    assert due_ids(hb, "2026-05-01T10:18Z") == [daily["id"]]


def test_add_warns_that_cron_rules_need_the_extended_dialect(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    result = hb("recur", "add", "X", "--repeat", "cron 0 9 * * *")
    assert "todo.dialect extended" in result.stderr
    assert result.stdout.startswith("recur-")


def test_add_rejects_bad_input_with_one_line(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    for options, message in [
        (["--repeat", "monthly"], "expected daily, weekly, every N days or every N hours"),
        (["--repeat", "every 0 days"], "N must be at least 1"),
        (["--repeat", "cron 99 * * * *"], "not a valid five-field cron expression"),
        (["--repeat", "daily", "--next", "tomorrow"], "bad --next time"),
        (["--repeat", "daily", "--next", "2026-05-01 09:00:30"], "minute precision"),
        # Next in the years hb handles, as every other time it takes (stored as "1-01-01 00:00")
        (["--repeat", "daily", "--next", "0001-01-01 00:00"], "outside the years 1970 to 2200"),
        (["--repeat", "daily", "--next", "9999-12-31 23:59"], "outside the years 1970 to 2200"),
        (["--repeat", "daily", "--next", "1969-12-31 23:59"], "outside the years 1970 to 2200"),
        # (a conversion to the zone past year 1 was "hb: out of range")
        (["--repeat", "daily", "--next", "0001-01-01T00:00+14:00"], "outside the years 1970 to 2200"),
        (["--repeat", "daily", "--next", "2200-12-31T23:00-05:00"], "outside the years 1970 to 2200"),
        (["--repeat", "daily", "--tz", "Mars/Base"], "unknown timezone"),
        (["--repeat", "daily", "--missed", "never"], "expected skip, once or all"),
        (["--repeat", "daily", "--chat-id", "tg:1,2"], "must not contain a comma"),
    ]:
        result = hb("recur", "add", "Title", *options, code=1)
        assert result.stdout == ""
        assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert hb.json("recur", "list") == []
    rid = hb("recur", "add", "Title", "--repeat", "daily", "--next", "2200-12-31 23:59").stdout.strip()
    refused = hb("recur", "update", rid, "--next", "9999-01-01 00:00", code=1)
    assert "outside the years 1970 to 2200" in refused.stderr
    assert [r["next"] for r in hb.json("recur", "list")] == ["2200-12-31 23:59"]


def test_update_reschedules_disables_and_remove_deletes(hb_db: Runner) -> None:
    hb_db("init")  # the machine zone: UTC
    rid = _add(hb_db, "Check", "--repeat", "daily", "--next", "2026-05-01 09:00")
    hb_db("--now", "2026-05-01T09:05Z", "recur", "due", "--claim")
    changed = hb_db.json(
        "recur",
        "update",
        rid,
        "--repeat",
        "every 2 days",
        "--next",
        "2026-05-03 07:30",
        "--tz",
        "Asia/Tokyo",
        "--missed",
        "all",
        "--title",
        "Check twice",
    )
    assert (changed["rule"], changed["next"], changed["tz"]) == (
        "every 2 days",
        "2026-05-03 07:30",
        "Asia/Tokyo",
    )
    assert (changed["missed_policy"], changed["title"], changed["claimed_period"]) == (
        "all",
        "Check twice",
        None,
    )
    assert changed["next_at"] == "2026-05-02T22:30:00+00:00"
    assert hb_db.json("recur", "update", rid, "--tz", "none")["next_at"] == "2026-05-03T07:30:00+00:00"
    hb_db("recur", "update", rid, "--disable")
    assert due_ids(hb_db, "2026-05-10T00:00Z") == []
    assert rule(hb_db, rid)["enabled"] is False
    hb_db("recur", "update", rid, "--enable")
    assert due_ids(hb_db, "2026-05-03T08:00Z") == [rid]
    assert hb_db("recur", "remove", rid).stdout == f"removed {rid}\n"
    assert hb_db.json("recur", "list") == []


def test_unknown_id_is_exit_1_naming_it(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    for command in (
        ["recur", "update", "recur-00000000", "--disable"],
        ["recur", "remove", "recur-00000000"],
        ["recur", "outcome", "recur-00000000", "--result", "done"],
        [
            "recur",
            "evaluate",
            "recur-00000000",
            *["--impact", "3", "--risk", "3", "--cost", "3", "--urgency", "3", "--confidence", "3"],
        ],
    ):
        result = hb(*command, code=1)
        assert result.stderr == "hb: no recurrence with id 'recur-00000000'\n"
        assert result.stdout == ""
    # no option at all is a usage error (2), before the id is looked up
    assert "nothing to update" in hb("recur", "update", "x", code=2).stderr


def test_outcome_without_a_claim_closes_the_period(hb_db: Runner) -> None:
    hb_db("init")  # the machine zone: UTC
    rid = _add(hb_db, "Digest", "--repeat", "every 6 hours", "--next", "2026-05-02 09:00")
    recorded = hb_db.json(
        "--now", "2026-05-02T09:20Z", "recur", "outcome", rid, "--result", "sent", "--failure"
    )
    assert recorded["outcome"] == {"timestamp": "2026-05-02T09:20:00Z", "result": "sent", "success": False}
    assert (recorded["run_count"], recorded["last_run_at"]) == (1, "2026-05-02T09:20:00+00:00")
    assert due_ids(hb_db, "2026-05-02T09:30Z") == []  # that period is done
    assert due_ids(hb_db, "2026-05-02T15:00Z") == [rid]
    # an outcome answering a claim made in the previous period leaves the new period open
    hb_db("--now", "2026-05-02T15:00Z", "recur", "due", "--claim")
    hb_db("--now", "2026-05-02T21:10Z", "recur", "outcome", rid, "--result", "late but done")
    assert due_ids(hb_db, "2026-05-02T21:15Z") == [rid]
    assert rule(hb_db, rid)["run_count"] == 2


def test_materialize_gives_no_entry_for_occurrences_already_handed_out(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    rid = _add(hb, "Check", "--repeat", "every 6 hours", "--next", "2026-05-02 09:00", "--tz", "UTC")
    hb("--now", "2026-05-02T09:10Z", "recur", "due", "--claim")
    result = hb.json("--now", "2026-05-02T10:00Z", "recur", "materialize")
    assert result["created"] == []
    assert result["advanced"] == [
        {"id": rid, "next": "2026-05-02 09:00", "new_next": "2026-05-02 15:00", "missed": 0, "entries": 0}
    ]
    # handed out at 15:00, then 21:00 missed: the entry is for the first occurrence not handed out
    hb("--now", "2026-05-02T15:05Z", "recur", "due", "--claim")
    result = hb.json("--now", "2026-05-03T04:00Z", "recur", "materialize")
    assert [e["title"] for e in result["created"]] == ["2026-05-02 21:00 (UTC) Check"]
    assert rule(hb, rid)["next"] == "2026-05-03 09:00"


def test_human_output(hb: Runner) -> None:
    hb("init", "--timezone", "UTC")
    rid = _add(hb, "Check", "--repeat", "daily", "--next", "2026-05-01 09:00", "--tz", "Asia/Tokyo")
    assert hb("--now", "2026-05-01T00:30Z", "recur", "due").stdout == (
        f"{rid}  [daily, next 2026-05-01 09:00 (Asia/Tokyo)]  Check\n"
    )
    assert hb("--now", "2026-04-30T00:30Z", "recur", "due").stdout == "Nothing due.\n"
    listing = hb("recur", "list").stdout.splitlines()
    assert listing[0].split() == ["id", "source", "schedule", "enabled", "runs", "title"]
    assert listing[2].split()[:2] == [rid, "cli"]


def test_a_rule_added_in_the_repeated_hour_starts_at_its_second_pass(hb: Runner) -> None:
    """`hb recur add` at 01:30 EST on the night clocks fall back (the second 01:30) started the
    rule at the first 01:30, an hour before it existed: handed out at once, with a missed
    occurrence (two runs under --missed all). A --next with its offset named the same first
    01:30 whatever the offset said."""
    hb("init", "--timezone", "America/New_York")
    now = "2026-11-01T06:30Z"  # 01:30 EST, the second 01:30
    added = hb.json("--now", now, "recur", "add", "hourly", "--repeat", "every 1 hours", "--missed", "all")
    assert (added["next"], added["next_at"]) == ("2026-11-01 01:30", "2026-11-01T01:30:00-05:00")
    [due] = hb.json("--now", now, "recur", "due", "--claim")
    assert (due["runs"], due["occurrences"], due["missed"]) == (1, ["2026-11-01T01:30:00-05:00"], 0)
    for offset in ("-05:00", "-04:00"):
        given = hb.json(
            "--now",
            now,
            "recur",
            "add",
            f"h{offset}",
            "--repeat",
            "every 1 hours",
            "--next",
            f"2026-11-01T01:30{offset}",
        )
        assert given["next_at"] == f"2026-11-01T01:30:00{offset}"
