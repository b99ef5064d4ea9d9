"""The reminder text and the heartbeat brief (SPEC.md sections 5 and 7, OpenClaw).

A reminder has three parts, one per line: the task (id + title), its status
(progress / blocker / risk) and the suggestion (one immediate action + one
fallback). English labels by default, Chinese with ``lang="zh"``.

Fields are folded onto one line (runs of whitespace, newlines included, become
one space) so a message always has exactly three lines. A missing blocker is
written as ``none`` / ``无``: having no blocker is part of the status. A missing
fallback leaves out the fallback part: hb does not invent an action.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from heartbeat.errors import InvalidInput
from heartbeat.rules.checklist import (
    HEARTBEAT_OK,
    JS_SPACE,
    PeriodicTask,
    is_effectively_empty,
    without_periodic_tasks,
)


@dataclass(frozen=True)
class _Labels:
    task: str
    status: str
    blocker: str
    risk: str
    suggestion: str
    fallback: str
    none: str
    colon: str  # Chinese text uses the full-width colon and semicolon
    semicolon: str


_LABELS = {
    "en": _Labels("Task", "Status", "blocker", "risk", "Suggestion", "fallback", "none", ": ", "; "),
    "zh": _Labels("任务", "状态", "阻塞", "风险", "建议", "兜底", "无", "：", "；"),
}


def render_message(
    *,
    task_id: str,
    title: str,
    status: str,
    blocker: str | None,
    risk: str,
    suggestion: str,
    fallback: str | None,
    lang: str = "en",
) -> str:
    """The three-line reminder for one task; InvalidInput for a ``lang`` other than en/zh.

    ``status`` is the progress text (a status or the last progress note).
    English::

        Task: task-1a2b3c4d Send the report
        Status: doing, draft ready / blocker: none / risk: P1
        Suggestion: send the draft to John; fallback: ask Mary to review
    """
    labels = _LABELS.get(lang)
    if labels is None:
        raise InvalidInput(f"lang {lang!r}: expected en or zh")
    c = labels.colon
    task_line = f"{labels.task}{c}{_fold(f'{task_id} {title}')}"
    blocker_text = _fold(blocker or "") or labels.none
    status_line = (
        f"{labels.status}{c}{_fold(status)} / {labels.blocker}{c}{blocker_text}"
        f" / {labels.risk}{c}{_fold(risk)}"
    )
    suggestion_line = f"{labels.suggestion}{c}{_fold(suggestion)}"
    if _fold(fallback or ""):
        suggestion_line += f"{labels.semicolon}{labels.fallback}{c}{_fold(fallback or '')}"
    return "\n".join((task_line, status_line, suggestion_line))


# the line above the periodic tasks due, in OpenClaw's words (its runner's prompt)
_PERIODIC_HEAD = {
    "en": "Run the following periodic tasks (only those due based on their intervals):",
    "zh": "执行以下到期的周期任务（只列出按间隔已到期的）：",
}


def render_brief(
    checklist: str | None,
    messages: list[str],
    *,
    due_tasks: Sequence[PeriodicTask] | None = None,
    lang: str = "en",
) -> str:
    """What a heartbeat prints: exactly ``HEARTBEAT_OK`` when there is nothing to say.

    Otherwise the checklist (unless effectively empty) followed by the messages,
    each part separated by one blank line; blank messages are ignored.

    ``due_tasks``: the checklist has a ``tasks:`` block (OpenClaw's periodic tasks), and these
    of them are due. Then, as OpenClaw's runner does, the checklist part is the due tasks (one
    ``- name: prompt`` line each, under one line that says so) followed by the checklist without
    its block, and nothing at all while none is due.
    """
    if due_tasks is None:
        # (trimmed as the emptiness test reads it: a checklist of a U+0085 is not empty to
        # OpenClaw, so it is no blank brief either)
        parts = [] if is_effectively_empty(checklist) else [(checklist or "").strip(JS_SPACE)]
    elif not due_tasks:
        parts = []
    else:
        head = _PERIODIC_HEAD.get(lang, _PERIODIC_HEAD["en"])
        listed = "\n".join(f"- {task.name}: {task.prompt}" for task in due_tasks)
        rest = without_periodic_tasks(checklist or "")
        parts = [f"{head}\n\n{listed}"] + ([rest] if rest else [])
    parts.extend(message.strip() for message in messages if message.strip())
    if not parts:
        return HEARTBEAT_OK
    return "\n\n".join(parts)


def _fold(text: str) -> str:
    return " ".join(text.split())
