"""Every report's numbers equal numbers computed here from the raw rows, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.report.conftest import ZONE, Demo, median, outcome_stats

TZ = ZoneInfo(ZONE)
ACTIVE = ("todo", "doing", "waiting", "blocked", "snoozed")
REASONS = (
    "quiet_hours",
    "repeat_window",
    "daily_cap",
    "min_gap",
    "recent_conversation",
    "no_suggestion",
    "disabled",
    "risk_p2",
)


def local_day(at: datetime) -> str:
    return at.astimezone(TZ).date().isoformat()


def stamp(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def whole_seconds(at: datetime | None) -> datetime | None:
    return None if at is None else at.replace(microsecond=0)


def report(demo: Demo, kind: str, **kw: Any) -> dict[str, Any]:
    with demo.ledger() as ledger:
        doc: dict[str, Any] = ledger.report(kind, **kw)
    return doc


def keyed(doc: dict[str, Any], *keys: str) -> dict[Any, dict[str, Any]]:
    out = {}
    for row in doc["rows"]:
        key = tuple(row[k] for k in keys)
        out[key if len(keys) > 1 else key[0]] = row
    assert len(out) == len(doc["rows"]), "duplicate group keys"
    return out


def strip(row: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in keys}


# --- outcomes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("by", "keys"),
    [("skill", ("skill",)), ("scope", ("scope",)), ("source", ("source",)), ("task", ("scope", "task_id"))],
)
def test_outcomes_by_group_match_the_rows(demo: Demo, by: str, keys: tuple[str, ...]) -> None:
    rows = demo.rows("outcomes")
    expected = outcome_stats(rows, lambda r: tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]])
    doc = report(demo, "outcomes", by=by)
    assert doc["columns"] == [*keys, *next(iter(expected.values())).keys()]
    got = {k: strip(v, *keys) for k, v in keyed(doc, *keys).items()}
    assert got == expected
    assert sum(r["outcomes"] for r in doc["rows"]) == len(rows) == demo.counts["outcomes"]
    counts = [r["outcomes"] for r in doc["rows"]]
    assert counts == sorted(counts, reverse=True)  # biggest groups first


def test_outcomes_by_local_day_match_the_rows(demo: Demo) -> None:
    rows = demo.rows("outcomes")
    expected = outcome_stats(rows, lambda r: local_day(r["completed_at"]))
    doc = report(demo, "outcomes", by="day")
    got = keyed(doc, "day")
    days = list(got)
    first = datetime.fromisoformat(min(expected)).date()
    assert days == [(first + timedelta(days=i)).isoformat() for i in range(len(days))]  # every day listed
    assert days[-1] == max(expected)
    for day, row in got.items():
        if day in expected:
            assert strip(row, "day") == expected[day], day
        else:
            assert row["outcomes"] == 0 and row["median_duration_s"] is None
    # the window holds New York's switch to daylight saving: that local day has 23 hours
    assert "2026-03-08" in got


def test_outcomes_in_a_window_match_the_filtered_rows(demo: Demo) -> None:
    since = datetime(2026, 3, 7, 12, 30, tzinfo=TZ)
    until = datetime(2026, 3, 10, 9, 0, tzinfo=TZ)
    rows = [r for r in demo.rows("outcomes") if since <= r["completed_at"] < until]
    assert rows
    doc = report(demo, "outcomes", by="skill", since="2026-03-07T12:30", until="2026-03-10T09:00")
    assert stamp(doc["since"]) == since and stamp(doc["until"]) == until
    assert {k: strip(v, "skill") for k, v in keyed(doc, "skill").items()} == outcome_stats(
        rows, lambda r: r["skill"]
    )
    by_day = keyed(
        report(demo, "outcomes", by="day", since="2026-03-07T12:30", until="2026-03-10T09:00"), "day"
    )
    assert list(by_day) == ["2026-03-07", "2026-03-08", "2026-03-09", "2026-03-10"]
    expected = outcome_stats(rows, lambda r: local_day(r["completed_at"]))
    assert {d: strip(r, "day") for d, r in by_day.items() if r["outcomes"]} == expected


def test_since_as_a_duration_counts_back_from_now(demo: Demo) -> None:
    since = demo.end - timedelta(days=2)
    rows = [r for r in demo.rows("outcomes") if r["completed_at"] >= since]
    doc = report(demo, "outcomes", by="source", since="2d")
    assert stamp(doc["since"]) == since
    assert {k: strip(v, "source") for k, v in keyed(doc, "source").items()} == outcome_stats(
        rows, lambda r: r["source"]
    )


def test_limit_keeps_the_largest_groups(demo: Demo) -> None:
    full = report(demo, "outcomes", by="task")
    top = report(demo, "outcomes", by="task", limit=3)
    assert top["rows"] == full["rows"][:3]


# --- failures -------------------------------------------------------------------------------------


def test_failure_reasons_ranked_match_the_rows(demo: Demo) -> None:
    errors = demo.rows("errors")
    assert errors
    by_reason: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in errors:
        by_reason[e["reason"]].append(e)
    doc = report(demo, "failures")
    assert doc["by"] == "reason"
    rows = doc["rows"]
    assert [r["failures"] for r in rows] == sorted((len(v) for v in by_reason.values()), reverse=True)
    for row in rows:
        es = by_reason[row["reason"]]
        assert row["failures"] == len(es)
        assert row["tasks"] == len({(e["scope"], e["task_id"]) for e in es if e["task_id"] is not None})
        assert row["final_failures"] == sum(1 for e in es if e["final"])
        assert stamp(row["first_failed_at"]) == whole_seconds(min(e["at"] for e in es))
        assert stamp(row["last_failed_at"]) == whole_seconds(max(e["at"] for e in es))
        better = sum(1 for v in by_reason.values() if len(v) > len(es))
        assert row["rank"] == better + 1


def test_failures_by_task_match_the_rows(demo: Demo) -> None:
    errors = sorted(demo.rows("errors"), key=lambda e: (e["at"], e["pk"]))
    tasks = {(t["scope"], t["id"]): t for t in demo.rows("tasks")}
    doc = report(demo, "failures", by="task")
    got = keyed(doc, "scope", "task_id")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in errors:
        groups[(e["scope"], e["task_id"])].append(e)
    assert set(got) == set(groups)
    final_seen = 0
    for key, es in groups.items():
        row = got[key]
        task = tasks[key]
        assert row["failures"] == len(es)
        assert row["final_failures"] == sum(1 for e in es if e["final"])
        assert row["retries"] == len(es) - row["final_failures"]
        assert row["max_attempt"] == max(e["attempt"] for e in es)
        assert row["attempts"] == task["attempts"]
        assert row["status"] == task["status"].value
        assert row["last_reason"] == es[-1]["reason"]
        assert stamp(row["last_failed_at"]) == whole_seconds(es[-1]["at"])
        final_seen += row["final_failures"]
        if row["final_failures"]:
            assert row["status"] == "failed"
    assert final_seen > 0  # the demo has tasks that failed for good
    order = [
        (-r["failures"], -stamp(r["last_failed_at"]).timestamp(), r["scope"], r["task_id"])
        for r in doc["rows"]
    ]
    assert order == sorted(order)  # most failures first, then the latest
    assert report(demo, "failures", by="task", limit=4)["rows"] == doc["rows"][:4]


@pytest.mark.parametrize("by", ["skill", "scope", "day"])
def test_failures_per_group_match_the_rows(demo: Demo, by: str) -> None:
    errors = demo.rows("errors")

    def key(e: dict[str, Any]) -> Any:
        return local_day(e["at"]) if by == "day" else e[by]

    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for e in errors:
        groups[key(e)].append(e)
    got = keyed(report(demo, "failures", by=by), by)
    for k, es in groups.items():
        row = got[k]
        assert row["failures"] == len(es)
        assert row["tasks"] == len({(e["scope"], e["task_id"]) for e in es if e["task_id"] is not None})
        assert row["final_failures"] == sum(1 for e in es if e["final"])
        assert row["retries"] == len(es) - row["final_failures"]
    assert all(row["failures"] == 0 for k, row in got.items() if k not in groups)


# --- notifications --------------------------------------------------------------------------------


def decision_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    sent = sum(1 for n in rows if n["decision"] == "sent")
    out = {"notifications": len(rows), "sent": sent, "suppressed": len(rows) - sent}
    for reason in REASONS:
        out[reason] = sum(1 for n in rows if n["decision"] == "suppressed" and n["reason"] == reason)
    out["other_reason"] = sum(1 for n in rows if n["decision"] == "suppressed" and n["reason"] not in REASONS)
    return out


@pytest.mark.parametrize("by", ["day", "kind"])
def test_notifications_sent_and_held_back_match_the_rows(demo: Demo, by: str) -> None:
    rows = demo.rows("notifications")
    assert rows
    column = "local_day" if by == "day" else "kind"
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for n in rows:
        groups[n[column]].append(n)
    doc = report(demo, "notifications", by=by)
    got = {k: strip(v, by) for k, v in keyed(doc, by).items()}
    assert {k: v for k, v in got.items() if v["notifications"]} == {
        k: decision_counts(v) for k, v in groups.items()
    }
    if by == "day":  # quiet days are listed too, with zeros
        days = [date.fromisoformat(d) for d in got]
        assert days == [days[0] + timedelta(days=i) for i in range(len(days))]
        assert (days[0].isoformat(), days[-1].isoformat()) == (min(groups), max(groups))
    totals = decision_counts(rows)
    assert totals["sent"] > 0 and totals["quiet_hours"] > 0 and totals["daily_cap"] > 0


def test_notifications_by_reason_and_by_task_match_the_rows(demo: Demo) -> None:
    rows = demo.rows("notifications")
    counts: dict[tuple[str, str, str | None], int] = defaultdict(int)
    per_kind: dict[str, int] = defaultdict(int)
    for n in rows:
        counts[(n["kind"], n["decision"], n["reason"])] += 1
        per_kind[n["kind"]] += 1
    got = keyed(report(demo, "notifications", by="reason"), "kind", "decision", "reason")
    assert {k: v["notifications"] for k, v in got.items()} == counts
    for (kind, _d, _r), row in got.items():
        assert row["share"] == row["notifications"] / per_kind[kind]

    # a task is its scope and id (the scope of the task row a decision names)
    scopes = {t["pk"]: t["scope"] for t in demo.rows("tasks", "pk", "scope")}
    per_task: dict[tuple[str | None, str | None], list[dict[str, Any]]] = defaultdict(list)
    for n in rows:
        per_task[(scopes.get(n["task_pk"]), n["task_id"])].append(n)
    by_task = keyed(report(demo, "notifications", by="task"), "scope", "task_id")
    assert set(by_task) == set(per_task)
    for key, ns in per_task.items():
        row = by_task[key]
        sent = [n["at"] for n in ns if n["decision"] == "sent"]
        assert (row["notifications"], row["sent"], row["suppressed"]) == (
            len(ns),
            len(sent),
            len(ns) - len(sent),
        )
        assert stamp(row["last_sent_at"]) == whole_seconds(max(sent, default=None))
        assert stamp(row["last_decided_at"]) == whole_seconds(max(n["at"] for n in ns))
    # biggest groups first, then by task id (the decisions with no task last); --limit keeps the first
    ordered = report(demo, "notifications", by="task")["rows"]
    order = [(-r["notifications"], r["task_id"] is None, r["task_id"] or "") for r in ordered]
    assert order == sorted(order)
    assert report(demo, "notifications", by="task", limit=3)["rows"] == ordered[:3]


# --- queue ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("by", ["scope", "status"])
def test_queue_depth_and_age_match_the_rows(demo: Demo, by: str) -> None:
    tasks = demo.rows("tasks")
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for t in tasks:
        status = t["status"].value
        groups[(t["scope"], status) if by == "scope" else (status,)].append(t)
    keys = ("scope", "status") if by == "scope" else ("status",)
    got = keyed(report(demo, "queue", by=by), *keys)
    assert set(got) == {k if len(k) > 1 else k[0] for k in groups}
    assert any(status in ACTIVE for *_s, status in groups)
    for key, ts in groups.items():
        row = got[key if len(key) > 1 else key[0]]
        created = [t["created_at"] for t in ts]
        assert row["tasks"] == len(ts)
        assert stamp(row["oldest_created_at"]) == whole_seconds(min(created))
        assert stamp(row["newest_created_at"]) == whole_seconds(max(created))
        if key[-1] in ACTIVE:
            ages = [(demo.end - c).total_seconds() for c in created]
            assert row["median_age_s"] == median(ages)
            assert row["max_age_s"] == max(ages)
        else:
            assert row["median_age_s"] is None and row["max_age_s"] is None


# --- recurrences ----------------------------------------------------------------------------------


def test_recurrences_runs_outcomes_and_missed_periods(demo: Demo) -> None:
    rules = {r["pk"]: r for r in demo.rows("recurrences")}
    outcomes: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for o in demo.rows("outcomes"):
        if o["recurrence_pk"] is not None:
            outcomes[o["recurrence_pk"]].append(o)
    got = keyed(report(demo, "recurrences"), "id")
    in_order = sorted(rules.values(), key=lambda r: (r["source"] == "proactive", r["position"], r["pk"]))
    assert list(got) == [r["id"] for r in in_order]
    for pk, rule in rules.items():
        row = got[rule["id"]]
        os = outcomes[pk]
        assert os, rule["title"]  # every rule ran during the month
        assert row["run_count"] == rule["run_count"] == len(os)
        assert row["successes"] == sum(1 for o in os if o["success"])
        assert row["failures"] == len(os) - row["successes"]
        assert stamp(row["last_outcome_at"]) == whole_seconds(max(o["completed_at"] for o in os))
        assert stamp(row["last_run_at"]) == whole_seconds(rule["last_run_at"])
        if rule["source"] == "proactive":
            assert row["next_at"] is None
        else:  # the first period not handed out yet: past when due, else ahead
            assert (stamp(row["next_at"]) <= demo.end) == row["due"], rule["title"]
    # the agent has been stopped for 5 hours: the hourly rule's periods since its last hand-out are due,
    # all but the latest one missed
    [watch] = [r for r in rules.values() if r["title"] == "Market watch"]
    handed_out = datetime.fromisoformat(watch["claimed_period"].replace("Z", "+00:00"))
    pending = (demo.end - handed_out) // timedelta(hours=1)
    assert pending >= 4
    assert (got[watch["id"]]["due"], got[watch["id"]]["missed"]) == (True, pending - 1)
    assert stamp(got[watch["id"]]["next_at"]) == handed_out + timedelta(hours=1)
    # `hb recur due` agrees where it lists a rule (with the skip policy it lists none after missed periods)
    with demo.ledger() as ledger:
        listed = {r["id"]: r for r in ledger.recur_due()}
    assert watch["id"] not in listed and watch["missed_policy"] == "skip"
    for rule_id, row in got.items():
        if row["source"] == "proactive":
            assert row["missed"] is None and row["due"] == (rule_id in listed)  # their periods do not pile up
        elif rule_id in listed:
            assert (row["due"], row["missed"]) == (True, listed[rule_id]["missed"]), rule_id
        elif rule_id != watch["id"]:
            assert (row["due"], row["missed"]) == (False, 0), rule_id

    by_source = keyed(report(demo, "recurrences", by="source"), "source")
    assert set(by_source) == {"cli", "proactive"}
    for source, row in by_source.items():
        mine = [r for r in got.values() if r["source"] == source]
        assert row["recurrences"] == len(mine)
        assert row["outcomes"] == sum(r["outcomes"] for r in mine)
        assert row["missed"] == sum(r["missed"] or 0 for r in mine)


# --- the views agree with the reports ------------------------------------------------------------


@pytest.mark.parametrize(
    ("view", "by", "keys"),
    [("outcomes_by_skill", "skill", ("skill",)), ("outcomes_by_task", "task", ("scope", "task_id"))],
)
def test_outcome_views_agree_with_the_report(demo: Demo, view: str, by: str, keys: tuple[str, ...]) -> None:
    with demo.ledger() as ledger:
        viewed = ledger.sql(f"SELECT * FROM {view}")
    doc = report(demo, "outcomes", by=by)
    assert len(viewed) == len(doc["rows"])
    got = keyed(doc, *keys)
    for row in viewed:
        mine = got[tuple(row[k] for k in keys) if len(keys) > 1 else row[keys[0]]]
        for column in ("outcomes", "successes", "failures", "median_duration_s", "p95_duration_s"):
            assert row[column] == mine[column], (row, column)
        assert row["success_rate"] == pytest.approx(mine["success_rate"], rel=1e-12)


def test_outcomes_by_day_view_groups_by_utc_day(demo: Demo) -> None:
    rows = demo.rows("outcomes")
    expected = outcome_stats(rows, lambda r: r["completed_at"].date().isoformat())
    with demo.ledger() as ledger:
        viewed = {r["day"]: r for r in ledger.sql("SELECT * FROM outcomes_by_day")}
    assert set(viewed) == set(expected)
    for day, e in expected.items():
        assert (viewed[day]["outcomes"], viewed[day]["median_duration_s"], viewed[day]["p95_duration_s"]) == (
            e["outcomes"],
            e["median_duration_s"],
            e["p95_duration_s"],
        )
