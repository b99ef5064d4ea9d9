"""CLI commands (filled in by the feature that owns them)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
