"""Plain SQL on the driver connection, for the hot paths that skip SQLAlchemy.

The queue and the reports write their SQL once with ``:name`` parameters and
bind times exactly as :class:`heartbeat.db.types.UTCDateTime` stores them, so
their comparisons agree with rows SQLAlchemy wrote. Free of SQLAlchemy.
"""

from __future__ import annotations

import json
import json.scanner
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from heartbeat.formats.timestamps import date_time_text

_PARAM = re.compile(r"(?<![:\w]):(\w+)")


def driver(raw: Any) -> Any:
    """The driver's own connection (psycopg's behind a pool's proxy of it; sqlite3's is itself)."""
    return getattr(raw, "driver_connection", raw)


def pyformat(sql: str) -> str:
    """``:name`` parameters as psycopg's ``%(name)s`` (literal ``%`` doubled)."""
    return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


def stamp(value: datetime) -> str:
    """The text UTCDateTime stores on SQLite: naive UTC, microseconds, sorts as time."""
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return f"{date_time_text(value)}.{value.microsecond:06d}"


def sqlite_time(value: datetime | None) -> str | None:
    """A time parameter for SQLite: its stored text (:func:`bind_time`)."""
    return None if value is None else stamp(value)


def bind_time(value: datetime | None, *, sqlite: bool) -> Any:
    """A time parameter: SQLite's stored text, or an aware datetime for PostgreSQL."""
    return sqlite_time(value) if sqlite else postgres_time(value)


def postgres_time(value: datetime | None) -> datetime | None:
    """A time parameter for PostgreSQL: the aware instant in UTC (:func:`bind_time`)."""
    return None if value is None else value.astimezone(UTC)


def read_time(value: Any) -> datetime | None:
    """A stored time back as an aware UTC datetime (SQLite text or a driver datetime)."""
    if value is None:
        return None
    if isinstance(value, str):
        if len(value) > 10:  # a time of day: (a date alone would read "+00:00" as nothing)
            try:  # stored naive UTC: read with its offset written on, a sixth of .replace()'s cost
                return datetime.fromisoformat(value + "+00:00")
            except ValueError:  # a text that names an offset already
                pass
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]
    return value.astimezone(UTC)  # type: ignore[no-any-return]


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# json.dumps's text from encoders made once (json.dumps makes one per call, which costs more than
# encoding a small object); without the circular-reference check, which the fallback makes
_c_encoder = getattr(json.encoder, "c_make_encoder", None)


def _encoder(escape: Callable[[str], str], *, allow_nan: bool = True) -> Callable[[Any, int], Any] | None:
    if _c_encoder is None:
        return None
    return _c_encoder(None, _not_json, escape, None, ": ", ", ", False, False, allow_nan)  # type: ignore[no-any-return]


_chunks = _encoder(json.encoder.encode_basestring)  # ensure_ascii=False
_ascii_chunks = _encoder(json.encoder.encode_basestring_ascii)  # json.dumps's default
_strict_chunks = _encoder(json.encoder.encode_basestring_ascii, allow_nan=False)  # allow_nan=False too


def postgres_json(value: Any) -> str | None:
    """:meth:`Conn.json` on PostgreSQL, whose ``json`` type holds strict JSON only: a value holding a
    number JSON cannot (NaN, Infinity, a float past 1.8e308) is InvalidInput, said so, instead of the
    server's "invalid input syntax for type json"."""
    if value is None:
        return None
    try:
        return _text_only(value, json_text(value, ascii_only=True, strict=True))
    except ValueError:  # "Out of range float values are not JSON compliant"
        from heartbeat.errors import InvalidInput

        raise InvalidInput(
            "a value holds a number JSON cannot hold (NaN, Infinity, or past 1.8e308), which a ledger on "
            "PostgreSQL cannot store; nothing changed"
        ) from None


def _text_only(value: Any, text: str) -> str:
    """``text``, the ASCII JSON of ``value``, unless a string in it holds a lone surrogate (an
    argument's byte that is not UTF-8, kept as a surrogate escape): InvalidInput. JSON escapes it
    as ``\\udcff``, which either database would store, and which no file or UTF-8 text holds."""
    if "\\ud" in text:  # a surrogate, escaped: a pair (an emoji) is text, one alone is not
        try:
            json_text(value).encode("utf-8")
        except UnicodeEncodeError:
            from heartbeat.errors import InvalidInput

            raise InvalidInput("a text argument is not valid UTF-8 text") from None
    return text


def json_text(value: Any, *, ascii_only: bool = False, strict: bool = False) -> str:
    """``json.dumps(value, ensure_ascii=ascii_only, allow_nan=not strict)``, at a third of its cost
    for a small object (``strict`` with ``ascii_only`` only)."""
    chunks = _strict_chunks if strict else _ascii_chunks if ascii_only else _chunks
    if chunks is not None:
        try:
            return "".join(chunks(value, 0))
        except RecursionError:  # a structure that contains itself: json.dumps says so plainly
            pass
    return json.dumps(value, ensure_ascii=ascii_only, allow_nan=not strict)


# JSON text read back from the ledger with the C scanner json.loads drives: the text hb wrote has no
# whitespace around its value, so the two regular-expression steps of json.loads are skipped (any
# other text, and every error, goes through json.loads itself)
_scan = getattr(json.scanner, "c_make_scanner", None)
_scan_once = _scan(json.decoder.JSONDecoder()) if _scan is not None else None


def json_value(text: str) -> Any:
    """``json.loads(text)``, at two thirds of its cost for the text hb writes."""
    if _scan_once is not None:
        try:
            value, end = _scan_once(text, 0)
        except StopIteration:
            pass
        else:
            if end == len(text):
                return value
    return json.loads(text)


_JSON_PARAM = re.compile(r"\{json:(\w+)\}")
_LIST_PARAM = re.compile(r"\{(ints|texts):(\w+)\}")
_PG_ARRAY = {"ints": "bigint[]", "texts": "text[]"}


def adapt(text: str, *, sqlite: bool) -> str:
    """SQL written with ``:name`` parameters and hb's markers, for the driver:

    - ``{json:name}``: a JSON parameter (PostgreSQL casts it);
    - ``{ints:name}`` / ``{texts:name}``: a list parameter, as a subquery of its values
      (``x IN {ints:pks}``): SQLite reads it as JSON text (``json_each``), PostgreSQL
      as an array;
    - ``{skip_locked}`` / ``{for_update}``: PostgreSQL's row locks (nothing on SQLite,
      where the write transaction holds the whole database);
    - ``{lower}(x)``: ``x`` in lower case, every letter (SQLite's own ``lower`` knows ASCII
      only: :func:`heartbeat.db.sqlite.configure` gives hb's connections ``hb_lower``).

    PostgreSQL takes ``%(name)s``."""
    text = _JSON_PARAM.sub(r":\1" if sqlite else r"CAST(:\1 AS json)", text)
    if sqlite:
        text = _LIST_PARAM.sub(r"(SELECT value FROM json_each(:\2))", text)
    else:
        text = _LIST_PARAM.sub(lambda m: f"(SELECT unnest(CAST(:{m[2]} AS {_PG_ARRAY[m[1]]})))", text)
    text = text.replace("{skip_locked}", "" if sqlite else " FOR UPDATE SKIP LOCKED")
    text = text.replace("{for_update}", "" if sqlite else " FOR UPDATE")
    text = text.replace("{lower}(", "hb_lower(" if sqlite else "lower(")
    return text if sqlite else pyformat(text)


class Conn:
    """Plain SQL on a driver connection (sqlite3 or psycopg), inside the caller's transaction.

    SQL is written once with ``:name`` parameters; ``{json:name}`` marks a JSON
    parameter (PostgreSQL casts it). Values are bound and read as SQLAlchemy's
    column types store them, so rows written here and rows written through the
    models are the same rows.
    """

    def __init__(self, raw: Any, *, sqlite: bool) -> None:
        self.raw = raw
        self.sqlite = sqlite
        if not sqlite:
            self.json = postgres_json  # type: ignore[method-assign]
        self._sql: dict[str, str] = {}
        # run by whoever commits the transaction, once it committed (never after a rollback)
        self.after_commit: list[Callable[[], None]] = []

    def sql(self, text: str) -> str:
        out = self._sql.get(text)
        if out is None:
            out = self._sql[text] = adapt(text, sqlite=self.sqlite)
        return out

    def rows(self, text: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        cur = self.raw.cursor()
        try:
            cur.execute(self.sql(text), dict(params or {}))
            return list(cur.fetchall()) if cur.description is not None else []
        finally:
            cur.close()

    def dicts(self, text: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        cur = self.raw.cursor()
        try:
            cur.execute(self.sql(text), dict(params or {}))
            names = [c[0] for c in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        finally:
            cur.close()

    def one(self, text: str, params: Mapping[str, Any] | None = None) -> tuple[Any, ...] | None:
        got = self.rows(text, params)
        return got[0] if got else None

    def execute(self, text: str, params: Mapping[str, Any] | None = None) -> None:
        self.rows(text, params)

    def executemany(self, text: str, params: Sequence[Mapping[str, Any]]) -> None:
        if not params:
            return
        cur = self.raw.cursor()
        try:
            cur.executemany(self.sql(text), [dict(p) for p in params])
        finally:
            cur.close()

    def time(self, value: datetime | None) -> Any:
        return bind_time(value, sqlite=self.sqlite)

    def flag(self, value: bool | None) -> Any:
        return None if value is None else (int(value) if self.sqlite else bool(value))

    def insert_many(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, json: Collection[str] = ()
    ) -> None:
        """INSERT ``rows``, tuples of bound values (see time/json/flag) in ``columns`` order,
        with one executemany and no per-row dict; ``json`` names the JSON columns."""
        if not rows:
            return
        from heartbeat import progress

        mark = "?" if self.sqlite else "%s"
        values = [mark if self.sqlite or c not in json else f"CAST({mark} AS json)" for c in columns]
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(values)})"
        cur = self.raw.cursor()
        try:
            with progress.steps(f"writing {table}", len(rows)) as advance:
                for start in range(0, len(rows), _BATCH):  # batches, so that progress can move
                    batch = rows[start : start + _BATCH]
                    cur.executemany(sql, batch)
                    advance(len(batch))
        finally:
            cur.close()

    @staticmethod
    def json(value: Any) -> str | None:
        """JSON text as ``json.dumps`` writes it (:func:`json_text`'s encoder made once); a string
        that is not UTF-8 text is refused, as the PostgreSQL path does."""
        return None if value is None else _text_only(value, json_text(value, ascii_only=True))

    read_time = staticmethod(read_time)

    def read_json(self, value: Any) -> Any:
        """A JSON column's value: SQLite gives its text, read here; psycopg gives the value it
        decoded already (a JSON string among them: ``"42"`` read again was the number 42)."""
        return json_value(value) if self.sqlite and isinstance(value, str) else value


_BATCH = 5000  # rows per executemany in insert_many


def in_list(name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """``(:name0, :name1, ...)`` for an IN clause, and its parameters."""
    names = [f"{name}{i}" for i in range(len(values))]
    return "(" + ", ".join(f":{n}" for n in names) + ")", dict(zip(names, values, strict=True))
