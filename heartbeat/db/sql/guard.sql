-- The workspace guard of hb heartbeat and hb poke: a runs row whose guard column (UNIQUE) holds it.

-- name: holder
-- The runs row holding the guard, if any (expired or not).
SELECT * FROM runs WHERE guard = :guard

-- name: holder_locked
-- The same, the row locked for the write transaction that may take it over (PostgreSQL).
SELECT * FROM runs WHERE guard = :guard{for_update}

-- name: renew
-- A renewal: the row still held by this run gets a new expiry (nothing, once it was taken over).
UPDATE runs SET expires_at = :until WHERE pk = :pk AND guard = :guard
