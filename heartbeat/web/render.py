"""The dashboard's HTML: Jinja2 templates (package data), autoescaped, and server-drawn charts.

Needs the ``[web]`` extra (Jinja2); importing this module without it raises
ImportError, which :mod:`heartbeat.web.app` turns into a page saying so.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from heartbeat.formats import strict_json
from heartbeat.web import charts
from heartbeat.web.pages import OTHER_REASON, REASON_LABELS, REASONS


@functools.cache
def environment() -> Environment:
    """The template environment: autoescape on everything, undefined names an error; a value
    shown as JSON (``tojson``) reads as in the page's JSON variant (strict JSON)."""
    env = Environment(
        loader=PackageLoader("heartbeat.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(when=when, duration=duration, pct=pct, queue=queue, num=num, reason=reason_label)
    env.globals.update(url=url, reasons=REASONS)
    env.policies["json.dumps_function"] = strict_json.dumps
    return env


def render(page: str, data: Mapping[str, Any], *, path: str, query: str) -> str:
    """The HTML of ``page`` for its data (as its JSON variant holds it)."""
    json_url = f"{'/now' if path == '/' else path}.json" + (f"?{query}" if query else "")
    context = {**data, "charts": page_charts(page, data), "json_url": json_url, "path": path}
    return environment().get_template(f"{page}.html").render(context)


def render_error(status: int, title: str, message: str) -> str:
    return environment().get_template("error.html").render(status=status, title=title, message=message)


# --- filters ----------------------------------------------------------------------------------


def when(value: str | None) -> Markup:
    """An ISO time with offset as ``2026-05-31 02:00 +02:00`` in a ``<time>`` element."""
    if not value:
        return Markup("–")
    moment = datetime.fromisoformat(value)
    offset = moment.strftime("%z")
    shown = f"{moment:%Y-%m-%d %H:%M} {offset[:3]}:{offset[3:]}" if offset else f"{moment:%Y-%m-%d %H:%M}"
    return Markup('<time datetime="{0}" title="{0}">{1}</time>').format(value, shown)


def duration(seconds: float | None) -> str:
    """Seconds as people read them: 850 ms, 42.0 s, 12 min 05 s, 3 h 20 min, 2 d 4 h."""
    if seconds is None:
        return "–"
    sign, s = ("-" if seconds < 0 else ""), abs(seconds)
    if s < 1:
        return f"{sign}{s * 1000:.0f} ms"
    if s < 60:
        return f"{sign}{s:.1f} s"
    if s < 3600:
        return f"{sign}{int(s // 60)} min {int(s % 60):02d} s"
    if s < 86400:
        return f"{sign}{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
    return f"{sign}{int(s // 86400)} d {int(s % 86400 // 3600)} h"


def pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.1%}"


def queue(scope: str | None) -> str:
    return scope if scope else "(legacy list)"


def num(value: int | float | None) -> str:
    return "–" if value is None else f"{value:,}"


def reason_label(value: str | None) -> str:
    return REASON_LABELS.get(value or "", value or "")


def url(path: str, **params: Any) -> str:
    """A link within the dashboard: ``path`` with the parameters that have a value."""
    kept = {k: v for k, v in params.items() if v is not None and v != ""}
    return path + ("?" + urlencode(kept) if kept else "")


# --- charts ----------------------------------------------------------------------------------


def _decision_series(rows: list[Mapping[str, Any]]) -> list[charts.Series]:
    series = [charts.Series("sent", "sent", charts.DECISION_COLORS["sent"], [r["sent"] for r in rows])]
    for name in (*REASONS, OTHER_REASON):
        series.append(
            charts.Series(
                name,
                f"held back: {REASON_LABELS[name]}",
                charts.DECISION_COLORS[name],
                [r["reasons"][name] for r in rows],
            )
        )
    return series


def page_charts(page: str, data: Mapping[str, Any]) -> dict[str, Markup]:
    """The page's charts as SVG (and their legends as HTML), built from its data."""
    out: dict[str, str] = {}
    if page == "now":
        queues = data["queues"]
        series = [
            charts.Series("ready", "ready", "#2e7d32", [q["ready"] for q in queues]),
            charts.Series("claimed", "claimed", "#1565c0", [q["claimed"] for q in queues]),
            charts.Series("stale", "stale", "#ef6c00", [q["stale"] for q in queues]),
            charts.Series("held", "held", "#9e9e9e", [q["held"] for q in queues]),
        ]
        names = [queue(q["scope"]) for q in queues]
        out["queues"] = charts.stacked_bars("queues", "Active tasks per queue", names, series, height=170)
        out["queues_legend"] = charts.legend(series)
    elif page == "decisions":
        per_day = data["per_day"]
        series = _decision_series(per_day)
        filters = data["filters"]
        links = [
            url(
                "/decisions",
                day=r["day"],
                task=filters["task"],
                reason=filters["reason"],
                kind=filters["kind"],
            )
            for r in per_day
        ]
        out["per_day"] = charts.stacked_bars(
            "decisions-per-day",
            "Decisions per day: sent and held back, by reason",
            [r["day"] for r in per_day],
            series,
            labels=[r["day"][5:] for r in per_day],
            links=links,
        )
        out["legend"] = charts.legend(series)
        if data["per_hour"] is not None:
            hours = data["per_hour"]
            out["per_hour"] = charts.stacked_bars(
                "decisions-per-hour",
                f"Decisions per hour on {data['filters']['day']}",
                [f"{h['hour']:02d}" for h in hours],
                _decision_series(hours),
                labels=[f"{h['hour']:02d}" for h in hours],
            )
    elif page == "outcomes":
        rows = data["rows"]
        by = data["by"]
        if by == "day":
            series = [
                charts.Series(k, k, charts.OUTCOME_COLORS[k], [r[k] for r in rows])
                for k in ("successes", "failures")
            ]
            days = [r["day"] for r in rows]
            out["outcomes"] = charts.stacked_bars(
                "outcomes-per-day", "Outcomes per day", days, series, labels=[d[5:] for d in days]
            )
            out["legend"] = charts.legend(series)
            medians = [r["median_duration_s"] or 0 for r in rows]
            out["durations"] = charts.stacked_bars(
                "median-duration-per-day",
                "Median duration per day",
                days,
                [charts.Series("median_duration_s", "median", charts.DURATION_COLOR, medians)],
                labels=[d[5:] for d in days],
                durations=True,
                height=160,
            )
        else:
            out["outcomes"] = charts.rate_bars(
                f"success-rate-per-{by}",
                f"Success rate per {by}",
                [
                    (
                        "(none)" if r[by] is None else queue(r[by]) if by == "scope" else str(r[by]),
                        r["success_rate"],
                        f"{pct(r['success_rate'])} of {r['outcomes']:,} · "
                        f"median {duration(r['median_duration_s'])}",
                    )
                    for r in rows
                ],
            )
    elif page == "runs":
        keys = sorted({k for day in data["per_day"] for k in day["runs"]})
        series = [
            charts.Series(
                k,
                k.replace(":", " "),
                charts.RUN_COLORS.get(k.split(":", 1)[1], charts.OTHER_COLOR)
                if k.startswith("heartbeat")
                else _lighter(charts.RUN_COLORS.get(k.split(":", 1)[1], charts.OTHER_COLOR)),
                [day["runs"].get(k, 0) for day in data["per_day"]],
            )
            for k in keys
        ]
        days = [d["day"] for d in data["per_day"]]
        out["per_day"] = charts.stacked_bars(
            "runs-per-day", "Heartbeat ticks and pokes per day", days, series, labels=[d[5:] for d in days]
        )
        out["legend"] = charts.legend(series)
    return {name: Markup(svg) for name, svg in out.items()}  # built escaped by heartbeat.web.charts


def _lighter(color: str) -> str:
    """A paler shade of ``#rrggbb`` (pokes beside heartbeat ticks of the same outcome)."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return "#{:02x}{:02x}{:02x}".format(*(c + (255 - c) // 2 for c in (r, g, b)))


__all__ = ["environment", "render", "render_error"]
