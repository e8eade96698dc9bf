-- 0012: attempts (issue 45). The ticket state 'blocked' (the attempt cap:
-- warp serve --max-attempts), and one row per attempt (a lease) that
-- keeps what it got done: the verdict at its end in words, who ended it,
-- the agent's last note (gyrum note) and the snapshot of its worktree.
-- A row of its own, not lease columns: the heartbeat's hot path reads and
-- writes the lease row, and an attempt's record changes rarely.
--
-- The tickets table is built again as in 0010 to widen its CHECK.
CREATE TABLE tickets_new (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT    NOT NULL UNIQUE,
    title      TEXT    NOT NULL DEFAULT '',
    state      TEXT    NOT NULL CHECK (state IN ('open', 'claimed', 'completed', 'cancelled', 'blocked')),
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

CREATE TABLE attempts (
    ticket          TEXT    NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    epoch           INTEGER NOT NULL,
    note            TEXT    NOT NULL DEFAULT '',
    note_at         INTEGER NOT NULL DEFAULT 0,
    end_verdict     TEXT    NOT NULL DEFAULT '',
    ended_by        TEXT    NOT NULL DEFAULT '',
    snapshot_state  TEXT    NOT NULL DEFAULT '',
    snapshot_commit TEXT    NOT NULL DEFAULT '',
    snapshot_ref    TEXT    NOT NULL DEFAULT '',
    snapshot_base   TEXT    NOT NULL DEFAULT '',
    snapshot_branch TEXT    NOT NULL DEFAULT '',
    snapshot_remote TEXT    NOT NULL DEFAULT '',
    snapshot_pushed INTEGER NOT NULL DEFAULT 0,
    snapshot_host   TEXT    NOT NULL DEFAULT '',
    snapshot_detail TEXT    NOT NULL DEFAULT '',
    snapshot_at     INTEGER NOT NULL DEFAULT 0,
    cap_reset       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (ticket, epoch)
) WITHOUT ROWID;
