"""Ledger operations for reporting: hb report and read-only hb sql (SPEC.md section 8)."""

from __future__ import annotations


class ReportAPI:
    """Mixed into :class:`heartbeat.Ledger`; each method is one transaction."""
