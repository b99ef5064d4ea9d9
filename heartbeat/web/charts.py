"""Charts drawn on the server as inline SVG: no script, no stylesheet or font fetched, offline.

Each chart is a string of SVG in which every text and attribute value is
escaped here (titles and labels can be user text). Bars carry their numbers
as ``data-series`` / ``data-category`` / ``data-value`` attributes and a
``<title>`` a browser shows on hover, so a test (or a person with a screen
reader) reads the same numbers the page's tables and its JSON hold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

# one color per decision: sent, then each reason a reminder or proactive message is held back for
DECISION_COLORS = {
    "sent": "#2e7d32",
    "quiet_hours": "#3f51b5",
    "repeat_window": "#f9a825",
    "daily_cap": "#8d6e63",
    "min_gap": "#ab47bc",
    "recent_conversation": "#00897b",
    "no_suggestion": "#9e9e9e",
    "disabled": "#616161",
    "risk_p2": "#90a4ae",
    "other": "#e57373",
}
OUTCOME_COLORS = {"successes": "#2e7d32", "failures": "#c62828"}
RUN_COLORS = {"ok": "#2e7d32", "error": "#c62828", "expired": "#ef6c00", "running": "#1565c0"}
DURATION_COLOR = "#5c6bc0"
OTHER_COLOR = "#757575"
FONT = 'font-family="system-ui, sans-serif" font-size="11" fill="#444"'


@dataclass(frozen=True)
class Series:
    """One stack of a bar chart: its key (``data-series``), its label and its values."""

    key: str
    label: str
    color: str
    values: Sequence[float]


TICKS = 4  # gridlines above zero
# steps between gridlines a duration axis takes, in seconds: whole seconds, minutes, hours, days
DURATION_STEPS = (
    *(x / 1000 for x in (1, 2, 5, 10, 20, 50, 100, 200, 500)),
    *(1, 2, 5, 10, 15, 30),
    *(60 * x for x in (1, 2, 5, 10, 15, 30)),
    *(3600 * x for x in (1, 2, 3, 6, 12)),
    *(86400 * x for x in (1, 2, 7, 14, 28)),
)


def count_step(top: float) -> float:
    """The gridline step of a count axis up to ``top``: a whole 1, 2 or 5 times a power of ten."""
    wanted = max(top / TICKS, 1.0)
    power = 10.0 ** math.floor(math.log10(wanted))
    for step in (1, 2, 5, 10):
        if wanted <= step * power:
            return step * power
    return 10 * power


def duration_step(top: float) -> float:
    """The gridline step of a duration axis up to ``top`` seconds."""
    wanted = top / TICKS
    return next(
        (s for s in DURATION_STEPS if s >= wanted),
        DURATION_STEPS[-1] * math.ceil(wanted / DURATION_STEPS[-1]),
    )


def count_text(value: float, step: float = 1.0) -> str:
    return f"{round(value):,}"


def duration_text(seconds: float, step: float = 1.0) -> str:
    """A duration on an axis, in the unit of its step: 500 ms, 45 s, 15 min, 6 h, 2 d."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if step >= size:
            return f"{seconds / size:g} {unit}"
    return f"{seconds * 1000:g} ms"


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _empty(chart: str, title: str, width: int, height: int) -> str:
    return (
        f'<svg class="chart" data-chart="{_attr(chart)}" role="img" aria-label="{_attr(title)}" '
        f'viewBox="0 0 {width} {height}" width="100%" xmlns="http://www.w3.org/2000/svg">'
        f'<text x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle" {FONT}>'
        "nothing in this window</text></svg>"
    )


def stacked_bars(
    chart: str,
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    labels: Sequence[str] | None = None,
    links: Sequence[str | None] | None = None,
    durations: bool = False,
    width: int = 760,
    height: int = 210,
) -> str:
    """Vertical bars, one per category, each a stack of the series' values (zeros left out).

    ``labels`` are the categories as the axis shows them; ``links`` make a
    category's bar a link (to that day, say). ``durations``: the values are seconds.
    """
    totals = [sum(s.values[i] for s in series) for i in range(len(categories))]
    if not categories or not any(totals):
        return _empty(chart, title, width, height)
    left, right, top, bottom = 52, 8, 10, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    step = duration_step(max(totals)) if durations else count_step(max(totals))
    ceiling = step * math.ceil(max(totals) / step - 1e-9)
    value_text = duration_text if durations else count_text
    ticks = round(ceiling / step)
    slot = plot_w / len(categories)
    bar = max(1.5, min(slot * 0.72, 48))
    out = [
        f'<svg class="chart" data-chart="{_attr(chart)}" role="img" aria-label="{_attr(title)}" '
        f'viewBox="0 0 {width} {height}" width="100%" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in range(ticks + 1):  # gridlines and their values
        value = step * tick
        y = top + plot_h * (1 - value / ceiling)
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>')
        shown_value = escape(value_text(value, step))
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" {FONT}>{shown_value}</text>')
    shown = labels if labels is not None else categories
    every = max(1, math.ceil(len(categories) / max(1, plot_w // 56)))
    for i, category in enumerate(categories):
        x = left + slot * i + (slot - bar) / 2
        link = links[i] if links is not None else None
        if link:
            out.append(f'<a href="{_attr(link)}">')
        y = top + plot_h
        for s in series:
            value = s.values[i]
            if not value:
                continue
            h = plot_h * value / ceiling
            y -= h
            tip = f"{category}: {s.label} {value_text(value, step)}"
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{max(h, 0.5):.1f}" '
                f'fill="{_attr(s.color)}" data-series="{_attr(s.key)}" data-category="{_attr(category)}" '
                f'data-value="{_attr(value)}"><title>{escape(tip)}</title></rect>'
            )
        if link:
            out.append("</a>")
        if i % every == 0:
            out.append(
                f'<text x="{left + slot * (i + 0.5):.1f}" y="{height - bottom + 16}" text-anchor="middle" '
                f"{FONT}>{escape(shown[i])}</text>"
            )
    out.append(
        f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#999"/>'
    )
    out.append("</svg>")
    return "".join(out)


def rate_bars(
    chart: str,
    title: str,
    rows: Sequence[tuple[str, float | None, str]],
    *,
    width: int = 760,
) -> str:
    """Horizontal bars of a rate (0..1) per labelled row, each with a note after it."""
    if not rows:
        return _empty(chart, title, width, 60)
    label_w, note_w, row_h, top = 170, 230, 24, 6
    bar_w = width - label_w - note_w
    height = top * 2 + row_h * len(rows)
    out = [
        f'<svg class="chart" data-chart="{_attr(chart)}" role="img" aria-label="{_attr(title)}" '
        f'viewBox="0 0 {width} {height}" width="100%" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for i, (label, rate, note) in enumerate(rows):
        y = top + row_h * i
        shown = label if len(label) <= 26 else label[:25] + "…"
        out.append(
            f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end" {FONT}>{escape(shown)}'
            f"<title>{escape(label)}</title></text>"
        )
        out.append(f'<rect x="{label_w}" y="{y + 4}" width="{bar_w}" height="{row_h - 8}" fill="#eeeeee"/>')
        if rate is not None:
            out.append(
                f'<rect x="{label_w}" y="{y + 4}" width="{bar_w * rate:.1f}" height="{row_h - 8}" '
                f'fill="{OUTCOME_COLORS["successes"]}" data-series="success_rate" '
                f'data-category="{_attr(label)}" '
                f'data-value="{_attr(rate)}"><title>{escape(f"{label}: {rate:.1%}")}</title></rect>'
            )
        out.append(f'<text x="{label_w + bar_w + 8}" y="{y + 16}" {FONT}>{escape(note)}</text>')
    out.append("</svg>")
    return "".join(out)


def legend(series: Sequence[Series]) -> str:
    """The series' colors and labels as an HTML list (those with any value)."""
    items = [
        f'<li><span class="swatch" style="background:{_attr(s.color)}"></span>{escape(s.label)}</li>'
        for s in series
        if any(s.values)
    ]
    return f'<ul class="legend">{"".join(items)}</ul>' if items else ""
