"""Exact drop-ins for the runtimes' own scripts, running over the ledger.

:mod:`heartbeat.compat.heartbeat_py` is the claude-skills heartbeat skill's
``scripts/heartbeat.py``: the same arguments, stdout, exit codes and files,
with hb's transactions underneath (``hb compat heartbeat-py`` and the
``heartbeat-py`` command).
"""
