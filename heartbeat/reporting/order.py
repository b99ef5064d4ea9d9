"""Exact medians and p95 of outcome durations, per group, without reading every duration.

A group (a local day, a skill, a scope, ...) is a few *parts*: conditions on
``outcomes`` that an index reads as ranges (a range of ``completed_at``, or a
(scope, skill, source) group of ``ix_outcomes_scope_skill_source_duration_s``).
Its order statistics take three steps instead of fetching all its durations:

1. a sample of the table (every k-th primary key, read by key, shared by all
   groups) brackets each wanted rank: a short range of durations that very
   likely holds it (the sample's quantile, a few standard errors either way);
2. one aggregate pass per part counts its rows, its successes, its durations
   and, per bracket, the durations below it (on the grouped index, already in
   duration order, that count is a walk from the nearer end instead);
3. the durations inside the brackets are fetched (on the grouped index a
   range; on a day, the day's rows filtered) and sorted: the wanted rank
   minus the count below the bracket is a position in that short list.

The numbers are exact: a rank that falls outside its bracket (an unlucky
sample), or a group too small to sample, has all its durations fetched and
sorted, as :mod:`heartbeat.reporting.stats` defines median and p95.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from heartbeat.reporting import stats
from heartbeat.reporting.db import Reader

SAMPLE_SIZE = 16_384  # rows read by key for the sample, over the whole table
MIN_SAMPLE = 64  # a group with fewer sampled durations is read whole
MARGIN_SE = 3.0  # bracket half-width, in standard errors of the sampled rank
QUANTILES = (0.5, 0.95)  # the median's bracket, then p95's


@dataclass
class Part:
    """One indexed range of a group: ``where`` on outcomes (with ``:name`` parameters)."""

    where: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Group:
    """The rows of one report line, with what the passes found."""

    key: tuple[Any, ...]
    parts: list[Part]
    sample: list[float] = field(default_factory=list)  # sampled durations (sorted before use)
    n: int = 0
    ok: int = 0
    timed: int = 0
    median: float | None = None
    p95: float | None = None


def sample(
    r: Reader,
    groups: Sequence[Group],
    key: str,
    group_of: Callable[[Any], Group | None],
    where: str = "",
    params: dict[str, Any] | None = None,
) -> None:
    """Give each group every k-th of its durations by primary key, sorted (k: see :data:`SAMPLE_SIZE`).

    The rows are read by key, not scanned (a deleted key is simply missing);
    ``where`` (on outcomes' columns) keeps the ones a report covers, and
    ``group_of`` finds the group of a row from its ``key`` column.
    """
    # two statements: a lone MIN() or MAX() of the key is one seek, both together a scan
    lo = r.one("SELECT MIN(pk) FROM outcomes")[0]
    hi = r.one("SELECT MAX(pk) FROM outcomes")[0]
    if lo is None:
        return
    step = max(1, (hi - lo + 1) // SAMPLE_SIZE)
    for value, duration in r.rows(
        "WITH RECURSIVE k(pk) AS (SELECT CAST(:lo AS BIGINT) UNION ALL "
        "SELECT pk + CAST(:step AS BIGINT) FROM k WHERE pk + CAST(:step AS BIGINT) <= CAST(:hi AS BIGINT)) "
        f"SELECT o.{key}, o.duration_s FROM k JOIN outcomes o ON o.pk = k.pk "
        f"WHERE o.duration_s IS NOT NULL{f' AND {where}' if where else ''}",
        {**(params or {}), "lo": lo, "hi": hi, "step": step},
    ):
        group = group_of(value)
        if group is not None:
            group.sample.append(duration)
    for group in groups:
        group.sample.sort()


def range_finder(bounds: Sequence[tuple[Any, Any]], groups: Sequence[Group]) -> Callable[[Any], Group | None]:
    """The group whose time range [start, end) (in order, not overlapping) holds a time."""
    starts = [start for start, _end in bounds]

    def find(at: Any) -> Group | None:
        i = bisect_right(starts, at) - 1
        return groups[i] if i >= 0 and at < bounds[i][1] else None

    return find


def cells(r: Reader) -> list[tuple[Any, Any, Any]]:
    """The distinct (scope, skill, source) of outcomes, found by seeks on the grouped index."""
    out = []
    for scope in _distinct(r, "scope", ()):
        for skill in _distinct(r, "skill", (("scope", scope),)):
            for source in _distinct(r, "source", (("scope", scope), ("skill", skill))):
                out.append((scope, skill, source))
    return out


def match(names: Sequence[str], values: Sequence[Any]) -> Part:
    """The part of outcomes where each column in ``names`` equals its value (NULL included)."""
    conds, params = [], {}
    for name, value in zip(names, values, strict=True):
        if value is None:
            conds.append(f"{name} IS NULL")
        else:
            conds.append(f"{name} = :c_{name}")
            params[f"c_{name}"] = value
    return Part(" AND ".join(conds), params)


def _distinct(r: Reader, column: str, prefix: Sequence[tuple[str, Any]]) -> list[Any]:
    """The values of ``column`` under ``prefix``: one index seek each (a loose index scan)."""
    part = match([name for name, _ in prefix], [value for _, value in prefix])
    where = f"{part.where} AND " if part.where else ""
    values: list[Any] = []
    if r.one(f"SELECT 1 FROM outcomes WHERE {where}{column} IS NULL LIMIT 1", part.params):
        values.append(None)
    condition = f"{column} IS NOT NULL"
    while True:
        found = r.one(
            f"SELECT MIN({column}) FROM outcomes WHERE {where}{condition}",
            {**part.params, "after": values[-1] if values else None},
        )[0]
        if found is None:
            return values
        values.append(found)
        condition = f"{column} > :after"


@dataclass
class _Bracket:
    """A range of durations [lo, hi] expected to hold a wanted rank (None: unbounded)."""

    lo: float | None
    hi: float | None
    below: int = 0  # the group's durations < lo
    inside: list[float] = field(default_factory=list)  # the group's durations in [lo, hi], sorted

    def condition(self, tag: str) -> tuple[str, dict[str, Any]]:
        parts, params = [], {}
        if self.lo is not None:
            parts.append(f"duration_s >= :lo{tag}")
            params[f"lo{tag}"] = self.lo
        if self.hi is not None:
            parts.append(f"duration_s <= :hi{tag}")
            params[f"hi{tag}"] = self.hi
        return "(" + (" AND ".join(parts) or "duration_s IS NOT NULL") + ")", params

    def value(self, rank: int) -> float | None:
        i = rank - self.below
        return self.inside[i] if 0 <= i < len(self.inside) else None


def _brackets(values: list[float]) -> list[_Bracket]:
    """Around each of :data:`QUANTILES` of the sorted sample ``values`` (none if too few)."""
    m = len(values)
    if m < MIN_SAMPLE:
        return []
    out = []
    for q in QUANTILES:
        centre = q * (m - 1)
        margin = MARGIN_SE * math.sqrt(m * q * (1 - q)) + 2
        lo_i, hi_i = math.floor(centre - margin), math.ceil(centre + margin)
        out.append(_Bracket(values[lo_i] if lo_i >= 0 else None, values[hi_i] if hi_i < m else None))
    return out


def compute(
    r: Reader,
    groups: Iterable[Group],
    window: str = "",
    window_params: dict[str, Any] | None = None,
    *,
    ordered: bool = False,
) -> None:
    """Fill in each group's counts, median and p95.

    ``window``: a condition every part also takes. ``ordered``: each part is a
    range of an index ordered by duration, so counting below a duration and
    fetching a bracket read just those entries; otherwise each pass reads the
    whole part, and both brackets are fetched in one pass.
    """
    common = window_params or {}
    for group in groups:
        brackets = _brackets(group.sample)
        for part in group.parts:
            where = f"{part.where}{window}"
            params = {**common, **part.params}
            if ordered:
                _count_ordered(r, group, brackets, where, params)
            else:
                _count(r, group, brackets, where, params)
        if group.timed and not (brackets and _fetch(r, group, brackets, window, common, ordered=ordered)):
            _read_all(r, group, window, common)


def _count(r: Reader, group: Group, brackets: list[_Bracket], where: str, params: dict[str, Any]) -> None:
    """One pass over the part: rows, successes, durations, and durations below each bracket."""
    below, extra = [], {}
    for i, b in enumerate(brackets):
        below.append("0" if b.lo is None else f"COUNT(*) FILTER (WHERE duration_s < :lo{i})")
        if b.lo is not None:
            extra[f"lo{i}"] = b.lo
    row = r.one(
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE success), COUNT(duration_s)"
        + "".join(f", {c}" for c in below)
        + f" FROM outcomes WHERE {where}",
        {**params, **extra},
    )
    group.n += int(row[0])
    group.ok += int(row[1])
    group.timed += int(row[2])
    for b, count in zip(brackets, row[3:], strict=True):
        b.below += int(count)


def _count_ordered(
    r: Reader, group: Group, brackets: list[_Bracket], where: str, params: dict[str, Any]
) -> None:
    """Rows and successes in one pass; below a bracket: the shorter walk, from the bottom or the top."""
    n, ok, timed = r.one(
        f"SELECT COUNT(*), COUNT(*) FILTER (WHERE success), COUNT(duration_s) FROM outcomes WHERE {where}",
        params,
    )
    group.n += int(n)
    group.ok += int(ok)
    group.timed += int(timed)
    for q, b in zip(QUANTILES[: len(brackets)], brackets, strict=True):
        if b.lo is None:
            continue
        if q <= 0.5:
            b.below += int(
                r.one(
                    f"SELECT COUNT(*) FROM outcomes WHERE {where} AND duration_s < :lo",
                    {**params, "lo": b.lo},
                )[0]
            )
        else:
            above = r.one(
                f"SELECT COUNT(*) FROM outcomes WHERE {where} AND duration_s >= :lo", {**params, "lo": b.lo}
            )[0]
            b.below += int(timed) - int(above)


def _fetch(
    r: Reader, group: Group, brackets: list[_Bracket], window: str, common: dict[str, Any], *, ordered: bool
) -> bool:
    """The durations inside the brackets; then median and p95, if the brackets hold their ranks."""
    if ordered:  # a range of the index per bracket and part
        for i, b in enumerate(brackets):
            text, params = b.condition(str(i))
            for part in group.parts:
                b.inside.extend(
                    r.column(
                        f"SELECT duration_s FROM outcomes WHERE {part.where}{window} AND {text}",
                        {**common, **part.params, **params},
                    )
                )
            b.inside.sort()
    else:  # one pass over each part for both brackets
        conditions, params = [], dict(common)
        for i, b in enumerate(brackets):
            text, p = b.condition(str(i))
            conditions.append(text)
            params.update(p)
        values = _durations(r, group, window, f"({' OR '.join(conditions)})", params)
        for b in brackets:
            start = 0 if b.lo is None else bisect_left(values, b.lo)
            end = len(values) if b.hi is None else bisect_right(values, b.hi)
            b.inside = values[start:end]
    lo, hi = stats.median_positions(group.timed)
    middle, top = brackets[0], brackets[1]
    low, high, p95 = middle.value(lo), middle.value(hi), top.value(stats.p95_position(group.timed))
    if low is None or high is None or p95 is None:
        return False  # an unlucky sample: read the group whole
    group.median = (low + high) / 2 if lo != hi else low
    group.p95 = p95
    return True


def _durations(r: Reader, group: Group, window: str, condition: str, params: dict[str, Any]) -> list[float]:
    """The group's durations meeting ``condition``, over all its parts, sorted."""
    values: list[float] = []
    for part in group.parts:
        values.extend(
            r.column(
                f"SELECT duration_s FROM outcomes WHERE {part.where}{window} AND {condition}",
                {**params, **part.params},
            )
        )
    values.sort()
    return values


def _read_all(r: Reader, group: Group, window: str, common: dict[str, Any]) -> None:
    values = _durations(r, group, window, "duration_s IS NOT NULL", common)
    group.median, group.p95 = stats.median(values), stats.p95(values)
