-- memory/heartbeat-state.json: the settings and facts hb import / export / sync state read and write.

-- name: settings
-- Every setting that was set, with its value and when it was set.
SELECT * FROM settings ORDER BY key

-- name: latest_run
-- When the newest run of a kind started (seen: the user spoke; hygiene: memory hygiene ran).
SELECT max(started_at) FROM runs WHERE kind = :kind

-- name: last_proactive
-- When the newest proactive message was sent.
SELECT max(at) FROM notifications WHERE kind = 'proactive' AND decision = 'sent'

-- name: last_check
-- The newest check run (hb check's round, or an imported todoWatch watermark).
SELECT * FROM runs WHERE kind = 'check' ORDER BY started_at DESC, pk DESC LIMIT 1
