-- 0001: the first schema of warp.
-- Times are INTEGER unix nanoseconds (UTC); 0 means "not set".

CREATE TABLE tickets (
    -- seq is the rowid: creation order, never reused (AUTOINCREMENT), the
    -- cursor of listings and the order of claim-next.
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT    NOT NULL UNIQUE,
    title      TEXT    NOT NULL DEFAULT '',
    state      TEXT    NOT NULL CHECK (state IN ('open', 'claimed', 'completed')),
    epoch      INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- Listing by state and claim-next walk tickets of one state in seq order.
CREATE INDEX tickets_state_seq ON tickets (state, seq);

CREATE TABLE ticket_labels (
    ticket TEXT NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    label  TEXT NOT NULL,
    PRIMARY KEY (ticket, label)
) WITHOUT ROWID;

CREATE TABLE leases (
    ticket            TEXT    NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    epoch             INTEGER NOT NULL,
    agent             TEXT    NOT NULL DEFAULT '',
    host              TEXT    NOT NULL DEFAULT '',
    state             TEXT    NOT NULL CHECK (state IN ('held', 'released', 'completed', 'lapsed')),
    claimed_at        INTEGER NOT NULL,
    last_heartbeat_at INTEGER NOT NULL,
    last_activity_at  INTEGER NOT NULL,
    -- progress_at = warp.ProgressAt(lease), written with every row so the
    -- verdict filters are plain comparisons.
    progress_at       INTEGER NOT NULL,
    schema_version    INTEGER NOT NULL DEFAULT 0,
    in_flight         TEXT    NOT NULL DEFAULT '',
    first_v2_at       INTEGER NOT NULL DEFAULT 0,
    refreshed_at      INTEGER NOT NULL,
    expires_at        INTEGER NOT NULL,
    exit              TEXT    NOT NULL DEFAULT '',
    exited_at         INTEGER NOT NULL DEFAULT 0,
    ended_at          INTEGER NOT NULL DEFAULT 0,
    end_reason        TEXT    NOT NULL DEFAULT '',
    fallback_extended INTEGER NOT NULL DEFAULT 0,
    pr_url            TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (ticket, epoch)
);

-- The sweep reads only due held leases: O(due), not O(all).
CREATE INDEX leases_held_expires ON leases (expires_at) WHERE state = 'held';
-- Recomputing expiry after a mode change walks held leases in ticket order.
CREATE INDEX leases_held_ticket ON leases (ticket) WHERE state = 'held';

CREATE TABLE events (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    ticket TEXT    NOT NULL DEFAULT '', -- '' for global events (mode changes)
    epoch  INTEGER NOT NULL DEFAULT 0,
    kind   TEXT    NOT NULL,
    at     INTEGER NOT NULL,
    data   TEXT    NOT NULL DEFAULT '{}' -- JSON object
);

CREATE INDEX events_ticket_id ON events (ticket, id);
CREATE INDEX events_kind_id ON events (kind, id);

-- Heartbeat counts per host, schema version and 1-second bucket (unix
-- seconds) for the adoption query.
CREATE TABLE heartbeat_counts (
    host           TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    bucket         INTEGER NOT NULL,
    count          INTEGER NOT NULL,
    PRIMARY KEY (host, schema_version, bucket)
) WITHOUT ROWID;

-- Pruning drops old buckets by time.
CREATE INDEX heartbeat_counts_bucket ON heartbeat_counts (bucket);

CREATE TABLE hosts (
    host                TEXT    PRIMARY KEY,
    last_schema_version INTEGER NOT NULL,
    last_seen           INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
