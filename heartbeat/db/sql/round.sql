-- The heartbeat round: hb due, check, notify, proactive, seen, hygiene done.

-- name: entering
-- Active tasks that may enter the round at :now (the rules decide), in queue order: the columns
-- the round reads.
SELECT pk, id, scope, title, status, priority, risk, due_at, next_check_at, last_update_at, created_at,
       last_checked_at, check_interval, stale_after, blocker, next_action, fallback_action,
       last_progress_note, follow_up, attempts, not_before
FROM tasks
WHERE status IN ('todo', 'doing', 'waiting', 'blocked', 'snoozed')
  AND (next_check_at <= :now OR due_at < :now OR stale_after IS NOT NULL)
ORDER BY scope, priority_rank, position, pk

-- name: entering_locked
-- The same, the rows locked for the round's write transaction (PostgreSQL).
SELECT pk, id, scope, title, status, priority, risk, due_at, next_check_at, last_update_at, created_at,
       last_checked_at, check_interval, stale_after, blocker, next_action, fallback_action,
       last_progress_note, follow_up, attempts, not_before
FROM tasks
WHERE status IN ('todo', 'doing', 'waiting', 'blocked', 'snoozed')
  AND (next_check_at <= :now OR due_at < :now OR stale_after IS NOT NULL)
ORDER BY scope, priority_rank, position, pk{for_update}

-- name: failed_recently
-- Of these tasks, those with an error recorded after their last successful outcome.
SELECT e.task_pk
FROM (SELECT task_pk, max(at) AS at FROM errors WHERE task_pk IN {ints:pks} GROUP BY task_pk) e
LEFT JOIN (
    SELECT task_pk, max(completed_at) AS at FROM outcomes
    WHERE task_pk IN {ints:pks} AND success
    GROUP BY task_pk
) o ON o.task_pk = e.task_pk
WHERE o.at IS NULL OR e.at > o.at

-- name: reminders_sent_since
-- The reminders sent between :since and :until (the repeat window either side of now: one
-- recorded later than now, the clock set back since, holds back no longer), oldest first.
SELECT task_pk, at, risk, blocker FROM notifications
WHERE kind = 'reminder' AND decision = 'sent' AND at > :since AND at < :until
ORDER BY at, pk

-- name: last_hygiene
-- When memory hygiene was last done.
SELECT max(started_at) FROM runs WHERE kind = 'hygiene'

-- name: proactive_state
-- Proactive messages sent on the local day from :day_start up to :day_end (the instants that day
-- begins and ends in the workspace's zone now: a message stored with the day of a zone the
-- workspace had then counts for the day it was sent on here), the last one sent, the last
-- conversation.
SELECT
    (SELECT count(*) FROM notifications
     WHERE kind = 'proactive' AND decision = 'sent' AND at >= :day_start AND at < :day_end),
    (SELECT max(at) FROM notifications WHERE kind = 'proactive' AND decision = 'sent'),
    (SELECT max(started_at) FROM runs WHERE kind = 'seen')

-- name: checked
-- A round's bookkeeping on a task it checked (no history event, no version, no updated_at).
UPDATE tasks SET last_checked_at = :last_checked_at, next_check_at = :next_check_at WHERE pk = :pk
