"""Where a YAML error is, in words a user can act on (front matter and ``yaml`` blocks)."""

from __future__ import annotations

import re
import sys
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


def constructor_failure(text: str, exc: Exception) -> tuple[str, int | None]:
    """``(reason, 0-based line or None)`` of a failure PyYAML's constructors raise outside its own
    error type (an impossible date like ``2026-13-45``; an integer past Python's conversion limit,
    whose own words advise a programmer, not the file's author)."""
    long = _long_integer(text) if "integer string conversion" in str(exc) else None
    if long is not None:
        digits, line = long
        return f"a number with {digits} digits (at most {sys.get_int_max_str_digits()})", line
    return " ".join(str(exc).split()), None


_INTEGER = re.compile(r"(?<![\w.])[-+]?[0-9][0-9_]*")  # YAML 1.1 lets _ separate digits


def _long_integer(text: str) -> tuple[int, int] | None:
    """The digits and 0-based line of the first integer in ``text`` past Python's limit, or None."""
    limit = sys.get_int_max_str_digits()
    for match in _INTEGER.finditer(text):
        digits = sum(char.isdigit() for char in match.group(0))
        if limit and digits > limit:
            return digits, text.count("\n", 0, match.start())
    return None
