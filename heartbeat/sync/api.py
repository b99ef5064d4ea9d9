"""Ledger operations for hb sync and the Markdown TODO files (SPEC.md section 4)."""

from __future__ import annotations


class SyncAPI:
    """Mixed into :class:`heartbeat.Ledger`; each method is one transaction."""
