"""Ledger operations for recurrences and proactive tasks (SPEC.md section 6)."""

from __future__ import annotations


class RecurAPI:
    """Mixed into :class:`heartbeat.Ledger`; each method is one transaction."""
