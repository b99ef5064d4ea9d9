"""What hb prints for people never drives the terminal it is printed to.

Titles, ids, blockers and the warnings that quote a file come from files that agents and people
write (mistermorph adds a TODO line from a chat message). A control character in them reached the
terminal as it was: ``ESC ] 52`` writes the user's clipboard, ``ESC [ 2 J`` clears the screen,
``ESC ] 0`` sets the window's title, a carriage return or a right-to-left override makes a line
read otherwise than it is stored. Human output now shows each as an escape; ``--json`` and the
exports keep the text exact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from heartbeat.reporting.grid import display_width, render, visible
from tests.conftest import Runner

HOSTILE = "Pay \x1b]52;c;cm0gLXJmIH4=\x07rent \x1b[2J\x1b]0;owned\x07 now\r\x08\u202eevil\u202c\x9b31m"
SHOWN = (
    "Pay \\x1b]52;c;cm0gLXJmIH4=\\x07rent \\x1b[2J\\x1b]0;owned\\x07 now\\r\\x08\\u202eevil\\u202c\\x9b31m"
)
# what a terminal acts on: C0 but newline and tab, DEL, C1, the bidirectional overrides
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

TODO_HEAD = "# TODO Work In Progress (WIP)\n\n"


def test_visible_escapes_what_a_terminal_acts_on_and_keeps_the_rest() -> None:
    assert visible(HOSTILE) == SHOWN
    assert visible("two\nlines\tand a tab") == "two\nlines\tand a tab"
    assert visible("two\nlines\tand a tab", cell=True) == "two\\nlines\\tand a tab"
    # a file's CRLF line ends are line ends; a carriage return alone rewrites the line on a terminal
    assert visible("one\r\ntwo\r\n") == "one\r\ntwo\r\n"
    assert visible("paid\rnot paid") == "paid\\rnot paid"
    assert visible("one\r\ntwo", cell=True) == "one\\r\\ntwo"
    kept = "喝咖啡 ☕ 👩\u200d💻 naïve e\u0301"  # wide, emoji with a joiner, combining marks
    assert visible(kept, cell=True) == kept


def test_a_table_cell_stays_one_line_and_is_measured_as_shown() -> None:
    text = render(["id", "title"], [["t1", "first\nsecond\x1b[2J"], ["t2", "ok"]])
    lines = text.splitlines()
    assert len(lines) == 4
    assert lines[2] == "t1  first\\nsecond\\x1b[2J"
    assert display_width(lines[0]) <= display_width(lines[2])  # the title column fits the widest
    assert not ACTED_ON.search(text)


def test_a_hostile_todo_title_is_listed_escaped_and_kept_exact(hb: Runner, workspace: Path) -> None:
    hb("init")
    (workspace / "TODO.md").write_text(TODO_HEAD + f"- [ ] [Created](2026-05-03 12:05) | {HOSTILE}\n")
    hb("sync")

    listed = hb("list").stdout
    assert SHOWN in listed
    assert not ACTED_ON.search(listed)
    assert [t["title"] for t in json.loads(hb("list", "--json").stdout)] == [HOSTILE]
    task_id = json.loads(hb("list", "--json").stdout)[0]["id"]
    shown = hb("show", task_id).stdout
    assert SHOWN in shown and not ACTED_ON.search(shown)
    assert (workspace / "TODO.md").read_bytes().endswith(f"| {HOSTILE}\n".encode())  # as it was


def test_a_warning_quoting_a_file_is_escaped(hb: Runner, workspace: Path) -> None:
    hb("init")
    (workspace / "TODO.md").write_text(
        TODO_HEAD + "- [ ] [Created](2026-05-03 12:05), [Bad\x1b]52;c;aGk=\x07](x) | t\n"
    )

    result = hb("sync")

    assert "bad metadata '[Bad\\x1b]52;c;aGk=\\x07](x)'" in result.stderr
    assert not ACTED_ON.search(result.stderr)


def test_the_heartbeat_brief_shows_a_checklist_control_character_escaped(hb: Runner, workspace: Path) -> None:
    hb("init")
    (workspace / "HEARTBEAT.md").write_text("# Checklist\n\n- Check the inbox \x1b[2J\x1b]0;x\x07\n")

    brief = hb("heartbeat").stdout

    assert "- Check the inbox \\x1b[2J\\x1b]0;x\\x07" in brief
    assert not ACTED_ON.search(brief)
    assert "\x1b" in json.loads(hb("heartbeat", "--json").stdout)["brief"]  # JSON keeps it (escaped)


def test_an_error_naming_a_hostile_id_is_escaped(hb: Runner) -> None:
    hb("init")
    hb("add", "a task", "--id", "t1")
    result = hb("update", "t1", "--after", "x\x1b[2Jy", code=1)
    assert not ACTED_ON.search(result.stderr)
    assert len(result.stderr.splitlines()) == 1


def test_an_output_encoding_that_cannot_hold_a_title_shows_escapes_not_an_internal_error(
    hb: Runner, workspace: Path
) -> None:
    """PYTHONIOENCODING=latin-1 (or a legacy locale): a Chinese title was exit 70. A character
    the encoding lacks is written as a JSON escape, so --json stays JSON with the same text."""
    import os
    import subprocess
    import sys

    hb("init")
    titles = ["喝咖啡 ☕ café", "emoji 😀 naïve"]
    for title in titles:
        hb("add", title)
    env = {**os.environ, "HB_WORKSPACE": str(workspace), "PYTHONIOENCODING": "latin-1"}

    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        argv = [sys.executable, "-m", "heartbeat", *args]
        return subprocess.run(argv, env=env, capture_output=True, check=False, timeout=60)

    listed = run("list")
    assert listed.returncode == 0, listed.stderr
    text = listed.stdout.decode("latin-1")
    assert "\\u559d\\u5496\\u5561 \\u2615 café" in text  # é is latin-1's own
    assert "emoji \\ud83d\\ude00 naïve" in text
    as_json = run("list", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert sorted(t["title"] for t in json.loads(as_json.stdout.decode("latin-1"))) == sorted(titles)


def test_a_checklist_with_crlf_line_ends_is_printed_as_it_was(hb: Runner, workspace: Path) -> None:
    hb("init")
    (workspace / "HEARTBEAT.md").write_bytes(b"# Checklist\r\n\r\n- Check the inbox\r\n- Read CURRENT.md\r\n")
    # (click's Result.stdout reads "\r\n" as "\n": the bytes)
    assert hb("heartbeat").stdout_bytes == b"# Checklist\r\n\r\n- Check the inbox\r\n- Read CURRENT.md\n"


# what JSON writes as it is (json.dumps with ensure_ascii=False escapes only the C0 controls)
JSON_HOSTILE = "pay \x9b2J \x7f \u202eevil\u202c \u2066x\u2069 \u2028 \u2029 喝咖啡 ☕ end"


def test_safe_writes_what_a_terminal_acts_on_as_escapes_and_keeps_the_value() -> None:
    from heartbeat.formats import strict_json

    text = strict_json.dumps({"title": JSON_HOSTILE, "n": [1, "\x85"]}, ensure_ascii=False)
    assert not ACTED_ON.search(text) and "\u2028" not in text and "\u2029" not in text
    assert "\\u009b2J \\u007f \\u202eevil\\u202c \\u2066x\\u2069 \\u2028 \\u2029 喝咖啡 ☕ end" in text
    assert json.loads(text) == {"title": JSON_HOSTILE, "n": [1, "\x85"]}
    indented = strict_json.dumps_indented({"title": JSON_HOSTILE})
    assert not ACTED_ON.search(indented) and json.loads(indented) == {"title": JSON_HOSTILE}
    plain = '{"title": "喝咖啡 ☕ naïve"}'  # printable text is written as it is
    assert strict_json.safe(plain) == plain


def test_json_output_escapes_what_a_terminal_acts_on_with_the_same_value(hb: Runner) -> None:
    """--json, hb pop and hb sql wrote a C1 control (U+009B: a control sequence, as ESC [),
    DEL and the bidirectional overrides as they were: JSON allows them raw, and a terminal the
    output is read on acts on them. Each is now a \\u escape: the same value to any reader."""
    hb("init")
    task_id = hb("add", JSON_HOSTILE, "--priority", "high").stdout.strip()

    outputs = {
        "list": hb("list", "--json").stdout,
        "show": hb("show", task_id, "--json").stdout,
        "sql": hb("sql", "SELECT title FROM tasks", "--json").stdout,
        "sql --format json": hb("sql", "SELECT title FROM tasks", "--format", "json").stdout,
        "pop": hb("pop").stdout,
    }
    for name, text in outputs.items():
        assert not ACTED_ON.search(text), name
        assert "\u2028" not in text and "\u2029" not in text, name
        assert "\\u009b2J" in text and "\\u202eevil" in text, name
        assert "喝咖啡 ☕" in text, name  # the rest of the text is written as it is
    assert [t["title"] for t in json.loads(outputs["list"])] == [JSON_HOSTILE]
    assert json.loads(outputs["show"])["title"] == JSON_HOSTILE
    assert json.loads(outputs["pop"])["description"] == JSON_HOSTILE
    assert json.loads(outputs["sql"])[0]["title"] == JSON_HOSTILE
    # CSV carries the text exact: a program reads it as written
    assert JSON_HOSTILE in hb("sql", "SELECT title FROM tasks", "--format", "csv").stdout


def test_a_warning_naming_a_path_that_holds_a_newline_is_one_line(tmp_path: Path) -> None:
    """A warning or an error is one line: a workspace whose name holds a newline (or a tab, a
    CR) printed the warnings naming its files over two lines, the second one starting with what
    looked like another message."""
    ws = tmp_path / "ws\nhb: error: forged"
    ws.mkdir()
    (ws / "TODO.md").write_text(TODO_HEAD + "- [ ] [Created](2026-05-03 12:05), [Craeted](x) | t\n")
    hb = Runner({"HB_WORKSPACE": str(ws)})

    stderr = hb("sync").stderr

    shown = f"{tmp_path}/ws\\nhb: error: forged/TODO.md"
    assert stderr.splitlines() == [f"hb: warning: {shown}:3: unknown key Craeted"]
    missing = hb("--db", str(ws / "no\tsuch" / "x.db"), "list", code=1).stderr
    assert len(missing.splitlines()) == 1 and "no\\tsuch" in missing
