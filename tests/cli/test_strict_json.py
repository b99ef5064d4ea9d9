"""What hb prints and serves is strict JSON: a number JSON cannot hold (a tasks.json field
``1e999``, NaN, -Infinity) is the string "Infinity", "NaN" or "-Infinity", as hb sql writes one,
while the files hb writes for the runtimes keep their own text."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Runner, strict_json

# heartbeat.py (Python) writes and reads these; no other JSON reader does
TASKS = (
    '{"pending": [\n'
    '  {"id": "t1", "description": "one", "priority": "high", "weight": 1e999, "low": -1e999,'
    ' "ratio": NaN, "nested": {"a": [Infinity, 1.5]}},\n'
    '  {"id": "t2", "description": "two", "priority": "low", "weight": -Infinity}\n'
    '], "in_progress": [], "completed": []}\n'
)


def test_pop_prints_a_number_json_cannot_hold_as_its_string_and_the_file_keeps_its_text(
    hb: Runner, workspace: Path
) -> None:
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True)
    (state / "tasks.json").write_text(TASKS)
    hb("init")
    hb("config", "set", "sync.auto_export", "true")
    hb("sync")

    first = strict_json(hb("pop").stdout)
    assert {k: first[k] for k in ("id", "weight", "low", "ratio", "nested")} == {
        "id": "t1",
        "weight": "Infinity",
        "low": "-Infinity",
        "ratio": "NaN",
        "nested": {"a": ["Infinity", 1.5]},
    }
    assert strict_json(hb("pop", "--json", "--fields", "id,weight").stdout) == {
        "id": "t2",
        "weight": "-Infinity",
    }

    text = (state / "tasks.json").read_text()  # re-rendered by the pops: the runtime's numbers as written
    assert '"weight": 1e999, "low": -1e999, "ratio": NaN, "nested": {"a": [Infinity, 1.5]}' in text
    assert '"weight": -Infinity' in text


def test_a_file_holding_such_a_number_is_kept_on_sqlite_and_refused_by_name_on_postgres(
    hb_db: Runner, workspace: Path, db_url: str
) -> None:
    """PostgreSQL's json columns hold strict JSON only: tasks.json, errors.json or last-run.json
    holding NaN, Infinity or 1e999 is refused at its file, line and column, and nothing changes
    (it was "database error: invalid input syntax for type json", naming nothing). On SQLite the
    number is kept as written. A finite exponent, or "NaN" inside a string, is no such number."""
    state = workspace / ".agent" / "state"
    state.mkdir(parents=True, exist_ok=True)
    files = {
        "tasks.json": '{"pending": [{"id": "a", "description": "NaN 1e300", "weight": 1e300}]}\n',
        "errors.json": '[{"task_id": "a", "reason": "r", "score": NaN, "timestamp": "2026-05-01T10:00Z"}]\n',
        "last-run.json": '{"timestamp": "2026-05-01T10:00:00Z", "task_id": "a", "outcome": {"x": -1e999}}\n',
    }
    hb_db("init")
    for name, text in files.items():
        (state / name).write_text(text)
    postgres = db_url.startswith("postgresql")
    done = hb_db("sync", code=1 if postgres else 0)
    if not postgres:
        assert hb_db.json("sql", "SELECT count(*) AS n FROM errors")[0]["n"] == 1
        # the value kept: the export is laid over the file as the runtime wrote it
        assert hb_db("export", "last-run", "-").stdout == files["last-run.json"]
        assert {n: (state / n).read_text() for n in files} == files
        return
    assert done.stderr == (
        f"hb: {state / 'errors.json'}:1:43: [0].score: a number JSON cannot hold (NaN, Infinity, or past "
        "1.8e308), which a ledger on PostgreSQL cannot store; nothing changed\n"
    )
    assert hb_db.json("list", "--all") == [] and {n: (state / n).read_text() for n in files} == files
    (state / "errors.json").write_text("[]\n")
    done = hb_db("sync", code=1)
    assert f"{state / 'last-run.json'}:1:72: outcome.x: a number JSON cannot hold" in done.stderr
    (state / "last-run.json").unlink()
    hb_db("sync")
    assert [t["id"] for t in hb_db.json("list", "--all")] == ["a"]  # 1e300 and "NaN" in text are fine
    copy = workspace / "copy.json"
    copy.write_text('{"pending": [{"id": "b", "weight": Infinity}]}\n')
    refused = hb_db("import", "tasks-json", str(copy), code=1)
    assert refused.stderr.startswith(f"hb: {copy}:1:36: pending[0].weight: a number JSON cannot hold")
