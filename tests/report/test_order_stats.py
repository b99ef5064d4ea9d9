"""Exact medians and p95 without reading every duration: every path agrees with the raw rows.

A ledger of a few thousand outcomes (ties, missing durations, NULL skills and
sources, several queues) on each backend. The sample-and-bracket path of
heartbeat.reporting.order is forced on by small thresholds, and its fallback
by brackets placed around the wrong quantiles; the reports must not change.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from heartbeat import Ledger
from heartbeat.reporting import order
from tests.report.conftest import module_database, outcome_stats

ZONE = "Asia/Kolkata"  # a half-hour offset: local days are not UTC days
TZ = ZoneInfo(ZONE)
END = datetime(2026, 6, 10, tzinfo=UTC)
N = 4000


def expected(rows: Iterable[dict[str, Any]], key: Callable[[dict[str, Any]], Any]) -> dict[Any, Any]:
    return {
        k: (s["outcomes"], s["successes"], s["median_duration_s"], s["p95_duration_s"])
        for k, s in outcome_stats(rows, key).items()
    }


def got(doc: dict[str, Any], key: str) -> dict[Any, Any]:
    return {
        r[key]: (r["outcomes"], r["successes"], r["median_duration_s"], r["p95_duration_s"])
        for r in doc["rows"]
        if r["outcomes"]
    }


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    workspace = tmp_path_factory.mktemp("order")
    with module_database(request, workspace, "order") as url:
        _fill(workspace, url)
        yield workspace, url


def _fill(workspace: Path, url: str) -> None:
    from sqlalchemy import insert

    from heartbeat.db.models import Base

    rng = random.Random(7)
    rows = []
    for i in range(N):
        skill = rng.choice(["research", "email", "deploy", None])
        scale = {"research": 900.0, "email": 60.0, "deploy": 300.0, None: 120.0}[skill]
        duration: float | None = rng.lognormvariate(0, 1) * scale
        if i % 97 == 0:
            duration = None  # no claim record
        elif i % 13 == 0:
            duration = 42.0  # ties
        completed = END - timedelta(seconds=rng.uniform(0, 9 * 86400))
        rows.append(
            {
                "task_id": f"task-{i % 700:04d}",
                "scope": rng.choice(["", "_r1_extension.a", "_r1_extension.b"]),
                "source": rng.choice(["cli", "tasks-json", None]),
                "skill": skill,
                "success": rng.random() < 0.9,
                "completed_at": completed,
                "claimed_at": None if duration is None else completed - timedelta(seconds=duration),
                "duration_s": duration,
            }
        )
    with Ledger.open(workspace=workspace, db=url, now=END) as ledger:
        ledger.config_set("timezone", ZONE)
        with ledger.engine.begin() as conn:
            conn.execute(insert(Base.metadata.tables["outcomes"]), rows)


def _rows(workspace: Path, url: str) -> list[dict[str, Any]]:
    from sqlalchemy import select

    from heartbeat.db.models import Base

    t = Base.metadata.tables["outcomes"]
    with Ledger.open(workspace=workspace, db=url, now=END) as ledger, ledger.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(t))]


MODES = {
    "as shipped": {},
    "every 4th row sampled": {"MIN_SAMPLE": 4, "SAMPLE_SIZE": 1000},
    "narrow brackets": {"MIN_SAMPLE": 4, "SAMPLE_SIZE": 500, "MARGIN_SE": 0.3},
    "misplaced brackets": {"MIN_SAMPLE": 4, "SAMPLE_SIZE": 1000, "QUANTILES": (0.05, 0.6)},
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(
    ("since", "until"),
    [(None, None), ("2026-06-03T05:30", "2026-06-07T17:45"), ("4d", None)],
)
def test_reports_agree_with_the_rows_on_every_path(
    ledger_url: tuple[Path, str],
    mode: str,
    since: str | None,
    until: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in MODES[mode].items():
        monkeypatch.setattr(order, name, value)
    paths: dict[str, int] = defaultdict(int)
    fetch, read_all = order._fetch, order._read_all

    def counted_fetch(*a: Any, **kw: Any) -> bool:
        held: bool = fetch(*a, **kw)
        paths["bracketed"] += held
        return held

    def counted_read_all(*a: Any) -> None:
        paths["read whole"] += 1
        read_all(*a)

    monkeypatch.setattr(order, "_fetch", counted_fetch)
    monkeypatch.setattr(order, "_read_all", counted_read_all)
    workspace, url = ledger_url
    rows = _rows(workspace, url)
    with Ledger.open(workspace=workspace, db=url, now=END) as ledger:
        lo = ledger.report("outcomes", since=since, until=until)["since"] if since else None
        hi = ledger.report("outcomes", since=since, until=until)["until"] if until else None
        start = datetime.fromisoformat(lo) if lo else None
        end = datetime.fromisoformat(hi) if hi else None
        inside = [
            r
            for r in rows
            if (start is None or r["completed_at"] >= start) and (end is None or r["completed_at"] < end)
        ]
        assert inside
        for by in ("skill", "scope", "source"):
            doc = ledger.report("outcomes", by=by, since=since, until=until)
            assert got(doc, by) == expected(inside, lambda r, by=by: r[by]), by
            counts = [r["outcomes"] for r in doc["rows"]]
            assert counts == sorted(counts, reverse=True)
        doc = ledger.report("outcomes", by="day", since=since, until=until)
        assert got(doc, "day") == expected(
            inside, lambda r: r["completed_at"].astimezone(TZ).date().isoformat()
        )
    if mode == "every 4th row sampled":
        assert paths["bracketed"] > 0 and paths["bracketed"] > paths["read whole"], paths
    if mode in ("narrow brackets", "misplaced brackets"):
        assert paths["read whole"] > 0, paths  # an unlucky (or wrong) bracket falls back


def test_group_cells_cover_every_combination(ledger_url: tuple[Path, str]) -> None:
    workspace, url = ledger_url
    combos = {(r["scope"], r["skill"], r["source"]) for r in _rows(workspace, url)}
    with Ledger.open(workspace=workspace, db=url, now=END) as ledger:
        from heartbeat.reporting.db import snapshot

        with snapshot(ledger.raw, ledger.engine_dialect()) as reader:
            cells = order.cells(reader)
    assert len(cells) == len(set(cells))
    assert set(cells) == combos
