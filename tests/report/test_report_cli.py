"""hb report on the command line: tables for people, one JSON document and csv-readable CSV for programs."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from heartbeat.cli import report as cli_report
from heartbeat.reporting import reports
from tests.conftest import Runner

NOW = "2026-05-04T12:00:00+02:00"


def seed(hb: Runner) -> None:
    """Three tasks finished on two local days in Berlin (one of them across UTC midnight), one failure."""
    hb("config", "set", "timezone", "Europe/Berlin")
    for title, skill in (("alpha", "research"), ("beta", "research"), ("gamma", "email"), ("delta", "email")):
        hb("--now", "2026-05-01T08:00+02:00", "add", title, "--skill", skill)
    steps = [
        ("2026-05-01T09:00+02:00", "2026-05-01T09:01:30+02:00", "complete"),  # 90 s on May 1
        ("2026-05-02T01:00+02:00", "2026-05-02T01:04:00+02:00", "complete"),  # 240 s on May 2 (UTC: May 1)
        ("2026-05-02T10:00+02:00", "2026-05-02T10:01:00+02:00", "complete"),  # 60 s on May 2
        ("2026-05-03T10:00+02:00", "2026-05-03T10:00:30+02:00", "fail"),
    ]
    for claim, finish, verb in steps:
        got = json.loads(hb("--now", claim, "pop").stdout)
        extra = ["--reason", "rate limited"] if verb == "fail" else []
        hb("--now", finish, verb, got["id"], *extra)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded ledger, built once for the module."""
    ws = tmp_path_factory.mktemp("seeded")
    seed(Runner({"HB_WORKSPACE": str(ws)}))
    return ws / ".agent"


@pytest.fixture
def seeded(hb: Runner, workspace: Path, template: Path) -> Runner:
    """``hb`` on a copy of the seeded ledger."""
    shutil.copytree(template, workspace / ".agent")
    return hb


def run(hb: Runner, *args: str, **kw: Any) -> Any:
    return hb("--now", NOW, "report", *args, **kw)


def test_table_is_aligned_with_human_units(seeded: Runner) -> None:
    hb = seeded
    result = run(hb, "outcomes")
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "day",
        "outcomes",
        "successes",
        "failures",
        "success_rate",
        "median_duration_s",
        "p95_duration_s",
    ]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert [line.split() for line in lines[2:]] == [
        ["2026-05-01", "1", "1", "0", "100.0%", "1m30s", "1m30s"],
        ["2026-05-02", "2", "2", "0", "100.0%", "2m30s", "4m00s"],
    ]
    # numbers are right-aligned under their headers
    header = lines[0]
    for line in lines[2:]:
        assert len(line) == len(header.rstrip())
    assert "outcomes by day" in result.stderr  # the caption goes to stderr


def test_days_are_local_days(seeded: Runner) -> None:
    hb = seeded
    local = {
        r["day"]: r["outcomes"] for r in json.loads(run(hb, "outcomes", "--format", "json").stdout)["rows"]
    }
    assert local == {"2026-05-01": 1, "2026-05-02": 2}
    utc = {r["day"]: r["outcomes"] for r in hb.json("sql", "SELECT day, outcomes FROM outcomes_by_day")}
    assert utc == {"2026-05-01": 2, "2026-05-02": 1}  # the view groups by UTC day


def test_json_is_one_document(seeded: Runner) -> None:
    hb = seeded
    for args in (("outcomes", "--by", "skill", "--format", "json"), ("--json", "outcomes", "--by", "skill")):
        result = hb(
            "--now", NOW, *(("--json", "report", *args[1:]) if args[0] == "--json" else ("report", *args))
        )
        doc = json.loads(result.stdout)
        assert result.stderr == ""
        assert doc["report"] == "outcomes" and doc["by"] == "skill" and doc["timezone"] == "Europe/Berlin"
        assert doc["now"] == "2026-05-04T12:00:00+02:00"
        assert doc["columns"] == [
            "skill",
            "outcomes",
            "successes",
            "failures",
            "success_rate",
            "median_duration_s",
            "p95_duration_s",
        ]
        assert doc["rows"] == [
            {
                "skill": "research",
                "outcomes": 2,
                "successes": 2,
                "failures": 0,
                "success_rate": 1.0,
                "median_duration_s": 165.0,
                "p95_duration_s": 240.0,
            },
            {
                "skill": "email",
                "outcomes": 1,
                "successes": 1,
                "failures": 0,
                "success_rate": 1.0,
                "median_duration_s": 60.0,
                "p95_duration_s": 60.0,
            },
        ]


@pytest.mark.parametrize("kind", reports.KINDS)
def test_csv_reads_back_with_the_header(seeded: Runner, kind: str) -> None:
    hb = seeded
    text = run(hb, kind, "--format", "csv").stdout
    rows = list(csv.reader(io.StringIO(text)))
    doc = json.loads(run(hb, kind, "--format", "json").stdout)
    assert rows[0] == doc["columns"]
    assert len(rows) == 1 + len(doc["rows"])
    for line, record in zip(rows[1:], doc["rows"], strict=True):
        expected = [
            "" if v is None else ("true" if v is True else "false" if v is False else str(v))
            for v in record.values()
        ]
        assert line == expected


def test_failures_and_queue_on_the_command_line(seeded: Runner) -> None:
    hb = seeded
    reasons = json.loads(run(hb, "failures", "--format", "json").stdout)["rows"]
    assert [(r["rank"], r["reason"], r["failures"], r["final_failures"]) for r in reasons] == [
        (1, "rate limited", 1, 0)
    ]
    queue = {
        r["status"]: r
        for r in json.loads(run(hb, "queue", "--by", "status", "--format", "json").stdout)["rows"]
    }
    assert queue["done"]["tasks"] == 3 and queue["done"]["median_age_s"] is None
    assert queue["todo"]["tasks"] == 1
    assert queue["todo"]["max_age_s"] == 3 * 86400 + 4 * 3600  # created May 1 08:00, now May 4 12:00
    table = run(hb, "queue").stdout
    assert "(legacy)" in table and "3d04h" in table


def test_window_options(seeded: Runner) -> None:
    hb = seeded
    doc = json.loads(
        run(hb, "outcomes", "--since", "2026-05-02", "--until", "2026-05-03", "--format", "json").stdout
    )
    assert doc["since"] == "2026-05-02T00:00:00+02:00" and doc["until"] == "2026-05-03T00:00:00+02:00"
    assert [(r["day"], r["outcomes"]) for r in doc["rows"]] == [("2026-05-02", 2)]
    recent = json.loads(run(hb, "outcomes", "--since", "3d", "--format", "json").stdout)
    assert recent["since"] == "2026-05-01T12:00:00+02:00"
    assert sum(r["outcomes"] for r in recent["rows"]) == 2


def test_bad_input_is_one_line(seeded: Runner) -> None:
    hb = seeded
    usage = run(hb, "outcomes", "--by", "colour", code=2)
    assert "colour" in usage.stderr
    bad = run(hb, "outcomes", "--since", "last tuesday", code=1)
    assert bad.stderr.count("\n") == 1 and "last tuesday" in bad.stderr and "7d" in bad.stderr
    # a duration or a date hb will not take says why, not that it reads as neither
    assert (
        run(hb, "outcomes", "--since", "36600d", code=1).stderr
        == "hb: bad --since '36600d': longer than 100 years\n"
    )
    far = run(hb, "outcomes", "--since", "1900-01-01", code=1)
    assert far.stderr == "hb: --since '1900-01-01' is outside the years 1970 to 2200 that hb handles\n"
    backwards = run(hb, "outcomes", "--since", "2026-05-03", "--until", "2026-05-02", code=1)
    assert "before --until" in backwards.stderr
    run(hb, "outcomes", "--limit", "0", code=2)


def test_report_needs_an_existing_ledger(hb: Runner) -> None:
    result = run(hb, "outcomes", code=1)
    assert "no ledger" in result.stderr and "hb init" in result.stderr


def test_cli_groupings_match_the_reports() -> None:
    assert cli_report.BY == reports.BY


def test_csv_quotes_a_field_with_a_carriage_return(hb_db: Runner) -> None:
    """A lone CR is a line break to CSV readers: the field is quoted, as one with LF is."""
    hb_db("init")
    query = "SELECT 'a' || char(13) || 'b' AS x, 2 AS y, 'c' || char(10) || 'd' AS z, 'e\"f' AS w"
    if hb_db.env["HB_DATABASE_URL"].startswith("postgresql"):
        query = query.replace("char(", "chr(")
    text = hb_db("sql", "--format", "csv", query).stdout
    assert text == 'x,y,z,w\n"a\rb",2,"c\nd","e""f"\n'
    assert list(csv.reader(io.StringIO(text, newline=""))) == [
        ["x", "y", "z", "w"],
        ["a\rb", "2", "c\nd", 'e"f'],
    ]
