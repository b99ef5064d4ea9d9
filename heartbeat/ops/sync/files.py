"""Workspace file plumbing: default paths, atomic writes that keep the mode, a write lock."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from heartbeat.errors import FileFormatError, InvalidInput, NotFound

if TYPE_CHECKING:
    from heartbeat.db.plain import Conn

STATE = Path(".agent") / "state"

# Where each kind of file lives in a workspace (FORMATS.md).
DEFAULT_PATHS: dict[str, Path] = {
    "todo": Path("TODO.md"),
    "done": Path("TODO.DONE.md"),
    "recur": Path("TODO.RECUR.md"),
    "tasks-json": STATE / "tasks.json",
    "errors-json": STATE / "errors.json",
    "last-run": STATE / "last-run.json",
    "proactive": Path("PROACTIVE.md"),
    "state": Path("memory") / "heartbeat-state.json",
}
NEW_FILE_MODE = 0o600  # the runtimes write their files 0600


def default_path(workspace: Path, kind: str) -> Path:
    return workspace / DEFAULT_PATHS[kind]


def digest(text: str) -> str:
    """The SHA-256 of the text's UTF-8, as ``sync_state.content_hash`` records it."""
    return measure(text)[0]


# The last two large texts measured, with their hashes and sizes, newest first: one queue
# operation with sync.auto_export hashes the same tasks.json up to three times (the edit check
# before it, the one after it, the text it wrote, which the next operation's check finds again),
# and its write-back the texts before and after it; a text equal to one of these (a comparison of
# its characters, a tenth of hashing them) is not hashed again.
_MEMO_FROM = 64 * 1024
_memo: tuple[tuple[str, str, int], ...] = ()


def measure(text: str) -> tuple[str, int]:
    """:func:`digest` and the length in bytes of the text's UTF-8."""
    for last in _memo:  # one read of the memo: another thread may replace it meanwhile
        if text is last[0] or text == last[0]:
            return last[1], last[2]
    ahead = _ahead
    if ahead is not None and ahead[0] is text:
        ahead[1].join()
        if ahead[2]:
            return ahead[2][0]
    found = _measured(text)
    if len(text) >= _MEMO_FROM:
        _remember(text, found)
    return found


def _remember(text: str, found: tuple[str, int]) -> None:
    global _memo
    _memo = ((text, *found), *_memo[:1])


def _measured(text: str) -> tuple[str, int]:
    encoded = text.encode("utf-8")
    return hashlib.sha256(encoded).hexdigest(), len(encoded)


# a large text being hashed on another thread (see measure_ahead): the text, the thread, its result
_ahead: tuple[str, threading.Thread, list[tuple[str, int]]] | None = None


def measure_ahead(text: str) -> None:
    """Start :func:`measure` of a large text on another thread, to be asked for soon: hashing
    releases the interpreter, so an export hashes the text it writes while writing it."""
    global _ahead
    if len(text) < _MEMO_FROM:
        return
    found: list[tuple[str, int]] = []

    def work() -> None:
        found.append(_measured(text))
        _remember(text, found[0])

    thread = threading.Thread(target=work, name="hb-measure", daemon=True)
    _ahead = (text, thread, found)
    thread.start()


def same_file(recorded: str | Path, path: Path) -> bool:
    """Whether ``recorded`` (a path as hb's records keep it) names the file ``path`` does."""
    return str(recorded) == str(path) or Path(recorded).resolve() == path.resolve()


def same_place(db: Conn, recorded: str | Path, path: Path) -> bool:
    """Whether ``recorded``, the path of a file as the ledger's sync records keep it, is the file
    ``path`` names: the same file (:func:`same_file`), or the file at ``path``'s place before its
    workspace was moved or copied with the ledger inside it (:func:`moved_with_ledger`). The one
    rule by which a record of another path gives a file no base (a workspace sharing this ledger,
    a file hb imported or exported elsewhere) but one moved with its ledger keeps it."""
    return same_file(recorded, path) or moved_with_ledger(recorded, path, ledger_file(db))


def ledger_file(db: Conn) -> Path | None:
    """The ledger's SQLite file (None: PostgreSQL, or a database with no file)."""
    if not db.sqlite:
        return None
    for _seq, name, file in db.rows("PRAGMA database_list"):
        if name == "main":
            return Path(file) if file else None
    return None


def _placed(path: Path) -> Path:
    """``path`` with its directories resolved (the file itself may be a symlink)."""
    return path.parent.resolve() / path.name


def moved_with_ledger(recorded: str | Path, path: Path, ledger: Path | None) -> bool:
    """Whether ``recorded`` (another path than ``path``) stood where ``path`` stands now relative
    to the ledger file ``ledger``: the workspace holding both moved (``mv``), was copied (``cp
    -a``) or is mounted elsewhere (a container and its host), the ledger with its files.

    Told by the paths. The ledger's home is the workspace it is the default ledger of (the
    directory above its ``.agent/state``), else the deepest directory holding it and ``path``.
    ``recorded`` must be ``path``'s place below that home, below another directory, where the
    ledger's copy now is (a copy) or the recorded file is gone (a move, another mount). So a
    ledger outside the workspace (a ``--db`` file elsewhere) never takes another workspace's
    file for this one's, nor does a workspace's ledger take one of a workspace sharing it (no
    ledger of its own beside the file), or a file hb imported from elsewhere."""
    if ledger is None:
        return False
    old = Path(recorded)
    try:
        here, at = _placed(path), _placed(ledger)
        home = at.parent.parent.parent if at.parent.parts[-2:] == STATE.parts else at.parent
        if not here.is_relative_to(home):
            home = Path(os.path.commonpath([here, at]))
        tail = here.relative_to(home).parts
        if (
            not old.is_absolute()
            or not tail
            or len(old.parts) <= len(tail)
            or old.parts[-len(tail) :] != tail
        ):
            return False
        old_home = Path(*old.parts[: -len(tail)])
        if old_home == home:
            return False
        return (old_home / at.relative_to(home)).exists() or not old.exists()
    except (OSError, ValueError):
        return False


def other_file(target: Path | None, workspace_file: Path) -> Path | None:
    """``target`` when it is an existing file other than ``workspace_file``: ``hb export`` then lays
    the ledger over that file's own text instead of the workspace's."""
    if target is None or not target.exists() or same_file(target, workspace_file):
        return None
    return target


STREAM_SECONDS = 15.0  # how long a pipe read as a file may take to end
STREAM_BYTES = 1 << 20  # and how much it may hold
# The largest workspace file hb reads, in bytes: a 20,000-task tasks.json is 4.3 MB, a million
# TODO.DONE.md entries about 100 MB. A larger one (a runaway writer, a sparse file) would take
# seconds and gigabytes to read before any of it could be refused.
FILE_MAX = 256 << 20


def read_text(path: Path, *, stream: bool = False, unread: list[str] | None = None) -> str:
    """A workspace file's text (UTF-8, line endings untouched).

    ``unread``: bytes that are not UTF-8 are read as U+FFFD (as Node's readFile reads them)
    and the first one is said there (``path:line:column: ...``), instead of refused (a file hb
    only reads: HEARTBEAT.md).

    A regular file of at most :data:`FILE_MAX` bytes (InvalidInput past it, before anything is
    read). Only a regular file, unless ``stream``: a file hb also writes cannot be a FIFO or a device
    (reading one would block, or never end). HEARTBEAT.md, which hb only reads, may be one: it
    is read for at most :data:`STREAM_SECONDS` and :data:`STREAM_BYTES` (InvalidInput past
    either), so a pipe nobody writes to, or a device that never ends, cannot hang a heartbeat.
    """
    try:
        info = path.stat()  # FileNotFoundError when missing
        if not stat.S_ISREG(info.st_mode):
            if path.is_dir():
                raise IsADirectoryError(path)
            if not stream:
                raise InvalidInput(f"{path}: not a regular file (hb reads and writes plain files only)")
            return decode(_read_stream(path), path, unread)
        if info.st_size > FILE_MAX:
            raise InvalidInput(
                f"{path}: {info.st_size:,} bytes, more than hb reads (at most {FILE_MAX >> 20} MiB)"
            )
        data, identity = _read_quiet(path)
    except FileNotFoundError:
        raise NotFound(f"{path}: no such file") from None
    except IsADirectoryError:
        raise NotFound(f"{path}: is a directory, not a file") from None
    except PermissionError:
        raise  # said as such where it is caught (a file hb may not read)
    except OSError as exc:  # a device error, a file of /proc that will not be read or never ends
        raise InvalidInput(f"{path}: cannot read it ({exc.strerror or exc})") from None
    text = decode(data, path, unread)
    if len(data) >= _MEMO_FROM and unread is None:
        _known[str(path)] = (identity, text)
    return text


# The large files hb last read or wrote in this process: the text, with the file's identity then
# (see _identity). A queue operation with sync.auto_export looks at tasks.json before it and again
# after it, and the next operation finds the text the last one wrote: while the file at the path is
# still that same file, unchanged, known_text gives the text without reading and decoding it again.
_known: dict[str, tuple[tuple[int, ...], str]] = {}


def _identity(info: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is written or replaced: its inode and size, its modification and
    change times (ctime moves on every write, rename and chmod, and cannot be set by hand)."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def known_text(path: Path) -> str:
    """:func:`read_text`, without reading a large file hb read or wrote in this process and that is
    the same file still, unchanged (see :data:`_known`).

    A change within the file system's clock tick (a few milliseconds on Linux) that keeps the size
    can go unseen here: use it only where a miss is caught later, as the compare-and-swap of
    :func:`heartbeat.ops.sync.swap.replace_if` reads the file itself before writing over it."""
    known = _unchanged_text(path)
    return read_text(path) if known is None else known


def still_known(path: Path, text: str) -> bool:
    """Whether the file at ``path`` is the one hb last read or wrote in this process, unchanged,
    and held ``text`` then (see :func:`known_text`: a miss is possible, so only where one is
    caught later)."""
    known = _unchanged_text(path)
    return known is not None and (known is text or known == text)


def _unchanged_text(path: Path) -> str | None:
    """The text hb last read or wrote at ``path`` in this process, while the file there is that
    same regular file with the same identity (see :func:`_identity`); else None."""
    known = _known.get(str(path))
    if known is None:
        return None
    try:
        info = path.stat()
    except OSError:
        return None
    return known[1] if stat.S_ISREG(info.st_mode) and _identity(info) == known[0] else None


def note_written(path: Path, text: str, info: os.stat_result | None) -> None:
    """hb has just put ``text`` at ``path`` in the file ``info`` describes, taken from hb's own
    file after it took the name (see :func:`known_text`), never from the name: another program
    may already have replaced it, and its file must not be taken for hb's. None: not known."""
    if info is not None and info.st_size >= _MEMO_FROM:
        _known[str(path)] = (_identity(info), text)
    else:
        _known.pop(str(path), None)


def forget_known(path: Path) -> None:
    """What hb knew of the file at ``path`` no longer holds (another program's text is there)."""
    _known.pop(str(path), None)


QUIET_MAX = 2.0  # seconds hb waits for another program to finish writing a file in place


def read_quiet(path: Path) -> bytes:
    """A file's bytes, not read half-way through another program's in-place write: heartbeat.py
    truncates tasks.json and writes it again, and a read in between would see an empty file (or
    for the Markdown files, a valid one with most entries gone). See :func:`no_writers`."""
    return _read_quiet(path)[0]


def _read_quiet(path: Path) -> tuple[bytes, tuple[int, ...]]:
    """:func:`read_quiet`'s bytes and the file's :func:`_identity` when they were read (no writer
    can change the file between the two while the lease is held)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        with no_writers(fd):
            data = read_fd(fd)
            return data, _identity(os.fstat(fd))
    finally:
        os.close(fd)


def read_fd(fd: int) -> bytes:
    """Everything in the open file, from its start: one read of the size it has now (one byte
    more, for a file that grew meanwhile), then reads until one finds the end. A file that
    reads on :data:`GROWTH_MAX` past the size it gave (``/proc/self/pagemap``, whose size says
    0) is no workspace file: OSError (EFBIG) rather than reading for ever."""
    size = os.fstat(fd).st_size
    chunks: list[bytes] = [os.pread(fd, size + 1, 0)] if size else []
    offset = len(chunks[0]) if chunks else 0
    while True:  # until a read finds the end (one join of a single chunk copies nothing)
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)
        if offset > size + GROWTH_MAX:
            raise OSError(errno.EFBIG, f"it reads on more than {GROWTH_MAX >> 20} MiB past its size")


GROWTH_MAX = 256 << 20  # bytes a file may grow by while hb reads it


@contextlib.contextmanager
def no_writers(fd: int, *, fallback: float = 0.0) -> Iterator[bool]:
    """While the block runs, no other program writes the file: a read lease (Linux) is granted
    only while nobody holds the file open for writing, and while it is held, a program that
    opens the file to write waits until the block ends. hb waits up to :data:`QUIET_MAX` for a
    writer to close the file. Yields whether the lease is held; without one (a file of another
    owner, a filesystem or system without leases) the block runs after ``fallback`` seconds.
    The lease's break notice comes as SIGURG, which is ignored, not SIGIO, which would kill hb."""
    try:
        import fcntl
        import signal
    except ImportError:  # not a POSIX system
        time.sleep(fallback)
        yield False
        return
    # leases are Linux's: Python names their commands there only (on macOS or a BSD the same
    # numbers are other commands, never to be sent)
    set_lease, set_signal = getattr(fcntl, "F_SETLEASE", None), getattr(fcntl, "F_SETSIG", None)
    if set_lease is None or set_signal is None:
        time.sleep(fallback)
        yield False
        return
    deadline = time.monotonic() + QUIET_MAX
    while True:
        try:
            fcntl.fcntl(fd, set_signal, signal.SIGURG)
            fcntl.fcntl(fd, set_lease, fcntl.F_RDLCK)
        except OSError as exc:
            if exc.errno == errno.EAGAIN and time.monotonic() < deadline:  # a writer has it open
                time.sleep(0.001)
                continue
            if exc.errno != errno.EAGAIN:
                time.sleep(fallback)
            yield False
            return
        break
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, set_lease, fcntl.F_UNLCK)


def _read_stream(path: Path) -> bytes:
    """A pipe's or a device's bytes up to its end, within the time and size bounds. Opened
    without blocking: a FIFO with no writer reads as empty at once."""
    import select
    import time

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + STREAM_SECONDS
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise InvalidInput(f"{path}: a pipe that did not end within {STREAM_SECONDS:g}s")
            try:  # read first: a FIFO that never had a writer is at its end, yet never "ready"
                chunk = os.read(fd, 65536)
            except BlockingIOError:  # a writer, nothing written yet
                select.select([fd], [], [], left)
                continue
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > STREAM_BYTES:
                raise InvalidInput(f"{path}: not a file that ends (more than {STREAM_BYTES} bytes)")
            chunks.append(chunk)
    finally:
        os.close(fd)


def decode(data: bytes, path: Path, unread: list[str] | None = None) -> str:
    """A file's bytes as UTF-8 text; FileFormatError names path:line:column of a bad byte (with
    ``unread``: see :func:`read_text`)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        error = FileFormatError(
            f"not UTF-8 text (byte {exc.start})", path=str(path), line=line, column=column
        )
        if unread is None:
            raise error from None
        unread.append(str(error))
        return data.decode("utf-8", "replace")


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (temp file + rename), keeping its mode.

    A symlink is written through, never replaced: the temporary file is made in the directory of
    the file the link resolves to (through any chain of links) and renamed over that file, which
    keeps its mode; the link stays a link. A dangling symlink is written through the same way:
    its target is created (mode 0600) when the target's directory exists, as ``>`` in a shell
    would, so the link then resolves; a target whose directory is missing is an error naming
    ``path`` (no directories are made along a link), and so is a symlink loop.

    A failure names ``path`` (not the temporary file) and leaves no temporary file behind."""
    try:
        _atomic_write(_write_target(path), text)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _write_target(path: Path) -> Path:
    """The file a write to ``path`` replaces: ``path``, or the file its symlink chain ends at."""
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:  # dangling: the path the chain names, whose last part is missing
        target = Path(os.path.realpath(path))
    if not target.parent.is_dir() or target.is_symlink():  # no directory to create it in
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    return target


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    import tempfile  # not at import time: most hb commands write no file

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        sync_dir(path.parent)  # the rename itself survives a crash only once the directory is synced
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


LOCK_TIMEOUT = 30.0  # seconds; setting sync.lock_timeout, environment HB_LOCK_TIMEOUT
LOCK_ENV = "HB_LOCK_TIMEOUT"


def lock_timeout(setting: str | None = None) -> float:
    """How long to wait for the workspace file lock: HB_LOCK_TIMEOUT, else the setting, else 30 s."""
    from heartbeat.clock import parse_duration

    raw = os.environ.get(LOCK_ENV) or setting
    if not raw:
        return LOCK_TIMEOUT
    what = LOCK_ENV if os.environ.get(LOCK_ENV) else "sync.lock_timeout"
    return parse_duration(raw, what=what).total_seconds()


@contextlib.contextmanager
def file_lock(workspace: Path, name: str = "files", *, timeout: float | None = None) -> Iterator[None]:
    """Serialise file writers of one workspace across processes (a lock on a lock file).

    The ledger is the truth and needs no such lock; this only keeps two processes from
    rendering the same workspace files at the same time. A process waits at most ``timeout``
    seconds (default :func:`lock_timeout`), then Busy (exit 75) names the holder, whose pid,
    command and start time the lock file holds. POSIX ``flock``; ``msvcrt.locking`` on Windows.
    """
    import sys

    from heartbeat.errors import Busy

    wait = lock_timeout() if timeout is None else timeout
    lock_dir = workspace / STATE
    lock_dir.mkdir(parents=True, exist_ok=True)
    path = lock_dir / f".{name}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                holder = _holder(fd)
                raise Busy(
                    f"busy: {path} is held{' by ' + holder if holder else ''}; waited {wait:g}s "
                    f"(set {LOCK_ENV} or sync.lock_timeout to wait longer)"
                )
            time.sleep(0.05)
        try:
            command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv[:3]))
            note = f"pid {os.getpid()} ({command or 'python'}) since {time.strftime('%Y-%m-%dT%H:%M:%S%z')}"
            os.ftruncate(fd, 0)
            os.pwrite(fd, note.encode("utf-8", "replace"), 0)
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:
        import msvcrt

        with contextlib.suppress(OSError):
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(fd, fcntl.LOCK_UN)


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def sync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort: not every system can)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_optional(path: Path) -> str | None:
    """A workspace file's text, or None when it does not exist (FileFormatError names path:line)."""
    try:
        return read_text(path)
    except NotFound:
        if path.is_dir():
            raise FileFormatError("is a directory, not a file", path=str(path)) from None
        return None
