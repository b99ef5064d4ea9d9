"""Go's string functions as mistermorph's TODO code applies them, for reading its files exactly.

mistermorph (a Go runtime) trims, splits and lower-cases with Go's ``strings``
package. Python's look-alikes differ at the edges: ``str.strip()`` also strips
``\\x1c``-``\\x1f`` (Go keeps them), ``str.lower()`` turns ``İ`` into two
characters (Go: ``i``) and ``str.split()`` splits on those control characters
too. These helpers give Go's answers.

Pure: no I/O.
"""

from __future__ import annotations

import re

__all__ = ["SPACE", "fields", "lower", "trim_space"]

# unicode.IsSpace: Go's Unicode White_Space set (U+0085 and U+00A0 included, U+001C-U+001F not)
SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_RUNS = re.compile(f"[{re.escape(SPACE)}]+")


def trim_space(text: str) -> str:
    """``strings.TrimSpace``."""
    return text.strip(SPACE)


def fields(text: str) -> list[str]:
    """``strings.Fields``: the text split around runs of white space."""
    return [part for part in _RUNS.split(text) if part]


def lower(text: str) -> str:
    """``strings.ToLower``: each character on its own (no final sigma), ``İ`` -> ``i``."""
    if text.isascii():
        return text.lower()
    return "".join("i" if ch == "\u0130" else ch.lower() for ch in text)
