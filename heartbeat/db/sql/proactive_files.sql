-- PROACTIVE.md: the tasks (recurrences of source proactive) and the outcomes hb writes into the file.

-- name: newest_outcomes
-- The newest :limit outcomes recorded for a recurrence, newest first.
SELECT * FROM outcomes WHERE recurrence_pk = :recurrence_pk ORDER BY pk DESC LIMIT :limit
