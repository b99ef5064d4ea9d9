"""Reporting: the SQL views' catalogue, the report queries, read-only SQL, output formats."""
