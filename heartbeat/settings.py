"""Workspace settings: the keys of SPEC.md section 2.1, typed and validated.

Values are stored as JSON in the ``settings`` table; only keys that were set
are stored, the rest take the defaults below. ``hb config set KEY VALUE``
reads VALUE from text with :func:`parse_value`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from heartbeat.errors import InvalidInput, NotFound


class Settings(BaseModel):
    """Every setting with its default. Attribute names are the keys with ``.`` -> ``_``."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    timezone: str | None = Field(None, description="IANA zone; unset = the machine's zone")
    quiet_hours: str = Field(
        "23:00-08:00", description="HH:MM-HH:MM, workspace time; start == end = never quiet"
    )
    reminder_repeat_hours: float = Field(
        6, gt=0, description="no second reminder for a task within this window"
    )
    proactive_enabled: bool = Field(False, description="proactive chat on/off")
    proactive_max_per_day: int = Field(1, ge=0, description="proactive messages per local day")
    proactive_min_hours_between: float = Field(12, ge=0, description="hours between proactive messages")
    proactive_min_hours_since_conversation: float = Field(
        4, ge=0, description="quiet time after the user spoke"
    )
    queue_lease: str = Field("30m", description="how long a pop holds a task before it is stale")
    queue_max_attempts: int = Field(3, ge=1, description="tries before a failing task becomes failed")
    todo_dialect: str = Field("strict", description="strict | extended (ids and cron in TODO files)")
    sync_auto_export: bool = Field(False, description="re-render tasks.json & co after each queue operation")
    recur_materialize: bool = Field(
        False, description="hb heartbeat copies due TODO.RECUR.md entries into TODO.md"
    )
    lang: str = Field("en", description="message language: en | zh")
    check_interval: str = Field("1h", description="the heartbeat interval: todoWatch.nextScanAt = now + this")
    heartbeat_guard: str = Field("10m", description="a heartbeat guard older than this is taken as abandoned")
    hygiene_enabled: bool = Field(False, description="memory hygiene reminders")
    hygiene_every_hours: float = Field(24, gt=0, description="memory hygiene interval")

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from heartbeat.clock import load_zone

        try:
            return load_zone(value).key
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None

    @field_validator("quiet_hours")
    @classmethod
    def _quiet(cls, value: str) -> str:
        from heartbeat.rules.quiet_hours import QuietHours

        try:
            QuietHours.parse(value)
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("queue_lease", "check_interval", "heartbeat_guard")
    @classmethod
    def _duration(cls, value: str) -> str:
        from heartbeat.clock import parse_duration

        try:
            parse_duration(value)
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("todo_dialect")
    @classmethod
    def _dialect(cls, value: str) -> str:
        if value not in ("strict", "extended"):
            raise ValueError("expected strict or extended")
        return value

    @field_validator("lang")
    @classmethod
    def _lang(cls, value: str) -> str:
        if value not in ("en", "zh"):
            raise ValueError("expected en or zh")
        return value


@dataclass(frozen=True)
class Key:
    name: str  # as users type it: "proactive.max_per_day"
    field: str  # the Settings attribute
    description: str
    default: Any


def _keys() -> dict[str, Key]:
    out: dict[str, Key] = {}
    for field, info in Settings.model_fields.items():
        name = field
        for prefix in ("reminder", "proactive", "queue", "todo", "sync", "recur", "heartbeat", "hygiene"):
            if field.startswith(prefix + "_"):
                name = prefix + "." + field[len(prefix) + 1 :]
                break
        out[name] = Key(name, field, info.description or "", info.default)
    return out


KEYS: dict[str, Key] = _keys()


def key(name: str) -> Key:
    """The setting called ``name``; NotFound lists the known keys."""
    try:
        return KEYS[name]
    except KeyError:
        raise NotFound(f"unknown setting {name!r} (known: {', '.join(KEYS)})") from None


def parse_value(name: str, text: str) -> Any:
    """Read a value typed on the command line for setting ``name``, validated."""
    k = key(name)
    annotation = Settings.model_fields[k.field].annotation
    value: Any = text
    if text.strip().lower() in ("null", "none", "unset") and k.default is None:
        value = None
    elif annotation in (bool,):
        low = text.strip().lower()
        if low in ("true", "yes", "on", "1"):
            value = True
        elif low in ("false", "no", "off", "0"):
            value = False
        else:
            raise InvalidInput(f"setting {name}: expected true or false, got {text!r}")
    elif annotation in (int, float):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise InvalidInput(f"setting {name}: expected a number, got {text!r}") from None
    return validate(name, value)


def validate(name: str, value: Any) -> Any:
    """Check one value against its setting's type; InvalidInput with the reason."""
    k = key(name)
    try:
        model = Settings.model_validate({k.field: value})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidInput(f"setting {name}: {first['msg']} (got {value!r})") from None
    return getattr(model, k.field)


def build(stored: dict[str, Any]) -> Settings:
    """Settings from the stored ``{key: value}`` rows, defaults for the rest."""
    values = {KEYS[name].field: value for name, value in stored.items() if name in KEYS}
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidInput(f"stored setting {first['loc'][0]}: {first['msg']}") from None


def as_dict(settings: Settings) -> dict[str, Any]:
    """``{key: value}`` for every setting."""
    return {name: getattr(settings, k.field) for name, k in KEYS.items()}
