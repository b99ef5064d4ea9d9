"""The server-drawn charts: escaped text, bars that carry their numbers, readable axes."""

from __future__ import annotations

from heartbeat.web import charts
from tests.web.helpers import chart_values, parse_html

XSS = "<script>alert(1)</script>"


def test_bars_stack_the_series_and_carry_their_values() -> None:
    svg = charts.stacked_bars(
        "demo",
        "Decisions",
        ["2026-05-01", "2026-05-02", "2026-05-03"],
        [
            charts.Series("sent", "sent", "#2e7d32", [3, 0, 5]),
            charts.Series("quiet_hours", "held back", "#3f51b5", [1, 2, 0]),
        ],
        links=["/decisions?day=2026-05-01", None, "/decisions?day=2026-05-03"],
    )
    page = parse_html(svg)
    assert chart_values(page, "demo") == {
        "sent": {"2026-05-01": 3, "2026-05-03": 5},
        "quiet_hours": {"2026-05-01": 1, "2026-05-02": 2},
    }
    assert [a.attrs["href"] for a in page.find_all("a")] == [
        "/decisions?day=2026-05-01",
        "/decisions?day=2026-05-03",
    ]
    rects = page.find_all("rect", data_series=None)
    tallest = min(float(r.attrs["y"]) for r in rects)  # the 5 of the third day is the top
    assert tallest >= 10  # inside the plot, below its top margin
    axis = [t.text() for t in page.find_all("text")]
    assert axis[:3] == ["0", "2", "4"]  # steps of 2 up to 6


def test_text_in_charts_is_escaped() -> None:
    svg = charts.stacked_bars("x", XSS, [XSS], [charts.Series("s", XSS, "#000", [1])], labels=[XSS])
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    page = parse_html(svg)
    assert page.find("svg").attrs["aria-label"] == XSS
    assert page.find("rect", data_series="s").attrs["data-category"] == XSS
    bars = charts.rate_bars("r", XSS, [(XSS, 0.5, XSS)])
    assert "<script>" not in bars and parse_html(bars).find("rect", data_series="success_rate")
    assert "<script>" not in charts.legend([charts.Series("s", XSS, "#000", [1])])


def test_an_empty_window_says_so() -> None:
    for svg in (
        charts.stacked_bars("e", "Nothing", ["a"], [charts.Series("s", "s", "#000", [0])]),
        charts.stacked_bars("e", "Nothing", [], []),
        charts.rate_bars("e", "Nothing", []),
    ):
        assert parse_html(svg).find("text").text() == "nothing in this window"


def test_axis_steps_are_round_numbers_and_durations_in_one_unit() -> None:
    assert [charts.count_step(v) for v in (3, 23, 4000, 41_558)] == [1, 10, 1000, 20_000]
    assert charts.duration_step(141) == 60  # a median of 2 min 21 s: steps of a minute
    assert charts.duration_step(1.5) == 0.5
    assert charts.duration_step(30_000) == 3 * 3600  # 8 h 20 min: steps of 3 h
    svg = charts.stacked_bars(
        "d", "Durations", ["a", "b"], [charts.Series("m", "median", "#000", [141, 150])], durations=True
    )
    assert [t.text() for t in parse_html(svg).find_all("text")][:4] == ["0 min", "1 min", "2 min", "3 min"]
    assert charts.duration_text(0.25, 0.05) == "250 ms"
    assert charts.duration_text(7200, 3600) == "2 h"


def test_legend_lists_only_series_with_values() -> None:
    html = charts.legend(
        [charts.Series("a", "sent", "#111", [1]), charts.Series("b", "daily cap", "#222", [0])]
    )
    assert [li.text() for li in parse_html(html).find_all("li")] == ["sent"]
