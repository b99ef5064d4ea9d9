"""Workspace settings: the keys of SPEC.md section 2.1, typed and validated.

Values are stored as JSON in the ``settings`` table; only keys that were set
are stored, the rest take the defaults below. What is stored was validated on
the way in (pydantic, at the edge: ``hb config set`` and state imports), so
reading settings back is a plain dataclass with no validation cost — the
queue's hot path reads them on every ``hb pop``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import operator
import typing
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from heartbeat.errors import InvalidInput, NotFound, quoted
from heartbeat.formats.timestamps import MAX_DURATION

# Hour settings stop where durations do (100 years): a time that far ahead is still a date.
_HOURS = int(MAX_DURATION / timedelta(hours=1))


def _opt(default: Any, help: str, **limits: Any) -> Any:
    return field(default=default, metadata={"help": help, "limits": limits})


@dataclass(frozen=True)
class Settings:
    """Every setting with its default. Attribute names are the keys with ``.`` -> ``_``."""

    timezone: str | None = _opt(None, "IANA zone; unset = the machine's zone")
    quiet_hours: str = _opt("23:00-08:00", "HH:MM-HH:MM, workspace time; off (or start == end) = never quiet")
    reminder_repeat_hours: float = _opt(
        6.0, "no second reminder for a task within this window", gt=0, le=_HOURS
    )
    proactive_enabled: bool = _opt(False, "proactive chat on/off")
    proactive_max_per_day: int = _opt(1, "proactive messages per local day", ge=0, le=1_000_000)
    proactive_min_hours_between: float = _opt(12.0, "hours between proactive messages", ge=0, le=_HOURS)
    proactive_min_hours_since_conversation: float = _opt(
        4.0, "quiet time after the user spoke", ge=0, le=_HOURS
    )
    queue_lease: str = _opt("30m", "how long a pop holds a task before it is stale")
    queue_max_attempts: int = _opt(3, "tries before a failing task becomes failed", ge=1, le=1_000_000)
    todo_dialect: str = _opt("strict", "strict | extended (ids and cron in TODO files)")
    sync_auto_export: bool = _opt(
        False, "re-render tasks.json & co after each queue operation, the recurrence files after recur ones"
    )
    recur_materialize: bool = _opt(False, "hb heartbeat copies due TODO.RECUR.md entries into TODO.md")
    lang: str = _opt("en", "message language: en | zh")
    check_interval: str = _opt("1h", "the heartbeat interval: todoWatch.nextScanAt = now + this")
    heartbeat_guard: str = _opt("10m", "a heartbeat guard older than this is taken as abandoned")
    hygiene_enabled: bool = _opt(False, "memory hygiene reminders")
    hygiene_every_hours: float = _opt(24.0, "memory hygiene interval", gt=0, le=_HOURS)
    sql_timeout: str = _opt("30s", "hb sql cancels a query still running after this")
    sync_lock_timeout: str = _opt("30s", "how long to wait for another process's workspace file lock")


_PREFIXES = ("reminder", "proactive", "queue", "todo", "sync", "recur", "heartbeat", "hygiene", "sql")


@dataclass(frozen=True)
class Key:
    name: str  # as users type it: "proactive.max_per_day"
    field: str  # the Settings attribute
    description: str
    default: Any


def _keys() -> dict[str, Key]:
    out: dict[str, Key] = {}
    for f in dataclasses.fields(Settings):
        name = f.name
        for prefix in _PREFIXES:
            if f.name.startswith(prefix + "_"):
                name = prefix + "." + f.name[len(prefix) + 1 :]
                break
        out[name] = Key(name, f.name, f.metadata["help"], f.default)
    return out


KEYS: dict[str, Key] = _keys()
_BY_FIELD = {k.field: k for k in KEYS.values()}


def key(name: str) -> Key:
    """The setting called ``name``; NotFound lists the known keys."""
    try:
        return KEYS[name]
    except KeyError:
        raise NotFound(f"unknown setting {name!r} (known: {', '.join(KEYS)})") from None


def _check_zone(value: str | None) -> str | None:
    if value is None:
        return None
    from heartbeat.clock import load_zone

    try:
        return load_zone(value).key
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None


def _check_quiet(value: str) -> str:
    """The setting refuses a blank value: QuietHours.parse reads blank as "no window", but an
    empty ``hb config set quiet_hours "$UNSET"`` must not switch night silence off."""
    from heartbeat.rules.quiet_hours import QuietHours

    if not value.strip():
        raise ValueError("empty value; use off to turn quiet hours off")
    try:
        window = QuietHours.parse(value)
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None
    return "off" if window is None else window.render()  # stored as read back: 23:00-8:00 -> 23:00-08:00


def _check_duration(value: str) -> str:
    from heartbeat.clock import parse_duration

    try:
        parse_duration(value)
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None
    return value


def _one_of(*allowed: str) -> Any:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"expected {' or '.join(allowed)}")
        return value

    return check


_CHECKS: dict[str, Any] = {
    "timezone": _check_zone,
    "quiet_hours": _check_quiet,
    "queue_lease": _check_duration,
    "check_interval": _check_duration,
    "heartbeat_guard": _check_duration,
    "sql_timeout": _check_duration,
    "sync_lock_timeout": _check_duration,
    "todo_dialect": _one_of("strict", "extended"),
    "lang": _one_of("en", "zh"),
}


@functools.cache
def _model(name: str) -> Any:
    """The pydantic model that validates the setting whose attribute is ``name`` (built on first
    use, one small model per setting: pydantic at the edge, and only what a set needs)."""
    from pydantic import ConfigDict, Field, create_model, field_validator

    f = next(f for f in dataclasses.fields(Settings) if f.name == name)
    hint = typing.get_type_hints(Settings)[name]
    check = _CHECKS.get(name)
    validators = {} if check is None else {f"check_{name}": field_validator(name)(lambda cls, v: check(v))}
    fields: dict[str, Any] = {name: (hint, Field(f.default, **f.metadata["limits"]))}
    return create_model(
        "SettingsModel",
        __config__=ConfigDict(extra="forbid", strict=False),
        __validators__=validators,
        **fields,
    )


_LIMITS = {"gt": operator.gt, "ge": operator.ge, "lt": operator.lt, "le": operator.le}


@functools.cache
def _kind(name: str) -> Any:
    """The type of the setting whose attribute is ``name`` (``str`` for ``str | None``)."""
    hint = typing.get_type_hints(Settings)[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if len(args) == 1 else hint


def _plain(k: Key, value: Any) -> tuple[bool, Any]:
    """(True, the value as the validator returns it) for a flag, a whole number or hours within
    the setting's limits, or a text its check accepts, which need no pydantic (hb sync and hb
    heartbeat take them from heartbeat-state.json, hb config set from the command line);
    (False, None) for anything else, the refusals included (the validator words them)."""
    kind = _kind(k.field)
    spec = next(f for f in dataclasses.fields(Settings) if f.name == k.field)
    limits = spec.metadata["limits"]
    if kind is str:
        if type(value) is not str or limits:
            return False, None
        check = _CHECKS.get(k.field)
        if check is None:
            return True, value
        try:
            return True, check(value)
        except ValueError:
            return False, None
    if k.field in _CHECKS:
        return False, None
    if kind is bool:
        plain = type(value) is bool
    elif kind is int:
        plain = type(value) is int
    elif kind is float:
        plain = type(value) in (int, float) and math.isfinite(value)
    else:
        return False, None
    if not plain:
        return False, None
    if not all(name in _LIMITS and _LIMITS[name](value, bound) for name, bound in limits.items()):
        return False, None
    return True, float(value) if kind is float else value


def validate(name: str, value: Any) -> Any:
    """Check one value against its setting's type; InvalidInput with the reason."""
    k = key(name)
    plain, checked = _plain(k, value)
    if plain:
        return checked
    return _validated(name, k, value)


def _validated(name: str, k: Key, value: Any) -> Any:
    """:func:`validate` by the setting's pydantic model."""
    from pydantic import ValidationError

    try:
        model = _model(k.field).model_validate({k.field: value})
    except ValidationError as exc:
        first = exc.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        shown = repr(value)
        got = "" if shown in message else f" (got {_clipped(shown)})"  # the reason may quote it already
        raise InvalidInput(f"setting {name}: {message}{got}") from None
    return getattr(model, k.field)


def _clipped(shown: str, width: int = 40) -> str:
    """A value as a message quotes it: ``1e308`` read as a whole number is 309 digits."""
    return shown if len(shown) <= width else f"{shown[: width - 12]}... ({len(shown)} characters)"


def parse_value(name: str, text: str) -> Any:
    """Read a value typed on the command line for setting ``name``, validated."""
    k = key(name)
    kind = typing.get_type_hints(Settings)[k.field]
    value: Any = text
    if text.strip().lower() in ("null", "none", "unset") and k.default is None:
        value = None
    elif kind is bool:
        low = text.strip().lower()
        if low in ("true", "yes", "on", "1"):
            value = True
        elif low in ("false", "no", "off", "0"):
            value = False
        else:
            raise InvalidInput(f"setting {name}: expected true or false, got {text!r}")
    elif kind in (int, float):
        try:
            value = json.loads(text)
        except ValueError:  # not JSON, or past int()'s 4,300 digits
            raise InvalidInput(f"setting {name}: expected a number, got {quoted(text)}") from None
    return validate(name, value)


def build(stored: dict[str, Any]) -> Settings:
    """Settings from the stored ``{key: value}`` rows, defaults for the rest.

    The values were validated when stored, but the table is a file anyone can edit: each is
    checked again as it is read (:func:`_plain`, no pydantic for a value hb stored), and one
    that is not a value of its setting is InvalidInput naming it and the command that mends it."""
    values: dict[str, Any] = {}
    for name, value in stored.items():
        k = KEYS.get(name)
        if k is not None:
            values[k.field] = stored_value(name, value)
    return Settings(**values)


def stored_value(name: str, value: Any) -> Any:
    """The value of setting ``name`` as read from the settings table (see :func:`build`)."""
    k = KEYS[name]
    if value is None and k.default is None:
        return None
    plain, checked = _plain(k, value)
    if plain:
        return checked
    try:
        return _validated(name, k, value)
    except InvalidInput as exc:
        raise InvalidInput(f"{_TABLE}{exc.message}; {_MEND.format(name=name)}") from None


_TABLE = "the ledger's settings table: "
_MEND = "`hb config set {name} VALUE` or `hb config unset {name}` mends it"


def decoded(name: str, text: str) -> Any:
    """A value of the settings table as SQLite keeps it (JSON text); InvalidInput naming the
    setting for text that is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        raise InvalidInput(
            f"{_TABLE}setting {name}: {text!r} is not JSON; {_MEND.format(name=name)}"
        ) from None


def as_dict(settings: Settings) -> dict[str, Any]:
    """``{key: value}`` for every setting."""
    return {name: getattr(settings, k.field) for name, k in KEYS.items()}
