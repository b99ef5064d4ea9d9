"""hb sql's LIKE and GLOB give SQLite's own answers, and a long one stops at the time limit."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from heartbeat.reporting.matching import Stopped, glob_function, like_function
from tests.conftest import Runner

# SQLite's own functions, and the connection hb's hand numbers and blobs to (closed at the end)
SIDE = sqlite3.connect(":memory:", check_same_thread=False)
OWN = sqlite3.connect(":memory:", check_same_thread=False)


@pytest.fixture(scope="module", autouse=True)
def _close_the_connections() -> Iterator[None]:
    yield
    SIDE.close()
    OWN.close()


# the characters that mean something to either, in both cases, with a character past ASCII
ALPHABET = "aAbBzZ%_*?[]^-!\\éÉ .\n"
TEXTS = st.text(alphabet=ALPHABET, max_size=12)


def own(name: str, *args: Any) -> Any:
    marks = ", ".join("?" * len(args))
    return OWN.execute(f"SELECT {name}({marks})", args).fetchone()[0]


def never() -> bool:
    return False


LIKE = like_function(SIDE, never)
LIKE3 = like_function(SIDE, never, arguments=3)  # like(pattern, text, escape): x LIKE y ESCAPE z
GLOB = glob_function(SIDE, never)


@settings(max_examples=3000, deadline=None)
@given(TEXTS, TEXTS)
@example("[]-a]", "-")
@example("[a-c-e]", "-")
@example("[^]]", "]")
@example("a%%_b", "axxb")
@example("%É%", "xéx")
def test_like_and_glob_answer_as_sqlite_does(pattern: str, text: str) -> None:
    assert LIKE(pattern, text) == own("like", pattern, text), ("like", pattern, text)
    assert GLOB(pattern, text) == own("glob", pattern, text), ("glob", pattern, text)


@settings(max_examples=1500, deadline=None)
@given(TEXTS, TEXTS, st.sampled_from(["\\", "!", "%", "_", "a", "é"]))
def test_like_with_an_escape_answers_as_sqlite_does(pattern: str, text: str, escape: str) -> None:
    assert LIKE3(pattern, text, escape) == own("like", pattern, text, escape), (pattern, text, escape)


@pytest.mark.parametrize("pattern", ["a", "%", "a%", None])
def test_an_escape_of_null_makes_like_null_as_in_sqlite(pattern: str | None) -> None:
    """``'a' LIKE 'a' ESCAPE NULL`` is NULL in SQLite; hb's like() took a NULL escape for none."""
    assert LIKE3(pattern, "a", None) is None
    assert own("like", pattern, "a", None) is None


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(None, "a"), ("a", None), (1, "1"), ("1", 1), ("1.5%", 1.5), (b"a%", b"abc"), ("%", 10**15)],
)
def test_numbers_blobs_and_null_are_sqlites_own(pattern: Any, text: Any) -> None:
    assert LIKE(pattern, text) == own("like", pattern, text)
    assert GLOB(pattern, text) == own("glob", pattern, text)


def test_a_long_match_gives_up_when_the_time_is_up() -> None:
    stops = iter([False, False, True])
    slow = like_function(SIDE, lambda: next(stops))
    with pytest.raises(Stopped):
        slow("%" + "a" * 20_000 + "b%", "a" * 400_000)


def test_hb_sql_stops_a_long_like_at_its_time_limit(hb: Runner) -> None:
    """SQLite's own LIKE is one step of the query: these ran 10 s and more past a 1 s limit."""
    hb("init")
    query = "SELECT printf('%.*c', 400000, 'a') LIKE '%' || printf('%.*c', 20000, 'a') || 'b%'"
    result = hb("sql", "--timeout", "1s", query, code=1)
    assert result.stderr == "hb: sql: query cancelled after 1s\n"
    pairs = "replace(printf('%.*c', 10000, 'x'), 'x', 'a?')"  # a?a?a?...: no literal to search for
    glob = f"SELECT printf('%.*c', 400000, 'a') GLOB '*' || {pairs} || 'b*'"
    assert hb("sql", "--timeout", "1s", glob, code=1).stderr == "hb: sql: query cancelled after 1s\n"
    anchored = "SELECT printf('%.*c', 400000, 'a') LIKE '%' || printf('%.*c', 20000, 'a') || 'b' AS x"
    assert (
        hb("sql", "--json", "--timeout", "1s", anchored).stdout == '[\n  {\n    "x": 0\n  }\n]\n'
    )  # at once
    assert hb("sql", "--json", "SELECT 'Hello' LIKE 'h%' AS a, 'Hello' GLOB 'h*' AS b").stdout == (
        '[\n  {\n    "a": 1,\n    "b": 0\n  }\n]\n'
    )
    escaped = "SELECT 'a' LIKE 'a' ESCAPE NULL AS a, 'a%' LIKE 'a!%' ESCAPE '!' AS b"
    assert hb.json("sql", escaped) == [{"a": None, "b": 1}]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "SELECT CAST(x'ff' AS TEXT) LIKE '_'",
            "sql: LIKE, GLOB and printf() take text as UTF-8 and an argument is not "
            "(a blob CAST AS TEXT?); compare the blob, or its hex()",
        ),
        (
            "SELECT 'x' GLOB CAST(x'c328' AS TEXT)",
            "sql: LIKE, GLOB and printf() take text as UTF-8 and an argument is not "
            "(a blob CAST AS TEXT?); compare the blob, or its hex()",
        ),
        ("SELECT 'a' LIKE 'a' ESCAPE 'ab'", "sql: ESCAPE expression must be a single character"),
    ],
)
def test_a_function_hb_sql_runs_itself_fails_in_words(hb: Runner, query: str, message: str) -> None:
    """hb's own LIKE, GLOB and printf ran these to "user-defined function raised exception",
    the driver's words for any failure in them: SQLite's refusal of a two-character escape (run
    on the side connection) and text Python cannot read are now said."""
    hb("init")
    assert hb("sql", query, code=1).stderr == f"hb: {message}\n"
    assert hb.json("sql", "SELECT hex(CAST(x'ff' AS TEXT)) AS h") == [{"h": "FF"}]  # the way round
