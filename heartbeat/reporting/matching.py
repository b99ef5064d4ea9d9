"""LIKE and GLOB for ``hb sql`` on SQLite, in steps a time limit can stop.

SQLite's own LIKE and GLOB are one step of a query's program however long they take, and its
progress handler, which enforces ``--timeout``, runs between steps: ``x LIKE '%' || y || 'b'``
over a string of 400,000 characters and a pattern of 20,000 ran 11 s past a 1 s limit, and
longer operands for hours (the MCP ``sql`` tool held every session meanwhile). These give
SQLite's answers (the tests hold them to it) and look at the clock as they go.

A pattern is cut at its ``%`` (GLOB: ``*``) into segments of fixed length (characters, ``_`` /
``?`` and GLOB's ``[...]`` classes). The first segment must match at the start, the last at the
end, and each one between at its leftmost place after the one before: the leftmost place never
loses a match the others could make, so a pattern is matched in one pass, not by backtracking.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# characters of the string a segment is searched in at once, before the clock is read again: a
# search costs up to (window x segment length) comparisons
_WORK = 4_000_000


class Stopped(Exception):
    """The query's time is up (or Ctrl-C): the function gives up; SQLite stops the query."""


@dataclass(frozen=True)
class _Pattern:
    segments: tuple[tuple[re.Pattern[str], int], ...]  # (regex, length) between the wildcards
    anchored: bool  # no wildcard at all: one segment, the whole string


# a pattern read as units: the regex of one character each, None for the wildcard of any run
_Units = list[str | None]


@functools.lru_cache(maxsize=256)
def _like_pattern(pattern: str, escape: str | None) -> _Pattern | None:
    """LIKE's pattern cut at its ``%``; None when it can match nothing (an escape at its end)."""
    units: _Units = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            i += 1
            if i == len(pattern):
                return None  # SQLite: an escape with nothing after it matches nothing
            units.append(re.escape(pattern[i]))
        else:
            units.append(None if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return _cut(units, ignore_case=True)


@functools.lru_cache(maxsize=256)
def _glob_pattern(pattern: str) -> _Pattern | None:
    """GLOB's pattern cut at its ``*``; None when it can match nothing (an unclosed ``[``)."""
    units: _Units = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "[":
            found = _glob_class(pattern, i + 1)
            if found is None:
                return None
            text, i = found
            units.append(text)
            continue
        units.append(None if ch == "*" else "." if ch == "?" else re.escape(ch))
        i += 1
    return _cut(units, ignore_case=False)


def _cut(units: _Units, *, ignore_case: bool) -> _Pattern:
    """The units cut at each wildcard into segments of fixed length, each compiled."""
    segments: list[tuple[re.Pattern[str], int]] = []
    parts: list[str] = []
    for unit in [*units, None]:
        if unit is None:
            segments.append(_compiled("".join(parts), len(parts), ignore_case=ignore_case))
            parts = []
        else:
            parts.append(unit)
    return _Pattern(tuple(segments), anchored=len(segments) == 1)


def _glob_class(pattern: str, i: int) -> tuple[str, int] | None:
    """A ``[...]`` class starting after its ``[`` at ``i``, as a regex class, and where the
    pattern goes on; None when it is not closed. As SQLite reads one: ``^`` first negates, a
    ``]`` first (after ``^``) is a member, ``a-z`` is a range, ``-`` first or last is itself."""
    negate = i < len(pattern) and pattern[i] == "^"
    if negate:
        i += 1
    members: list[str] = []
    prior: str | None = None  # the last member, when a "-" after it makes a range
    first = True
    while i < len(pattern):
        ch = pattern[i]
        if ch == "]" and not first:
            inside = "".join(members)
            if not inside:  # nothing can be a member: [^] takes any character, [] none
                return ("." if negate else "(?!)"), i + 1
            return (f"[^{inside}]" if negate else f"[{inside}]"), i + 1
        if ch == "-" and prior is not None and i + 1 < len(pattern) and pattern[i + 1] != "]":
            high = pattern[i + 1]
            members.pop()
            if prior <= high:
                members.append(f"{_class_char(prior)}-{_class_char(high)}")
            prior = None
            i += 2
        else:
            members.append(_class_char(ch))
            prior = None if first and ch == "]" else ch  # a "]" first starts no range
            i += 1
        first = False
    return None


def _class_char(ch: str) -> str:
    return "\\" + ch if ch in "\\]^-[" else ch


def _compiled(regex: str, length: int, *, ignore_case: bool) -> tuple[re.Pattern[str], int]:
    # LIKE folds the case of ASCII letters only, as SQLite does by default
    flags = re.DOTALL | (re.IGNORECASE | re.ASCII if ignore_case else 0)
    return re.compile(regex, flags), length


def _matches(compiled: _Pattern, text: str, stop: Callable[[], bool]) -> bool:
    segments = compiled.segments
    if compiled.anchored:
        regex, length = segments[0]
        return length == len(text) and regex.fullmatch(text) is not None
    first_regex, first = segments[0]
    last_regex, last = segments[-1]
    if first + last > len(text) or first_regex.match(text, 0, first) is None:
        return False
    at = first
    end = len(text) - last
    for regex, length in segments[1:-1]:
        found = _search(regex, length, text, at, end, stop)
        if found is None:
            return False
        at = found + length
    return at <= end and last_regex.fullmatch(text, end) is not None


def _search(
    regex: re.Pattern[str], length: int, text: str, start: int, end: int, stop: Callable[[], bool]
) -> int | None:
    """The leftmost place in ``text[start:end]`` where the segment matches, searched a window
    at a time with the clock read between windows."""
    window = max(1, _WORK // max(length, 1))
    at = start
    while at + length <= end:
        if stop():
            raise Stopped
        upto = min(end, at + window + length)
        found = regex.search(text, at, upto)
        if found is not None:
            return found.start()
        at = upto - length + 1
    return None


_NO_ESCAPE = object()  # like() called with two arguments (an ESCAPE of NULL is a third, None)


def like_function(side: Any, stop: Callable[[], bool], *, arguments: int = 2) -> Callable[..., Any]:
    """SQLite's ``like(pattern, text[, escape])`` of ``arguments`` arguments: text operands here,
    anything else (numbers, blobs, whose text SQLite makes) by SQLite's own function on
    ``side``. ``x LIKE y ESCAPE NULL`` is NULL, as SQLite answers, not ``x LIKE y``."""

    def like(pattern: Any, text: Any, escape: Any = _NO_ESCAPE) -> Any:
        if arguments == 2:
            escape = None
        elif escape is None:
            return None
        if pattern is None or text is None:
            return None
        texts = type(pattern) is str and type(text) is str
        if not texts or (escape is not None and (type(escape) is not str or len(escape) != 1)):
            args = (pattern, text) if escape is None else (pattern, text, escape)
            return builtin(side, "like", *args)  # its text, or its refusal
        compiled = _like_pattern(pattern, escape)
        return 0 if compiled is None else int(_matches(compiled, text, stop))

    return like


def glob_function(side: Any, stop: Callable[[], bool]) -> Callable[..., Any]:
    """SQLite's ``glob(pattern, text)``, as :func:`like_function` gives ``like``."""

    def glob(pattern: Any, text: Any) -> Any:
        if pattern is None or text is None:
            return None
        if type(pattern) is not str or type(text) is not str:
            return builtin(side, "glob", pattern, text)
        compiled = _glob_pattern(pattern)
        return 0 if compiled is None else int(_matches(compiled, text, stop))

    return glob


def builtin(side: Any, name: str, *args: Any) -> Any:
    """SQLite's own function ``name`` of ``args``, run on ``side`` (a connection where hb has
    not put its own in front of it)."""
    marks = ", ".join("?" * len(args))
    return side.execute(f"SELECT {name}({marks})", args).fetchone()[0]
