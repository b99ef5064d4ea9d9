-- Recurrences: hb recur list / due / add / update / remove / materialize / outcome / evaluate.

-- name: list
-- Every recurrence (of one source when :source is given), repeat rules first, each in file order.
SELECT * FROM recurrences
WHERE CAST(:source AS text) IS NULL OR source = :source
ORDER BY CASE WHEN source = 'proactive' THEN 1 ELSE 0 END, position, pk

-- name: find
-- A recurrence by its id.
SELECT * FROM recurrences WHERE id = :id

-- name: find_locked
-- The same, the row locked for the write transaction (PostgreSQL).
SELECT * FROM recurrences WHERE id = :id{for_update}

-- name: id_taken
-- Whether a recurrence id is taken.
SELECT pk FROM recurrences WHERE id = :id

-- name: due
-- The enabled rules that may be due: every PROACTIVE.md task, and repeat rules whose Next is before
-- :horizon (now and the slack a changed workspace zone may need), in file order.
SELECT * FROM recurrences
WHERE enabled = true AND (source = 'proactive' OR next_at <= :horizon)
ORDER BY position, pk

-- name: due_locked
-- The same, the rows locked for the write transaction that hands them out (PostgreSQL).
SELECT * FROM recurrences
WHERE enabled = true AND (source = 'proactive' OR next_at <= :horizon)
ORDER BY position, pk{for_update}

-- name: last_seen
-- When the user last spoke (hb seen).
SELECT max(started_at) FROM runs WHERE kind = 'seen'

-- name: first_repeat_position
-- The first file position of the repeat rules (TODO.RECUR.md entries and hb recur add rules).
SELECT min(position) FROM recurrences WHERE source IN ('recur', 'cli')

-- name: to_materialize
-- The enabled repeat rules whose Next is before :horizon, in file order.
SELECT * FROM recurrences
WHERE enabled = true AND source IN ('recur', 'cli') AND next_at <= :horizon
ORDER BY position, pk

-- name: to_materialize_locked
-- The same, the rows locked for the write transaction that moves their Next (PostgreSQL).
SELECT * FROM recurrences
WHERE enabled = true AND source IN ('recur', 'cli') AND next_at <= :horizon
ORDER BY position, pk{for_update}

-- name: first_todo_position
-- The first position of TODO.md's tasks (a materialised entry goes above it).
SELECT min(position) FROM tasks WHERE source = 'todo'

-- name: todo_id_taken
-- Whether a TODO.md task id is taken (TODO.md tasks live in the legacy queue, scope '').
SELECT pk FROM tasks WHERE scope = '' AND id = :id
