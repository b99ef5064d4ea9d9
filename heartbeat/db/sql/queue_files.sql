-- Queue files: tasks.json, errors.json and last-run.json <-> the ledger (hb import / export / sync,
-- and the export a queue operation runs after its commit with sync.auto_export).

-- name: tasks_json_tasks
-- The tasks tasks.json shows: every queue task (the Markdown TODO entries have their own files).
SELECT * FROM tasks WHERE scope <> '' OR source <> 'todo'

-- name: tasks_json_tasks_in_order
-- The same, in the file's order: by queue, then place in it.
SELECT * FROM tasks WHERE scope <> '' OR source <> 'todo' ORDER BY scope, position, pk

-- name: tasks_json_places
-- Where each task tasks.json shows is, and what its status and blocker are (a sync that reads only
-- the records changed in the file places the others without loading their rows).
SELECT pk, scope, id, position, status, blocked_by FROM tasks WHERE scope <> '' OR source <> 'todo'

-- name: tasks_json_tasks_by_pk
-- The tasks tasks.json shows with these pks.
SELECT * FROM tasks WHERE pk IN {ints:pks} AND (scope <> '' OR source <> 'todo')

-- name: set_task_position
-- A task's place in its queue, as the file has it (bookkeeping: no new version).
UPDATE tasks SET position = :position WHERE pk = :pk

-- name: shift_task_positions
-- Tasks shifted alike in their queue (a pop or an add by heartbeat.py moves those after it by one).
UPDATE tasks SET position = position + :shift WHERE pk IN {ints:pks}

-- name: legacy_list_tasks
-- The queue tasks of the legacy lists (pending, in_progress, ...), whose place a file edit may move.
SELECT * FROM tasks WHERE scope = '' AND source <> 'todo'

-- name: legacy_task_pks
-- The ids and pks of the legacy lists' tasks (an errors.json item names its task by id).
SELECT id, pk FROM tasks WHERE scope = ''

-- name: errors
-- Every failure, in the order errors.json lists them.
SELECT * FROM errors ORDER BY pk

-- name: any_error
-- Whether the ledger holds a failure.
SELECT pk FROM errors LIMIT 1

-- name: last_task_pk
-- The highest task pk (SQLite numbers a new row after it; hb tasks.json import numbers its own).
SELECT max(pk) FROM tasks

-- name: next_task_pks_pg
-- PostgreSQL: :n pks for new tasks, from the table's sequence.
SELECT nextval(pg_get_serial_sequence('tasks', 'pk')) FROM generate_series(1, CAST(:n AS integer))

-- name: tasks_json_task
-- One task tasks.json shows, by queue and id (an export rewrites the few a queue operation moved).
SELECT * FROM tasks WHERE scope = :scope AND id = :id AND (scope <> '' OR source <> 'todo')

-- name: tasks_json_stamp
-- What tasks.json's tasks are at a moment: how many, and their versions summed plainly and by pk.
-- Every change of a task adds one to its version, so an export that knows which tasks its queue
-- operation changed can tell whether anything else changed since hb last rendered the file.
SELECT count(*), coalesce(sum(version), 0), coalesce(sum(pk * version), 0)
FROM tasks WHERE scope <> '' OR source <> 'todo'
