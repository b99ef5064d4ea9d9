"""What every operation works with: a workspace, its ledger's connection, clock, zone and settings.

The :class:`heartbeat.Ledger` (the public facade) owns one :class:`Context` and
hands it to the operation modules, which never import the Ledger. Free of
SQLAlchemy: the context speaks plain SQL on the driver connection
(:mod:`heartbeat.db.store`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from heartbeat import settings as settings_mod
from heartbeat.clock import Clock, load_zone, machine_zone_name, parse_duration, parse_when, within_years
from heartbeat.db.plain import driver
from heartbeat.errors import InvalidInput, InvalidState

if TYPE_CHECKING:
    from heartbeat.db.store import Db

NowArg = datetime | str | Callable[[], datetime] | None
CLOSED = "this Ledger is closed; open the workspace's ledger again (Ledger.open)"


class Context:
    """One workspace's ledger as the operations see it (one per :class:`heartbeat.Ledger`)."""

    def __init__(
        self, url: str, workspace: Path, now: NowArg, *, sqlite: bool, connect: Callable[[], Any]
    ) -> None:
        self.url = url
        self.workspace = workspace
        self.sqlite = sqlite
        self._connect = connect
        self._raw: Any = None
        self.closed = False  # closed for good (see close): no call opens a connection again
        # what is made once per connection and used by every operation on it (a queue's cursor
        # and its statements): forgotten with the connection
        self.kept: dict[str, Any] = {}
        # PostgreSQL: the queue's one-statement operations leave the connection in autocommit for
        # the next one; any other use takes it back in transaction mode first (see raw)
        self._in_autocommit = False
        self._settings: settings_mod.Settings | None = None
        self._zone: ZoneInfo | None = None
        self._lease: timedelta | None = None
        self.clock = self._make_clock(now)
        self.now = self.clock.now  # the current instant, aware UTC (the clock's, called directly)
        # what an operation did besides its result that the caller should hear of (the CLI
        # prints each as a warning), e.g. a workspace file auto_export left as it was
        self.notices: list[str] = []

    # --- the connection and its transactions ------------------------------------------

    @property
    def raw(self) -> Any:
        """The driver connection (opened on first use, one per context)."""
        if self._raw is None:
            if self.closed:
                raise InvalidState(CLOSED)
            self._raw = self._connect()
            self.kept.clear()
        elif self._in_autocommit:
            self._in_autocommit = False
            connection = driver(self._raw)
            if connection.autocommit:
                connection.autocommit = False
        return self._raw

    @raw.setter
    def raw(self, connection: Any) -> None:
        self._raw = connection
        self.kept.clear()
        self._in_autocommit = False

    @property
    def opened(self) -> Any:
        """The driver connection if one is open, else None (:attr:`raw` would open one)."""
        return self._raw

    def revive(self) -> None:
        """PostgreSQL: a connection the server ended (a restart, a failover, an idle timeout) is
        let go, so that the next use opens a new one. A long-lived ledger (``hb mcp``, a worker on
        the Python API) failed every call after a server restart ("the connection is closed");
        the one call that met the ended connection has failed already, with nothing committed."""
        raw = self._raw
        if raw is None:
            if self.closed:
                raise InvalidState(CLOSED)
            return
        if self.sqlite or not driver(raw).closed:
            return
        self.kept.clear()
        self._raw = None
        self._in_autocommit = False
        invalidate = getattr(raw, "invalidate", None)
        if invalidate is not None:
            invalidate()  # the pool's proxy of it: dropped without a rollback sent to a dead socket
        else:
            raw.close()

    def lent_in_autocommit(self) -> None:
        """A queue operation left PostgreSQL's connection in autocommit (for the next one): the
        next other use of :attr:`raw` switches it back to transaction mode."""
        self._in_autocommit = True

    def connect(self) -> Any:
        """A new driver connection of its own, for work beside the operation's (a thread); the
        caller closes it."""
        if self.closed:
            raise InvalidState(CLOSED)
        return self._connect()

    @contextmanager
    def write(self) -> Iterator[Db]:
        """One write transaction (SQLite: ``BEGIN IMMEDIATE``)."""
        from heartbeat.db.store import write_transaction  # the queue's operations need no Db

        with write_transaction(self.raw, sqlite=self.sqlite) as db:
            yield db

    @contextmanager
    def read(self) -> Iterator[Db]:
        """One read-only transaction: a consistent snapshot."""
        from heartbeat.db.store import read_transaction

        with read_transaction(self.raw, sqlite=self.sqlite) as db:
            yield db

    def close(self) -> None:
        """Close the connection for good: every later use is InvalidState (:data:`CLOSED`), where
        it opened a new connection (and, the ledger's file removed meanwhile, an empty one in its
        place). Closing again does nothing."""
        self.closed = True
        self.kept.clear()
        if self._raw is not None:
            self._raw.close()
            self._raw = None

    # --- settings, zone, clock ----------------------------------------------------------

    @property
    def settings(self) -> settings_mod.Settings:
        """The workspace's settings, every key with its value or default (read once)."""
        if self._settings is None:
            # read inside the caller's transaction when there is one; else end the implicit
            # one PostgreSQL's driver began for this read
            idle = not self.sqlite and not in_transaction(self.raw)
            cur = self.raw.cursor()
            try:
                cur.execute("SELECT key, value FROM settings")
                rows = cur.fetchall()
            finally:
                cur.close()
            if idle:
                self.raw.rollback()
            # SQLite hands back JSON text; psycopg has already decoded the json column
            stored = {
                k: settings_mod.decoded(k, v) if self.sqlite and isinstance(v, str) else v for k, v in rows
            }
            self._settings = settings_mod.build(stored)
        return self._settings

    def forget_settings(self) -> None:
        """Read the settings again on next use (after one was set or unset)."""
        self._settings = None
        self._zone = None
        self._lease = None

    @property
    def zone(self) -> ZoneInfo:
        """The workspace timezone (setting ``timezone``, else the machine's)."""
        if self._zone is None:
            self._zone = load_zone(self.settings.timezone or machine_zone_name())
        return self._zone

    def lease(self, lease: str | timedelta | None = None) -> timedelta:
        """A claim's lease: ``lease`` as given (a duration's text), else ``queue.lease``."""
        if isinstance(lease, timedelta):
            return lease
        if lease is not None:
            return parse_duration(str(lease), what="--lease")
        if self._lease is None:
            self._lease = parse_duration(self.settings.queue_lease, what="queue.lease")
        return self._lease

    def _make_clock(self, now: NowArg) -> Clock:
        check_now(now)
        if isinstance(now, str):
            text = now
            return Clock(lambda: parse_when(text, self.zone, what="--now time"))
        if isinstance(now, datetime) and now.tzinfo is None:
            naive = now
            return Clock(lambda: self._read_now(naive))
        if callable(now):
            source = now
            return Clock(lambda: self._read_now(source()))
        return Clock(now)

    def _read_now(self, value: Any) -> datetime:
        """What a ``now`` callable returned, as SPEC 1 reads times: a naive one is in the
        workspace's zone (``now=datetime.now`` gives the machine's wall clock), text as --now."""
        if isinstance(value, datetime):
            if value.tzinfo is not None:
                return within_years(value)
            return parse_when(value.isoformat(), self.zone, what="now")
        if isinstance(value, str):
            return parse_when(value, self.zone, what="now")
        raise InvalidInput(f"the now callable returned {type(value).__name__}, not a datetime")


def check_now(now: Any) -> None:
    """Refuse a ``now`` that no clock can read (InvalidInput), before anything is opened or made:
    text that is no ISO 8601 time, a datetime or text outside the years 1970 to 2200 (a typo such
    as 9999, whose rows broke every listing of the workspace), or anything but a datetime, a text,
    a callable or None. A callable's value is checked each time it is called."""
    if now is None or callable(now):
        return
    if isinstance(now, str):
        parse_when(now, UTC, what="--now time")  # its form and year; its zone is the workspace's
    elif isinstance(now, datetime):
        within_years(now)
    else:
        raise InvalidInput(
            f"now: {type(now).__name__} is not a time (expected a datetime, an ISO 8601 text, or a "
            "callable returning a datetime)"
        )


def in_transaction(raw: Any) -> bool:
    """Whether a psycopg connection (or a pool's proxy of one) is inside a transaction."""
    connection = getattr(raw, "driver_connection", raw)
    return int(connection.info.transaction_status) != 0  # psycopg.pq.TransactionStatus.IDLE
