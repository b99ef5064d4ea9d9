"""memory/heartbeat-state.json: the whole document kept, values edited in place."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.errors import FileFormatError, InvalidInput
from heartbeat.formats.state import (
    CONTAINERS,
    HeartbeatState,
    NotAnObject,
    blocked_keys,
    container_notes,
    facts_from_state,
    parse,
    render,
    settings_from_state,
    with_updates,
)

SHANGHAI = ZoneInfo("Asia/Shanghai")

# FORMATS.md section 4, verbatim
EXAMPLE = """\
{
  "todoWatch": {"lastScanAt": "2026-05-01T09:00:00+08:00", "nextScanAt": "2026-05-01T10:00:00+08:00"},
  "proactiveChat": {"enabled": true, "minHoursSinceLastConversation": 4,
                    "minHoursBetweenProactive": 12, "maxProactivePerDay": 1,
                    "lastProactiveAt": null, "lastConversationAt": null},
  "memoryHygiene": {"enabled": true, "lastRunAt": null, "everyHours": 24},
  "lastChecks": {"email": 1714550400}
}
"""


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def ordered(text: str) -> Any:
    """JSON with objects as lists of pairs, so key order is compared too."""
    return json.loads(text, object_pairs_hook=list)


# --- reading ---


def test_example_round_trips_byte_identical() -> None:
    assert render(parse(EXAMPLE)) == EXAMPLE


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}', '\ufeff{\n\t"a": [1, 2]\n}\n', '{\r\n  "a": "\\u00e9"\r\n}\r\n', " {} \n\n"],
    ids=["one-line", "bom-tabs", "crlf-escapes", "padded-empty"],
)
def test_any_object_round_trips_byte_identical(text: str) -> None:
    assert render(parse(text)) == text


def test_settings_map_to_hb_keys() -> None:
    assert settings_from_state(parse(EXAMPLE)) == {
        "proactive.enabled": True,
        "proactive.max_per_day": 1,
        "proactive.min_hours_between": 12,
        "proactive.min_hours_since_conversation": 4,
        "hygiene.enabled": True,
        "hygiene.every_hours": 24,
    }


def test_only_present_settings_are_returned() -> None:
    state = parse('{"proactiveChat": {"enabled": false, "maxProactivePerDay": null}, "x": 1}')

    assert settings_from_state(state) == {"proactive.enabled": False}


def test_a_bare_top_level_limit_is_read() -> None:
    state = parse('{"maxProactivePerDay": 2, "minHoursBetweenProactive": 1.5}')

    assert settings_from_state(state) == {
        "proactive.max_per_day": 2,
        "proactive.min_hours_between": 1.5,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"proactiveChat": {"enabled": "yes"}}', "proactiveChat.enabled: expected true or false"),
        ('{"proactiveChat": {"maxProactivePerDay": 1.5}}', "whole number"),
        ('{"proactiveChat": {"maxProactivePerDay": true}}', "whole number"),
        ('{"memoryHygiene": {"everyHours": 0}}', "memoryHygiene.everyHours: expected a number"),
    ],
)
def test_a_wrong_setting_value_names_its_place(text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        settings_from_state(parse(text))


def test_facts_of_the_example() -> None:
    assert facts_from_state(parse(EXAMPLE)) == {
        "proactive.last_proactive_at": None,
        "proactive.last_conversation_at": None,
        "hygiene.last_run_at": None,
        "todo_watch.last_scan_at": at(2026, 5, 1, 1),
        "todo_watch.next_scan_at": at(2026, 5, 1, 2),
    }


def test_facts_read_epochs_z_and_naive_times() -> None:
    state = parse(
        '{"proactiveChat": {"lastProactiveAt": 1714550400, "lastConversationAt": 1714550400000},'
        ' "memoryHygiene": {"lastRunAt": "2026-05-01T00:00:00Z"},'
        ' "todoWatch": {"lastScanAt": "2026-05-01T09:00:00"}}'
    )

    facts = facts_from_state(state, tz=SHANGHAI)

    assert facts == {
        "proactive.last_proactive_at": at(2024, 5, 1, 8),
        "proactive.last_conversation_at": at(2024, 5, 1, 8),
        "hygiene.last_run_at": at(2026, 5, 1),
        "todo_watch.last_scan_at": at(2026, 5, 1, 1),
    }


@pytest.mark.parametrize(
    "value",
    [
        '"soon"',
        "true",
        "[1]",
        '"2026-05-01T25:00:00Z"',
        "1" + "0" * 400,  # an integer too large for a float even once divided into seconds
        "-1" + "0" * 400,
    ],
)
def test_an_unreadable_time_names_its_place(value: str) -> None:
    with pytest.raises(InvalidInput, match=r"todoWatch\.nextScanAt"):
        facts_from_state(parse(f'{{"todoWatch": {{"nextScanAt": {value}}}}}'))


TRAILING_COMMA_AT = (2, 9) if sys.version_info >= (3, 13) else (3, 1)


@pytest.mark.parametrize(
    ("text", "line", "column", "reason"),
    [
        # Python 3.13's reader names the trailing comma itself, older ones the brace after it
        ('{\n  "a": 1,\n}', *TRAILING_COMMA_AT, "invalid JSON"),
        ('{"a": tru}', 1, 7, "invalid JSON"),
        ('\n  ["a"]\n', 2, 3, "must hold a JSON object"),
        ('"null"', 1, 1, "must hold a JSON object"),
        ("[null]", 1, 1, "must hold a JSON object"),
        ("0", 1, 1, "must hold a JSON object"),
    ],
)
def test_unreadable_file_is_a_file_format_error(text: str, line: int, column: int, reason: str) -> None:
    with pytest.raises(FileFormatError) as caught:
        parse(text)

    assert (caught.value.line, caught.value.column) == (line, column)
    assert reason in caught.value.reason


# --- updating ---


def test_todo_watch_update_renders_the_workspace_offset_in_place() -> None:
    state = with_updates(
        parse(EXAMPLE),
        facts={
            "todo_watch.last_scan_at": at(2026, 5, 1, 2),
            "todo_watch.next_scan_at": at(2026, 5, 1, 3, 30),
        },
        tz=SHANGHAI,
    )

    assert render(state) == EXAMPLE.replace(
        '"lastScanAt": "2026-05-01T09:00:00+08:00", "nextScanAt": "2026-05-01T10:00:00+08:00"',
        '"lastScanAt": "2026-05-01T10:00:00+08:00", "nextScanAt": "2026-05-01T11:30:00+08:00"',
    )


def test_semantically_unchanged_values_keep_their_text_and_type() -> None:
    state = with_updates(
        parse(EXAMPLE),
        settings={"proactive.max_per_day": 1.0, "hygiene.every_hours": 24, "hygiene.enabled": True},
        facts={
            "todo_watch.last_scan_at": at(2026, 5, 1, 1),  # the same instant, written in UTC
            "proactive.last_proactive_at": None,
        },
        tz=ZoneInfo("UTC"),
    )

    assert render(state) == EXAMPLE
    assert state.doc["proactiveChat"]["maxProactivePerDay"] == 1
    assert type(state.doc["proactiveChat"]["maxProactivePerDay"]) is int


def test_unknown_keys_survive_updates_in_order() -> None:
    text = (
        '{\n  "custom": {"nested": [1, {"x": null}], "note": "保持"},\n'
        '  "lastChecks": {"email": 1714550400, "calendar": 1714554000},\n'
        '  "proactiveChat": {"enabled": false, "extra": "kept"}\n}\n'
    )

    state = with_updates(
        parse(text),
        settings={"proactive.enabled": True, "proactive.max_per_day": 3},
        facts={"proactive.last_proactive_at": at(2026, 5, 1)},
        tz=SHANGHAI,
    )

    assert render(state) == (
        '{\n  "custom": {"nested": [1, {"x": null}], "note": "保持"},\n'
        '  "lastChecks": {"email": 1714550400, "calendar": 1714554000},\n'
        '  "proactiveChat": {"enabled": true, "extra": "kept", "maxProactivePerDay": 3,'
        ' "lastProactiveAt": "2026-05-01T08:00:00+08:00"}\n}\n'
    )


def test_missing_objects_are_created_at_the_end() -> None:
    text = '{\n    "lastChecks": {\n        "email": 1714550400\n    }\n}\n'

    state = with_updates(
        parse(text),
        settings={"hygiene.enabled": False},
        facts={"todo_watch.next_scan_at": at(2026, 5, 1)},
        tz=SHANGHAI,
    )

    assert render(state) == (
        '{\n    "lastChecks": {\n        "email": 1714550400\n    },\n'
        '    "memoryHygiene": {\n        "enabled": false\n    },\n'
        '    "todoWatch": {\n        "nextScanAt": "2026-05-01T08:00:00+08:00"\n    }\n}\n'
    )


def test_a_bare_top_level_limit_is_written_where_it_is() -> None:
    state = with_updates(
        parse('{"maxProactivePerDay": 1}'), settings={"proactive.max_per_day": 2}, tz=SHANGHAI
    )

    assert render(state) == '{"maxProactivePerDay": 2}'


def test_an_epoch_place_keeps_epoch_numbers() -> None:
    state = with_updates(
        parse('{"proactiveChat": {"lastProactiveAt": 1714550400, "lastConversationAt": 1}}'),
        facts={
            "proactive.last_proactive_at": at(2024, 5, 1, 9),
            "proactive.last_conversation_at": at(2024, 5, 1, 9),
        },
        tz=SHANGHAI,
    )

    assert state.doc["proactiveChat"] == {
        "lastProactiveAt": 1714554000,
        "lastConversationAt": 1714554000,
    }


def test_a_none_time_clears_an_existing_value_and_adds_nothing_new() -> None:
    state = with_updates(
        parse('{"memoryHygiene": {"lastRunAt": "2026-05-01T09:00:00+08:00"}}'),
        facts={"hygiene.last_run_at": None, "todo_watch.last_scan_at": None},
        tz=SHANGHAI,
    )

    assert render(state) == '{"memoryHygiene": {"lastRunAt": null}}'


def test_the_original_state_is_not_changed() -> None:
    original = parse(EXAMPLE)

    with_updates(original, settings={"proactive.max_per_day": 5}, tz=SHANGHAI)

    assert original.doc["proactiveChat"]["maxProactivePerDay"] == 1


def test_crlf_is_kept_for_new_members() -> None:
    text = '{\r\n  "a": 1\r\n}\r\n'

    state = with_updates(parse(text), settings={"hygiene.every_hours": 6}, tz=SHANGHAI)

    assert render(state) == ('{\r\n  "a": 1,\r\n  "memoryHygiene": {\r\n    "everyHours": 6\r\n  }\r\n}\r\n')


def test_a_reshaped_nested_value_is_rewritten_at_its_own_depth() -> None:
    text = '{\n  "lastChecks": {\n    "email": [\n      1\n    ]\n  },\n  "z": 0\n}\n'
    state = parse(text)
    state.doc["lastChecks"]["email"] = [1, 2]

    assert render(state) == (
        '{\n  "lastChecks": {\n    "email": [\n      1,\n      2\n    ]\n  },\n  "z": 0\n}\n'
    )


def test_a_removed_key_drops_only_that_member() -> None:
    state = parse('\ufeff{\n\t"a": 1,\n\t"b": {"c": 2},\n\t"d": [1,  2]\n}\n')
    del state.doc["a"]

    assert render(state) == '\ufeff{\n\t"b": {"c": 2},\n\t"d": [1,  2]\n}\n'


def test_a_repeated_key_rewrites_the_document_with_its_own_indent() -> None:
    state = parse('{\n\t"a": 1,\n\t"a": 2,\n\t"b": [1,  2]\n}\n')
    state.doc["b"] = [1, 2, 3]

    assert render(state) == '{\n\t"a": 2,\n\t"b": [\n\t\t1,\n\t\t2,\n\t\t3\n\t]\n}\n'


def test_a_state_without_source_renders_with_two_spaces() -> None:
    state = HeartbeatState(doc={"todoWatch": {"lastScanAt": None}, "说明": "是"})

    assert render(state) == '{\n  "todoWatch": {\n    "lastScanAt": null\n  },\n  "说明": "是"\n}\n'


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"settings": {"quiet_hours": "23:00-08:00"}}, "not a setting"),
        ({"settings": {"proactive.enabled": "yes"}}, "expected true or false"),
        ({"settings": {"proactive.min_hours_between": -1}}, "number of hours >= 0"),
        ({"facts": {"todo_watch.lastScanAt": at(2026, 5, 1)}}, "not a time"),
        ({"facts": {"todo_watch.last_scan_at": datetime(2026, 5, 1)}}, "carry a timezone"),
        ({"settings": {"hygiene.enabled": True}}, "memoryHygiene is not an object"),
    ],
)
def test_bad_updates_are_invalid_input(kwargs: dict[str, Any], message: str) -> None:
    state = parse('{"memoryHygiene": "off"}')

    with pytest.raises(InvalidInput, match=message):
        with_updates(state, tz=SHANGHAI, **kwargs)


# --- a file that holds no value: empty, null or [] ---


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("", "the file is empty"),
        ("\ufeff \r\n\t\n", "the file is empty"),
        ("null\n", "the file holds null"),
        (" [ ]", "the file holds an empty array"),
    ],
)
def test_a_file_without_a_value_reads_as_empty_and_stays_until_hb_writes(text: str, note: str) -> None:
    """An agent may create heartbeat-state.json before it has anything to record (touch, or
    null / [] for "nothing yet"): read as a missing file is, not refused, and kept byte for byte
    until hb has a value to write; then the file becomes an object holding just that value."""
    state = parse(text)

    assert (state.doc, settings_from_state(state), facts_from_state(state, tz=UTC)) == ({}, {}, {})
    assert container_notes(state) == [
        (1, f"{note}: read as an empty object (hb replaces it only to write a value)")
    ]
    assert render(with_updates(state, facts={"hygiene.last_run_at": None}, tz=UTC)) == text
    written = with_updates(state, settings={"proactive.max_per_day": 2}, tz=UTC)
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    assert render(written) == bom + '{\n  "proactiveChat": {\n    "maxProactivePerDay": 2\n  }\n}\n'
    assert container_notes(parse(render(written))) == []


# --- objects holding null, or something else ---

NULLS = '{\n  "lastChecks": null,\n  "proactiveChat": null,\n  "todoWatch": null,\n  "x": null\n}\n'


def test_a_null_object_reads_as_empty_and_is_named_by_its_line() -> None:
    state = parse(NULLS)

    assert CONTAINERS == ("proactiveChat", "memoryHygiene", "todoWatch")
    assert (settings_from_state(state), facts_from_state(state, tz=SHANGHAI)) == ({}, {})
    assert blocked_keys(state) == {}
    null = "is null: read as an empty object (hb replaces it only to write a value into it)"
    assert container_notes(state) == [(3, f"proactiveChat {null}"), (4, f"todoWatch {null}")]


def test_a_value_written_into_a_null_object_replaces_only_that_null() -> None:
    state = with_updates(
        parse(NULLS), facts={"todo_watch.last_scan_at": at(2026, 5, 1), "hygiene.last_run_at": None}, tz=UTC
    )

    assert render(state) == NULLS.replace(
        '"todoWatch": null', '"todoWatch": {\n    "lastScanAt": "2026-05-01T00:00:00+00:00"\n  }'
    )


def test_an_unchanged_value_leaves_a_null_object_as_it_is() -> None:
    text = '{"proactiveChat": null, "maxProactivePerDay": 2}'

    state = with_updates(parse(text), settings={"proactive.max_per_day": 2}, tz=UTC)

    assert render(state) == text


def test_an_object_holding_a_string_or_an_array_blocks_writing_there() -> None:
    state = parse('{\n  "memoryHygiene": "off",\n  "todoWatch": [],\n  "maxProactivePerDay": 1\n}')

    assert blocked_keys(state) == {  # proactiveChat is missing: made when written into
        "hygiene.enabled": "memoryHygiene",
        "hygiene.every_hours": "memoryHygiene",
        "hygiene.last_run_at": "memoryHygiene",
        "todo_watch.last_scan_at": "todoWatch",
        "todo_watch.next_scan_at": "todoWatch",
    }
    kept = "not an object: nothing in it is read or written; kept as written"
    assert container_notes(state) == [
        (2, f"memoryHygiene is a string, {kept}"),
        (3, f"todoWatch is an array, {kept}"),
    ]
    with pytest.raises(
        NotAnObject, match=r"^todoWatch is not an object: cannot write todoWatch.lastScanAt$"
    ) as got:
        with_updates(state, facts={"todo_watch.last_scan_at": at(2026, 5, 1)}, tz=UTC)
    assert got.value.line == 3
    assert render(with_updates(state, settings={"proactive.max_per_day": 3}, tz=UTC)).endswith(
        '"maxProactivePerDay": 3\n}'
    )


# --- properties ---

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)
json_object = st.dictionaries(st.text(max_size=4), json_value, max_size=5)
styles = st.sampled_from([{"indent": 2}, {"indent": 4}, {"indent": "\t"}, {}])


def mutate(value: Any, data: st.DataObject) -> Any:
    """A copy of ``value`` with random replacements, additions and removals."""
    if isinstance(value, dict):
        out = {}
        for key, child in value.items():
            action = data.draw(st.sampled_from(["keep", "change", "recurse", "drop"]))
            if action == "drop":
                continue
            out[key] = data.draw(json_value) if action == "change" else child
            if action == "recurse":
                out[key] = mutate(child, data)
        for key in data.draw(st.lists(st.text(max_size=4), max_size=2)):
            out.setdefault(key, data.draw(json_value))
        return out
    if isinstance(value, list) and value and data.draw(st.booleans()):
        return [mutate(item, data) for item in value]
    return data.draw(st.one_of(st.just(value), json_value))


@settings(max_examples=300)
@given(json_object, styles)
def test_render_parse_is_identity(doc: dict[str, Any], style: dict[str, Any]) -> None:
    text = json.dumps(doc, ensure_ascii=False, **style) + "\n"

    assert render(parse(text)) == text


@settings(max_examples=300)
@given(json_object, styles, st.data())
def test_render_writes_exactly_the_new_document(
    doc: dict[str, Any], style: dict[str, Any], data: st.DataObject
) -> None:
    source = json.dumps(doc, ensure_ascii=False, **style) + "\n"
    new = mutate(doc, data)

    text = render(HeartbeatState(doc=new, source=source))

    assert ordered(text) == ordered(json.dumps(new))
    if style and list(new)[: len(doc)] == list(doc) and doc:
        assert text.startswith("{\n")  # an in-place edit keeps the multi-line layout


@settings(max_examples=100)
@given(
    st.datetimes(
        min_value=datetime(2000, 1, 1),
        max_value=datetime(2100, 1, 1),
        timezones=st.just(UTC),
    ),
    st.sampled_from(["Asia/Shanghai", "America/New_York", "UTC", "Asia/Kolkata"]),
)
def test_a_written_time_reads_back_as_the_same_instant(moment: datetime, zone: str) -> None:
    written = with_updates(parse(EXAMPLE), facts={"todo_watch.last_scan_at": moment}, tz=ZoneInfo(zone))

    value = written.doc["todoWatch"]["lastScanAt"]
    assert facts_from_state(parse(render(written)))["todo_watch.last_scan_at"] == moment
    assert datetime.fromisoformat(value).utcoffset() == moment.astimezone(ZoneInfo(zone)).utcoffset()


@pytest.mark.parametrize("depth", [490, 800])
def test_a_value_nested_as_deep_as_the_reader_goes_is_written_back_as_it_was(depth: int) -> None:
    """``copy.deepcopy`` of the document stopped at about 490 levels: hb sync and hb heartbeat
    exited 70 (RecursionError) on a file the reader had read."""
    deep = "[" * depth + "]" * depth
    state = parse('{"notes": ' + deep + ', "memoryHygiene": {}}')
    when = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    updated = with_updates(state, facts={"hygiene.last_run_at": when}, tz=SHANGHAI)
    text = render(updated)
    assert deep in text.replace(" ", "").replace("\n", "")
    assert facts_from_state(parse(text), tz=SHANGHAI)["hygiene.last_run_at"] == when
    assert state.doc["memoryHygiene"] == {}  # the state read is left as it was
