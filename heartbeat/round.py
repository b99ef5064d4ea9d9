"""Ledger operations for the heartbeat round, hb heartbeat and hb poke (SPEC.md sections 5 and 7)."""

from __future__ import annotations


class RoundAPI:
    """Mixed into :class:`heartbeat.Ledger`; each method is one transaction."""
