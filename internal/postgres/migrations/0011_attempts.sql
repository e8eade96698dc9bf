-- 0011: attempts (issue 45). The ticket state 'blocked' (the attempt cap:
-- warp serve --max-attempts), and one row per attempt (a lease) that
-- keeps what it got done: the verdict at its end in words, who ended it,
-- the agent's last note (gyrum note) and the snapshot of its worktree
-- (internal/sqlite 0012 holds the same). Safe to run again (tests replay
-- migrations on a schema that has them).
ALTER TABLE tickets DROP CONSTRAINT IF EXISTS tickets_state_check;
ALTER TABLE tickets ADD CONSTRAINT tickets_state_check CHECK (state IN ('open', 'claimed', 'completed', 'cancelled', 'blocked'));

CREATE TABLE IF NOT EXISTS attempts (
    ticket          text    NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    epoch           bigint  NOT NULL,
    note            text    NOT NULL DEFAULT '',
    note_at         bigint  NOT NULL DEFAULT 0,
    end_verdict     text    NOT NULL DEFAULT '',
    ended_by        text    NOT NULL DEFAULT '',
    snapshot_state  text    NOT NULL DEFAULT '',
    snapshot_commit text    NOT NULL DEFAULT '',
    snapshot_ref    text    NOT NULL DEFAULT '',
    snapshot_base   text    NOT NULL DEFAULT '',
    snapshot_branch text    NOT NULL DEFAULT '',
    snapshot_remote text    NOT NULL DEFAULT '',
    snapshot_pushed boolean NOT NULL DEFAULT false,
    snapshot_host   text    NOT NULL DEFAULT '',
    snapshot_detail text    NOT NULL DEFAULT '',
    snapshot_at     bigint  NOT NULL DEFAULT 0,
    cap_reset       boolean NOT NULL DEFAULT false,
    PRIMARY KEY (ticket, epoch)
);
