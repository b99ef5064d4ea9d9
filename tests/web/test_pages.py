"""Every dashboard page, fetched over HTTP from a running ``hb serve`` on the demo ledger.

The numbers of each page's JSON variant are checked against the rows of the
database (read here through SQLAlchemy Core, apart from heartbeat.web) or
against the Ledger call the page stands for (``hb due``, ``hb report``); the
HTML is checked for structure (every element closed, in order) and for the
same numbers in its tables and charts.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from datetime import datetime, time, timedelta
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest

from heartbeat.clock import isoformat
from tests.web.conftest import END, XSS, ZONE, Served
from tests.web.helpers import chart_values

LOCAL = ZoneInfo(ZONE)
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
THROUGH = timedelta(microseconds=1)


def iso(at: datetime | None) -> str | None:
    return isoformat(at, LOCAL)


def local_hour(at: datetime) -> tuple[str, int]:
    moment = at.astimezone(LOCAL)
    return moment.date().isoformat(), moment.hour


# --- Now ---------------------------------------------------------------------------------


def waiting_tasks(served: Served, tasks: list[dict[str, Any]]) -> set[int]:
    """The tasks that wait for a task not done yet (``--after``)."""
    by_pk = {t["pk"]: t for t in tasks}
    return {
        d["task_pk"]
        for d in served.demo.rows("task_dependencies")
        if by_pk[d["depends_on_pk"]]["status"] != "done"
    }


def expected_queues(served: Served) -> dict[str | None, dict[str, int]]:
    """Per queue, from the tasks, dependencies and outcomes rows: what Now must count."""
    now = END
    tasks = served.demo.rows("tasks")
    waiting = waiting_tasks(served, tasks)
    midnight = datetime.combine(now.astimezone(LOCAL).date(), time(), tzinfo=LOCAL)
    done: Counter[str] = Counter(
        o["scope"]
        for o in served.demo.rows("outcomes", "task_pk", "scope", "success", "completed_at")
        if o["success"] and o["task_pk"] is not None and midnight <= o["completed_at"] <= now
    )
    out: dict[str | None, dict[str, int]] = {}
    for scope in {t["scope"] for t in tasks}:
        mine = [t for t in tasks if t["scope"] == scope and t["source"] != "todo"]
        ready = [t for t in mine if is_ready(t, waiting)]
        claimed = [t for t in mine if t["status"] == "doing"]
        stale = [t for t in claimed if t["lease_expires_at"] is None or t["lease_expires_at"] <= now]
        active = [t for t in mine if t["status"] in ACTIVE and t["status"] != "doing"]
        row = {
            "ready": len(ready),
            "claimed": len(claimed) - len(stale),
            "stale": len(stale),
            "held": len(active) - len(ready),
            "done_today": done[scope],
        }
        if any(row.values()):
            out[scope or None] = row
    return out


def is_ready(task: dict[str, Any], waiting: set[int]) -> bool:
    """What a pop would hand out now (SPEC 3): todo, not blocked, not deferred, waiting for nothing."""
    return (
        task["status"] == "todo"
        and task["blocked_by"] is None
        and task["source"] != "todo"
        and (task["not_before"] is None or task["not_before"] <= END)
        and task["pk"] not in waiting
    )


def test_now_counts_each_queue_as_the_tasks_table_has_it(served: Served) -> None:
    page = served.json("/now.json")
    assert page["now"] == iso(END) and page["timezone"] == ZONE
    counted = {
        q["scope"]: {k: q[k] for k in ("ready", "claimed", "stale", "held", "done_today")}
        for q in page["queues"]
    }
    assert counted == expected_queues(served)
    assert counted[None]["claimed"] >= 1 and counted[None]["stale"] >= 1


def test_now_lists_claims_with_worker_and_lease_left_and_the_pop_order(served: Served) -> None:
    page = served.json("/now.json")
    legacy = next(q for q in page["queues"] if q["scope"] is None)
    claims = {c["id"]: c for c in legacy["claims"]}
    live, stale = claims[served.ids["live"]], claims[served.ids["stale"]]
    assert (live["worker"], live["stale"], live["lease_left_s"]) == ("agent-live", False, 3600)
    assert live["lease_expires_at"] == iso(END + timedelta(hours=1))
    assert (stale["worker"], stale["stale"], stale["lease_left_s"]) == ("agent-gone", True, -1800)
    # the next ready tasks in the order a pop takes them: priority, then the queue's order
    tasks = served.demo.rows("tasks")
    waiting = waiting_tasks(served, tasks)
    for queue in page["queues"]:
        scope = queue["scope"] or ""
        ready = sorted(
            (t for t in tasks if t["scope"] == scope and is_ready(t, waiting)),
            key=lambda t: (t["priority_rank"], t["position"], t["pk"]),
        )
        assert [t["id"] for t in queue["next_ready"]] == [t["id"] for t in ready[:10]], scope


def test_now_due_is_what_hb_due_lists(served: Served) -> None:
    page = served.json("/now.json")
    with served.ledger() as ledger:
        due = ledger.due()
    assert page["due"]["total"] == len(due) > 0
    assert page["due"]["tasks"] == due[:100]
    xss = next(t for t in page["due"]["tasks"] if t["id"] == served.ids["xss"])
    assert xss["title"] == XSS and "next_check" in xss["reasons"]


def test_now_gives_each_recurrence_its_state_and_next_fire_time(served: Served) -> None:
    page = served.json("/now.json")
    with served.ledger() as ledger:
        rules = {r["id"]: r for r in ledger.recur_list()}
        handed = {r["id"] for r in ledger.recur_due()}
    listed = {r["id"]: r for r in page["recurrences"]}
    assert set(listed) == set(rules)
    assert {rid for rid, r in listed.items() if r["state"] == "due"} == handed
    for rid, entry in listed.items():
        rule = rules[rid]
        if entry["state"] != "scheduled":
            continue
        fire = datetime.fromisoformat(entry["next_at"])
        assert fire > END and fire.utcoffset() == fire.astimezone(LOCAL).utcoffset(), entry
        if rule["kind"] == "proactive":  # its own time (and day) of the week, in the workspace zone
            assert fire.strftime("%H:%M") == (rule["time"] or "00:00"), entry
            if rule["day"]:
                assert fire.strftime("%A").lower() == rule["day"], entry
    order = [r["state"] for r in page["recurrences"]]
    assert order == sorted(order, key=["due", "held", "scheduled", "never", "dormant", "disabled"].index)


def test_now_shows_the_last_heartbeat_and_whether_one_runs(served: Served) -> None:
    runs = [r for r in served.demo.rows("runs") if r["kind"] == "heartbeat"]
    last = max(runs, key=lambda r: (r["started_at"], r["pk"]))
    page = served.json("/now.json")
    assert page["guard"] == {"running": False, "held": False}
    assert page["last_heartbeat"]["started_at"] == iso(last["started_at"])
    assert page["last_heartbeat"]["status"] == last["status"]
    with served.ledger() as ledger, ledger.guard("heartbeat"):
        page = served.json("/now.json")
        html = served.get("/").html()
    guard = page["guard"]
    assert (guard["running"], guard["kind"], guard["pid"]) == (True, "heartbeat", os.getpid())
    assert guard["started_at"] == iso(END)
    assert f"(pid {os.getpid()}) is running since" in html.find("p", id="guard").text()


def test_now_html_has_the_queue_rows_the_chart_and_the_due_list(served: Served) -> None:
    data = served.json("/now.json")
    reply = served.get("/")
    page = reply.html()
    rows = page.find("table", id="queues").find_all("tr", data_row="queue")
    assert len(rows) == len(data["queues"]) > 0
    for row, queue in zip(rows, data["queues"], strict=True):
        for name in ("ready", "claimed", "stale", "held", "done_today"):
            assert row.find("td", data_field=name).text() == f"{queue[name]:,}"
    chart = chart_values(page, "queues")
    for name in ("ready", "claimed", "stale", "held"):
        shown = {k: v for k, v in chart.get(name, {}).items()}
        wanted = {(q["scope"] or "(legacy list)"): q[name] for q in data["queues"] if q[name]}
        assert shown == wanted, name
    due = page.find("table", id="due").find_all("tr", data_row="due")
    assert [r.attrs["data-id"] for r in due] == [t["id"] for t in data["due"]["tasks"]]
    claims = page.find("table", id="claims").find_all("tr", data_row="claim")
    assert {served.ids["live"], served.ids["stale"]} <= {r.attrs["data-id"] for r in claims}
    assert len(page.find("table", id="recurrences").find_all("tr", data_row="recurrence")) == len(
        data["recurrences"]
    )


def test_a_title_that_is_a_script_renders_as_text(served: Served) -> None:
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    xss = served.ids["xss"]
    for path in ("/", "/decisions", f"/task?id={xss}&scope=", f"/decisions?task={xss}"):
        reply = served.get(path)
        assert reply.status == 200, path
        assert XSS not in reply.text and escaped in reply.text, path
        page = reply.html()
        assert page.find_all("script") == [], path
        assert XSS in page.text(), path  # shown to the reader as the text it is
        assert "script-src" not in reply.headers["Content-Security-Policy"]
        assert "default-src 'none'" in reply.headers["Content-Security-Policy"]


# --- Decisions -----------------------------------------------------------------------------


def notifications(served: Served, since: datetime, until: datetime) -> list[dict[str, Any]]:
    return [n for n in served.demo.rows("notifications") if since <= n["at"] <= until]


def tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    reasons = Counter(
        n["reason"] if n["reason"] in REASONS else "other" for n in rows if n["decision"] != "sent"
    )
    sent = sum(1 for n in rows if n["decision"] == "sent")
    return {
        "decisions": len(rows),
        "sent": sent,
        "suppressed": len(rows) - sent,
        "reasons": {r: reasons[r] for r in (*REASONS, "other")},
    }


def test_decisions_per_day_and_reason_are_the_notifications_rows(served: Served) -> None:
    page = served.json("/decisions.json")
    rows = notifications(served, END - timedelta(days=7), END)
    assert page["totals"] == tally(rows)
    per_day: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for n in rows:
        per_day[n["local_day"]].append(n)
    assert {d["day"]: {k: d[k] for k in tally([])} for d in page["per_day"] if d["decisions"]} == {
        day: tally(found) for day, found in per_day.items()
    }
    days = [d["day"] for d in page["per_day"]]
    assert days == sorted(days) and days[-1] == END.astimezone(LOCAL).date().isoformat()
    newest = sorted(rows, key=lambda n: (n["at"], n["pk"]), reverse=True)[:100]
    assert [(d["at"], d["task_id"], d["decision"], d["reason"]) for d in page["decisions"]] == [
        (iso(n["at"]), n["task_id"], n["decision"], n["reason"]) for n in newest
    ]
    first = page["decisions"][0]  # the P0 reminder at the end, through quiet hours
    assert (first["task_id"], first["title"], first["risk"], first["decision"]) == (
        served.ids["xss"],
        XSS,
        "P0",
        "sent",
    )
    assert page["shown"] == 100 < page["totals"]["decisions"]


def test_decisions_filter_by_task_reason_kind_and_limit(served: Served) -> None:
    rows = notifications(served, END - timedelta(days=30), END)
    page = served.json(f"/decisions.json?days=30&task={served.ids['xss']}")
    assert page["totals"]["decisions"] == 1 and page["decisions"][0]["title"] == XSS
    page = served.json("/decisions.json?days=30&reason=quiet_hours&limit=5")
    assert page["totals"]["decisions"] == sum(1 for n in rows if n["reason"] == "quiet_hours") > 5
    assert page["shown"] == 5 and {d["reason"] for d in page["decisions"]} == {"quiet_hours"}
    page = served.json("/decisions.json?days=30&reason=sent&kind=proactive")
    wanted = [n for n in rows if n["decision"] == "sent" and n["kind"] == "proactive"]
    assert page["totals"]["decisions"] == len(wanted) > 0
    assert {(d["kind"], d["decision"]) for d in page["decisions"]} == {("proactive", "sent")}


def test_why_was_nothing_sent_at_two_in_the_night_is_answered_per_hour(served: Served) -> None:
    rows = notifications(served, END - timedelta(days=7), END)
    beats = [r for r in served.demo.rows("runs") if r["kind"] == "heartbeat"]
    by_hour: defaultdict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for n in rows:
        by_hour[local_hour(n["at"])].append(n)
    ticks = Counter(local_hour(r["started_at"]) for r in beats)
    # a night hour with decisions, none of them sent: the page names the reasons
    day, hour = next(
        key
        for key, found in sorted(by_hour.items())
        if key[1] < 6 and all(n["decision"] != "sent" for n in found)
    )
    page = served.json(f"/decisions.json?day={day}")
    hours = {h["hour"]: h for h in page["per_hour"]}
    assert sorted(hours) == list(range(24))
    for h, entry in hours.items():
        found = by_hour.get((day, h), [])
        assert {k: entry[k] for k in tally([])} == tally(found), h
        assert entry["heartbeats"] == ticks[(day, h)], h
    reasons = Counter(n["reason"] for n in by_hour[(day, hour)])
    assert hours[hour]["sent"] == 0
    assert hours[hour]["why"].startswith("held back: ")
    labels = {"quiet_hours": "quiet hours", "risk_p2": "routine (P2)", "repeat_window": "repeat window"}
    for reason, n in reasons.items():
        assert f"{labels.get(reason, reason)} ×{n}" in hours[hour]["why"]
    page = served.json(f"/decisions.json?day={day}&hour={hour}")
    assert page["totals"]["decisions"] == len(by_hour[(day, hour)])
    assert {local_hour(datetime.fromisoformat(d["at"])) for d in page["decisions"]} == {(day, hour)}
    html = served.get(f"/decisions?day={day}").html()
    row = html.find("tr", data_row="hour", data_hour=str(hour))
    assert hours[hour]["why"] in row.text()
    assert chart_values(html, "decisions-per-hour")


def test_an_hour_with_no_heartbeat_says_so(served: Served) -> None:
    rows = notifications(served, END - timedelta(days=7), END)
    beats = {local_hour(r["started_at"]) for r in served.demo.rows("runs") if r["kind"] == "heartbeat"}
    decided = {local_hour(n["at"]) for n in rows}
    days = sorted({day for day, _ in decided})
    silent = [(d, h) for d in days[1:-1] for h in range(24) if (d, h) not in beats and (d, h) not in decided]
    assert silent, "the demo has the agent down for a while"
    day, hour = silent[0]
    page = served.json(f"/decisions.json?day={day}")
    assert page["per_hour"][hour]["why"] == "no heartbeat ran"


def test_decisions_html_chart_and_list_hold_the_json_numbers(served: Served) -> None:
    data = served.json("/decisions.json")
    page = served.get("/decisions").html()
    chart = chart_values(page, "decisions-per-day")
    assert {day: v for day, v in chart["sent"].items()} == {
        d["day"]: d["sent"] for d in data["per_day"] if d["sent"]
    }
    for reason in REASONS:
        assert chart.get(reason, {}) == {
            d["day"]: d["reasons"][reason] for d in data["per_day"] if d["reasons"][reason]
        }, reason
    links = page.find("svg", data_chart="decisions-per-day").find_all("a")
    assert {a.attrs["href"] for a in links} == {
        f"/decisions?day={d['day']}" for d in data["per_day"] if d["decisions"]
    }
    listed = page.find("table", id="decisions").find_all("tr", data_row="decision")
    assert [(r.attrs["data-decision"], r.attrs["data-reason"] or None) for r in listed] == [
        (d["decision"], d["reason"]) for d in data["decisions"]
    ]
    totals = page.find("div", id="totals")
    assert totals.find("b", data_field="decisions").text() == f"{data['totals']['decisions']:,}"


def test_bad_parameters_are_a_400_naming_them(served: Served) -> None:
    reply = served.get("/decisions.json?days=0")
    assert reply.status == 400 and "days='0'" in reply.json()["error"]
    reply = served.get("/decisions?reason=nope")
    assert reply.status == 400 and "reason='nope'" in reply.html().find("p", class_="error-message").text()
    assert served.get("/decisions.json?day=2026-13-01").status == 400
    assert served.get("/runs.json?kind=sync").status == 400
    assert served.get("/outcomes.json?by=worker").status == 400


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("/decisions.json?day=9999-12-31", "day='9999-12-31'"),  # its next day: past date's range
        ("/decisions.json?day=0001-01-01", "day='0001-01-01'"),
        ("/decisions.json?day=2201-01-01", "day='2201-01-01'"),
        ("/decisions.json?days=%C2%B2", "days='²'"),  # a digit to str.isdigit, not to int()
        ("/runs.json?limit=%C2%B9", "limit='¹'"),
        ("/outcomes.json?days=%D9%A5", "days='٥'"),  # an Arabic-Indic five: not a number here
        ("/decisions.json?days=" + "9" * 5000, "days='" + "9" * 40 + "...'"),  # past int()'s 4,300 digits
        ("/runs.json?limit=" + "1" * 5000, "limit='" + "1" * 40 + "...'"),
        ("/decisions.json?hour=" + "9" * 4400, "hour='" + "9" * 40 + "...'"),
    ],
)
def test_a_day_outside_the_years_hb_handles_or_a_number_not_in_ascii_digits_is_a_400(
    served: Served, query: str, named: str
) -> None:
    before = len(served.log)
    reply = served.get(query)
    assert reply.status == 400, (reply.status, reply.text)
    assert named in reply.json()["error"] and "\n" not in reply.json()["error"]
    assert not [line for line in served.log[before:] if "failed" in line]
    assert served.get("/healthz").status == 200


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("/decisions.json?task=task-%00", "query parameter task holds a NUL character (at 6)"),
        ("/task.json?id=%00", "query parameter id holds a NUL character (at 1)"),
        ("/task.json?id=x&scope=q%00", "query parameter scope holds a NUL character (at 2)"),
        ("/outcomes.json?by%00=day", "a query parameter's name holds a NUL character (at 3)"),
    ],
)
def test_a_nul_in_a_query_parameter_is_a_400_naming_it_on_both_backends(
    served: Served, query: str, named: str
) -> None:
    """PostgreSQL answered a NUL in a filter or an id with a failed page ("database error"),
    SQLite with an empty answer or a 404: both say what is wrong now."""
    before = len(served.log)
    reply = served.get(query)
    assert reply.status == 400, (reply.status, reply.text)
    assert reply.json()["error"].endswith(f"{named}, which the ledger does not store; nothing changed")
    assert not [line for line in served.log[before:] if "failed" in line]


# --- Task -----------------------------------------------------------------------------------


def test_task_page_has_its_fields_history_claims_and_decisions(served: Served) -> None:
    xss = served.ids["xss"]
    page = served.json(f"/task.json?id={xss}&scope=")
    with served.ledger() as ledger:
        task = ledger.get(xss, scope="", history=True)
    history = task.pop("history")
    assert page["task"] == task and page["task"]["title"] == XSS
    assert page["history"] == list(reversed(history))
    assert [(d["decision"], d["risk"]) for d in page["decisions"]] == [("sent", "P0")]
    live = served.json(f"/task.json?id={served.ids['live']}")
    assert [(c["ended"], c["worker"]) for c in live["claims"]] == [("held", "agent-live")]
    stale = served.json(f"/task.json?id={served.ids['stale']}")
    assert stale["claims"][0]["ended"] == "stale"


def test_task_page_lists_every_outcome_error_and_claim_of_a_retried_task(served: Served) -> None:
    errors = served.demo.rows("errors")
    outcomes = served.demo.rows("outcomes")
    tasks = {t["pk"]: t for t in served.demo.rows("tasks")}
    retried = Counter(e["task_pk"] for e in errors if e["task_pk"] is not None)
    pk = next(pk for pk, n in retried.most_common() if any(o["task_pk"] == pk for o in outcomes))
    task = tasks[pk]
    page = served.json(f"/task.json?id={quote(task['id'])}&scope={quote(task['scope'])}")
    mine = sorted((o for o in outcomes if o["task_pk"] == pk), key=lambda o: o["completed_at"], reverse=True)
    assert [(o["completed_at"], o["success"], o["worker"]) for o in page["outcomes"]] == [
        (iso(o["completed_at"]), o["success"], o["worker"]) for o in mine
    ]
    failed = sorted((e for e in errors if e["task_pk"] == pk), key=lambda e: e["at"], reverse=True)
    assert [(e["at"], e["reason"]) for e in page["errors"]] == [(iso(e["at"]), e["reason"]) for e in failed]
    # one claim per completion and per failure (an outcome and an error closing one claim are one)
    closed = {o["claim"] for o in mine if o["claim"]}
    held = 1 if task["status"] == "doing" else 0
    assert len(page["claims"]) == held + len(mine) + sum(
        1 for e in failed if not (e["claim"] and e["claim"] in closed)
    )
    html = served.get(f"/task?id={quote(task['id'])}&scope={quote(task['scope'])}").html()
    assert len(html.find("table", id="outcomes").find_all("tr", data_row="outcome")) == len(mine)
    assert len(html.find("table", id="errors").find_all("tr", data_row="error")) == len(failed)
    assert html.find("dd", data_field="status").text() == task["status"]


def test_task_page_answers_404_for_an_unknown_id_and_400_without_one(served: Served) -> None:
    reply = served.get("/task.json?id=task-nope")
    assert reply.status == 404 and "task-nope" in reply.json()["error"]
    reply = served.get("/task?id=task-nope")
    assert reply.status == 404 and reply.headers["Content-Type"].startswith("text/html")
    assert served.get("/task.json").status == 400


# --- Outcomes --------------------------------------------------------------------------------


@pytest.mark.parametrize("by", ["day", "skill", "scope", "source"])
def test_outcomes_are_the_hb_report_outcomes_numbers(served: Served, by: str) -> None:
    page = served.json(f"/outcomes.json?by={by}&days=3")
    since = END - timedelta(days=3)
    with served.ledger() as ledger:
        report = ledger.report("outcomes", by=by, since=since, until=END + THROUGH)
    assert page["columns"] == report["columns"]
    assert page["rows"] == report["rows"]
    rows = [o for o in served.demo.rows("outcomes") if since <= o["completed_at"] <= END]
    ok = sum(1 for o in rows if o["success"])
    assert page["totals"] == {
        "outcomes": len(rows),
        "successes": ok,
        "failures": len(rows) - ok,
        "success_rate": ok / len(rows),
    }
    html = served.get(f"/outcomes?by={by}&days=3").html()
    listed = html.find("table", id="outcomes").find_all("tr", data_row="group")
    assert [r.find("td", data_field="outcomes").text() for r in listed] == [
        f"{r['outcomes']:,}" for r in page["rows"]
    ]
    if by == "day":
        chart = chart_values(html, "outcomes-per-day")
        assert chart["successes"] == {r["day"]: r["successes"] for r in page["rows"] if r["successes"]}
    else:
        rates = chart_values(html, f"success-rate-per-{by}")["success_rate"]
        assert sorted(rates.values()) == sorted(r["success_rate"] for r in page["rows"])


def test_outcomes_default_windows(served: Served) -> None:
    assert served.json("/outcomes.json")["window"]["days"] == 3
    assert served.json("/outcomes.json?by=skill")["window"]["days"] == 1
    page = served.json("/outcomes.json?days=7")
    assert page["window"]["since"] == iso(END - timedelta(days=7)) and page["window"]["until"] == iso(END)


# --- Runs -----------------------------------------------------------------------------------


def test_runs_are_the_heartbeat_and_poke_rows_and_how_they_ended(served: Served) -> None:
    page = served.json("/runs.json")
    since = END - timedelta(days=7)
    rows = [
        r
        for r in served.demo.rows("runs")
        if r["kind"] in ("heartbeat", "poke") and since <= r["started_at"] <= END
    ]
    per_day: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        per_day[r["started_at"].astimezone(LOCAL).date().isoformat()][f"{r['kind']}:{r['status']}"] += 1
    assert {d["day"]: d["runs"] for d in page["per_day"] if d["runs"]} == {
        k: dict(v) for k, v in per_day.items()
    }
    assert page["totals"] == dict(Counter(f"{r['kind']}:{r['status']}" for r in rows))
    newest = sorted(rows, key=lambda r: (r["started_at"], r["pk"]), reverse=True)[:100]
    assert [(r["kind"], r["status"], r["started_at"]) for r in page["runs"]] == [
        (r["kind"], r["status"], iso(r["started_at"])) for r in newest
    ]
    failed = next(r for r in page["runs"] if r["status"] == "error")
    assert failed["kind"] == "heartbeat" and "sync failed: disk full" in failed["summary"]
    poke = next(r for r in page["runs"] if r["kind"] == "poke")
    assert poke["task_id"] == served.ids["poke"] and served.ids["poke"] in poke["summary"]
    pokes = served.json("/runs.json?kind=poke")
    assert {r["kind"] for r in pokes["runs"]} == {"poke"}
    html = served.get("/runs").html()
    listed = html.find("table", id="runs").find_all("tr", data_row="run")
    assert [(r.attrs["data-kind"], r.attrs["data-status"]) for r in listed] == [
        (r["kind"], r["status"]) for r in page["runs"]
    ]
    chart = chart_values(html, "runs-per-day")
    assert sum(sum(v.values()) for v in chart.values()) == len(rows)


# --- every page ------------------------------------------------------------------------------

PAGES = ("/", "/now", "/decisions", "/outcomes", "/runs")


def test_every_page_is_html_with_its_json_next_to_it(served: Served) -> None:
    task = f"/task?id={served.ids['live']}"
    for path in (*PAGES, task):
        reply = served.get(path)
        assert reply.status == 200, path
        page = reply.html()
        assert page.find("html").attrs["lang"] == "en"
        assert page.find("nav").find_all("a")  # the way to the other pages
        base, _, query = path.partition("?")
        as_json = f"{'/now' if base == '/' else base}.json" + (f"?{query}" if query else "")
        assert page.find("footer").find("a").attrs["href"] == as_json
        assert served.get(as_json).json() == served.json(path), path
        assert reply.headers["Cache-Control"] == "no-store"
        assert reply.headers["X-Frame-Options"] == "DENY"
    for path in ("/now/", "/decisions.json/", "/.json", "/tasks"):
        assert served.get(path).status == 404, path


def test_times_are_in_the_workspace_zone_with_the_offset(served: Served) -> None:
    page = served.json("/now.json")
    assert page["now"] == "2026-03-12T02:00:00-04:00"  # New York, daylight saving time since Mar 8
    html = served.get("/").html()
    shown = html.find("header").find("time")
    assert shown.attrs["datetime"] == page["now"] and shown.text() == "2026-03-12 02:00 -04:00"
    winter = served.json("/decisions.json?day=2026-03-06")  # before the change: -05:00
    assert all(d["at"].endswith("-05:00") for d in winter["decisions"]) and winter["decisions"]
