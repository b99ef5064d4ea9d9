"""Order statistics as hb reports them, identical to the views' SQL.

median: the middle value, or the mean of the middle two (``statistics.median``);
p95: nearest rank, the ceil(0.95 n)-th smallest value.
"""

from __future__ import annotations

from collections.abc import Sequence


def median_positions(n: int) -> tuple[int, int]:
    """0-based positions of the middle one or two values among ``n`` sorted ones."""
    return (n - 1) // 2, n // 2


def p95_position(n: int) -> int:
    """0-based position of the nearest-rank 95th percentile among ``n`` sorted values."""
    return (95 * n + 99) // 100 - 1


def median(ordered: Sequence[float]) -> float | None:
    if not ordered:
        return None
    lo, hi = median_positions(len(ordered))
    return (ordered[lo] + ordered[hi]) / 2 if lo != hi else ordered[lo]


def p95(ordered: Sequence[float]) -> float | None:
    return ordered[p95_position(len(ordered))] if ordered else None


def rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def ranks(counts: Sequence[int]) -> list[int]:
    """Competition ranks of counts already sorted descending (SQL RANK())."""
    out: list[int] = []
    for i, count in enumerate(counts):
        out.append(out[-1] if i and counts[i - 1] == count else i + 1)
    return out
