"""Workspace files that are symlinks: hb writes through the link, atomically, and keeps it a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from heartbeat.ops.sync.files import atomic_write
from tests.conftest import Runner

TODO = (
    "# TODO Work In Progress (WIP)\n\n"
    "- [ ] [Created](2026-05-01 13:00) | Buy milk\n"
    "- [ ] [Created](2026-05-01 13:00) | Call Bob\n"
)


def _leftovers(*dirs: Path) -> list[str]:
    return [p.name for d in dirs for p in d.iterdir() if p.name.endswith(".tmp")]


def test_atomic_write_goes_through_a_symlink_keeping_the_target_mode(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    target = real / "TODO.md"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o640)
    (tmp_path / "ws").mkdir()
    link = tmp_path / "ws" / "TODO.md"
    link.symlink_to(Path("..") / "real" / "TODO.md")

    atomic_write(link, "new\n")

    assert link.is_symlink() and os.readlink(link) == str(Path("..") / "real" / "TODO.md")
    assert target.read_text(encoding="utf-8") == "new\n"
    assert target.stat().st_mode & 0o7777 == 0o640
    assert _leftovers(real, link.parent) == []


def test_atomic_write_follows_a_chain_of_links(tmp_path: Path) -> None:
    target = tmp_path / "target.md"
    target.write_text("old\n", encoding="utf-8")
    (tmp_path / "middle.md").symlink_to("target.md")
    link = tmp_path / "link.md"
    link.symlink_to("middle.md")

    atomic_write(link, "new\n")

    assert link.is_symlink() and (tmp_path / "middle.md").is_symlink()
    assert target.read_text(encoding="utf-8") == "new\n"


def test_a_dangling_symlink_gets_its_target_created(tmp_path: Path) -> None:
    link = tmp_path / "TODO.md"
    link.symlink_to(tmp_path / "elsewhere" / "TODO.md")
    (tmp_path / "elsewhere").mkdir()

    atomic_write(link, "new\n")

    assert link.is_symlink()
    created = tmp_path / "elsewhere" / "TODO.md"
    assert created.read_text(encoding="utf-8") == "new\n"
    assert created.stat().st_mode & 0o7777 == 0o600


def test_a_dangling_symlink_into_a_missing_directory_is_an_error_naming_the_link(tmp_path: Path) -> None:
    link = tmp_path / "TODO.md"
    link.symlink_to(tmp_path / "gone" / "TODO.md")

    with pytest.raises(FileNotFoundError) as caught:
        atomic_write(link, "new\n")

    assert caught.value.filename == str(link)
    assert link.is_symlink() and not (tmp_path / "gone").exists()  # no directory made along the link
    assert _leftovers(tmp_path) == []


def test_a_symlink_loop_is_an_error_naming_the_link(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")

    with pytest.raises(OSError) as caught:
        atomic_write(tmp_path / "a", "new\n")

    assert caught.value.filename == str(tmp_path / "a")
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink()
    assert _leftovers(tmp_path) == []


def test_sync_after_done_writes_through_a_symlinked_todo(hb: Runner, workspace: Path) -> None:
    real = workspace.parent / "shared"
    real.mkdir()
    target = real / "TODO.md"
    target.write_text(TODO, encoding="utf-8")
    target.chmod(0o640)
    link = workspace / "TODO.md"
    link.symlink_to(target)

    hb("sync")
    milk = next(t for t in hb.json("list") if t["title"] == "Buy milk")
    hb("done", milk["id"])
    hb("sync")

    assert link.is_symlink() and link.resolve() == target
    text = target.read_text(encoding="utf-8")
    assert "Call Bob" in text and "Buy milk" not in text
    assert target.stat().st_mode & 0o7777 == 0o640
    assert "Buy milk" in (workspace / "TODO.DONE.md").read_text(encoding="utf-8")
