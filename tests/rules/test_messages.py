"""The three-part reminder text and the heartbeat brief (SPEC.md sections 5 and 7)."""

from __future__ import annotations

from typing import Any

import pytest

from heartbeat.errors import InvalidInput
from heartbeat.rules.messages import render_brief, render_message

FIELDS: dict[str, Any] = {
    "task_id": "task-1a2b3c4d",
    "title": "Send the report",
    "status": "doing, draft ready",
    "blocker": "waiting for John's numbers",
    "risk": "P1",
    "suggestion": "ping John on Slack",
    "fallback": "send the draft without the numbers",
}


def test_english_message_exactly() -> None:
    assert render_message(**FIELDS) == (
        "Task: task-1a2b3c4d Send the report\n"
        "Status: doing, draft ready / blocker: waiting for John's numbers / risk: P1\n"
        "Suggestion: ping John on Slack; fallback: send the draft without the numbers"
    )


def test_chinese_message_exactly() -> None:
    message = render_message(
        task_id="task-1a2b3c4d",
        title="提交季度报告",
        status="进行中，初稿已完成",
        blocker="等待 John 的数据",
        risk="P0",
        suggestion="在 Slack 上提醒 John",
        fallback="先发不含数据的初稿",
        lang="zh",
    )
    assert message == (
        "任务：task-1a2b3c4d 提交季度报告\n"
        "状态：进行中，初稿已完成 / 阻塞：等待 John 的数据 / 风险：P0\n"
        "建议：在 Slack 上提醒 John；兜底：先发不含数据的初稿"
    )


def test_no_blocker_is_written_as_none() -> None:
    assert render_message(**{**FIELDS, "blocker": None}).splitlines()[1] == (
        "Status: doing, draft ready / blocker: none / risk: P1"
    )
    zh = render_message(**{**FIELDS, "blocker": " ", "lang": "zh"})
    assert zh.splitlines()[1] == "状态：doing, draft ready / 阻塞：无 / 风险：P1"


def test_no_fallback_leaves_the_fallback_out() -> None:
    message = render_message(**{**FIELDS, "fallback": None})
    assert message.splitlines()[2] == "Suggestion: ping John on Slack"


def test_newlines_in_fields_never_break_the_three_lines() -> None:
    message = render_message(**{**FIELDS, "title": "Send\nthe   report\n", "suggestion": "a\n\nb"})
    assert message.splitlines() == [
        "Task: task-1a2b3c4d Send the report",
        "Status: doing, draft ready / blocker: waiting for John's numbers / risk: P1",
        "Suggestion: a b; fallback: send the draft without the numbers",
    ]


def test_unknown_language_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="fr"):
        render_message(**{**FIELDS, "lang": "fr"})


def test_brief_with_nothing_to_say_is_exactly_heartbeat_ok() -> None:
    assert render_brief(None, []) == "HEARTBEAT_OK"
    assert render_brief("# Heartbeat\n\n- [ ]\n<!-- nothing yet -->\n", ["", "  "]) == ("HEARTBEAT_OK")


def test_brief_is_the_messages_separated_by_blank_lines() -> None:
    first = render_message(**FIELDS)
    second = render_message(**{**FIELDS, "task_id": "task-2", "risk": "P0"})
    assert render_brief(None, [first, second]) == first + "\n\n" + second


def test_brief_puts_a_real_checklist_first() -> None:
    checklist = "# Heartbeat\n\n- Check the inbox\n\n"
    assert render_brief(checklist, ["Task: t1 x"]) == ("# Heartbeat\n\n- Check the inbox\n\nTask: t1 x")
    assert render_brief(checklist, []) == "# Heartbeat\n\n- Check the inbox"
