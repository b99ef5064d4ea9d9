"""JSON as hb prints and serves it: strict JSON (RFC 8259), which every JSON reader reads.

Python's ``json`` writes a float that is not finite as ``NaN``, ``Infinity`` or
``-Infinity``, which no strict reader accepts. The ledger can hold such a number: a tasks.json
field ``1e999`` (Python reads it as infinity) is kept as it is, so that the file keeps it
(heartbeat.py, Python too, reads it back). In what hb prints (``--json``, ``hb sql``,
``hb report``), in the MCP tools' results and in the HTTP answers, it is the string
``"Infinity"``, ``"-Infinity"`` or ``"NaN"``, as PostgreSQL's ``to_json`` writes one: the
value stays recognisable, where ``null`` would read as "not set". The files hb writes for the
runtimes are no output in this sense: they keep ``json.dumps``'s own text.

What hb prints also writes as a ``\\u`` escape each character a terminal acts on rather than
shows, where ``json.dumps(..., ensure_ascii=False)`` writes it as it is: DEL, the C1 controls
(U+009B starts a control sequence as ESC [ does), the bidirectional overrides and isolates, and
the line and paragraph separators. JSON escapes the C0 controls itself; a text with an escape
reads back as the same value (:func:`safe`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

# a float that is not finite (by its repr) as output JSON writes it
NON_FINITE = {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}


def finite(value: Any) -> Any:
    """``value`` with every float in it that is not finite (in objects and arrays too) as its
    string in :data:`NON_FINITE`; anything else as it is."""
    if isinstance(value, float):
        return value if math.isfinite(value) else NON_FINITE[repr(float(value))]
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


# the characters json.dumps(..., ensure_ascii=False) writes as they are that a terminal acts on
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe(text: str) -> str:
    """A JSON text with each character of :data:`_UNSAFE` written as its ``\\uXXXX`` escape: the
    same value, read by any JSON reader. Such a character can stand only inside a string (the
    rest of a JSON text is ASCII), so the whole text is searched at once; an ASCII text, the
    common case, is returned without a search."""
    if text.isascii():
        return text
    return _UNSAFE.sub(_escape, text)


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` as strict JSON: a float that is not finite is written as
    its string (:func:`finite`), and the text is :func:`safe`. A value without either costs no
    more than ``json.dumps``."""
    try:
        return safe(json.dumps(value, allow_nan=False, **options))
    except ValueError:  # "Out of range float values are not JSON compliant"
        return safe(json.dumps(finite(value), allow_nan=False, **options))


_STRING = json.encoder.encode_basestring  # a JSON string as json.dumps(..., ensure_ascii=False) writes it


def dumps_indented(value: Any, default: Callable[[Any], Any] | None = None, *, depth: int = 0) -> str:
    """``dumps(value, ensure_ascii=False, indent=2, default=default)``: the same text, built
    without the indenting encoder of ``json``, which is pure Python (a generator per nested
    value). Objects with text keys, arrays,
    text, numbers, true, false and null are written here; any other value (a ``default`` one,
    an object with other keys) is :func:`dumps`'s text, indented where it stands. ``depth``:
    the value stands that many levels deep in an enclosing document (its lines are indented
    so; the first is the caller's to place). The text is :func:`safe`."""
    try:
        return safe(_indented(value, "\n" + "  " * depth, default))
    except RecursionError:  # nested deeper than these frames go: dumps's own answer (text or error)
        text = dumps(value, ensure_ascii=False, indent=2, default=default)
        return text.replace("\n", "\n" + "  " * depth)


def _indented(value: Any, newline: str, default: Callable[[Any], Any] | None) -> str:
    """:func:`dumps_indented` of a value nested where a line starts with ``newline``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _STRING(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value) if math.isfinite(value) else _STRING(NON_FINITE[repr(float(value))])
    inner = newline + "  "
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        items = ("," + inner).join([_indented(item, inner, default) for item in value])
        return "[" + inner + items + newline + "]"
    if isinstance(value, dict) and all(type(key) is str for key in value):
        if not value:
            return "{}"
        members = ("," + inner).join(
            [_STRING(key) + ": " + _indented(item, inner, default) for key, item in value.items()]
        )
        return "{" + inner + members + newline + "}"
    return dumps(value, ensure_ascii=False, indent=2, default=default).replace("\n", newline)
