"""What hb knows of a large file it read or wrote in this process: the text is not read and
hashed again while the file is the same, and a change that looks the same is still never lost."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from heartbeat.ops.sync import files
from heartbeat.ops.sync.swap import Swapped, replace_if

TICK = 0.05  # longer than a file system clock tick: a change after it moves the file's times


def _large(tag: str) -> str:
    tasks = [{"id": f"{tag}{i:05d}", "priority": "low", "description": "job"} for i in range(3000)]
    return json.dumps({"pending": tasks}, indent=2)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files read from disk (not answered from what hb knew)."""
    done: list[Path] = []
    real = files._read_quiet

    def counted(path: Path) -> tuple[bytes, tuple[int, ...]]:
        done.append(path)
        return real(path)

    monkeypatch.setattr(files, "_read_quiet", counted)
    monkeypatch.setattr(files, "_known", {})
    return done


def test_a_large_file_is_read_again_only_once_it_changed(tmp_path: Path, reads: list[Path]) -> None:
    path = tmp_path / "tasks.json"
    first = _large("a")
    assert len(first.encode()) >= files._MEMO_FROM
    path.write_text(first)
    assert files.read_text(path) == first and len(reads) == 1
    assert files.known_text(path) is files.known_text(path)  # the same file: not read again
    assert len(reads) == 1
    time.sleep(TICK)
    with path.open("a") as fh:  # appended
        fh.write("\n")
    assert files.known_text(path) == first + "\n" and len(reads) == 2
    time.sleep(TICK)
    same_size = _large("b")  # another file of the same size put in its place
    other = tmp_path / "other.json"
    other.write_text(same_size + "\n")
    os.replace(other, path)
    assert files.known_text(path) == same_size + "\n" and len(reads) == 3
    time.sleep(TICK)
    rewritten = _large("c") + "\n"  # rewritten in place, the same size, its mtime set back
    before = path.stat()
    path.write_text(rewritten)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert files.known_text(path) == rewritten and len(reads) == 4  # its ctime moved


def test_a_small_file_is_always_read(tmp_path: Path, reads: list[Path]) -> None:
    path = tmp_path / "errors.json"
    path.write_text("[]\n")
    files.read_text(path)
    files.known_text(path)
    assert len(reads) == 2


def test_a_write_by_hb_is_known_and_an_edit_after_it_is_not(tmp_path: Path, reads: list[Path]) -> None:
    path = tmp_path / "tasks.json"
    old, new = _large("a"), _large("b")
    path.write_text(old)
    assert replace_if(path, new, old, settle=0) == Swapped(True)
    assert files.still_known(path, new) and not files.still_known(path, old)
    assert files.known_text(path) is new
    time.sleep(TICK)
    path.write_text(new + "\n")
    assert not files.still_known(path, new)
    assert files.known_text(path) == new + "\n"


def test_an_edit_that_looks_like_the_known_file_is_still_not_written_over(
    tmp_path: Path, reads: list[Path]
) -> None:
    """A change within one clock tick that keeps the size leaves the file's identity as it was:
    replace_if then skips its look before the exchange, and the file it displaces, read whatever
    hb knew, is the edit, which is put back."""
    path = tmp_path / "tasks.json"
    old = _large("a")
    path.write_text(old)
    files.read_text(path)
    edited = old.replace('"a00001"', '"z00001"')  # the same size
    path.write_text(edited)
    files._known[str(path)] = (files._identity(path.stat()), old)  # as if the tick hid the edit
    assert files.still_known(path, old)
    assert replace_if(path, _large("b"), old, settle=0) == Swapped(False, edited)
    assert path.read_text() == edited
    assert not files.still_known(path, old)  # forgotten: the next look reads the file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.json"]


def test_a_pop_keeps_a_hand_edit_the_file_times_did_not_show(tmp_path: Path) -> None:
    """sync.auto_export: tasks.json edited by hand right after hb wrote it, in the same clock tick
    and at the same size, is still taken in by the next pop, not written over."""
    from heartbeat import Ledger

    files._known.clear()
    src = tmp_path / "seed.json"
    src.write_text(_large("t"))
    with Ledger.open(workspace=tmp_path) as ledger:
        ledger.import_file("tasks-json", src)
        ledger.config_set("sync.auto_export", "true")
        ledger.sync()
        assert ledger.pop()["id"] == "t00000"
        path = files.default_path(tmp_path, "tasks-json")
        written = path.read_text()
        assert files.still_known(path, written)
        last = '"id": "t02999",\n      "priority": "low",\n      "description": "job"'
        edited = written.replace(last, last.replace('"job"', '"JOB"'))  # the same size
        assert edited != written and len(edited) == len(written)
        path.write_text(edited)
        files._known[str(path)] = (files._identity(path.stat()), written)  # as if the tick hid it
        assert ledger.pop()["id"] == "t00001"
        assert ledger.get("t02999")["title"] == "JOB"
    assert json.loads(path.read_text())["pending"][-1]["description"] == "JOB"


def test_a_text_hashed_ahead_is_measured_as_it_would_be() -> None:
    text = _large("é")
    files.measure_ahead(text)
    expected = hashlib.sha256(text.encode()).hexdigest(), len(text.encode())
    assert files.measure(text) == expected
    assert files.measure(text + " ") == (
        hashlib.sha256((text + " ").encode()).hexdigest(),
        len((text + " ").encode()),
    )
    files.measure_ahead("small")  # below the size worth a thread: measured when asked
    assert files.measure("small") == (hashlib.sha256(b"small").hexdigest(), 5)


def test_a_file_put_in_place_right_after_hb_s_is_not_taken_for_hb_s(
    tmp_path: Path, reads: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What hb knows of the file it wrote is taken from its own file, not from the name: a
    runtime that replaces the file the moment hb's is in place (its edit made on hb's text) does
    not leave hb believing the runtime's file holds hb's text, so the next swap looks first."""
    from heartbeat.ops.sync import swap

    path = tmp_path / "tasks.json"
    old, new = _large("a"), _large("b")
    path.write_text(old)
    real = swap._after_exchange
    theirs = new + "\n"

    def exchange_then_runtime_replaces(*args: object) -> Swapped:
        done = real(*args)  # type: ignore[arg-type]
        other = tmp_path / "runtime.tmp"
        other.write_text(theirs)
        os.replace(other, path)
        return done

    monkeypatch.setattr(swap, "_after_exchange", exchange_then_runtime_replaces)
    assert replace_if(path, new, old, settle=0).written
    assert not files.still_known(path, new) and files.known_text(path) == theirs
