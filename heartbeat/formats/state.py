"""memory/heartbeat-state.json (FORMATS.md section 4): limits and watermarks, kept whole.

No runtime fixes this file's schema, so hb keeps the whole document: every
unknown key, the key order and the layout. ``render`` gives the text back
unchanged when nothing changed; otherwise it edits only the values that
changed (and adds or drops members) in place, so a person's formatting
survives (:mod:`heartbeat.formats.json_edit`). Only an object that repeats a
key is written out again whole, with the file's own indent.

hb reads six settings and five times from it; :data:`SETTING_PATHS` and
:data:`FACT_PATHS` name where. Times are ISO 8601 with an offset, or epoch
seconds (the way ``lastChecks`` holds them); hb writes ISO 8601 in the
workspace's offset unless the place already held an epoch number.

The objects those places sit in (``proactiveChat``, ``memoryHygiene``,
``todoWatch``: :data:`CONTAINERS`) may hold null. OpenClaw's code never reads
this file: its workspace template only suggests it to the agent, null standing
for "nothing recorded yet". So a null object is read as an empty one, and is
replaced by an object only when hb writes a value into it; a null hb has no value
for stays null. A container that holds anything else (a string, a list) is not
hb's to read or write (:func:`blocked_keys`); :func:`container_notes` says which.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from types import MappingProxyType
from typing import Any

from heartbeat.errors import FileFormatError, InvalidInput
from heartbeat.formats.json_edit import line_of, load
from heartbeat.formats.timestamps import OUT_OF_RANGE, OutOfRangeError, in_range, read_timestamp

__all__ = [
    "CONTAINERS",
    "FACT_PATHS",
    "SETTING_PATHS",
    "HeartbeatState",
    "NotAnObject",
    "blocked_keys",
    "container_notes",
    "facts_from_state",
    "parse",
    "render",
    "settings_from_state",
    "with_updates",
]

Path = tuple[str, ...]

# hb settings key -> the places it may live, the first one canonical (written when none exists).
# OpenClaw's heartbeat-state.json names the proactiveChat limits bare, so a top-level key is honoured too.
SETTING_PATHS: Mapping[str, tuple[Path, ...]] = MappingProxyType(
    {
        "proactive.enabled": (("proactiveChat", "enabled"),),
        "proactive.max_per_day": (
            ("proactiveChat", "maxProactivePerDay"),
            ("maxProactivePerDay",),
        ),
        "proactive.min_hours_between": (
            ("proactiveChat", "minHoursBetweenProactive"),
            ("minHoursBetweenProactive",),
        ),
        "proactive.min_hours_since_conversation": (
            ("proactiveChat", "minHoursSinceLastConversation"),
            ("minHoursSinceLastConversation",),
        ),
        "hygiene.enabled": (("memoryHygiene", "enabled"),),
        "hygiene.every_hours": (("memoryHygiene", "everyHours"),),
    }
)

# fact name -> the places it may live, as for settings.
FACT_PATHS: Mapping[str, tuple[Path, ...]] = MappingProxyType(
    {
        "proactive.last_proactive_at": (
            ("proactiveChat", "lastProactiveAt"),
            ("lastProactiveAt",),
        ),
        "proactive.last_conversation_at": (
            ("proactiveChat", "lastConversationAt"),
            ("lastConversationAt",),
        ),
        "hygiene.last_run_at": (("memoryHygiene", "lastRunAt"),),
        "todo_watch.last_scan_at": (("todoWatch", "lastScanAt"),),
        "todo_watch.next_scan_at": (("todoWatch", "nextScanAt"),),
    }
)

# the objects hb reads settings and times from, in the order the paths name them
_ALL_PATHS = (*SETTING_PATHS.values(), *FACT_PATHS.values())
CONTAINERS: tuple[str, ...] = tuple(
    dict.fromkeys(path[0] for paths in _ALL_PATHS for path in paths if len(path) > 1)
)

_FLAGS = ("proactive.enabled", "hygiene.enabled")
_COUNTS = ("proactive.max_per_day",)
_POSITIVE = ("hygiene.every_hours",)
_EPOCH_MS_FROM = 10**11  # an epoch this large is milliseconds (10**11 s is the year 5138)
_EMPTY: Mapping[str, Any] = MappingProxyType({})
_BOM = "\ufeff"


@dataclass
class HeartbeatState:
    """The whole state document, in key order, plus the text it was read from."""

    doc: dict[str, Any]
    source: str | None = field(default=None, repr=False, compare=False)
    # what the file held in place of an object, when it held no value at all: "empty" (nothing but
    # whitespace), "null" or "an empty array" (read as an empty object; see :func:`parse`)
    placeholder: str | None = field(default=None, compare=False)


class NotAnObject(InvalidInput):
    """A value hb would write sits in a place held by a value that is neither an object nor
    null; ``line``: where that value's key is in the text read (None without one)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


# --- reading ---


def parse(text: str) -> HeartbeatState:
    """Read the state file; raises FileFormatError (line, column) unless it is a JSON object.

    A file that holds no value (nothing but whitespace, ``null`` or ``[]``: an agent that created
    the file before it had anything to record) is read as an empty object, as a missing file is:
    it stays as it is until hb writes a value, which then replaces it with an object."""
    body = text.removeprefix(_BOM)
    if not body.strip(" \t\r\n"):
        return HeartbeatState(doc={}, source=text, placeholder="empty")
    doc = load(body)
    if doc is None or doc == []:
        kind = "null" if doc is None else "an empty array"
        return HeartbeatState(doc={}, source=text, placeholder=kind)
    if not isinstance(doc, dict):
        at = len(body) - len(body.lstrip(" \t\r\n"))
        line = body.count("\n", 0, at) + 1
        column = at - (body.rfind("\n", 0, at) + 1) + 1
        raise FileFormatError("heartbeat-state.json must hold a JSON object", line=line, column=column)
    return HeartbeatState(doc=doc, source=text)


def settings_from_state(state: HeartbeatState, problems: dict[str, str] | None = None) -> dict[str, Any]:
    """The hb settings the file holds (only keys present and not null), by hb key.

    Raises InvalidInput naming the place when a value has the wrong type; with
    ``problems``, such a value is left out and its reason put there instead.
    """
    settings: dict[str, Any] = {}
    for key, paths in SETTING_PATHS.items():
        found = _find(state.doc, paths)
        if found is not None and found[1] is not None:
            try:
                settings[key] = _checked_setting(key, found[1], _dotted(found[0]))
            except InvalidInput as exc:
                if problems is None:
                    raise
                problems[key] = exc.message
    return settings


# The times that say when something last happened (nextScanAt is the one that looks ahead).
LAST_FACTS = frozenset(FACT_PATHS) - {"todo_watch.next_scan_at"}


def facts_from_state(
    state: HeartbeatState,
    *,
    tz: tzinfo | None = None,
    problems: dict[str, str] | None = None,
    not_after: datetime | None = None,
) -> dict[str, datetime | None]:
    """The times the file holds (only keys present), as aware datetimes; null -> None.

    Reads ISO 8601 with an offset, epoch seconds (or milliseconds) numbers, and
    ISO 8601 without an offset as local time in ``tz`` (UTC when not given).
    Raises InvalidInput naming the place for anything else; with ``problems``,
    such a value is left out and its reason put there instead. With ``not_after``, a last
    event (:data:`LAST_FACTS`) later than it is one too: a ``lastProactiveAt`` typed as 2062
    would hold proactive chat back until then.
    """
    facts: dict[str, datetime | None] = {}
    for key, paths in FACT_PATHS.items():
        found = _find(state.doc, paths)
        if found is not None:
            try:
                moment = _read_time(found[1], _dotted(found[0]), tz or UTC)
                if not_after is not None and moment is not None and key in LAST_FACTS and moment > not_after:
                    raise InvalidInput(
                        f"{_dotted(found[0])}: {found[1]!r} is later than now: no last event yet to come"
                    )
                facts[key] = moment
            except InvalidInput as exc:
                if problems is None:
                    raise
                problems[key] = exc.message
    return facts


def _find(doc: Mapping[str, Any], paths: tuple[Path, ...]) -> tuple[Path, Any] | None:
    """The first of ``paths`` present in ``doc``, with its value."""
    for path in paths:
        node: Any = doc
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node:
            return path, node[path[-1]]
    return None


def _dotted(path: Path) -> str:
    return ".".join(path)


def _line(source: str | None, path: Path) -> int | None:
    """The line of ``path``'s key in the text read (None without a text)."""
    return line_of(source, path) if source is not None else None


def _blocker(doc: Mapping[str, Any], path: Path) -> Path | None:
    """The part of ``path`` whose value is neither an object nor null (None: nothing in the way)."""
    node: Any = doc
    for depth, key in enumerate(path[:-1]):
        node = node.get(key)
        if node is None:
            return None  # missing or null: read as empty, made an object when written into
        if not isinstance(node, dict):
            return path[: depth + 1]
    return None


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"


def container_notes(state: HeartbeatState) -> list[tuple[int | None, str]]:
    """(line, note) for each of :data:`CONTAINERS` the file holds as null (read as empty) or as
    a value that is not an object (nothing in it read or written), in the file's key order."""
    notes: list[tuple[int | None, str]] = []
    if state.placeholder is not None and not state.doc:
        what = "is empty" if state.placeholder == "empty" else f"holds {state.placeholder}"
        notes.append((1, f"the file {what}: read as an empty object (hb replaces it only to write a value)"))
    for name in state.doc:
        if name not in CONTAINERS:
            continue
        value = state.doc[name]
        if value is None:
            note = f"{name} is null: read as an empty object (hb replaces it only to write a value into it)"
        elif not isinstance(value, dict):
            kind = _json_kind(value)
            note = f"{name} is {kind}, not an object: nothing in it is read or written; kept as written"
        else:
            continue
        notes.append((_line(state.source, (name,)), note))
    return notes


def blocked_keys(state: HeartbeatState) -> dict[str, str]:
    """The settings and times hb cannot write into the file (hb key -> the dotted place in the
    way): the file holds them nowhere, and their canonical place is inside a value that is
    neither an object nor null. :func:`with_updates` refuses to write them."""
    blocked: dict[str, str] = {}
    for key, paths in (*SETTING_PATHS.items(), *FACT_PATHS.items()):
        if _find(state.doc, paths) is None:
            blocker = _blocker(state.doc, paths[0])
            if blocker is not None:
                blocked[key] = _dotted(blocker)
    return blocked


def _checked_setting(key: str, value: Any, where: str) -> Any:
    """The value if it fits the setting; InvalidInput naming ``where`` otherwise."""
    if key in _FLAGS:
        if isinstance(value, bool):
            return value
        raise InvalidInput(f"{where}: expected true or false, got {value!r}")
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if key in _COUNTS:
        if is_number and value >= 0 and float(value).is_integer():
            return int(value)
        raise InvalidInput(f"{where}: expected a whole number >= 0, got {value!r}")
    if is_number and math.isfinite(value) and (value > 0 if key in _POSITIVE else value >= 0):
        return value
    bound = "> 0" if key in _POSITIVE else ">= 0"
    raise InvalidInput(f"{where}: expected a number of hours {bound}, got {value!r}")


def _read_time(value: Any, where: str, tz: tzinfo) -> datetime | None:
    """The time a value holds, aware; InvalidInput naming ``where`` for one hb cannot read, a
    time outside the dates hb reads (:data:`heartbeat.formats.timestamps.EARLIEST` ..) too."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:  # dividing an integer past a float's range (a 400-digit one) overflows as well
            seconds = value / 1000 if abs(value) >= _EPOCH_MS_FROM else value
            moment = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise InvalidInput(f"{where}: {value!r} is not a usable epoch time") from None
        if not in_range(moment):
            raise InvalidInput(f"{where}: {value!r} is not a usable epoch time: it {OUT_OF_RANGE}")
        return moment
    if isinstance(value, str):
        try:
            return read_timestamp(value)
        except OutOfRangeError as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        except ValueError:
            pass
        try:
            local = datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInput(f"{where}: {value!r} is not an ISO 8601 date-time") from None
        if not in_range(local):
            raise InvalidInput(f"{where}: {value!r} {OUT_OF_RANGE}")
        return local if local.tzinfo is not None else local.replace(tzinfo=tz)
    raise InvalidInput(f"{where}: expected an ISO 8601 date-time or epoch seconds, got {value!r}")


# --- updating ---


def with_updates(
    state: HeartbeatState,
    *,
    settings: Mapping[str, Any] = _EMPTY,
    facts: Mapping[str, datetime | None] = _EMPTY,
    tz: tzinfo,
) -> HeartbeatState:
    """A new state with the given settings and times written back where they live.

    A key missing from the file goes to its canonical place (its object is
    created at the end when missing). A value that means the same as the one
    in the file keeps the file's text and type; unknown keys are untouched.
    Times are written ISO 8601 in ``tz``'s offset, or as an epoch number where
    the file held one. A time of None is written as null only where a value
    exists. Raises InvalidInput for an unknown key, a wrong value, a naive
    time, or a place blocked by a value that is neither an object nor null (:class:`NotAnObject`;
    see :func:`blocked_keys`). An object that holds null is read as empty: a value written into
    it replaces the null with an object holding that value.
    """
    doc = _copied(state.doc)
    placeholder = state.placeholder
    for key, value in settings.items():
        if key not in SETTING_PATHS:
            raise InvalidInput(f"{key!r} is not a setting heartbeat-state.json holds")
        _checked_setting(key, value, key)
        _write(doc, SETTING_PATHS[key], value, _same_setting, state.source)
    for key, moment in facts.items():
        if key not in FACT_PATHS:
            raise InvalidInput(f"{key!r} is not a time heartbeat-state.json holds")
        if moment is not None and (moment.tzinfo is None or moment.utcoffset() is None):
            raise InvalidInput(f"{key}: a time to write must carry a timezone")
        found = _find(doc, FACT_PATHS[key])
        if found is None and moment is None:
            continue  # nothing known and nothing written: keep the file as it is
        old = found[1] if found is not None else None
        if found is None or not _same_time(old, moment, tz):
            _write(doc, FACT_PATHS[key], _time_value(moment, old, tz), _never_same, state.source)
    return HeartbeatState(doc=doc, source=state.source, placeholder=placeholder)


def _copied(value: Any) -> Any:
    """A copy of a JSON value, its objects and arrays new ones, made without recursion: a file
    nested as deep as Python's JSON reader goes (about 1,000 levels) is copied too, where
    ``copy.deepcopy`` stops at about 490 (RecursionError)."""
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack = [(value, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            if isinstance(item, dict | list):
                copied: Any = {} if isinstance(item, dict) else []
                stack.append((item, copied))
            else:
                copied = item
            if isinstance(target, dict):
                target[key] = copied
            else:
                target.append(copied)
    return root


def _write(
    doc: dict[str, Any],
    paths: tuple[Path, ...],
    value: Any,
    same: Callable[[Any, Any], bool],
    source: str | None,
) -> None:
    """Set the value where it lives (else at the canonical path), unless ``same`` says it is.
    An object on the way that is missing or null becomes one (a null keeps its place)."""
    found = _find(doc, paths)
    path = found[0] if found is not None else paths[0]
    if found is not None and same(found[1], value):
        return
    blocker = _blocker(doc, path)
    if blocker is not None:
        message = f"{_dotted(blocker)} is not an object: cannot write {_dotted(path)}"
        raise NotAnObject(message, _line(source, blocker))
    node = doc
    for key in path[:-1]:
        if node.get(key) is None:
            node[key] = {}
        node = node[key]
    node[path[-1]] = value


def _never_same(_old: Any, _new: Any) -> bool:
    return False


def _same_setting(old: Any, new: Any) -> bool:
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is type(new) and old == new
    return isinstance(old, int | float) and old == new


def _same_time(old: Any, new: datetime | None, tz: tzinfo) -> bool:
    if new is None:
        return old is None
    try:
        return _read_time(old, "", tz) == new
    except InvalidInput:
        return False


def _time_value(moment: datetime | None, old: Any, tz: tzinfo) -> Any:
    """The JSON value for a time: the old epoch kind if it was a number, else ISO in ``tz``."""
    if moment is None:
        return None
    if isinstance(old, int | float) and not isinstance(old, bool):
        seconds = moment.timestamp()
        if abs(old) >= _EPOCH_MS_FROM:
            return round(seconds * 1000)
        return seconds if isinstance(old, float) else math.floor(seconds)
    return moment.astimezone(tz).isoformat()


# --- rendering ---


def render(state: HeartbeatState) -> str:
    """The file text: the source unchanged when the document is, else edited in place.

    Values that did not change keep their text; changed ones are replaced where they stand
    (:func:`heartbeat.formats.json_edit.edit`). A state built without a source renders as
    ``json.dumps(indent=2)`` plus a newline, and so does one read from a file that held no value
    (see :func:`parse`) once it holds something; until then that file stays as it is.
    """
    from heartbeat.formats.json_edit import edit

    if state.placeholder is not None and state.source is not None:
        if not state.doc:
            return state.source  # still nothing to hold: the file stays as it is
        bom = _BOM if state.source.startswith(_BOM) else ""
        return bom + edit(None, state.doc)  # an object in place of the file's empty value
    return edit(state.source, state.doc)
