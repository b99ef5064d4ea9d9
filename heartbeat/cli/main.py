"""The ``hb`` command group and its global options."""

from __future__ import annotations

import errno
import importlib
import io
import sys
from typing import Any

import click

from heartbeat import __version__
from heartbeat.cli.base import HbGroup, State, devnull_onto

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# command -> the module of heartbeat.cli that defines it (in its COMMANDS list). A command's
# module is imported only when that command runs, so `hb pop` does not load the others.
COMMAND_MODULES = {
    **dict.fromkeys(("init", "db", "config"), "admin"),
    **dict.fromkeys(("add", "list", "show", "update", "done", "cancel"), "tasks"),
    **dict.fromkeys(("scopes", "pop", "complete", "fail", "renew", "clear-stale", "ready"), "queue"),
    **dict.fromkeys(("import", "export"), "files"),
    "sync": "sync",
    "recur": "recur",
    **dict.fromkeys(
        ("due", "check", "notify", "proactive", "seen", "hygiene", "heartbeat", "poke", "serve"), "round"
    ),
    **dict.fromkeys(("report", "sql"), "report"),
    "compat": "compat",
    **dict.fromkeys(("mcp", "prime"), "mcp"),
}


class LazyGroup(HbGroup):
    """The top-level group: subcommands load on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is None:
            return None
        commands = importlib.import_module(f"heartbeat.cli.{module}").COMMANDS
        return next((c for c in commands if c.name == cmd_name), None)


@click.group(cls=LazyGroup, context_settings=CONTEXT)
@click.option(
    "--workspace",
    "-w",
    envvar="HB_WORKSPACE",
    metavar="DIR",
    help="The agent's workspace directory [env HB_WORKSPACE; default: current directory].",
)
@click.option(
    "--db",
    envvar="HB_DATABASE_URL",
    metavar="URL",
    help="Database path or SQLAlchemy URL [env HB_DATABASE_URL; default: "
    "<workspace>/.agent/state/heartbeat.db].",
)
@click.option(
    "--now",
    envvar="HB_NOW",
    metavar="ISO8601",
    help="Pin the clock for this run; naive = workspace timezone [env HB_NOW].",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="Fewer notices on stderr.")
@click.option("-v", "--verbose", count=True, help="More detail on stderr.")
@click.version_option(__version__, "--version", prog_name="hb")
@click.pass_context
def cli(
    ctx: click.Context,
    workspace: str | None,
    db: str | None,
    now: str | None,
    as_json: bool,
    quiet: bool,
    verbose: int,
) -> None:
    """hb, the heartbeat ledger: one transactional database under an agent's files.

    \b
    Example:
      hb init
      hb add "Write the weekly report" --priority high --due 2026-05-02T17:00
      hb list --json
    """
    if now is not None and not now.strip():  # an unset variable in `--now "$WHEN"`: not "the system clock"
        raise click.BadParameter("empty value (leave --now out to use the system clock)", param_hint="--now")
    st = State(workspace=workspace, db=db, now=now or None, json=as_json, quiet=quiet, verbose=verbose)
    ctx.obj = st
    ctx.call_on_close(st.close)


def main(argv: list[str] | None = None) -> Any:
    """Run ``hb`` with ``argv`` (default: the process's arguments); exits like a click command."""
    return cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="hb")


def run() -> Any:
    """The ``hb`` executable (and ``python -m heartbeat``): :func:`main` in a short-lived process.

    Agents call hb as one process per step, so the interpreter's own overhead counts. Fewer
    young-generation collections while hundreds of modules load, and freezing what is left
    before exit so the final collection walks nothing, take about an eighth off a no-change
    ``hb sync`` (``scripts/bench.py`` measures the processes). A long-running ``hb serve``
    still collects, just less often.
    """
    import gc

    gc.set_threshold(20_000, 50, 50)
    closed = _standard_descriptors()
    _write_stdout_whole(closed=1 in closed)
    try:
        return main()
    finally:
        gc.freeze()
        _flush_output()


def _standard_descriptors() -> set[int]:
    """The standard descriptors the caller closed (``2>&-``, ``>&-``), each pointed at /dev/null
    before hb opens a file: else the next file opened (the ledger) would take its number, and what
    is written to stderr would land in it. A closed stderr then takes hb's messages and drops
    them; a closed stdout is kept closed for writing (see :func:`_write_stdout_whole`)."""
    import os

    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
    for fd in sorted(closed):
        devnull_onto(fd)
    if 2 in closed:
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
    return closed


class _WholeWrites(io.FileIO):
    """Standard output's file descriptor, each write carried through to its last byte.

    A pipe whose reader goes away half-way through a write takes part of it, and Python's
    buffered writer, handed a text longer than its buffer (a whole ``hb sql`` or ``hb list``
    table), takes that short count as the end of it: the rest was dropped and hb exited 0.
    Written on, the rest meets the closed pipe (BrokenPipeError), and hb ends with
    OUTPUT_CLOSED as it does for output written in pieces. A pipe its reader made non-blocking
    is waited for when full, where hb printed what fitted and exited 0.
    """

    closed_by_caller = False  # the caller closed standard output (``>&-``): no write succeeds

    def write(self, data: Any, /) -> int:
        from heartbeat.errors import OutputFailed

        if self.closed_by_caller:
            raise OutputFailed(errno.EBADF, "it was closed when hb started")
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            try:
                written: int | None = super().write(view[done:])
            except BrokenPipeError:
                raise
            except OSError as exc:  # a full disk, a device error: hb says so in one line
                raise OutputFailed(exc.errno, exc.strerror) from None
            if written is None:  # non-blocking and full: wait until the reader takes some
                import select

                select.select([], [self], [])
                continue
            done += written
        return done


def _write_stdout_whole(*, closed: bool = False) -> None:
    """Put standard output on :class:`_WholeWrites`, with the encoding, error handler and line
    buffering it has (none: no standard output, nothing to do). ``closed``: the caller closed
    it, and descriptor 1 now reads /dev/null; every write fails (hb says it cannot write)."""
    out = sys.stdout
    if closed:
        raw = _WholeWrites(1, "w", closefd=False)
        raw.closed_by_caller = True
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8")
        return
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        return
    raw = _WholeWrites(fd, "w", closefd=False)
    errors = out.errors
    if errors == "strict" and not _holds_all_text(out.encoding):
        import codecs

        codecs.register_error(_AS_JSON_ESCAPES, _json_escapes)
        errors = _AS_JSON_ESCAPES
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=out.encoding,
        errors=errors,
        line_buffering=bool(out.line_buffering),
    )


# Standard output in an encoding that cannot hold every character (PYTHONIOENCODING=latin-1, a
# legacy locale) shows one it cannot hold as a JSON escape (\u559d; \ud83d\ude00 past the BMP):
# a title in another script was an internal error (exit 70), and JSON, whose non-ASCII characters
# are all inside strings, stays valid JSON with the same value.
_AS_JSON_ESCAPES = "hb-json-escapes"


def _holds_all_text(encoding: str) -> bool:
    import codecs

    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return False
    return name.startswith(("utf-8", "utf-16", "utf-32", "gb18030"))


def _json_escapes(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start : exc.end]:
        code = ord(ch)
        if code > 0xFFFF:  # a surrogate pair, as JSON writes one
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), exc.end


def _flush_output() -> None:
    """Write what stdout still buffers now, not at exit: a reader that stopped reading
    (``hb list | head``) ends hb with OUTPUT_CLOSED instead of Python's complaint on stderr."""
    from heartbeat.cli.base import OUTPUT_CLOSED, OUTPUT_FAILED, output_closed, output_failure, silence_stdout
    from heartbeat.errors import OutputFailed

    try:
        sys.stdout.flush()
    except BrokenPipeError:
        if not output_closed():
            raise
        raise SystemExit(OUTPUT_CLOSED) from None
    except OutputFailed as exc:
        silence_stdout()
        print(f"hb: {output_failure(exc)}", file=sys.stderr)
        raise SystemExit(OUTPUT_FAILED) from None
