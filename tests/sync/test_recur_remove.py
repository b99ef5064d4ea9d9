"""`hb recur remove` of a rule that lives in TODO.RECUR.md: the next sync takes its line out.

mistermorph runs every rule TODO.RECUR.md lists, so a rule hb says it removed must leave the file;
before, the sync found a line that matched no rule and read it back in as a new one (a new id, the
same rule running again). On both backends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from heartbeat.ops.sync import writeback
from tests.conftest import Runner

NOW = "2026-05-01T08:00:00Z"
FRONT = (
    '---\ncreated_at: "2026-05-01T08:00:00Z"\nupdated_at: "2026-05-01T08:00:00Z"\nrecurring_count: 2\n---\n\n'
)


def _ids(hb: Runner) -> list[str]:
    return [r["id"] for r in hb.json("--now", NOW, "recur", "list")]


def _add(hb: Runner, title: str, repeat: str = "daily") -> str:
    rule: str = hb.json(
        "--now", NOW, "recur", "add", title, "--repeat", repeat, "--next", "2026-05-01 09:00"
    )["id"]
    return rule


def test_a_removed_rule_leaves_todo_recur_md_at_the_next_sync(hb_db: Runner, workspace: Path) -> None:
    water = _add(hb_db, "water the plants")
    backup = _add(hb_db, "run the backup", "weekly")
    hb_db("--now", NOW, "sync")
    recur = workspace / "TODO.RECUR.md"
    assert "water the plants" in recur.read_text()

    hb_db("--now", NOW, "recur", "remove", water)
    synced = hb_db.json("--now", NOW, "sync")
    [report] = [r for r in synced["reports"] if r["path"].endswith("TODO.RECUR.md")]
    assert report["removed"] == [water] and report["added"] == []
    text = recur.read_text()
    assert "water the plants" not in text
    assert "- [ ] [Next](2026-05-01 09:00), [Repeat](weekly) | run the backup\n" in text
    assert _ids(hb_db) == [backup]
    # nothing left to do: the next sync neither adds the rule back nor touches the file
    assert hb_db("--now", NOW, "sync").stdout == "Everything is in sync.\n"
    assert recur.read_text() == text and _ids(hb_db) == [backup]


def test_a_rule_from_the_file_removed_in_the_ledger_leaves_it(hb_db: Runner, workspace: Path) -> None:
    recur = workspace / "TODO.RECUR.md"
    recur.write_text(
        FRONT + "# TODO Recurring\n\n"
        "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | stretch\n"
        "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | stretch\n"
        "- [ ] [Next](2026-05-02 10:00), [Repeat](weekly) | call mum\n"
    )
    hb_db("--now", NOW, "sync")
    rules = hb_db.json("--now", NOW, "recur", "list")
    stretch = [r["id"] for r in rules if r["title"] == "stretch"]
    assert len(stretch) == 2  # the same line twice is two rules, as mistermorph runs both

    hb_db("--now", NOW, "recur", "remove", stretch[0])
    hb_db("--now", NOW, "sync")
    body = recur.read_text().split("# TODO Recurring\n\n", 1)[1]
    assert body == (  # one of the two identical lines goes, the other stays
        "- [ ] [Next](2026-05-01 09:00), [Repeat](daily) | stretch\n"
        "- [ ] [Next](2026-05-02 10:00), [Repeat](weekly) | call mum\n"
    )
    assert sorted(_ids(hb_db)) == sorted(r["id"] for r in rules if r["id"] != stretch[0])
    assert hb_db("--now", NOW, "sync").stdout == "Everything is in sync.\n"


@pytest.mark.parametrize("moment", ["later", "within moments of hb's write"])
def test_a_line_edited_after_the_rule_was_removed_is_the_files_new_rule(
    hb_db: Runner, workspace: Path, moment: str
) -> None:
    """Within moments after hb's write created the file, the edited file may as well be a
    runtime's own new file (made before hb's write, from no file): its rule is taken in, and the
    rule hb wrote is not lost to it, so hb takes its removed rule's line out once more."""
    water = _add(hb_db, "water the plants")
    hb_db("--now", NOW, "sync")
    recur = workspace / "TODO.RECUR.md"
    hb_db("--now", NOW, "recur", "remove", water)
    # meanwhile someone changes the rule in the file: that edit is theirs to keep
    written = recur.stat().st_mtime_ns
    recur.write_text(recur.read_text().replace("| water the plants", "| water the plants twice"))
    window = writeback.stale_window("recur")
    after = 2 * window if moment == "later" else window // 10
    os.utime(recur, ns=(written, written + after))
    synced = hb_db.json("--now", NOW, "sync")
    [report] = [r for r in synced["reports"] if r["path"].endswith("TODO.RECUR.md")]
    assert report["removed"] == ([] if moment == "later" else [water]) and len(report["added"]) == 1
    assert "| water the plants" not in recur.read_text().replace("| water the plants twice", "")
    assert "| water the plants twice\n" in recur.read_text()
    [rule] = hb_db.json("--now", NOW, "recur", "list")
    assert rule["title"] == "water the plants twice" and rule["id"] != water


def test_a_rule_removed_before_any_sync_leaves_nothing_behind(hb_db: Runner, workspace: Path) -> None:
    keep = _add(hb_db, "water the plants")
    hb_db("--now", NOW, "sync")
    gone = _add(hb_db, "never written")
    hb_db("--now", NOW, "recur", "remove", gone)
    hb_db("--now", NOW, "sync")
    assert "never written" not in (workspace / "TODO.RECUR.md").read_text()
    assert _ids(hb_db) == [keep]


def test_the_heartbeat_takes_a_removed_rule_out_of_the_file_too(hb_db: Runner, workspace: Path) -> None:
    water = _add(hb_db, "water the plants")
    hb_db("--now", NOW, "sync")
    hb_db("--now", NOW, "recur", "remove", water)
    hb_db("--now", NOW, "heartbeat")
    assert "water the plants" not in (workspace / "TODO.RECUR.md").read_text()
    assert _ids(hb_db) == []
