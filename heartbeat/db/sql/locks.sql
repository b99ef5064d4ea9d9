-- Turns: PostgreSQL transactions of one kind run one at a time (SQLite's write lock already does it).

-- name: take_turn_pg
-- Lock the row named :name of locks until the transaction ends, making it first if need be. A row
-- lock needs UPDATE on the table, which hb_reader does not have (an advisory lock was open to it).
INSERT INTO locks (name) VALUES (:name)
ON CONFLICT (name) DO UPDATE SET name = excluded.name
