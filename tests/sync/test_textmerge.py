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
