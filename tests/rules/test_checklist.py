"""HEARTBEAT.md emptiness and the HEARTBEAT_OK reply (FORMATS.md section 4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heartbeat.rules.checklist import is_effectively_empty, is_heartbeat_ok


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
        "",
        "heartbeat_ok",
        "HEARTBEAT_OK!",
        "HEARTBEAT_OK..",
        "HEARTBEAT_OK — nothing new",
        "All good. HEARTBEAT_OK",
        "HEARTBEAT_OK\nTask: t1 overdue",
        "HEARTBEAT",
        "# HEARTBEAT_OK",
    ],
)
def test_replies_that_must_be_delivered(reply: str) -> None:
    assert is_heartbeat_ok(reply) is False


@given(
    before=st.text(),
    letter=st.characters(categories=("L", "N")),
    after=st.text(),
)
def test_any_reply_with_a_word_besides_the_token_is_delivered(before: str, letter: str, after: str) -> None:
    assert is_heartbeat_ok(f"HEARTBEAT_OK {before}{letter}{after}") is False
    assert is_heartbeat_ok(f"{before}{letter}{after} HEARTBEAT_OK") is False


@given(
    marker=st.sampled_from(["", "*", "**", "_", "__", "`", "~~"]),
    space=st.text(alphabet=" \t\n", max_size=3),
    period=st.sampled_from(["", "."]),
)
def test_light_markdown_around_the_token_is_still_ok(marker: str, space: str, period: str) -> None:
    assert is_heartbeat_ok(f"{space}{marker}HEARTBEAT_OK{marker}{period}{space}") is True
