"""hb's named SQL statements, one file per area (see :mod:`heartbeat.db.store`)."""
