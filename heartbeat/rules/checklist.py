"""HEARTBEAT.md and the HEARTBEAT_OK reply (FORMATS.md section 4: OpenClaw, mistermorph).

A checklist is **effectively empty** when, once HTML comments are removed
(multi-line ones too; an unterminated ``<!--`` runs to the end, as in HTML),
every line is blank, a Markdown heading (``#`` then a space or the end of the
line), or a list item with nothing in it (``-``, ``*``, ``+``, optionally with an
empty ``[ ]`` or ``[x]`` box, whose one blank may be a tab or a no-break space).
``#tag`` is content: a heading needs the space. Lines and blanks are OpenClaw's:
split at LF only, trimmed of JavaScript's whitespace.
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
_MARKUP = "*_`~"  # light Markdown a model may wrap the token in
_OK_REPLY = re.compile(rf"[{_MARKUP}]*\s*{HEARTBEAT_OK}\s*[{_MARKUP}]*\s*\.?\s*[{_MARKUP}]*")


def is_effectively_empty(text: str | None) -> bool:
    """Whether a HEARTBEAT.md (None: missing) holds no instruction at all."""
    if text is None:
        return True
    for line in _COMMENT.sub("", text).split("\n"):
        stripped = line.strip(_JS_SPACE)
        if stripped and not _HEADING.match(stripped) and not _EMPTY_ITEM.match(stripped):
            return False
    return True


def is_heartbeat_ok(reply: str) -> bool:
    """Whether a heartbeat reply means "nothing to report" and must not be delivered.

    True for exactly ``HEARTBEAT_OK`` with surrounding whitespace, light Markdown
    (``**HEARTBEAT_OK**``, ```HEARTBEAT_OK```, ``_HEARTBEAT_OK_``) or one trailing
    period; the token is case-sensitive and nothing else may accompany it.
    """
    return _OK_REPLY.fullmatch(reply.strip()) is not None
