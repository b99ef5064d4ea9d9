"""Files <-> ledger: import, export and two-way sync of the workspace files."""
