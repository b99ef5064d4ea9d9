"""Rewrite a few tasks of a large tasks.json without rendering the rest.

A text ``json.dumps`` wrote with an indent (its :class:`~heartbeat.formats.json_edit.Layout`)
has one member or item per line, each indented by its depth, and no string in it holds a raw
newline. A legacy task is then the array item ``{`` at depth 2 whose member ``"id": <id>`` sits at
depth 3, under a top-level legacy list; a scoped entry the item at depth 3 whose ``"task_id"``
sits at depth 4, under ``"<queue>": [`` at depth 2 inside ``"_<batch>_extension": {``. Found by
those lines, a task that changed is rewritten in place, and one whose status moved it to another
legacy list (a pop moves it from ``pending`` to ``in_progress``) is cut from its list and appended
to the other — where :func:`heartbeat.formats.tasks_json.render` puts an arrival, after every task
that stayed. For a text that :func:`~heartbeat.formats.tasks_json.render` wrote from the ledger
before the change, the result is the text it would write after it, at the cost of the few
objects changed and a search of the text instead of the whole document dumped again.

:func:`splice` answers None whenever the text is not laid out as expected (an id not found, or
found twice, a legacy list missing): the caller then renders the whole file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache

from heartbeat.formats.json_edit import Layout
from heartbeat.formats.tasks_json import LEGACY_LIST_OF_STATUS, QueueRecord, priority_rank, render_task

_DECODER = json.JSONDecoder()


# One edit of a text: the characters ``start:end`` become ``new``. A list of them is applied in
# its order, each to the text the ones before it left (see :func:`apply`).
Edit = tuple[int, int, str]


def splice(text: str, layout: Layout, records: Sequence[QueueRecord]) -> str | None:
    """``text`` with each of ``records`` rewritten as :func:`~heartbeat.formats.tasks_json.render`
    would place it; None when the text is not laid out as expected.

    ``records`` are the tasks that changed, in the ledger's order (scope, position, pk), none of
    them new or gone and none with a new position; ``text`` is what render wrote before the
    change, in ``layout``.
    """
    found = splice_edits(text, layout, records)
    return None if found is None else found[0]


def splice_edits(text: str, layout: Layout, records: Sequence[QueueRecord]) -> tuple[str, list[Edit]] | None:
    """:func:`splice`'s text and the edits that make it from ``text`` (``apply(text, edits)``
    gives it back): what changed, to keep beside an older text instead of the whole new one."""
    edits: list[Edit] = []
    for record in records:
        # a scoped entry: the item at depth 3 with its "task_id"; a legacy task: at depth 2, "id"
        key, depth = ("task_id", 3) if record.scope else ("id", 2)
        found = _item(text, layout, key, record.id, depth=depth)
        if found is None:
            return None
        step = (_scoped if record.scope else _legacy)(text, layout, record, *found)
        if step is None:
            return None
        step.sort(reverse=True)  # the last first: each leaves the places of the ones before it
        text = apply(text, step)
        edits.extend(step)
    return text, edits


def apply(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with ``edits`` made one after the other; ValueError for an edit outside the text
    it is made on (kept edits are read back from the ledger).

    Edits that each end before the one before them starts (a splice's, last first) leave each
    other's places as they are: a run of them is made in one pass over the text, not one copy of
    a large text per edit."""
    pieces: list[str] = []  # the run so far, from its end backwards
    cut = len(text)  # where the run's first edit starts
    for start, end, new in edits:
        if pieces and end > cut:  # not after the run: make it, then go on from its text
            pieces.append(text[:cut])
            text, pieces = "".join(reversed(pieces)), []
            cut = len(text)
        if not 0 <= start <= end <= len(text):
            raise ValueError(f"edit {start}:{end} outside a text of {len(text)} characters")
        pieces += (text[end:cut], new)
        cut = start
    if not pieces:
        return text
    pieces.append(text[:cut])
    return "".join(reversed(pieces))


def _legacy(text: str, layout: Layout, record: QueueRecord, start: int, end: int) -> list[Edit] | None:
    """The edits that rewrite the legacy task at ``start:end``, in place or in the list its status
    puts it in (disjoint, each on ``text`` as it is)."""
    unit = layout.unit
    home = _owner(text, unit, start, depth=1)
    target = LEGACY_LIST_OF_STATUS[record.status]
    if home not in LEGACY_LIST_OF_STATUS.values():
        return None
    item = _dumped(render_task(record), layout, depth=2)
    if home == target == "pending" and _rank_changed(text[start:end], record):
        return None  # a new priority sorts pending again (render does it)
    if home == target:
        return [(start, end, item)]
    if target == "pending":
        return None  # pending follows the queue's order, which only the ledger knows
    at = _end_of(text, unit, target)
    if at is None:
        return None
    empty = text[at - 1] == "["
    added = (at, at, f"\n{unit * 2}{item}\n{unit}" if empty else f",\n{unit * 2}{item}")
    return [_cut(text, unit, start, end, depth=2), added]


def _rank_changed(item: str, record: QueueRecord) -> bool:
    """Whether the task object ``item`` (as written) ranks differently from ``record``."""
    try:
        was = json.loads(item)
    except (ValueError, RecursionError):
        return True
    priority = was.get("priority") if isinstance(was, dict) else None
    return priority_rank(priority if isinstance(priority, str) else None) != priority_rank(record.priority)


def _scoped(text: str, layout: Layout, record: QueueRecord, start: int, end: int) -> list[Edit] | None:
    """The edit that rewrites the scoped entry at ``start:end`` in place, if it is in its queue."""
    unit = layout.unit
    queue = _owner(text, unit, start, depth=2)
    at = text.rfind("\n" + unit * 2 + '"', 0, start)
    extension = _owner(text, unit, at, depth=1) if at >= 0 else None
    if queue is None or extension is None or f"{extension}.{queue}" != record.scope:
        return None
    return [(start, end, _dumped(render_task(record), layout, depth=3))]


def _item(text: str, layout: Layout, key: str, task_id: str, *, depth: int) -> tuple[int, int] | None:
    """The span of the one array item at ``depth`` whose member ``key`` names ``task_id`` (None:
    none, or more than one; the id written as a string, as hb writes it)."""
    unit = layout.unit
    member = "\n" + unit * (depth + 1) + json.dumps(key) + ": " + _string(task_id, layout)
    opener, closer = "\n" + unit * depth + "{", "\n" + unit * depth + "}"
    spans = []
    at = text.find(member)
    while at >= 0:
        if text[at + len(member) : at + len(member) + 1] in (",", "\n"):  # its line ends there
            start = text.rfind(opener, 0, at)
            end = text.find(closer, at)
            if start < 0 or end < 0 or _shallow(unit, depth).search(text, start + len(opener), end):
                return None  # the member is not in an array item at that depth: not a task
            spans.append((start + len(opener) - 1, end + len(closer)))
        at = text.find(member, at + len(member))
    if len(spans) != 1:
        return None  # an object of some other list may hold the same id: only one may be a task
    return spans[0]


@cache
def _shallow(unit: str, depth: int) -> re.Pattern[str]:
    """A line indented ``depth`` units exactly: inside an item at ``depth``, only its closer."""
    return re.compile("\n" + re.escape(unit * depth) + "(?!" + re.escape(unit) + ")")


def _owner(text: str, unit: str, at: int, *, depth: int) -> str | None:
    """The key of the member at ``depth`` that holds the position ``at``."""
    lead = "\n" + unit * depth + '"'
    line = text.rfind(lead, 0, at)
    if line < 0:
        return None
    try:
        key, _ = _DECODER.raw_decode(text, line + len(lead) - 1)
    except ValueError:
        return None
    return key if isinstance(key, str) else None


def _cut(text: str, unit: str, start: int, end: int, *, depth: int) -> Edit:
    """The edit (from, to, new text) that takes the array item at ``start:end`` out of ``text``,
    with the separator it leaves."""
    lead = len(unit * depth) + 1  # the newline and indent before the item
    if text[end] == ",":  # not the last item: its line and comma go
        return (start - lead, end + 1, "")
    if text[start - lead - 1] == ",":  # the last of several: the comma before it goes
        return (start - lead - 1, end, "")
    # the only item: the list is written empty, "[]"
    return (start - lead, text.index("]", end), "")


def _end_of(text: str, unit: str, name: str) -> int | None:
    """Where an item appended to the top-level list ``name`` goes: before its closing line, or
    inside its ``[]`` (None: no such list)."""
    key = "\n" + unit + json.dumps(name) + ": ["
    at = text.rfind(key)  # one such line (an object's keys are unique); the lists that take
    # arrivals come after pending in heartbeat.py's order: near the end
    if at < 0:
        return None
    at += len(key)
    if text.startswith("]", at):  # empty: "[]"
        return at
    close = text.find("\n" + unit + "]", at)
    return None if close < 0 else close


def _dumped(value: object, layout: Layout, *, depth: int) -> str:
    """``value`` as ``json.dumps`` writes it at ``depth`` of the layout."""
    dumped = json.dumps(value, indent=layout.unit, ensure_ascii=layout.ascii_only)
    return dumped.replace("\n", "\n" + layout.unit * depth)


def _string(value: str, layout: Layout) -> str:
    return json.dumps(value, ensure_ascii=layout.ascii_only)
