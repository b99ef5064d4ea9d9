"""tasks.json, errors.json and last-run.json <-> the ledger (FORMATS.md section 2).

The files are views of the ledger: import reads them into rows in one
transaction (all or nothing); export renders rows back through
:mod:`heartbeat.formats.tasks_json`, which keeps every field, key order and
metadata list it did not change.

The package, each module importing only those above it:

- :mod:`.base`: what hb knows of each file (the text it last read or wrote, the stamp of the
  tasks that text was rendered from), and the checks a text is held to before it is stored;
- :mod:`.tasks`: tasks.json's tasks as rows (the bulk import, the whole render);
- :mod:`.logs`: errors.json and last-run.json (import, render, two-way sync);
- :mod:`.merge`: tasks.json's three-way merge, record by record;
- :mod:`.targeted`: the sync of a few changed records, reading only those;
- :mod:`.syncing`: ``hb sync`` of tasks.json, and each kind's importer, renderer and syncer;
- :mod:`.export`: the files after a queue operation (``sync.auto_export``), and ``hb export``'s
  check before it writes over one.
"""

from heartbeat.ops.sync.queue_files.base import SOURCE, SQL, last_document, remember
from heartbeat.ops.sync.queue_files.export import (
    STALE_COPY_TEXT_MAX,
    check_export_target,
    export_queue_files,
    known_digest,
)
from heartbeat.ops.sync.queue_files.syncing import IMPORTERS, RENDERERS, SYNCERS, sync_tasks
from heartbeat.ops.sync.queue_files.tasks import EVENT_COLUMNS, FRESH_COLUMNS
from heartbeat.ops.sync.report import sync_notices

__all__ = [
    "EVENT_COLUMNS",
    "FRESH_COLUMNS",
    "IMPORTERS",
    "RENDERERS",
    "SOURCE",
    "SQL",
    "STALE_COPY_TEXT_MAX",
    "SYNCERS",
    "check_export_target",
    "export_queue_files",
    "known_digest",
    "last_document",
    "remember",
    "sync_notices",
    "sync_tasks",
]
