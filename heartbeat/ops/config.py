"""Settings: hb config get / list / set / unset (SPEC.md section 2), one transaction each."""

from __future__ import annotations

import json
from typing import Any

from heartbeat import settings as settings_mod
from heartbeat.clock import machine_zone_name
from heartbeat.context import Context
from heartbeat.db.store import statements


def _effective(values: dict[str, Any]) -> dict[str, Any]:
    if values.get("timezone") is None:
        values["timezone"] = machine_zone_name()
    return values


def get(ctx: Context, key: str) -> Any:
    """A setting's value; an unset ``timezone`` reads as the machine's zone it stands for."""
    settings_mod.key(key)
    return _effective(settings_mod.as_dict(ctx.settings))[key]


def listed(ctx: Context) -> dict[str, dict[str, Any]]:
    """Every setting: value, default, whether it was set, description."""
    values = _effective(settings_mod.as_dict(ctx.settings))
    with ctx.read() as db:
        stored = {key for (key,) in db.rows(statements("settings").stored_keys)}
    return {
        name: {
            "value": values[name],
            "default": k.default,
            "set": name in stored,
            "description": k.description,
        }
        for name, k in settings_mod.KEYS.items()
    }


def store(ctx: Context, key: str, value: Any, *, from_text: bool = True) -> Any:
    """Validate and store a setting; the stored value."""
    checked = (
        settings_mod.parse_value(key, value)
        if from_text and isinstance(value, str)
        else settings_mod.validate(key, value)
    )
    now = ctx.now()
    with ctx.write() as db:
        params = {"key": key, "value": json.dumps(checked), "updated_at": db.time(now)}
        db.execute(statements("settings").store, params)
    ctx.forget_settings()
    return checked


def unset(ctx: Context, key: str) -> None:
    """Remove a setting, so that its default applies again (NotFound for an unknown key)."""
    settings_mod.key(key)
    with ctx.write() as db:
        db.execute(statements("settings").remove, {"key": key})
    ctx.forget_settings()
