"""heartbeat.formats.json_edit: a new document laid over the JSON text it came from."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.errors import FileFormatError
from heartbeat.formats.json_edit import edit, line_of, load, repeated_keys, same

SCOPED = (
    "{\n"
    '  "pending": [],\n'
    '  "in_progress": [],\n'
    '  "completed": [],\n'
    '  "_round3_extension": {\n'
    '    "ag_implementation_queue": [\n'
    '      {"order": 1, "task_id": "round3-a", "gh_issue": 496},\n'
    '      {"order": 2, "task_id": "round3-b", "gh_issue": 497, "note": "caf\\u00e9", "f": 1e3}\n'
    "    ],\n"
    '    "blocked_on_client": [\n'
    '      {"items": "Spanish PDFs", "issues": [390, 391], "blocker": "translator pending"}\n'
    "    ],\n"
    '    "ag_pushed_branches": ["round3/edit-item-33"]\n'
    "  }\n"
    "}\n"
)


def test_an_unchanged_document_is_its_own_text() -> None:
    assert edit(SCOPED, json.loads(SCOPED)) is SCOPED


def test_a_changed_value_is_the_only_change() -> None:
    doc = json.loads(SCOPED)
    doc["_round3_extension"]["ag_implementation_queue"][0]["status"] = "in_progress"
    assert edit(SCOPED, doc) == SCOPED.replace(
        '"gh_issue": 496}', '"gh_issue": 496, "status": "in_progress"}'
    )


def test_an_entry_moving_between_lists_keeps_its_text_and_the_others_theirs() -> None:
    text = (
        "{\n"
        '  "pending": [\n'
        '    {"id": "task-1", "priority": "low", "x": 1e3},\n'
        '    {"id": "task-5", "priority": "high", "note": "caf\\u00e9"}\n'
        "  ],\n"
        '  "in_progress": [],\n'
        '  "completed": []\n'
        "}\n"
    )
    doc = json.loads(text)
    moved = doc["pending"].pop(1)
    moved["started_at"] = "2026-05-02T10:00:00Z"
    doc["in_progress"].append(moved)
    assert edit(text, doc) == (
        "{\n"
        '  "pending": [\n'
        '    {"id": "task-1", "priority": "low", "x": 1e3}\n'
        "  ],\n"
        '  "in_progress": [\n'
        '    {"id": "task-5", "priority": "high", "note": "caf\\u00e9", '
        '"started_at": "2026-05-02T10:00:00Z"}\n'
        "  ],\n"
        '  "completed": []\n'
        "}\n"
    )


@pytest.mark.parametrize("inline", [False, True])
def test_an_entry_moving_into_a_list_the_file_did_not_have_keeps_its_text(inline: bool) -> None:
    """heartbeat.py's tasks.json may lack ``failed`` (or ``in_progress``): the list is added, and
    the entries moved into it keep their text (escapes, 1.50, 2E3, their own layout), where the
    new list was json.dumps of the values."""
    if inline:
        text = (
            '{"pending": [{"id":"a","note":"caf\\u00e9","estimate":1.50}, {"id":"b","x":2E3}], '
            '"completed": []}\n'
        )
    else:
        text = (
            "{\n"
            '    "pending": [\n'
            '        {"id": "a", "note": "caf\\u00e9", "estimate": 1.50},\n'
            "        {\n"
            '            "id": "b",\n'
            '            "x": 2E3\n'
            "        }\n"
            "    ],\n"
            '    "completed": []\n'
            "}\n"
        )
    doc = json.loads(text)
    doc["failed"] = [doc["pending"].pop(0), doc["pending"].pop(0)]
    doc["failed"][1]["reason"] = "x"
    got = edit(text, doc)
    assert json.loads(got) == doc
    assert '"caf\\u00e9"' in got and "1.50" in got and "2E3" in got
    if inline:
        assert got.endswith(
            '"failed": [{"id":"a","note":"caf\\u00e9","estimate":1.50}, {"id":"b","x":2E3, "reason": "x"}]}\n'
        )
    else:
        assert got.endswith(
            '    "failed": [\n'
            '        {"id": "a", "note": "caf\\u00e9", "estimate": 1.50},\n'
            "        {\n"
            '            "id": "b",\n'
            '            "x": 2E3,\n'
            '            "reason": "x"\n'
            "        }\n"
            "    ]\n"
            "}\n"
        )


def test_a_new_entry_in_an_empty_list_is_indented_like_the_file() -> None:
    text = '{\r\n\t"pending": [],\r\n\t"meta": {"a" : 1}\r\n}'
    doc = json.loads(text)
    doc["pending"].append({"id": "t", "tags": ["x"]})
    assert edit(text, doc) == (
        '{\r\n\t"pending": [\r\n\t\t{\r\n\t\t\t"id": "t",\r\n\t\t\t"tags": [\r\n\t\t\t\t"x"\r\n'
        '\t\t\t]\r\n\t\t}\r\n\t],\r\n\t"meta": {"a" : 1}\r\n}'
    )


def test_removed_members_and_items_take_their_separators_with_them() -> None:
    text = '{"a": 1,  "b": [1,2,  3], "c": {"d" : 1e3}}'
    doc = json.loads(text)
    del doc["a"]
    doc["b"].remove(2)
    assert edit(text, doc) == '{"b": [1, 3], "c": {"d" : 1e3}}'


def test_a_repeated_key_or_a_text_that_is_not_json_gives_a_whole_new_text() -> None:
    assert edit('{\n    "a": 1,\n    "a": 2\n}\n', {"a": 3}) == '{\n    "a": 3\n}\n'
    assert edit("not json", {"a": 1}) == '{\n  "a": 1\n}\n'
    assert edit(None, {"a": "é"}) == '{\n  "a": "é"\n}\n'


def test_an_object_that_repeats_a_key_is_kept_or_replaced_alone() -> None:
    text = '{"list": [\n  {"id": 1, "d": "first", "d": "second"},\n  {"id": 2, "n": 1e3}\n], "other": 2.50}\n'
    doc = json.loads(text)
    assert doc["list"][0] == {"id": 1, "d": "second"}
    doc["other"] = 3
    # the repeating object is unchanged (as JSON reads it): every byte of it stays
    assert edit(text, doc) == text.replace("2.50", "3")
    doc["list"][0]["d"] = "third"
    assert edit(text, doc) == text.replace("2.50", "3").replace('"d": "first", "d": "second"', '"d": "third"')
    # it moves with its text, like any item
    doc = json.loads(text)
    doc["list"].reverse()
    assert edit(text, doc) == (
        '{"list": [\n  {"id": 2, "n": 1e3},\n  {"id": 1, "d": "first", "d": "second"}\n], "other": 2.50}\n'
    )
    assert repeated_keys(text) == [(2, "d")]


def test_every_repeated_key_is_named_at_its_own_line_in_file_order() -> None:
    """Many repeats, nested ones among them (an inner object's repeat is found before the outer
    one that encloses it ends): each at the line of its repetition, in the order they stand."""
    rows = [f'  {{"id": {i}, "p": 1,\n   "p": 2, "q": {{"x": 1, "x": 2}}}}' for i in range(300)]
    text = '{"list": [\n' + ",\n".join(rows) + '\n], "z": 1,\n "z": 2}\n'
    expected = [pair for i in range(300) for pair in ((3 + 2 * i, "p"), (3 + 2 * i, "x"))]
    assert repeated_keys(text) == [*expected, (603, "z")]


def test_line_of_names_where_a_member_begins() -> None:
    text = '\ufeff{\n  "a": null,\n  "b": {\n    "c": [1,\n      2]\n  },\n  "d": 1, "d": {"e": 2}\n}\n'
    assert line_of(text, ()) == 1
    assert (line_of(text, ("a",)), line_of(text, ("b",)), line_of(text, ("b", "c"))) == (2, 3, 4)
    assert line_of(text, ("b", "c", 1)) == 5  # an array item: where its value begins
    assert (line_of(text, ("d",)), line_of(text, ("d", "e"))) == (7, 7)  # a repeated key: the last
    assert (line_of(text, ("z",)), line_of(text, ("b", "z"))) == (None, None)


def test_a_byte_order_mark_and_the_space_around_the_document_stay() -> None:
    text = '\ufeff\n  {"a": 1}  \n\n'
    assert edit(text, {"a": 2}) == '\ufeff\n  {"a": 2}  \n\n'


def test_types_that_compare_equal_in_python_are_still_changes() -> None:
    assert edit('{"a": 1}', {"a": 1.0}) == '{"a": 1.0}'
    assert edit('{"a": 1}', {"a": True}) == '{"a": true}'
    assert edit('{"a": 1, "b": 2}', {"b": 2, "a": 1}) == '{"b": 2, "a": 1}'


# --- properties ---------------------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=6),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=4), inner, max_size=4),
    ),
    max_leaves=20,
)
_LAYOUTS = st.sampled_from(
    [
        {"indent": None},
        {"indent": 2},
        {"indent": "\t"},
        {"indent": 4, "separators": (",", " : ")},
        {"indent": None, "separators": (",", ":")},
        {"indent": 1, "ensure_ascii": True},
    ]
)


def _text(value: Any, layout: dict[str, Any]) -> str:
    return json.dumps(value, **{"ensure_ascii": False, **layout}) + "\n"


@settings(max_examples=300, deadline=None)
@given(old=_VALUES, new=_VALUES, layout=_LAYOUTS)
def test_the_text_always_reads_back_as_the_new_document(old: Any, new: Any, layout: dict[str, Any]) -> None:
    text = _text(old, layout)
    assert same(json.loads(edit(text, new)), new)
    assert edit(text, old) == text


@st.composite
def _edited_object(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], str]:
    old = draw(st.dictionaries(st.text(max_size=4), _VALUES, min_size=2, max_size=5))
    key = draw(st.sampled_from(sorted(old)))
    new = dict(old)
    new[key] = draw(_VALUES)
    return old, new, key


@settings(max_examples=200, deadline=None)
@given(case=_edited_object(), layout=_LAYOUTS)
def test_members_that_did_not_change_keep_their_text(
    case: tuple[dict[str, Any], dict[str, Any], str], layout: dict[str, Any]
) -> None:
    old, new, changed = case
    text = _text(old, layout)
    out = edit(text, new)
    assert same(json.loads(out), new)
    for key, value in old.items():
        if key != changed:  # the member as the old text lays it out, indentation included
            member = json.dumps({key: value}, **{"ensure_ascii": False, **layout})[1:-1].strip("\n")
            assert member in text and member in out


def test_a_text_in_json_dumps_layout_is_written_in_that_layout() -> None:
    """A file json.dumps wrote (hb, or a Python script with its default ensure_ascii) is dumped
    again the same way, escapes included, without scanning it."""
    doc = {"pending": [{"id": "a", "d": "café"}], "done": []}
    for ascii_only in (True, False):
        text = json.dumps(doc, indent=2, ensure_ascii=ascii_only) + "\n"
        new = {"pending": [], "done": [{"id": "a", "d": "café"}, {"id": "b", "d": "thé"}]}
        assert edit(text, new) == json.dumps(new, indent=2, ensure_ascii=ascii_only) + "\n"
    one_line = json.dumps(doc)  # no newline at the end: none added
    assert edit(one_line, {**doc, "done": [1]}) == json.dumps({**doc, "done": [1]})


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('["\\ud800"]', (1, 3)),  # a high half alone
        ('["ok", "\\uDC80"]', (1, 9)),  # a low half alone, upper case
        ('{"\\ud83d": 1}', (1, 3)),  # in a key
        ('["\\ude00\\ud83d"]', (1, 3)),  # both halves, in the wrong order
        ('["\\\\\\ud800"]', (1, 5)),  # an escaped backslash, then the escape
        ('[1,\n "a\\ud83d\\ude00\\udfff"]', (2, 16)),  # a pair, then a half
    ],
)
def test_an_escaped_lone_surrogate_is_refused_where_it_is(text: str, where: tuple[int, int]) -> None:
    with pytest.raises(FileFormatError) as caught:
        load(text)
    assert (caught.value.line, caught.value.column) == where
    assert "lone UTF-16 surrogate" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('["\\ud83d\\ude00"]', ["\U0001f600"]),  # a pair is one character
        ('["\\\\ud800"]', ["\\ud800"]),  # an escaped backslash: the text \ud800, not an escape
        ('["\\u00e9"]', ["é"]),
    ],
)
def test_pairs_and_escaped_backslashes_are_text(text: str, value: list[str]) -> None:
    assert load(text) == value


def test_a_nan_unchanged_keeps_the_text_around_it() -> None:
    """NaN is not equal to itself: an unchanged NaN made the whole document look changed, and the
    state file was written anew (its layout lost) on every sync."""
    text = '{"a":  NaN,  "b":  [1,2], "c":  Infinity}\n'
    value = load(text)
    assert edit(text, value) == text
    value["b"] = [1, 3]
    assert edit(text, value) == '{"a":  NaN,  "b":  [1,3], "c":  Infinity}\n'


@pytest.mark.parametrize("depth", [1, 400, 5000])
def test_same_compares_values_as_deep_as_any_reader_gives(depth: int) -> None:
    """``same`` walks with a stack of its own: a deep value is compared, not a RecursionError."""
    deep: Any = {"k": 1}
    other: Any = {"k": 1}
    for _ in range(depth):
        deep, other = [deep], [other]
    assert same(deep, other)
    bottom: Any = {"k": 1.0}  # 1 and 1.0 differ as JSON text, however deep
    for _ in range(depth):
        bottom = [bottom]
    assert not same(deep, bottom)
    assert not same({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert same([float("nan")], [float("nan")]) and not same([True], [1])
