"""Aligned plain-text tables, measured as a terminal shows them (one renderer for hb).

Widths are display columns, not characters: CJK and other wide characters take two, combining
marks none, so a Chinese title (``lang zh``) lines up. When the table is wider than the
terminal (``fit``), the widest text column is cut with an ellipsis, then the next, down to a
minimum (then narrower still, and the gaps too, for a report of many columns); a table
printed into a pipe (``fit=None``) is never cut.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

ELLIPSIS = "…"
MIN_CUT = 8  # a cut column keeps at least this many columns
_GAP = "  "


# What a terminal would act on instead of showing: the C0 and C1 control characters and DEL
# (ESC starts the sequences that clear a screen, set its title or write the clipboard), and the
# bidirectional overrides and isolates (text that reads otherwise than it is stored). A title, an
# id or a warning quoting a file can hold any of them: the files are written by agents and people.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")
_CONTROL_IN_CELL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # a line of its own
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def visible(text: str, *, cell: bool = False) -> str:
    """``text`` as hb prints it for people: each control character shown as an escape
    (``\\x1b``, ``\\r``, ``\\u202e``) instead of sent to the terminal; newlines, CRLF line ends
    and tabs kept, but in a ``cell`` of a table or a message that is one line (``\\n``, ``\\t``:
    a row, a warning naming a path that holds a newline, stays one line)."""
    if text.isprintable():  # (none of them is: the common case, without a search)
        return text
    return (_CONTROL_IN_CELL if cell else _CONTROL).sub(_escaped, text)


def display_width(text: str) -> int:
    """How many terminal columns ``text`` takes."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def cut(text: str, width: int) -> str:
    """``text`` shortened to at most ``width`` columns, ending with an ellipsis when cut."""
    if display_width(text) <= width:
        return text
    out: list[str] = []
    used = 0
    for ch in text:
        w = display_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + ELLIPSIS


def _pad(text: str, width: int, *, right: bool) -> str:
    room = " " * max(0, width - display_width(text))
    return room + text if right else text + room


def render(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right: Sequence[bool] | None = None,
    fit: int | None = None,
) -> str:
    """The table as text: a header line, a rule, one line per row; ``right``: columns to align
    right (numbers); ``fit``: the terminal's width, when the table must fit it."""
    align = list(right or [False] * len(headers))
    headers = [visible(h, cell=True) for h in headers]
    rows = [[visible(v, cell=True) for v in row] for row in rows]
    widths = [display_width(h) for h in headers]
    least = [0] * len(headers)  # the narrowest a numeric column may get: its widest value
    for row in rows:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], display_width(value))
            least[i] = max(least[i], display_width(value))
    gap = _GAP
    if fit is not None:
        widths, gap = _fitted(widths, align, least, fit)
    cells = [[cut(v, widths[i]) for i, v in enumerate(row)] for row in rows]

    def line(values: Sequence[str]) -> str:
        return gap.join(_pad(v, widths[i], right=align[i]) for i, v in enumerate(values)).rstrip()

    out = [line([cut(h, widths[i]) for i, h in enumerate(headers)]), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def _fitted(widths: list[int], right: list[bool], least: list[int], fit: int) -> tuple[list[int], str]:
    """Narrow the table until it fits ``fit`` columns: the widest text columns first (down to
    :data:`MIN_CUT`), then every text column to 3 and numeric headers to their values, then one
    space between columns. A table that still cannot fit stays at that."""
    widths = list(widths)
    floors = [
        [MIN_CUT if not r else w for r, w in zip(right, widths, strict=True)],
        [3 if not r else max(3, lo) for r, lo in zip(right, least, strict=True)],
    ]
    for gap in (_GAP, " "):
        for floor in floors:
            while sum(widths) + len(gap) * (len(widths) - 1) > fit:
                over = sum(widths) + len(gap) * (len(widths) - 1) - fit
                movable = [i for i, w in enumerate(widths) if w > floor[i]]
                if not movable:
                    break
                widest = max(movable, key=lambda i: widths[i])
                widths[widest] = max(floor[widest], widths[widest] - over)
            if sum(widths) + len(gap) * (len(widths) - 1) <= fit:
                return widths, gap
    return widths, " "


def terminal_width() -> int | None:
    """The terminal's width when stdout is one (COLUMNS honoured), else None: never cut a pipe."""
    import shutil
    import sys

    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns
