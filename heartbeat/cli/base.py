"""Shared CLI plumbing: global options, the lazily opened ledger, output, error mapping.

Heavy modules (SQLAlchemy, Alembic) are imported only when a command needs
the database, so ``hb --help`` and friends start fast.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from heartbeat.errors import DATABASE_ERROR, Interrupted, OutputFailed, Terminated, at_ledger, describe
from heartbeat.formats import strict_json
from heartbeat.reporting.grid import visible

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger

F = TypeVar("F", bound=Callable[..., Any])


class HbClickError(click.ClickException):
    """A domain error on its way out: one line on stderr, its own exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click declares it on the class

    def show(self, file: Any = None) -> None:
        say(f"hb: {self.format_message()}")


# The largest --limit: a row count both backends take (a 64-bit integer); past it a usage error
# naming the option, where it was each backend's own overflow message.
LIMIT_MAX = 2**63 - 1


def _translate(exc: BaseException) -> HbClickError | None:
    described = describe(exc)
    return None if described is None else HbClickError(*described)


# Ctrl-C: the transaction the command had open is rolled back on the way out (a file it had
# begun to write is written whole or not at all)
INTERRUPTED = "interrupted: stopped before it finished (what it had not committed was rolled back)"
TERMINATED = "terminated (SIGTERM): stopped before it finished (what it had not committed was rolled back)"

# Exit code of a failure hb did not foresee (sysexits.h EX_SOFTWARE): one line, no traceback
# unless -v asked for it.
INTERNAL_ERROR = 70
# Exit code when whoever read hb's output stopped reading (``hb list --json | head``): what a
# shell shows for a process that SIGPIPE ended (128 + 13). Nothing more is printed.
OUTPUT_CLOSED = 141
# Exit code when standard output cannot be written (sysexits.h EX_IOERR): a full disk, a device
# error, an output the caller closed (``>&-``). One line on stderr says why.
OUTPUT_FAILED = 74


def silence_stdout() -> None:
    """After standard output failed: what is still buffered for it, or written to it later
    (the flush at exit), goes nowhere instead of failing again."""
    import contextlib
    import io

    with contextlib.suppress(AttributeError, OSError, ValueError):  # no descriptor behind it
        devnull_onto(sys.stdout.fileno())
    sys.stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")


def output_failure(exc: OutputFailed) -> str:
    return f"cannot write standard output: {exc.strerror}"


def stdout_closed_by_caller() -> bool:
    """Whether the caller closed standard output (``>&-``): hb's start pointed descriptor 1 at
    /dev/null then, and marked the stream so that every write fails (:mod:`heartbeat.cli.main`)."""
    raw = getattr(getattr(sys.stdout, "buffer", None), "raw", None)
    return bool(getattr(raw, "closed_by_caller", False))


def output_closed() -> bool:
    """Whether stdout is a pipe whose reader went away. Then it is pointed at /dev/null, so
    that nothing else written to it (the flush at exit included) fails again."""
    import select

    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
        poll.register(fd, 0)  # POLLERR is reported whatever was asked for
        gone = any(event & select.POLLERR for _fd, event in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no real stdout, or no poll on this system
        return False
    if gone:
        devnull_onto(fd)
    return gone


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops the block as Ctrl-C does (:class:`heartbeat.errors.Terminated`, a
    KeyboardInterrupt): the commands holding the workspace guard give it back and roll back what
    they had not committed, where SIGTERM's default would leave the guard held for its whole
    lifetime (``heartbeat.guard``) and every tick until then exiting 75."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # (signal handlers belong to the main thread; a caller elsewhere keeps its own)
        return

    def stop(signum: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def devnull_onto(fd: int) -> None:
    """Make descriptor ``fd`` /dev/null (read and write), whatever it was or whether it was open."""
    import os

    devnull = os.open(os.devnull, os.O_RDWR)
    if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)


class HbGroup(click.Group):
    """A group that maps domain errors to one-line messages and exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Terminated:
            raise HbClickError(TERMINATED, Terminated.exit_code) from None
        except KeyboardInterrupt:  # click would say "Aborted!" and exit 1, as for bad input
            raise HbClickError(INTERRUPTED, Interrupted.exit_code) from None
        except Exception as exc:
            if isinstance(exc, BrokenPipeError) and output_closed():
                raise click.exceptions.Exit(OUTPUT_CLOSED) from None
            if isinstance(exc, OutputFailed):
                silence_stdout()
                raise HbClickError(output_failure(exc), OUTPUT_FAILED) from None
            mapped = _translate(exc)
            if (
                mapped is not None
                and mapped.message.startswith(DATABASE_ERROR)  # a SQLite file not a ledger, damaged or full
                and isinstance(ctx.obj, State)
            ):
                mapped = HbClickError(at_ledger(mapped.message, ctx.obj.ledger_file()), mapped.exit_code)
            if mapped is None:
                verbose = getattr(ctx.obj, "verbose", 0)
                if verbose:
                    raise
                text = " ".join(str(exc).split())[:300]
                mapped = HbClickError(
                    f"internal error: {type(exc).__name__}: {text} (hb -v ... shows where)", INTERNAL_ERROR
                )
            raise mapped from exc


@dataclass
class State:
    """What the global options said, and the ledger once opened."""

    workspace: str | None = None
    db: str | None = None
    now: str | None = None
    json: bool = False
    quiet: bool = False
    verbose: int = 0
    _ledger: Ledger | None = field(default=None, repr=False)

    def ledger(self, *, create: bool = True) -> Ledger:
        if self._ledger is None:
            if not self.quiet and not self.json and sys.stderr.isatty():
                from heartbeat import progress

                progress.set_reporter(progress.terminal_reporter)  # long imports show a bar
            from heartbeat.ledger import Ledger

            if self.now:  # its form, before a new workspace's ledger is created (its zone: later)
                from datetime import UTC

                from heartbeat.clock import parse_when

                parse_when(self.now, UTC, what="--now time")
            self._ledger = Ledger.open(
                workspace=self.workspace or ".", db=self.db, now=self.now, create=create
            )
            if self.now:
                self._ledger.now()  # a bad --now is an error even for commands that never ask the time
            if self._ledger.backup_path and not self.quiet:
                info(f"upgraded the ledger schema; backup at {self._ledger.backup_path}")
        return self._ledger

    def ledger_file(self) -> str | None:
        """The SQLite file of the ledger the options name (None: PostgreSQL, or none named)."""
        from pathlib import Path

        from heartbeat.db.sqlite import file_of
        from heartbeat.ledger import default_db_path

        if self._ledger is not None:
            url = self._ledger.url
        else:
            url = self.db if self.db is not None else str(default_db_path(Path(self.workspace or ".")))
        path = file_of(url)
        return None if path is None else str(path)

    def close(self) -> None:
        if self._ledger is not None:
            for notice in self._ledger.notices:
                warn(notice)
            self._ledger.close()
            self._ledger = None


def state(ctx: click.Context | None = None) -> State:
    ctx = ctx or click.get_current_context()
    obj = ctx.find_object(State)
    assert obj is not None
    return obj


def json_option(fn: F) -> F:
    """``--json`` on a command, the same as the global ``hb --json``."""

    def _set(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value:
            state(ctx).json = True

    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        expose_value=False,
        callback=_set,
        help="Print one JSON document on stdout.",
    )(fn)


class Choice(click.Choice):  # type: ignore[type-arg]
    """click.Choice that reads ``" HIGH "`` as ``high``: a value outside the choices is a usage
    error (exit 2), as click's own is; ``none`` and the like stay available where listed."""

    def __init__(self, choices: Sequence[str]) -> None:
        super().__init__(list(choices), case_sensitive=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = value.strip() if isinstance(value, str) else value
        return super().convert(text, param, ctx)


def fields_option(fn: F) -> F:
    return click.option(
        "--fields",
        metavar="LIST",
        help="JSON with only these fields, comma-separated (e.g. id,title,status); the default is all.",
    )(fn)


def limit_option(fn: F) -> F:
    return click.option(
        "--limit", type=click.IntRange(min=1, max=LIMIT_MAX), metavar="N", help="At most N rows."
    )(fn)


def pick(data: Any, fields: str | None) -> Any:
    """``data`` (an object or a list of objects) with only ``fields``, in that order. A name no
    object has is a usage error (exit 2) listing the ones there are."""
    if not fields:
        return data
    wanted = [f.strip() for f in fields.split(",") if f.strip()]
    if not wanted:
        raise click.UsageError("--fields is empty: name at least one field, e.g. --fields id,title")
    objects = data if isinstance(data, list) else [data]
    known: dict[str, None] = {}
    for obj in objects:
        if isinstance(obj, dict):
            known.update(dict.fromkeys(obj))
    unknown = [f for f in wanted if known and f not in known]
    if unknown:
        raise click.UsageError(f"unknown field(s) {', '.join(unknown)} (known: {', '.join(known)})")
    picked = [{f: obj.get(f) for f in wanted} if isinstance(obj, dict) else obj for obj in objects]
    return picked if isinstance(data, list) else picked[0]


def emit_all(
    items: Iterator[dict[str, Any]],
    human: Callable[[list[Any]], str],
    *,
    fields: str | None = None,
    fields_human: Callable[[list[Any]], str] | None = None,
) -> None:
    """Print a stream of objects: with ``--json`` one JSON array written as the objects come
    (the text :func:`emit` prints, without holding them all); else the list's human rendering
    (``fields_human`` when ``fields`` picks some, as :func:`pick`, checked on the first object)."""
    try:
        _emit_all(items, human, fields, fields_human)
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()  # a generator still inside its read transaction ends it now


# objects of a streamed --json list written at a time (click.echo flushes on every call)
_BATCH = 256


def _emit_all(
    items: Iterator[dict[str, Any]],
    human: Callable[[list[Any]], str],
    fields: str | None,
    fields_human: Callable[[list[Any]], str] | None,
) -> None:
    if not state().json:
        rows = list(items)
        if fields:
            emit(pick(rows, fields), fields_human or human)
        else:
            emit(rows, human)
        return
    first = next(items, None)
    if first is None:
        click.echo("[]")
        return
    if fields:
        pick([first], fields)  # an unknown field is a usage error before anything is printed
    # the array json.dumps(list, indent=2) would print, written a batch of objects at a time
    parts = ["[\n"]
    for n, obj in enumerate(itertools.chain([first], items)):
        parts.append(
            (",\n  " if n else "  ") + strict_json.dumps_indented(pick(obj, fields), default=str, depth=1)
        )
        if n % _BATCH == _BATCH - 1:
            click.echo("".join(parts), nl=False)
            parts.clear()
    parts.append("\n]")
    click.echo("".join(parts))


def emit(data: Any, human: Callable[[Any], str] | str | None = None) -> None:
    """Print ``data`` as JSON (``--json``; strict, :mod:`heartbeat.formats.strict_json`) or its
    human rendering."""
    st = state()
    if st.json or human is None:
        click.echo(strict_json.dumps_indented(data, default=str))
        return
    text = human if isinstance(human, str) else human(data)
    if text:
        click.echo(visible(text))


def info(message: str) -> None:
    """A human notice on stderr (suppressed by -q)."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and state(ctx).quiet:
        return
    say(message)


def warn(message: str) -> None:
    say(f"hb: warning: {message}")


def say(message: str) -> None:
    """A line on stderr, its control characters shown as escapes (see :func:`visible`): a
    newline in it too (a path, an id, a file's text it quotes), so that it stays one line."""
    click.echo(visible(message, cell=True), err=True)


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """An aligned plain-text table (display widths; cut to fit a terminal, never a pipe)."""
    from heartbeat.reporting.grid import render, terminal_width

    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    return render(headers, cells, fit=terminal_width())


STDIN_MAX = 1 << 20  # bytes of a poke's text or a query hb reads from standard input


def read_text_arg(value: str) -> str:
    """TEXT or ``-`` for standard input, read as UTF-8 whatever the locale says (FileFormatError
    naming ``<stdin>:line:column`` of a byte that is not). At most :data:`STDIN_MAX` bytes:
    InvalidInput past them, so that an endless stream (``yes | hb poke -``) is refused instead of
    read until memory runs out."""
    if value != "-":
        return value
    from pathlib import Path

    from heartbeat.errors import InvalidInput
    from heartbeat.ops.sync.files import decode

    stream = getattr(sys.stdin, "buffer", None)
    # a text stream without bytes underneath (tests feeding a str) is measured in characters
    data: Any = (stream or sys.stdin).read(STDIN_MAX + 1)
    if len(data) > STDIN_MAX:
        raise InvalidInput(
            f"<stdin>: more than {STDIN_MAX >> 20} MiB (hb reads at most that from standard input)"
        )
    return data if stream is None else decode(data, Path("<stdin>"))
