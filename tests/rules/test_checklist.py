"""HEARTBEAT.md emptiness and the HEARTBEAT_OK reply (FORMATS.md section 4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from heartbeat.rules.checklist import (
    HEARTBEAT_OK,
    PeriodicTask,
    _without_comments,
    heartbeat_reply_to_deliver,
    is_effectively_empty,
    is_heartbeat_ok,
    openclaw_duration,
    periodic_tasks,
    without_periodic_tasks,
)


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "\n\n   \n\t\n",
        "# HEARTBEAT.md\n",
        "# Heartbeat\n\n## Checks\n###\n",
        "-\n- [ ]\n* \n+\n- [x]\n* [X]\n-[ ]\n",
        "<!-- keep this file empty to skip heartbeats -->",
        "# Heartbeat\n<!--\n- Check the inbox\n- Water the plants\n-->\n- [ ]\n",
        "<!-- a --> <!-- b -->\n",
        "# Heartbeat\r\n\r\n- [ ]\r\n",
        "<!-- an unterminated comment swallows the rest\n- Check the inbox\n",
        "  <!-- a -->  <!-- b\n- Check the inbox\n-->\n",  # comments opening a line, one after another
        "\t<!-- a -->- [ ]\n",
        "<!-->\n- [ ]\n",
    ],
)
def test_effectively_empty(text: str | None) -> None:
    assert is_effectively_empty(text) is True


@pytest.mark.parametrize(
    "text",
    [
        "- [\t]\n",  # OpenClaw's \s inside the brackets: a tab
        "- [\u00a0]\n",  # ... or a no-break space
        "* [\u3000]\n+ [\u2003]\n",
        "-\t[ ]\t\n",
        "\ufeff# Heartbeat\n- [ ]\n",  # JavaScript's trim removes a byte order mark
        "\u00a0\u00a0- [ ]\u00a0\n",
        "#\u00a0Heading\n",
    ],
)
def test_openclaw_blanks_in_empty_items_and_headings(text: str) -> None:
    assert is_effectively_empty(text) is True


@pytest.mark.parametrize(
    "text",
    [
        "- [  ]\n",  # two blanks: OpenClaw's box holds at most one character
        "- [\t\t]\n",
        "- [y]\n",
        "- [ ] \u00a0x\n",
        "\x1c\n",  # a separator control is not JavaScript whitespace: content
    ],
)
def test_openclaw_items_that_are_content(text: str) -> None:
    assert is_effectively_empty(text) is False


@pytest.mark.parametrize(
    "text",
    [
        # OpenClaw's HEARTBEAT.md template: two headings inside a fenced block
        "```markdown\n# Keep this file empty to skip heartbeats.\n\n# Add tasks below.\n```\n",
        "```\n```\n",
        "  ```md  \n- [ ]\n```\n",
        "```py-3\r\n```my_notes\r\n",
        "<!-- hb drops the comment -->```\n",
    ],
)
def test_openclaw_code_fence_markers_are_no_content(text: str) -> None:
    assert is_effectively_empty(text) is True


@pytest.mark.parametrize(
    "text",
    [
        "```\nCheck the inbox\n```\n",  # what sits between the fences is read as usual
        "```js x\n",  # an info string with a space is text
        "``` md\n",
        "```c++\n",
        "````\n",  # four backticks
        "~~~\n",  # a tilde fence is not a marker OpenClaw skips
        "``\n",
        "```mark\u00e9\n",  # the info word is ASCII only
    ],
)
def test_fence_lines_that_are_content(text: str) -> None:
    assert is_effectively_empty(text) is False


@pytest.mark.parametrize(
    "text",
    [
        "Check the inbox",
        "# Heartbeat\n\n- Check the inbox\n",
        "- [ ] Check the inbox",
        "- [x] done but still text",
        "#tag is not a heading",
        "<!-- note --> Check the inbox",
        "<!--\nhidden\n-->\nvisible\n",
        # OpenClaw takes out only a comment that opens its line: after other text, "<!--" is text
        "- [ ] <!-- later -->\n",
        "- <!-- c -->\n",
        "# Checks <!-- tidy\n\nCheck the inbox for invoices.\n",  # opens no comment
        "<!-->\nCheck the inbox\n",  # "<!-->" closes at once
        "<!-- a -->- [ ] x\n",
        "1. Check the inbox",
        "---",
    ],
)
def test_not_empty(text: str) -> None:
    assert is_effectively_empty(text) is False


@pytest.mark.parametrize(
    "reply",
    [
        "HEARTBEAT_OK",
        "  HEARTBEAT_OK\n",
        "**HEARTBEAT_OK**",
        "`HEARTBEAT_OK`",
        "_HEARTBEAT_OK_",
        "HEARTBEAT_OK.",
        "**HEARTBEAT_OK**.",
        "**HEARTBEAT_OK.**",
        "\n\n ** HEARTBEAT_OK ** \n",
    ],
)
def test_heartbeat_ok_replies(reply: str) -> None:
    assert is_heartbeat_ok(reply) is True


@pytest.mark.parametrize(
    "reply",
    [
        "",  # OpenClaw has nothing to deliver of a blank reply
        " \n\t",
        "HEARTBEAT_OK!",  # up to four characters that are not ASCII word characters may follow
        "HEARTBEAT_OK!!!",
        "HEARTBEAT_OK..",
        "HEARTBEAT_OK —",
        "Report below\nHEARTBEAT_OK\u00e9",  # JavaScript's \w is ASCII: an accented letter is no word
        "HEARTBEAT_OK\U0001f600\U0001f600",  # two emoji are four UTF-16 units
        "<b>HEARTBEAT_OK</b>",  # HTML tags read as spaces
        "&nbsp;HEARTBEAT_OK&nbsp;",
        "# HEARTBEAT_OK",  # "#" is left over: one character, a short acknowledgement
        "HEARTBEAT_OK HEARTBEAT_OK",  # the token comes off both ends again and again
        "HEARTBEAT_OKAY",  # the token at the start; "AY" is left over, short
    ],
)
def test_openclaw_drops_the_token_with_punctuation_markup_or_nothing(reply: str) -> None:
    assert is_heartbeat_ok(reply) is True


@pytest.mark.parametrize(
    "reply",
    [
        "HEARTBEAT_OK — nothing new",
        "All good. HEARTBEAT_OK",
        "HEARTBEAT_OK\nTask: t1 overdue",
        "HEARTBEAT_OK\n\n" + "x" * 300,  # up to OpenClaw's default ackMaxChars, 300
        "HEARTBEAT_OK " + "\U0001f600" * 150,  # 300 UTF-16 units
        "HEARTBEAT_OK\n" + "word\n\n\n" * 60,  # 300 once the whitespace runs are one space
    ],
)
def test_openclaw_drops_a_short_acknowledgement_beside_the_token(reply: str) -> None:
    assert is_heartbeat_ok(reply) is True
    assert heartbeat_reply_to_deliver(reply) is None


@pytest.mark.parametrize(
    ("reply", "delivered"),
    [
        ("HEARTBEAT_OK\n\n" + "x" * 301, "x" * 301),  # one past 300: the note goes out, token removed
        ("HEARTBEAT_OK " + "\U0001f600" * 151, "\U0001f600" * 151),  # 302 UTF-16 units
        ("heartbeat_ok", "heartbeat_ok"),  # the token is case-sensitive
        ("HEARTBEAT", "HEARTBEAT"),
        ("Checked: HEARTBEAT_OK for now", "Checked: HEARTBEAT_OK for now"),  # not at an edge
        ("All good HEARTBEAT_OK.....", "All good HEARTBEAT_OK....."),  # five marks after it: not an end
        (
            "Done HEARTBEAT_OK\U0001f600\U0001f600\U0001f600",
            "Done HEARTBEAT_OK\U0001f600\U0001f600\U0001f600",
        ),
        ("  Task: t1\n  overdue  ", "Task: t1\n  overdue"),  # no token: delivered as written, trimmed
    ],
)
def test_replies_that_openclaw_delivers(reply: str, delivered: str) -> None:
    assert is_heartbeat_ok(reply) is False
    assert heartbeat_reply_to_deliver(reply) == delivered


@pytest.mark.parametrize(
    ("reply", "limit", "delivered"),
    [
        ("HEARTBEAT_OK\nTask: t1\n\nStatus:  late", 5, "Task: t1 Status: late"),  # whitespace folded
        ("Task: t1\nStatus: late\nHEARTBEAT_OK.", 5, "Task: t1 Status: late."),  # its punctuation stays
        ("HEARTBEAT_OK x", 0, "x"),
        ("x HEARTBEAT_OK", 0, "x"),
        ("HEARTBEAT_OK!!!", 0, "!!!"),
        ("Task: t1 HEARTBEAT_OK\u00a0!!", 0, "Task: t1!!"),
        ("*HEARTBEAT_OK* x", 0, "* x"),
        ("HEARTBEAT_OK x", 1, None),
        ("HEARTBEAT_OK xy", 1, "xy"),
        ("HEARTBEAT_OK x", -5, "x"),  # a negative limit is 0
    ],
)
def test_openclaw_ack_max_chars(reply: str, limit: int, delivered: str | None) -> None:
    assert heartbeat_reply_to_deliver(reply, ack_max_chars=limit) == delivered
    assert is_heartbeat_ok(reply, ack_max_chars=limit) is (delivered is None)


@pytest.mark.parametrize(
    "reply", ["**HEARTBEAT_OK**", "`HEARTBEAT_OK`", "HEARTBEAT_OK.", "~~ HEARTBEAT_OK ~~."]
)
def test_the_bare_token_is_never_delivered_even_with_no_room_for_an_acknowledgement(reply: str) -> None:
    # FORMATS.md: the token with whitespace or light Markdown is never delivered; OpenClaw with
    # ackMaxChars 0 would send the marks it leaves over ("****", "``", ".")
    assert heartbeat_reply_to_deliver(reply, ack_max_chars=0) is None


# String.prototype.trim's set: a byte order mark is in it, NEL (U+0085) and U+001C-U+001F are not
JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    chr(c) for c in range(0x2000, 0x200B)
)
no_token = st.text().filter(lambda t: HEARTBEAT_OK not in t)


@given(note=no_token.filter(lambda t: len(t.encode("utf-16-le")) <= 2 * 300), start=st.booleans())
def test_a_note_of_at_most_300_beside_the_token_is_not_delivered(note: str, start: bool) -> None:
    reply = f"{HEARTBEAT_OK}\n{note}" if start else f"{note}\n{HEARTBEAT_OK}"
    assert is_heartbeat_ok(reply) is True


@given(before=no_token, letter=st.characters(categories=("L", "N")), after=no_token, start=st.booleans())
def test_with_no_room_any_word_besides_the_token_is_delivered(
    before: str, letter: str, after: str, start: bool
) -> None:
    note = f"{before}{letter}{after}"
    assume(HEARTBEAT_OK not in note)
    reply = f"{HEARTBEAT_OK} {note}" if start else f"{note} {HEARTBEAT_OK}"
    delivered = heartbeat_reply_to_deliver(reply, ack_max_chars=0)
    assert delivered is not None and letter in delivered
    assert is_heartbeat_ok(reply + " " + "w" * 301) is False  # past the default 300


@given(left=no_token, right=no_token)
def test_a_reply_without_the_token_is_delivered_trimmed(left: str, right: str) -> None:
    reply = left + right
    assume(HEARTBEAT_OK not in reply and reply.strip())
    delivered = heartbeat_reply_to_deliver(reply)
    assert delivered == reply.strip(JS_WHITESPACE)


def test_javascript_whitespace_is_trimmed_and_python_only_whitespace_kept() -> None:
    assert heartbeat_reply_to_deliver("\ufeff\u3000 Task: t1\u2028") == "Task: t1"
    assert heartbeat_reply_to_deliver("\x85Task: t1\x1c") == "\x85Task: t1\x1c"


@given(
    marker=st.sampled_from(["", "*", "**", "_", "__", "`", "~~"]),
    space=st.text(alphabet=" \t\n", max_size=3),
    period=st.sampled_from(["", "."]),
)
def test_light_markdown_around_the_token_is_still_ok(marker: str, space: str, period: str) -> None:
    assert is_heartbeat_ok(f"{space}{marker}HEARTBEAT_OK{marker}{period}{space}") is True
    assert is_heartbeat_ok(f"{space}{marker}HEARTBEAT_OK{marker}{period}{space}", ack_max_chars=0) is True


def _peeled_by_cutting(text: str) -> tuple[str, bool]:
    """The token taken off the reply's ends by cutting a new string each time: the rule as
    OpenClaw's loop states it, against which hb's one pass is checked."""
    import re

    from heartbeat.rules.checklist import JS_SPACE

    rest = text.strip(JS_SPACE)
    peeled = False
    while rest:
        if rest.startswith("HEARTBEAT_OK"):
            rest = rest[len("HEARTBEAT_OK") :].strip(JS_SPACE)
        else:
            at = rest.rfind("HEARTBEAT_OK")
            tail = rest[at + len("HEARTBEAT_OK") :]
            if at < 0 or re.search(r"[A-Za-z0-9_]", tail) or len(tail.encode("utf-16-le")) // 2 > 4:
                break
            head = rest[:at].strip(JS_SPACE)
            rest = f"{head}{tail.strip(JS_SPACE)}" if head else ""
        peeled = True
    return re.sub(f"[{JS_SPACE}]+", " ", rest).strip(JS_SPACE), peeled


_PIECES = st.sampled_from(
    ["HEARTBEAT_OK", "HEARTBEAT_", "OK", " ", "\u00a0", "\n", ".", "!", "-", "a", "é", "😀"]
)


@given(pieces=st.lists(_PIECES, max_size=14))
def test_the_token_is_peeled_off_as_cutting_it_would(pieces: list[str]) -> None:
    """hb's one pass over the reply peels what cutting a new string for each token would."""
    from heartbeat.rules.checklist import _peel_token

    text = "".join(pieces)
    assert _peel_token(text) == _peeled_by_cutting(text)


def test_a_runaway_reply_of_tokens_is_no_message() -> None:
    """A reply that repeats the token, at its start or after a note at its end, is nothing to
    deliver (hb reads it in one pass: cutting a new string per token took 10 s a megabyte)."""
    assert heartbeat_reply_to_deliver("HEARTBEAT_OK " * 20_000) is None
    assert heartbeat_reply_to_deliver("note " + "HEARTBEAT_OK" * 20_000 + ".") is None
    assert heartbeat_reply_to_deliver("x" * 301 + " HEARTBEAT_OK" * 20_000) == "x" * 301


# --- OpenClaw 2026.6's periodic tasks: a tasks: block in HEARTBEAT.md ----------------------------
# Facts read from its code (parseHeartbeatTasks, stripHeartbeatTasksBlock, parseDurationMs) and
# checked by running it on 5,000 generated files and 3,000 durations.

TASKS = (
    '# Checks\n\ntasks:\n  - name: inbox\n    interval: 2h\n    prompt: "Check the inbox"\n'
    "  - name: 'build'\n\tinterval: 30\n    prompt: it's green?\n\nBe brief.\n"
)


def test_periodic_tasks_are_read_as_openclaw_reads_them() -> None:
    assert [(t.name, t.interval, t.prompt) for t in periodic_tasks(TASKS)] == [
        ("inbox", "2h", "Check the inbox"),  # one quote off each end
        ("build", "30", "it's green?"),  # a tab indents too; a quote inside stays
    ]
    assert without_periodic_tasks(TASKS) == "# Checks\n\nBe brief."


@pytest.mark.parametrize(
    "text",
    [
        "tasks:\n  - name: a\n    interval: 1h\n",  # no prompt
        "tasks:\n  - name: a\ninterval: 1h\n    prompt: p\n",  # interval not indented: the block ends
        "tasks:\n  - name: a\n    description: x\n    interval: 1h\n    prompt: p\n",  # another key ends it
        "<!--\ntasks:\n  - name: a\n    interval: 1h\n    prompt: p\n-->\n",  # inside a comment
        "- name: a\n    interval: 1h\n    prompt: p\n",  # no tasks: line
    ],
)
def test_what_is_no_periodic_task(text: str) -> None:
    assert periodic_tasks(text) == []


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("30m", 30), ("90", 90), ("1h30m", 90), ("2.5H", 150), (" 1d ", 1440), ("30000ms", 0.5), ("0", 0)],
)
def test_intervals_read_as_openclaws_durations(text: str, minutes: float) -> None:
    assert openclaw_duration(text, default_unit="m") == timedelta(minutes=minutes)


@pytest.mark.parametrize("text", ["1h 30m", "1e3", "", "5m5", "-5m", "30 minutes", "99999999999999999999d"])
def test_intervals_openclaw_refuses_never_come_due(text: str) -> None:
    assert openclaw_duration(text, default_unit="m") is None
    task = PeriodicTask("t", text, "p")
    now = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
    assert task.due(None, now) is True  # never run: due, as in OpenClaw
    assert task.due(now - timedelta(days=3650), now) is False


# OpenClaw 2026.9's silent token, NO_REPLY (isSilentReplyPayloadText; checked against its code on
# 4,000 generated replies)
@pytest.mark.parametrize(
    "reply",
    [
        "NO_REPLY",
        " no_reply ",
        "NO_REPLY NO_REPLY",
        "_NO_REPLY_.",
        "¡NO_REPLY!",
        '"NO_REPLY"',
        '"no_reply"',  # quotes and brackets at the ends are punctuation too
        '["NO_REPLY"]',
        '{"action": "NO_REPLY"}',
    ],
)
def test_openclaws_silent_token_is_nothing_to_deliver(reply: str) -> None:
    assert is_heartbeat_ok(reply) is True
    assert heartbeat_reply_to_deliver(reply) is None


@pytest.mark.parametrize(
    "reply",
    [
        "NO_REPLYx",
        "NO REPLY",
        "NO_REPLY — done",
        '{"action": "NO_REPLY", "x": 1}',
        '{"action": "no_reply"}',  # the envelope's action is exact
    ],
)
def test_the_silent_token_with_more_is_delivered(reply: str) -> None:
    assert is_heartbeat_ok(reply) is False


def test_a_reply_of_json_nested_deeper_than_python_reads_is_not_silent() -> None:
    """``{"x": [[[...]]], "action": "NO_REPLY"}`` nested past Python's json: a RecursionError
    went up from the judgement of the reply. It is no silent reply (more than the action), so
    it is delivered as it is."""
    reply = '{"x": ' + "[" * 20000 + "]" * 20000 + ', "action": "NO_REPLY"}'
    assert heartbeat_reply_to_deliver(reply) == reply


def test_a_line_of_many_comments_back_to_back_reads_as_fewer_do() -> None:
    """Each comment taken out of a line re-sliced the rest of the line: a HEARTBEAT.md of one
    line of 160,000 ``<!---->`` (1.1 MB) took 15 s to read. The comments go in one pass; what is
    left after them, with the blanks between, is read as before."""
    many = "<!---->  " * 100_000
    assert is_effectively_empty(many + "\n")
    assert not is_effectively_empty(many + "- x\n")
    assert list(_without_comments(" <!-- a --> \t<!-->x<!-- b -->\n<!-- open\nstill -->  y")) == [
        "  \tx<!-- b -->",
        "",
        "  y",
    ]
