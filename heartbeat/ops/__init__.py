"""hb's operations: each a function of a :class:`heartbeat.context.Context`, one transaction each.

The :class:`heartbeat.Ledger` is their facade; nothing here imports it.
"""
