"""replace_if: a write that cannot lose a concurrent edit (atomic replace, in place, append)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from heartbeat.ops.sync import swap
from heartbeat.ops.sync.swap import ReadOnlyFile, Swapped, replace_if


def test_written_when_the_file_holds_the_expected_text(tmp_path: Path) -> None:
    path = tmp_path / "TODO.md"
    path.write_text("old\n")
    path.chmod(0o640)
    assert replace_if(path, "new\n", "old\n") == Swapped(True)
    assert path.read_text() == "new\n"
    assert path.stat().st_mode & 0o777 == 0o640  # the mode is kept
    assert [p.name for p in tmp_path.iterdir()] == ["TODO.md"]  # no temporary file left


def test_a_different_text_is_reported_and_left_in_place(tmp_path: Path) -> None:
    path = tmp_path / "TODO.md"
    path.write_text("edited by the runtime\n")
    assert replace_if(path, "hb's text\n", "what hb read\n") == Swapped(False, "edited by the runtime\n")
    assert path.read_text() == "edited by the runtime\n"
    assert [p.name for p in tmp_path.iterdir()] == ["TODO.md"]


def test_a_new_file_is_created_only_when_there_is_none(tmp_path: Path) -> None:
    path = tmp_path / "TODO.md"
    assert replace_if(path, "first\n", None) == Swapped(True)
    assert path.stat().st_mode & 0o777 == 0o600
    assert replace_if(path, "second\n", None) == Swapped(False, "first\n")
    assert path.read_text() == "first\n"
    gone = tmp_path / "gone.md"
    assert replace_if(gone, "x\n", "was here\n") == Swapped(False, None)
    assert not gone.exists()


def test_a_read_only_file_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "TODO.md"
    path.write_text("mine\n")
    path.chmod(0o444)
    with pytest.raises(ReadOnlyFile, match="read-only"):
        replace_if(path, "hb\n", "mine\n")
    assert path.read_text() == "mine\n"


def test_a_dangling_symlink_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "TODO.md"
    outside.parent.mkdir()
    link = tmp_path / "ws" / "TODO.md"
    link.parent.mkdir()
    link.symlink_to(outside)
    with pytest.raises(FileNotFoundError, match="symlink to nothing"):
        replace_if(link, "hb\n", None)
    assert not outside.exists()
    outside.write_text("real\n")  # a link that resolves is written through
    assert replace_if(link, "hb\n", "real\n") == Swapped(True)
    assert link.is_symlink() and outside.read_text() == "hb\n"


def test_an_atomic_replace_between_read_and_swap_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "TODO.md"
    path.write_text("read by hb\n")
    real_temp = swap._temp

    def temp_then_runtime_writes(target: Path, text: str, mode: int, expected: str | None) -> Path:
        made = real_temp(target, text, mode, expected)
        other = tmp_path / "runtime.tmp"  # the runtime's own temp file + rename, right now
        other.write_text("read by hb\nadded by the runtime\n")
        os.replace(other, path)
        return made

    monkeypatch.setattr(swap, "_temp", temp_then_runtime_writes)
    got = replace_if(path, "hb's merge\n", "read by hb\n", settle=0)
    assert got == Swapped(False, "read by hb\nadded by the runtime\n")
    assert path.read_text() == "read by hb\nadded by the runtime\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TODO.md"]


def test_an_in_place_write_to_the_old_file_after_the_swap_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tasks.json"
    path.write_text('{"pending": []}\n')
    writer = open(path, "r+", encoding="utf-8")  # noqa: SIM115  # opened before hb's swap, as heartbeat.py does
    real_exchange = swap._exchange
    calls = []

    def exchange_then_runtime_writes(a: Path, b: Path) -> bool:
        done = real_exchange(a, b)
        calls.append((a, b))
        if len(calls) == 1:  # the runtime's write lands on the old file, after the swap
            writer.seek(0)
            writer.truncate()
            writer.write('{"pending": [{"id": "task-1"}]}\n')
            writer.close()
        return done

    monkeypatch.setattr(swap, "_exchange", exchange_then_runtime_writes)
    try:
        got = replace_if(path, '{"pending": [], "in_progress": []}\n', '{"pending": []}\n', settle=0)
    finally:
        writer.close()
    assert got == Swapped(False, '{"pending": [{"id": "task-1"}]}\n')
    assert path.read_text() == '{"pending": [{"id": "task-1"}]}\n'


def _runtime_reads_hbs_file_in_the_window(
    path: Path, monkeypatch: pytest.MonkeyPatch, late: Callable[[str], str]
) -> None:
    """A runtime replaces the file just before hb's exchange (so hb puts that file back), reads the
    file while hb's is in place for that moment, and writes ``late(what it read)`` back right after
    hb's put-back."""
    real_exchange = swap._exchange
    calls: list[str] = []

    def exchange(a: Path, b: Path) -> bool:
        if not calls:  # the runtime's first edit lands between hb's look and its exchange
            path.write_text(path.read_text() + "- first edit\n")
        done = real_exchange(a, b)
        if not calls:
            calls.append(b.read_text())  # the runtime reads hb's file, in place for this moment
        elif len(calls) == 1:
            seen = calls[0]
            calls.append(seen)
            written = path.with_name("runtime.tmp")
            written.write_text(late(seen))
            os.replace(written, path)  # its write lands after hb put the first edit back
        return done

    monkeypatch.setattr(swap, "_exchange", exchange)


def test_a_runtime_writing_what_it_read_of_hbs_file_loses_no_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime's second write was made from hb's file, which lacked its first edit: hb sees its
    own change come back within the settle time and merges the first edit back in (hb's change,
    which was not written, is not)."""
    path = tmp_path / "TODO.md"
    path.write_text("# list\n- a\n")
    _runtime_reads_hbs_file_in_the_window(path, monkeypatch, lambda seen: seen + "- second edit\n")
    got = replace_if(path, "# LIST\n- a\n", "# list\n- a\n", settle=0)
    assert path.read_text() == "# list\n- a\n- first edit\n- second edit\n"
    assert got == Swapped(False, path.read_text())


def test_a_later_edit_of_the_runtimes_own_file_is_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write after hb's put-back that does not carry hb's change was made from the runtime's own
    file: nothing is merged into it (it may have removed lines on purpose)."""
    path = tmp_path / "TODO.md"
    path.write_text("# list\n- a\n")
    _runtime_reads_hbs_file_in_the_window(path, monkeypatch, lambda _seen: "# list\n- first edit\n")
    got = replace_if(path, "# LIST\n- a\n", "# list\n- a\n", settle=0)
    assert path.read_text() == "# list\n- first edit\n"
    assert got == Swapped(False, "# list\n- first edit\n")


# A runtime writing its file in its own style: read it, add a line, write it back; 200 times.
WRITER = """
import os, sys, time
path, style, edits = sys.argv[1], sys.argv[2], int(sys.argv[3])
for n in range(edits):
    line = f"- entry {n}\\n"
    if style == "append":
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
    else:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        if style == "replace":  # mistermorph, CraftBot: a temporary file renamed over it
            tmp = path + ".writer.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text + line)
            os.replace(tmp, path)
        else:  # heartbeat.py: open(path, "w") and write
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + line)
    time.sleep(0.002)
"""


@pytest.mark.slow
@pytest.mark.parametrize("style", ["replace", "in_place", "append"])
def test_racing_writers_never_lose_an_edit(tmp_path: Path, style: str) -> None:
    """A runtime process adds 200 lines in its own style while hb rewrites the file (toggling
    the case of its first line) with replace_if, re-reading and retrying on a concurrent edit:
    afterwards every line the runtime added is in the file, and hb wrote at least 20 times."""
    import subprocess
    import sys

    path = tmp_path / "TODO.md"
    path.write_text("# list\n")
    edits = 200
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), style, str(edits)])
    hb_writes = conflicts = 0
    deadline = time.monotonic() + 120
    try:
        while (proc.poll() is None or hb_writes < 20) and time.monotonic() < deadline:
            expected = path.read_text(encoding="utf-8")
            head, sep, rest = expected.partition("\n")
            if not sep:  # the runtime is between its truncate and its write
                continue
            merged = (head.lower() if head.isupper() else head.upper()) + sep + rest
            if replace_if(path, merged, expected).written:
                hb_writes += 1
            else:
                conflicts += 1
    finally:
        proc.wait(60)
    assert proc.returncode == 0
    final = path.read_text(encoding="utf-8")
    lost = [n for n in range(edits) if f"- entry {n}\n" not in final]
    assert hb_writes >= 20, (hb_writes, conflicts)
    kept = [
        k.name for k in tmp_path.glob("*.hb-kept") if any(f"- entry {n}\n" in k.read_text() for n in lost)
    ]
    assert lost == [], (
        f"{len(lost)} of {edits} edits lost ({hb_writes} hb writes, {conflicts} conflicts); "
        f"saved beside the file in: {kept or 'none'}"
    )


def test_two_edits_meeting_the_swap_are_both_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One program appends to the old file just after hb's exchange, another to hb's file while
    it is in place: hb puts the old file back with the second edit merged in."""
    path = tmp_path / "TODO.md"
    path.write_text("# list\n")
    real_exchange = swap._exchange
    calls: list[int] = []

    def exchange(a: Path, b: Path) -> bool:
        done = real_exchange(a, b)
        calls.append(1)
        if len(calls) == 1:
            with open(a, "a", encoding="utf-8") as old:  # the old file, now at the temporary name
                old.write("- first program\n")
            with open(b, "a", encoding="utf-8") as new:  # hb's file, at the real name
                new.write("- second program\n")
        return done

    monkeypatch.setattr(swap, "_exchange", exchange)
    got = replace_if(path, "# LIST\n", "# list\n", settle=0)
    assert not got.written and got.kept is None
    assert path.read_text() == got.found
    assert "- first program\n" in got.found and "- second program\n" in got.found  # type: ignore[operator]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["TODO.md"]


def test_an_unmergeable_second_edit_is_kept_beside_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tasks.json"
    path.write_text('{"pending": []}\n')
    real_exchange = swap._exchange
    calls: list[int] = []

    def exchange(a: Path, b: Path) -> bool:
        done = real_exchange(a, b)
        calls.append(1)
        if len(calls) == 1:
            a.write_text('{"pending": [1]}\n')
            b.write_text('{"pending": [2]}\n')
        return done

    monkeypatch.setattr(swap, "_exchange", exchange)
    got = replace_if(path, '{"pending": [0]}\n', '{"pending": []}\n', settle=0, valid=lambda t: False)
    assert got.found == '{"pending": [1]}\n' == path.read_text()
    assert got.kept is not None and got.kept.read_text() == '{"pending": [2]}\n'
    assert got.kept.name.startswith(".tasks.json.") and got.kept.name.endswith(".hb-kept")


def test_every_rename_is_followed_by_a_sync_of_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rename survives a power cut only once the directory holding it is synced."""
    from heartbeat.ops.sync import files

    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        with contextlib.suppress(OSError):
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    path = tmp_path / "TODO.md"
    path.write_text("old\n")
    replace_if(path, "new\n", "old\n", settle=0)
    assert str(tmp_path) in synced
    synced.clear()
    files.atomic_write(tmp_path / "other.md", "x\n")
    assert str(tmp_path) in synced


def test_a_file_is_read_whole_whatever_its_size_says(tmp_path: Path) -> None:
    """read_fd reads the size the file has in one read, and reads on to its end: a file larger
    than one read's chunk comes back whole, and so does one whose size the system reports as 0
    (a /proc file), and one that grew since the last read."""
    from heartbeat.ops.sync.files import read_fd

    big = tmp_path / "big"
    data = bytes(range(256)) * 9000  # 2.3 MB
    big.write_bytes(data)
    fd = os.open(big, os.O_RDWR)
    try:
        assert read_fd(fd) == data
        os.pwrite(fd, b"grown", len(data))  # the size read_fd takes next is the new one
        assert read_fd(fd) == data + b"grown"
    finally:
        os.close(fd)
    fd = os.open("/proc/self/status", os.O_RDONLY)
    try:
        assert os.fstat(fd).st_size == 0
        assert b"Name:" in read_fd(fd)
    finally:
        os.close(fd)
