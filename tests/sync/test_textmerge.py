"""merge3: both concurrent edits survive a line merge."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from heartbeat.ops.sync.textmerge import merge3

BASE = "# TODO\n- [ ] one\n- [ ] two\n"


def test_edits_in_different_places_are_both_applied() -> None:
    ours = "# TODO\n- [ ] one\n- [ ] two\n- [ ] three\n"
    theirs = "# TODO (WIP)\n- [ ] one\n- [ ] two\n"
    assert merge3(BASE, ours, theirs) == "# TODO (WIP)\n- [ ] one\n- [ ] two\n- [ ] three\n"


def test_two_insertions_at_the_same_place_keep_both_theirs_first() -> None:
    ours = BASE + "- [ ] from the first program\n"
    theirs = BASE + "- [ ] from the second program\n"
    assert (
        merge3(BASE, ours, theirs) == BASE + "- [ ] from the second program\n- [ ] from the first program\n"
    )


def test_the_same_change_on_both_sides_is_made_once() -> None:
    both = BASE.replace("two", "2")
    assert merge3(BASE, both, both) == both


def test_conflicting_rewrites_of_a_line_keep_both_versions() -> None:
    ours = BASE.replace("two", "two (ours)")
    theirs = BASE.replace("two", "two (theirs)")
    merged = merge3(BASE, ours, theirs)
    assert "- [ ] two (theirs)\n" in merged and "- [ ] two (ours)\n" in merged


def test_lines_inserted_where_the_other_side_took_lines_out_stand_and_the_lines_stay_out() -> None:
    """A runtime's new entry written just above the entry hb moved to its done file (a copy made
    before hb's write): the two changes only touch. They were a conflict, kept whole on the
    copy's side, so the entry hb had moved came back open (open and done at once)."""
    base = "# WIP\n\n- h2\n- h1\n"
    assert merge3(base, "# WIP\n\n- h1\n", "# WIP\n\n- m4\n- h2\n- h1\n") == "# WIP\n\n- m4\n- h1\n"
    assert merge3(base, "# WIP\n\n- m4\n- h2\n- h1\n", "# WIP\n\n- h1\n") == "# WIP\n\n- m4\n- h1\n"
    # at the end of the lines taken out, and of lines replaced
    assert merge3("a\nb\nc\n", "a\nc\n", "a\nb\nX\nc\n") == "a\nX\nc\n"
    assert merge3("a\nb\nc\n", "a\nB\nc\n", "a\nX\nb\nc\n") == "a\nX\nB\nc\n"


def test_changes_that_only_abut_are_all_made() -> None:
    """hb completing one entry while a stale copy completes the one next to it (mistermorph's
    Complete): two deletions that only abut. They were one conflict, kept whole on both sides, so
    both entries came back open beside their done lines. So with hb's new entry amid entries the
    other side took out, and with lines replaced next to each other."""
    assert merge3("- B\n- A\n", "- A\n", "- B\n") == ""
    assert merge3("x\n- B\n- A\ny\n", "x\n- A\ny\n", "x\n- B\ny\n") == "x\ny\n"
    assert merge3("- B\n- A\n", "- B\n- H\n- A\n", "") == "- H\n"
    assert merge3("- B\n- A\n", "", "- B\n- H\n- A\n") == "- H\n"
    assert merge3("a\nb\n", "A\nb\n", "a\nB\n") == "A\nB\n"
    # several changes on each side, interleaved: each stands in its place
    base = "1\n2\n3\n4\n5\n6\n"
    assert merge3(base, "1\n3\nN\n4\n6\n", "1\n2\n4\n5\n") == "1\nN\n4\n"


def test_a_side_without_change_takes_the_other() -> None:
    changed = BASE + "x\n"
    assert merge3(BASE, BASE, changed) == changed
    assert merge3(BASE, changed, BASE) == changed


def test_a_missing_final_newline_does_not_glue_lines() -> None:
    merged = merge3("a\nb", "a\nb\nc", "z\na\nb")
    assert merged.split("\n") == ["z", "a", "b", "c"]


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "e\n"]), max_size=8)


@given(lines, lines, lines)
def test_every_line_either_side_added_is_in_the_merge(
    base: list[str], ours: list[str], theirs: list[str]
) -> None:
    merged = merge3("".join(base), "".join(ours), "".join(theirs)).splitlines(keepends=True)
    for side in (ours, theirs):
        for line in set(side) - set(base):
            assert line in merged or line.rstrip("\n") in [m.rstrip("\n") for m in merged]


def _queue_text(
    pending: list[dict[str, object]], doing: list[dict[str, object]], done: list[dict[str, object]]
) -> str:
    import json

    return json.dumps({"pending": pending, "in_progress": doing, "completed": done, "failed": []}, indent=2)


def test_a_pop_made_from_hbs_text_of_a_json_queue_merges_to_itself() -> None:
    """heartbeat.py's pop of the tasks.json hb just wrote (a completion's stamp rewritten): the
    merge of hb's write and the pop is the pop, so the sync reads the pop against hb's text; a pop
    made from the text before hb's write keeps both. The file repeats most of its lines (one
    ``"completed_at": null`` per task), which the line matcher must pair up with their tasks."""
    tasks: list[dict[str, object]] = [
        {"id": f"task-{n:04d}", "priority": "high", "description": "job", "assigned_skill": None,
         "created_at": "2026-04-25T12:00:00Z", "completed_at": None}
        for n in range(300)
    ]  # fmt: skip
    done = [{**tasks[0], "completed_at": "2026-05-01T08:00:00.123456+00:00Z"}]  # heartbeat.py's stamp
    before = _queue_text(tasks[1:], [], done)
    meant = before.replace("+00:00Z", "Z")  # hb's write: the stamp as hb writes it
    fixed = [{**done[0], "completed_at": "2026-05-01T08:00:00.123456Z"}]
    popped = _queue_text(tasks[2:], tasks[1:2], fixed)  # the script loads hb's text, pops, dumps it
    assert merge3(before, meant, popped) == popped
    from_old = _queue_text(tasks[2:], tasks[1:2], done)  # the same pop, from the text before hb's
    assert merge3(before, meant, from_old) == popped
