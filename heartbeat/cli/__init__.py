"""The ``hb`` command: click commands that parse, call the Ledger, and render."""
