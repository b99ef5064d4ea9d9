"""HEARTBEAT.md and the HEARTBEAT_OK reply (FORMATS.md section 4: OpenClaw, mistermorph).

A checklist is **effectively empty** when, once HTML comments are removed
(multi-line ones too; an unterminated ``<!--`` runs to the end, as in HTML),
every line is blank, a Markdown heading (``#`` then a space or the end of the
line), a list item with nothing in it (``-``, ``*``, ``+``, optionally with an
empty ``[ ]`` or ``[x]`` box, whose one blank may be a tab or a no-break space),
or a code fence marker: three backticks, alone or followed by one info word of
ASCII letters, digits, ``_`` or ``-`` (as in a line ```markdown). OpenClaw skips
fence lines so that its own template, a fenced block of headings, counts as
empty; the lines between two fences are read like any other line, and a tilde
fence or an info string with a space in it is content. ``#tag`` is content: a
heading needs the space. Lines and blanks are OpenClaw's: split at LF only,
trimmed of JavaScript's whitespace. Two choices are FORMATS.md's, not OpenClaw's
code: HTML comments are no content (OpenClaw reads a comment line as an
instruction), and a missing file is empty (OpenClaw then still runs the heartbeat).
"""

from __future__ import annotations

import re

HEARTBEAT_OK = "HEARTBEAT_OK"

# JavaScript's whitespace (\s, String.prototype.trim), which OpenClaw's reader uses: a tab or a
# no-break space inside "[ ]" leaves the item empty, and a byte order mark is trimmed too
_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_BLANK = f"[{_JS_SPACE}]"
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_HEADING = re.compile(rf"^#+(?:{_BLANK}|$)")
_EMPTY_ITEM = re.compile(rf"^[-*+]{_BLANK}*(?:\[(?:{_BLANK}|[xX])?\]{_BLANK}*)?$")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*")  # ASCII only: a fence's info word, whole line
_MARKUP = "*_`~"  # light Markdown a model may wrap the token in
_OK_REPLY = re.compile(rf"[{_MARKUP}]*\s*{HEARTBEAT_OK}\s*[{_MARKUP}]*\s*\.?\s*[{_MARKUP}]*")


def is_effectively_empty(text: str | None) -> bool:
    """Whether a HEARTBEAT.md (None: missing) holds no instruction at all."""
    if text is None:
        return True
    for line in _COMMENT.sub("", text).split("\n"):
        stripped = line.strip(_JS_SPACE)
        if not stripped or _HEADING.match(stripped) or _EMPTY_ITEM.match(stripped):
            continue
        if _FENCE.fullmatch(stripped) is None:
            return False
    return True


def is_heartbeat_ok(reply: str) -> bool:
    """Whether a heartbeat reply means "nothing to report" and must not be delivered.

    True for exactly ``HEARTBEAT_OK`` with surrounding whitespace, light Markdown
    (``**HEARTBEAT_OK**``, ```HEARTBEAT_OK```, ``_HEARTBEAT_OK_``) or one trailing
    period; the token is case-sensitive and nothing else may accompany it.
    """
    return _OK_REPLY.fullmatch(reply.strip()) is not None
