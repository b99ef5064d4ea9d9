"""Where a YAML error is, in words a user can act on (front matter and ``yaml`` blocks)."""

from __future__ import annotations

from typing import Any


def describe(exc: Any) -> tuple[str, int, int]:
    """``(reason, line, column)`` of a PyYAML error, both 0-based within the YAML text.

    When the text ended inside something never closed (a quote, a ``[``), PyYAML marks the end
    of the text, and a ``[`` or ``{`` left open marks whatever came next; the place to fix is
    where that thing opened, which is the error's context mark.
    """
    problem = " ".join(str(getattr(exc, "problem", None) or "").split())
    context = " ".join(str(getattr(exc, "context", None) or "").split())
    problem_mark = getattr(exc, "problem_mark", None)
    context_mark = getattr(exc, "context_mark", None)
    if not problem and not context:
        return " ".join(str(exc).split()) or "unreadable", 0, 0
    unclosed = "end of stream" in problem or "<stream end>" in problem
    if context_mark is not None and (
        problem_mark is None or unclosed or context.startswith("while parsing a flow")
    ):
        reason = f"{context}, {problem}" if problem else context
        return f"{reason} (never closed)" if unclosed else reason, context_mark.line, context_mark.column
    if problem_mark is not None:
        return problem or context, problem_mark.line, problem_mark.column
    return problem or context, 0, 0
