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
