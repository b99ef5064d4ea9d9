"""A small demo ledger (scripts/demo_data.py) on each backend, and raw reads of its rows.

The raw reads go through SQLAlchemy Core on the model tables, independently of
heartbeat.reporting, so the tests compare the reports against numbers computed
here from the rows themselves.
"""

from __future__ import annotations

import importlib.util
import math
import statistics
import sys
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from heartbeat import Ledger

ROOT = Path(__file__).resolve().parents[2]
END = datetime.fromisoformat("2026-03-12T06:00:00+00:00")  # the window spans New York's DST start (Mar 8)
ZONE = "America/New_York"


def load_script(name: str) -> ModuleType:
    """A module from scripts/ (not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Demo:
    workspace: Path
    url: str
    end: datetime
    counts: dict[str, int]

    def ledger(self, now: datetime | str | None = None) -> Ledger:
        return Ledger.open(workspace=self.workspace, db=self.url, now=now or self.end, create=False)

    def rows(self, table: str, *columns: str) -> list[dict[str, Any]]:
        """Every row of a model table, typed (times aware UTC), as dicts."""
        from sqlalchemy import select

        from heartbeat.db.models import Base

        t = Base.metadata.tables[table]
        cols = [t.c[c] for c in columns] if columns else list(t.c)
        with self.ledger() as ledger, ledger.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(select(*cols))]


def fill_demo(workspace: Path, url: str, *, days: int = 7, tasks: int = 150, seed: int = 3) -> Demo:
    demo_data = load_script("demo_data")
    clock = demo_data.SimClock(END)
    with Ledger.open(workspace=workspace, db=url, now=clock) as ledger:
        ledger.config_set("timezone", ZONE)
        counts = demo_data.fill(ledger, clock, end=END, days=days, seed=seed, tasks=tasks)
    return Demo(workspace, url, END, counts)


@contextmanager
def module_database(request: pytest.FixtureRequest, workspace: Path, label: str) -> Iterator[str]:
    """The database of a ledger a module's tests share, for the backend ``request.param`` names:
    the workspace's SQLite file, or a PostgreSQL database of its own (dropped afterwards), so
    that tests using ``pg_url`` (which empties the session database) cannot wipe it."""
    if request.param == "sqlite":
        yield str(workspace / ".agent" / "state" / "heartbeat.db")
        return
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    server = make_url(request.getfixturevalue("pg_server_url"))
    name = f"{server.database}_{label}_{uuid.uuid4().hex[:6]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """A week of demo history ending at END, on each backend in turn, shared by a module's tests."""
    workspace = tmp_path_factory.mktemp("demo")
    with module_database(request, workspace, "demo") as url:
        yield fill_demo(workspace, url)


# --- outcome statistics computed here from raw rows, for the reports to be checked against ------


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def p95(values: list[float]) -> float | None:
    """Nearest rank: the ceil(0.95 n)-th smallest value."""
    if not values:
        return None
    return sorted(values)[math.ceil(Fraction(95, 100) * len(values)) - 1]


def outcome_stats(
    rows: Iterable[dict[str, Any]], key: Callable[[dict[str, Any]], Any]
) -> dict[Any, dict[str, Any]]:
    """Per group of ``key``: outcomes, successes, failures, success rate, median and p95 duration."""
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    out = {}
    for k, rs in groups.items():
        durations = [r["duration_s"] for r in rs if r["duration_s"] is not None]
        ok = sum(1 for r in rs if r["success"])
        out[k] = {
            "outcomes": len(rs),
            "successes": ok,
            "failures": len(rs) - ok,
            "success_rate": ok / len(rs),
            "median_duration_s": median(durations),
            "p95_duration_s": p95(durations),
        }
    return out
