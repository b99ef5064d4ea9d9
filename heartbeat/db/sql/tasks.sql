-- Tasks: the statements behind hb add / list / show / update / done / cancel.

-- name: task_pk_in_scope
-- Whether a public id is taken in a scope.
SELECT pk FROM tasks WHERE scope = :scope AND id = :id

-- name: last_position
-- The last queue position of a scope (a new task goes after it).
SELECT max(position) FROM tasks WHERE scope = :scope

-- name: by_key
-- The task added with an idempotency key in a scope, whatever its status.
SELECT * FROM tasks WHERE scope = :scope AND idempotency_key = :key LIMIT 1

-- name: in_scope
-- A task by its public id in one scope.
SELECT * FROM tasks WHERE scope = :scope AND id = :id LIMIT 1

-- name: find
-- At most three tasks with a public id (more than one: the id needs a scope).
SELECT * FROM tasks WHERE id = :id ORDER BY pk LIMIT 3

-- name: find_locked
-- The same, the rows locked for the write transaction (PostgreSQL).
SELECT * FROM tasks WHERE id = :id ORDER BY pk LIMIT 3{for_update}

-- name: find_in_scope
-- A task by its public id in one scope.
SELECT * FROM tasks WHERE id = :id AND scope = :scope ORDER BY pk LIMIT 3

-- name: find_in_scope_locked
-- The same, the row locked for the write transaction (PostgreSQL).
SELECT * FROM tasks WHERE id = :id AND scope = :scope ORDER BY pk LIMIT 3{for_update}

-- name: dependencies
-- The ids each of these tasks waits for, in the order they were added.
SELECT d.task_pk, t.id
FROM task_dependencies d JOIN tasks t ON t.pk = d.depends_on_pk
WHERE d.task_pk IN {ints:pks}
ORDER BY d.task_pk, t.pk

-- name: awaited
-- What one task waits for (pks).
SELECT depends_on_pk FROM task_dependencies WHERE task_pk = :pk

-- name: dependency_edges
-- The dependency edges leaving these tasks (a cycle check walks them).
SELECT task_pk, depends_on_pk FROM task_dependencies WHERE task_pk IN {ints:pks}

-- name: ids_of
-- Public ids by pk.
SELECT pk, id FROM tasks WHERE pk IN {ints:pks}

-- name: clear_dependencies
-- A task waits for nothing.
DELETE FROM task_dependencies WHERE task_pk = :pk

-- name: list
-- Tasks by the list filters (a NULL text filter is off; :all_statuses = 1 or :any_due = 1 turn
-- the status and due filters off).
SELECT * FROM tasks
WHERE (:all_statuses = 1 OR status IN {texts:statuses})
  AND (CAST(:scope AS text) IS NULL OR scope = :scope)
  AND (CAST(:source AS text) IS NULL OR source = :source)
  AND (CAST(:pattern AS text) IS NULL OR {lower}(title) LIKE {lower}(CAST(:pattern AS text)) ESCAPE '\' OR {lower}(id) LIKE {lower}(CAST(:pattern AS text)) ESCAPE '\')
  AND (:any_due = 1 OR (due_at IS NOT NULL AND due_at < :due_before))
ORDER BY scope, priority_rank, position, pk
LIMIT :limit

-- name: history
-- A task's history, oldest first.
SELECT * FROM task_events WHERE task_pk = :pk ORDER BY pk
