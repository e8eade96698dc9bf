-- 0010: the ticket state 'cancelled' (an operator's cancel, issue 46), and
-- the name a dashboard session signed in with (its writes record it).
--
-- SQLite cannot change a CHECK constraint in place: the tickets table is
-- built again (SQLite's twelve-step procedure), under foreign_keys = OFF,
-- which the migration runner sets around every migration, so that the drop
-- of the old table touches neither ticket_labels nor leases, which refer
-- to tickets by id. seq values and the AUTOINCREMENT counter are kept.
CREATE TABLE tickets_new (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT    NOT NULL UNIQUE,
    title      TEXT    NOT NULL DEFAULT '',
    state      TEXT    NOT NULL CHECK (state IN ('open', 'claimed', 'completed', 'cancelled')),
    epoch      INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
INSERT INTO tickets_new (seq, id, title, state, epoch, created_at, updated_at)
    SELECT seq, id, title, state, epoch, created_at, updated_at FROM tickets;
DELETE FROM sqlite_sequence WHERE name = 'tickets_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'tickets_new', seq FROM sqlite_sequence WHERE name = 'tickets';
DROP TABLE tickets;
ALTER TABLE tickets_new RENAME TO tickets;
CREATE INDEX tickets_state_seq ON tickets (state, seq);

ALTER TABLE sessions ADD COLUMN name TEXT NOT NULL DEFAULT '';
