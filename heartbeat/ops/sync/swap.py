"""Writing a workspace file as a compare-and-swap, so that a concurrent edit is never lost.

The runtimes write their files without hb's lock, at any moment: by atomic replacement
(mistermorph, CraftBot), by rewriting in place (heartbeat.py's ``open(path, "w")``) or by
appending. A plain temp-file-and-rename after hb's read would silently drop whatever another
program wrote in between. :func:`replace_if` writes ``text`` only while the file still holds
the text hb merged from (``expected``), and otherwise reports what it found instead, so the
caller can merge that in and try again; the other program's text is put back, never dropped.

On Linux the swap is ``renameat2(RENAME_EXCHANGE)``: hb's new file and the old one trade
names in one step, so the old file (whatever inode held the name at that instant) lands at
the temporary name and can be read back. If it is not ``expected`` (an atomic replace came
in between), the two are exchanged back. hb's file was then in place for that moment: a runtime
that read it and writes a moment later would write over its own edit with a text made from hb's,
so for :data:`SETTLE` hb watches for its change coming back and merges that edit back in.
An in-place or appending writer that opened the old file before the exchange writes into the
inode that is now at the temporary name, which nobody else can open any more: hb waits until
no program holds it open for writing (a read lease is granted only then, at most
``files.QUIET_MAX`` seconds) and reads it once more, so a change there undoes the swap the
same way. Where leases are refused (a file another user
owns, a filesystem without them) the wait is a fixed :data:`SETTLE`, and a writer that stays
descheduled longer than that between its open and its write can still be lost. Where the
exchange itself is not available (another OS, a filesystem without it), the text is compared
right before an ``os.replace``: the window is then the time between that read and the rename.

The look before the exchange only spares an exchange and its undoing when the file has changed;
the displaced file is what decides. A large file hb itself last read or wrote, still the same
file with the same size and times, is therefore not read before the exchange (tasks.json after
each queue operation with ``sync.auto_export``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from heartbeat.ops.sync.files import (
    QUIET_MAX,
    digest,
    forget_known,
    no_writers,
    note_written,
    read_fd,
    read_quiet,
    still_known,
    sync_dir,
)
from heartbeat.ops.sync.textmerge import merge3

SETTLE = 0.02  # seconds an in-place writer of the old file has to land before it is dropped
NEW_FILE_MODE = 0o600  # the runtimes write their files 0600
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@dataclass(frozen=True)
class Swapped:
    """What :func:`replace_if` did: ``written`` (the new text is in place), or the text another
    program left there instead (``found``, None when there is no file), which is back in place;
    ``kept``: a second concurrent edit that could not be merged, saved beside the file."""

    written: bool
    found: str | None = None
    kept: Path | None = None
    # written: hb's file as it stood once in place (see files.note_written), when known
    mine: os.stat_result | None = field(default=None, compare=False, repr=False)


Validator = Callable[[str], bool]
_DEPTH = 5  # two concurrent edits met a swap that was itself merging two: how deep that may go


def _any_text(_text: str) -> bool:
    return True


class ReadOnlyFile(PermissionError):
    """A workspace file without write permission: hb leaves it as it is (a user's choice)."""


def _renameat2() -> object | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_EXCHANGE = _renameat2()


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` in one step; False when the system cannot."""
    if _EXCHANGE is None:
        return False
    if _EXCHANGE(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:  # type: ignore[operator]
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EXDEV):
        return False
    raise OSError(code, os.strerror(code), str(b))


def target_of(path: Path) -> Path:
    """The file a write to ``path`` replaces: ``path``, or the file its symlinks end at. A
    dangling symlink or a loop is refused (FileNotFoundError naming ``path``): hb does not
    create a file wherever a link happens to point."""
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except (FileNotFoundError, RuntimeError, OSError):
        raise FileNotFoundError(
            errno.ENOENT, "a symlink to nothing (hb does not create its target)", str(path)
        ) from None


def _read(path: Path) -> str | None:
    """The file's text, read when no other program is half-way through writing it in place."""
    try:
        return read_quiet(path).decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None


def _settled(path: Path, settle: float) -> str | None:
    """The text of the file at ``path`` once no other program has it open for writing: an
    in-place writer that opened it before the exchange has then finished (see
    :func:`heartbeat.ops.sync.files.no_writers`; where leases are refused, after ``settle``)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        with no_writers(fd, fallback=settle):
            return read_fd(fd).decode("utf-8", errors="surrogateescape")
    finally:
        os.close(fd)


TAG_LEN = 16  # hex digits of the expected text's digest in the name of hb's temporary file
NO_FILE = "none"  # the tag of a temporary file written to create a file


def temp_tag(expected: str | None) -> str:
    """What hb's temporary file for a write expecting ``expected`` is named after: the start of
    that text's digest (:data:`NO_FILE`: no file). A write killed after the exchange leaves the
    file it displaced under that name; the next sync tells by the tag which text the displaced
    one was made from (see :mod:`heartbeat.ops.sync.leftovers`)."""
    return NO_FILE if expected is None else digest(expected)[:TAG_LEN]


def tag_of(leftover: str, name: str) -> str | None:
    """The tag in the name of a temporary file hb left beside the file ``name``
    (``.NAME.<tag>-XXXXXXXX.tmp``); None for any other name (an older hb's, or not hb's)."""
    middle = leftover.removeprefix(f".{name}.").removesuffix(".tmp")
    tag, dash, _rest = middle.partition("-")
    if not dash or leftover == middle:
        return None
    if tag == NO_FILE or (len(tag) == TAG_LEN and all(c in "0123456789abcdef" for c in tag)):
        return tag
    return None


def _temp(target: Path, text: str, mode: int, expected: str | None) -> Path:
    prefix = f".{target.name}.{temp_tag(expected)}-"
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(name, mode)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise
    return Path(name)


def replace_if(
    path: Path,
    text: str,
    expected: str | None,
    *,
    settle: float | None = None,
    valid: Validator | None = None,
) -> Swapped:
    """Put ``text`` at ``path`` if the file still holds ``expected`` (None: no file).

    Returns ``Swapped(True)`` once written, else ``Swapped(False, found)`` with the text found
    there, which is left in place. When two programs edited the file while hb swapped it, both
    edits are kept: merged by lines (:func:`heartbeat.ops.sync.textmerge.merge3`) when ``valid``
    accepts the result (for JSON, that it parses), else the second one is saved beside the file
    (``kept``). Raises ReadOnlyFile for a file without write permission, and
    FileNotFoundError for a dangling symlink; other OSErrors name ``path``. The mode of the
    old file is kept (new files get 0600); no temporary file is left behind.
    """
    try:
        wait = SETTLE if settle is None else settle
        done = _replace_if(target_of(path), text, expected, wait, valid or _any_text, known_as=path)
        if done.written:
            note_written(path, text, done.mine)
        else:
            forget_known(path)
        return done
    except ReadOnlyFile:
        raise
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, str(path)) from None


def _replace_if(
    target: Path,
    text: str,
    expected: str | None,
    settle: float,
    valid: Validator,
    depth: int = 0,
    *,
    known_as: Path | None = None,
) -> Swapped:
    """:func:`replace_if` on the file ``target``, which the caller names ``known_as``: when that is
    the file hb last read or wrote with ``expected`` in this process, unchanged since (see
    :func:`heartbeat.ops.sync.files.still_known`), it is not read again before the exchange. The
    file the exchange displaces is read in any case."""
    try:
        info = target.stat()
    except FileNotFoundError:
        info = None
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", str(target))
        if not info.st_mode & 0o222:
            raise ReadOnlyFile(
                errno.EACCES, f"read-only (mode {stat.S_IMODE(info.st_mode):04o}): left as it is", str(target)
            )
    if expected is None:
        return _create(target, text) if info is None else Swapped(False, _read(target))
    if info is None:
        return Swapped(False, None)  # removed meanwhile: the caller decides what a missing file means
    # the new file is written and synced first, so that between the last look at the old one
    # and the exchange there is only a read and a comparison
    tmp = _temp(target, text, stat.S_IMODE(info.st_mode), expected)
    mine = os.open(tmp, os.O_RDONLY)  # hb's file, whatever name it has after the exchange
    try:
        if known_as is None or not still_known(known_as, expected):  # a changed file stays in place
            current = _read(target)
            if current != expected:
                return Swapped(False, current)
        if not _exchange(tmp, target):
            return _replace_checked(target, tmp, text, expected)
        placed = os.fstat(mine)  # at once: any later write or rename of it changes what it says
        done = _after_exchange(target, tmp, text, expected, settle, valid, depth)
        return Swapped(True, mine=placed) if done == Swapped(True) else done
    finally:
        os.close(mine)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _create(target: Path, text: str) -> Swapped:
    """A new file, unless another program made one first (os.link does not replace)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp(target, text, NEW_FILE_MODE, None)
    try:
        os.link(tmp, target)
    except FileExistsError:
        return Swapped(False, _read(target))
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    sync_dir(target.parent)
    return Swapped(True)


def _after_exchange(
    target: Path, tmp: Path, text: str, expected: str, settle: float, valid: Validator, depth: int
) -> Swapped:
    """The exchange happened: ``tmp`` now names the file that was at ``target``."""
    displaced = _settled(tmp, settle)
    if displaced == expected:
        sync_dir(target.parent)
        return Swapped(True)
    # another program's text: put it back (what is at target now, hb's or newer, goes to tmp)
    if not _exchange(tmp, target):
        raise OSError(errno.EIO, "could not put the concurrent edit back", str(target))
    back = _settled(tmp, settle)
    sync_dir(target.parent)
    if back is None or back == text:
        return _echoed(target, text, expected, displaced, settle, valid, depth)
    # a second program changed hb's file while it was in place: two edits, one on the old file
    # (back at target now) and one on hb's (at tmp). Both are kept: merged, or the second one
    # beside the file when the merge is not a valid text of this kind
    current = displaced
    deadline = time.monotonic() + QUIET_MAX
    while current is not None and depth < _DEPTH and time.monotonic() < deadline:
        merged = merge3(text, back, current)
        if not valid(merged):
            break
        placed = _replace_if(target, merged, current, settle, valid, depth + 1)
        if placed.written:
            return Swapped(False, merged)
        current = placed.found  # the file moved on again: merge the second edit into that
    kept = target.with_name(f".{target.name}.{time.time_ns()}.hb-kept")
    os.replace(tmp, kept)
    return Swapped(False, current, kept)


def _echoed(
    target: Path, text: str, expected: str, displaced: str | None, settle: float, valid: Validator, depth: int
) -> Swapped:
    """hb's file was in place for a moment before the other program's (``displaced``) went back.
    A runtime that read it then and writes a moment later (read, change, write back: every
    runtime's way) writes over ``displaced`` a text made from hb's, without the edit ``displaced``
    holds. Watched for ``settle``: a file that has hb's change (``expected`` to ``text``) again is
    such a write, and gets the edit ``displaced`` holds back, merged in; any other file is a later
    edit of ``displaced`` and stays as it is."""
    if displaced is None or depth >= _DEPTH:
        return Swapped(False, displaced)
    time.sleep(settle)
    current = _read(target)
    if current is None or current == displaced or merge3(expected, text, current) != current:
        return Swapped(False, displaced if current == displaced else current)
    restored = merge3(text, current, displaced)  # what hb's exposed file lacked, put back
    if restored == current or not valid(restored):
        return Swapped(False, current)
    placed = _replace_if(target, restored, current, settle, valid, depth + 1)
    return Swapped(False, restored if placed.written else placed.found, placed.kept)


def _replace_checked(target: Path, tmp: Path, text: str, expected: str) -> Swapped:
    """No exchange on this system: compare once more, then rename (a narrow window remains)."""
    current = _read(target)
    if current != expected:
        return Swapped(False, current)
    os.replace(tmp, target)
    sync_dir(target.parent)
    return Swapped(True)


def stale_temps(target: Path) -> list[Path]:
    """Temporary files a killed write of hb left beside ``target`` (``.NAME.*.tmp``), oldest first."""
    found = []
    for leftover in target.parent.glob(f".{target.name}.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            found.append((leftover.stat().st_mtime_ns, leftover))
    return [leftover for _, leftover in sorted(found)]


def keep_aside(target: Path, leftover: Path) -> Path:
    """Move ``leftover`` out of the way of the next cleanup, beside ``target``, as an edit hb
    could not merge is kept (``.NAME.<time>.hb-kept``)."""
    kept = target.with_name(f".{target.name}.{time.time_ns()}.hb-kept")
    os.replace(leftover, kept)
    sync_dir(target.parent)
    return kept
