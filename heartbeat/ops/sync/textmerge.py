"""A three-way merge of texts by lines, for edits two other programs made at the same moment.

Used when hb's swap of a workspace file meets two concurrent edits at once (see
:mod:`heartbeat.ops.sync.swap`): both are kept. Where both sides changed the same lines
differently, or both inserted at the same place, the result holds ``theirs`` and then
``ours`` (identical lines once): nothing is dropped, and hb's own merge that follows reads
every line the two programs wrote.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from patiencediff import PatienceSequenceMatcher


def _changes(base: Sequence[str], other: Sequence[str]) -> list[tuple[int, int, list[str]]]:
    """(start, end, replacement) for each region of ``base`` that ``other`` changed.

    Patience diff: the lines each text holds once anchor the match, and only the short runs
    between anchors are compared line by line. A JSON file repeats most of its lines
    (``"completed_at": null,`` once per task), on which difflib's matcher is quadratic: 2.3 s
    for a tasks.json of 1,000 tasks, minutes at 20,000 (patience: 0.01 s and 0.45 s)."""
    matcher = PatienceSequenceMatcher(None, base, other)
    return [(i1, i2, list(other[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def merge3(base: str, ours: str, theirs: str) -> str:
    """``base`` with the changes of both ``ours`` and ``theirs`` (see the module's docstring)."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    b = base.splitlines(keepends=True)
    left = _changes(b, ours.splitlines(keepends=True))
    right = _changes(b, theirs.splitlines(keepends=True))
    out: list[str] = []
    at = 0
    i = j = 0
    while i < len(left) or j < len(right):
        # the next change on either side, with every change overlapping it (a conflict group)
        pick_left = j >= len(right) or (i < len(left) and left[i][0] <= right[j][0])
        start, end, _ = left[i] if pick_left else right[j]
        group_left: list[tuple[int, int, list[str]]] = []
        group_right: list[tuple[int, int, list[str]]] = []
        grew = True
        while grew:
            grew = False
            while i < len(left) and _touches(left[i], start, end):
                group_left.append(left[i])
                start, end = min(start, left[i][0]), max(end, left[i][1])
                i += 1
                grew = True
            while j < len(right) and _touches(right[j], start, end):
                group_right.append(right[j])
                start, end = min(start, right[j][0]), max(end, right[j][1])
                j += 1
                grew = True
        out.extend(b[at:start])
        both = _both(b, start, end, group_left, group_right)
        if both is not None:
            out.extend(both)
            at = end
            continue
        mine = _apply(b, start, end, group_left)
        other = _apply(b, start, end, group_right)
        if not group_right:
            out.extend(mine)
        elif not group_left or mine == other:
            out.extend(other)
        else:
            out.extend(other)
            out.extend(line for line in mine if line not in other)
        at = end
    out.extend(b[at:])
    return "".join(_ends(out))


def _both(
    base: Sequence[str],
    start: int,
    end: int,
    left: list[tuple[int, int, list[str]]],
    right: list[tuple[int, int, list[str]]],
) -> list[str] | None:
    """Lines ``start`` to ``end`` of ``base`` with the changes of both sides, when those only
    touch: no line is replaced or taken out by both sides, and the two do not insert at the same
    place. Lines one side inserts beside or inside lines the other side replaced or took out
    stand, in their place: at the start of such lines before them, at the end or inside after
    them (a runtime's new entry written just above the entry hb moved away; hb's new entry
    amid entries a runtime completed). Two deletions that only abut are both made. None for a
    conflict (see :func:`merge3`)."""
    if not left or not right:
        return None
    ranges = [(a, b, lines) for a, b, lines in (*left, *right) if a < b]
    for a, b, _ in (c for c in left if c[0] < c[1]):
        if any(a < d and c < b for c, d, _ in right if c < d):
            return None  # both sides changed the same lines
    points = {c for c, d, _ in left if c == d}
    if any(c == d and c in points for c, d, _ in right):
        return None  # both sides inserted at the same place
    inserted = sorted(((c, lines) for c, d, lines in (*left, *right) if c == d), key=lambda x: x[0])
    out: list[str] = []
    k, n = start, 0
    for a, b, lines in sorted(ranges, key=lambda r: r[0]):
        while n < len(inserted) and inserted[n][0] <= a:  # at or before the start: before them
            out.extend(base[k : inserted[n][0]])
            k = max(k, inserted[n][0])
            out.extend(inserted[n][1])
            n += 1
        out.extend(base[k:a])
        out.extend(lines)
        while n < len(inserted) and inserted[n][0] < b:  # inside what the other side took out
            out.extend(inserted[n][1])
            n += 1
        k = b
    for at, lines in inserted[n:]:  # at or after the end: after them
        out.extend(base[k:at])
        k = max(k, at)
        out.extend(lines)
    out.extend(base[k:end])
    return out


def closer_to_ours(
    edited: Counter[str], ours: Counter[str], base: Counter[str], moved: Counter[str] | None = None
) -> bool:
    """Whether ``edited`` reads as an edit of ``ours`` rather than of ``base``, the text ``ours``
    replaced, each counted by its units (a TODO file's entries): it holds more of the units
    ``ours`` added to ``base`` and lacks more of those it took out, than the other way round.
    When ``ours`` changed nothing, there is nothing a copy could lose: True. ``moved``: the units
    of the file an entry taken out of this one goes to (TODO.DONE.md, for a TODO.md entry the
    runtime completed): an added unit there now was seen by the editor too."""
    added, removed = ours - base, base - ours
    there = moved or Counter()
    # (a unit ``base`` held already, as often as ``ours`` holds it beside the added ones, is no
    # sign of either: only the copies past base's count are)
    kept = sum(min(n, max(0, edited[unit] - base[unit]) + there[unit]) for unit, n in added.items())
    dropped = sum(n - min(n, edited[unit]) for unit, n in removed.items())
    ours_side = kept + dropped
    base_side = (added.total() - kept) + (removed.total() - dropped)
    return ours_side > base_side or not (added or removed)


def distance(a: str, b: str) -> int:
    """How many lines one deletes from ``a`` and inserts to make ``b`` (patience diff, as
    :func:`merge3` reads them); a long line (JSON written on one line, as ``json.dump`` does
    without ``indent``) counts as its pieces after each comma and bracket, so that two such
    texts are not all one change apart."""
    if a == b:
        return 0
    matcher = PatienceSequenceMatcher(None, _units(a), _units(b))
    return sum((i2 - i1) + (j2 - j1) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal")


LONG_LINE = 1000  # characters: a line this long is compared by its pieces (see distance)
_PIECES = re.compile(r"(?<=[,\[\]{}])")


def _units(text: str) -> list[str]:
    """The lines of ``text``, a long one cut after each comma and bracket."""
    units: list[str] = []
    for line in text.splitlines():
        if len(line) < LONG_LINE:
            units.append(line)
        else:
            units.extend(_PIECES.split(line))
    return units


def _front_matter_lines(lines: Sequence[str]) -> int:
    """How many lines a leading front matter (``---`` ... ``---``) spans; 0: none."""
    if not lines or lines[0].lstrip("\ufeff").strip() != "---":
        return 0
    return next((i + 1 for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)


def merge3_under_front_matter(base: str, ours: str, theirs: str) -> str:
    """:func:`merge3` of the texts past their front matter, under ``theirs``' front matter. Each
    program stamps its own (mistermorph ``updated_at`` and the count) on every write, so merged
    by lines the two stamps would both stay: a key written twice, which a YAML reader refuses.
    The writer that reads the result restamps it anyway."""
    split = [t.splitlines(keepends=True) for t in (base, ours, theirs)]
    heads = [_front_matter_lines(lines) for lines in split]
    if not heads[2] or not heads[1]:
        return merge3(base, ours, theirs)
    bodies = ["".join(lines[head:]) for lines, head in zip(split, heads, strict=True)]
    return "".join(split[2][: heads[2]]) + merge3(*bodies)


def _touches(change: tuple[int, int, list[str]], start: int, end: int) -> bool:
    """Whether a change overlaps the region, or inserts at its edge (start == end counts)."""
    c_start, c_end, _ = change
    return c_start <= end and c_end >= start


def _apply(
    base: Sequence[str], start: int, end: int, changes: Sequence[tuple[int, int, list[str]]]
) -> list[str]:
    """base[start:end] with ``changes`` (all inside it, in order) applied."""
    out: list[str] = []
    at = start
    for c_start, c_end, lines in changes:
        out.extend(base[at:c_start])
        out.extend(lines)
        at = c_end
    out.extend(base[at:end])
    return out


def _ends(lines: list[str]) -> list[str]:
    """Every line but the last ends with a newline (a joined last line of one side would glue)."""
    fixed = [
        line if line.endswith("\n") or k == len(lines) - 1 else line + "\n" for k, line in enumerate(lines)
    ]
    return fixed
