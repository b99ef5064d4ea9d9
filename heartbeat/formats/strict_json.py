"""JSON as hb prints and serves it: strict JSON (RFC 8259), which every JSON reader reads.

Python's ``json`` writes a float that is not finite as ``NaN``, ``Infinity`` or
``-Infinity``, which no strict reader accepts. The ledger can hold such a number: a tasks.json
field ``1e999`` (Python reads it as infinity) is kept as it is, so that the file keeps it
(heartbeat.py, Python too, reads it back). In what hb prints (``--json``, ``hb sql``,
``hb report``), in the MCP tools' results and in the HTTP answers, it is the string
``"Infinity"``, ``"-Infinity"`` or ``"NaN"``, as PostgreSQL's ``to_json`` writes one: the
value stays recognisable, where ``null`` would read as "not set". The files hb writes for the
runtimes are no output in this sense: they keep ``json.dumps``'s own text.
"""

from __future__ import annotations

import json
import math
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


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` as strict JSON: a float that is not finite is written as
    its string (:func:`finite`). A value without one costs no more than ``json.dumps``."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:  # "Out of range float values are not JSON compliant"
        return json.dumps(finite(value), allow_nan=False, **options)
