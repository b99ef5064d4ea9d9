-- Workspace settings: hb config list / set / unset (only keys that were set are stored).

-- name: stored_keys
-- The keys that were set.
SELECT key FROM settings

-- name: store
-- Set a key to a (validated) value, whether it was set before or not.
INSERT INTO settings (key, value, updated_at) VALUES (:key, {json:value}, :updated_at)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at

-- name: remove
-- Unset a key: its default applies again.
DELETE FROM settings WHERE key = :key
