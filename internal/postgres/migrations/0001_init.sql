-- 0001: the first schema of warp on PostgreSQL.
-- The logical schema and the column names are those of internal/sqlite.
-- Times are bigint unix nanoseconds (UTC), as in SQLite: the store contract
-- keeps nanoseconds (timestamptz has microseconds), so boundaries such as
-- "expires_at == now is due, 1 ns later is not" hold the same on both
-- stores. 0 means "not set". warp_time(ns) shows one as a timestamptz:
--   SELECT ticket, warp_time(expires_at) FROM leases WHERE state = 'held';
-- Labels are a text[] column instead of SQLite's side table.

CREATE FUNCTION warp_time(ns bigint) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT CASE WHEN ns = 0 THEN NULL ELSE timestamptz 'epoch' + (ns / 1000) * interval '1 microsecond' END $$;

CREATE TABLE tickets (
    -- seq is the creation order: the cursor of listings and the order of
    -- claim-next.
    seq        bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    id         text        PRIMARY KEY,
    title      text        NOT NULL DEFAULT '',
    labels     text[]      NOT NULL DEFAULT '{}',
    state      text        NOT NULL CHECK (state IN ('open', 'claimed', 'completed')),
    epoch      bigint      NOT NULL DEFAULT 0,
    created_at bigint      NOT NULL,
    updated_at bigint      NOT NULL
);

-- Listing by state and claim-next walk tickets of one state in seq order.
CREATE INDEX tickets_state_seq ON tickets (state, seq);
-- claim-next with labels: containment on the open tickets.
CREATE INDEX tickets_open_labels ON tickets USING gin (labels) WHERE state = 'open';

CREATE TABLE leases (
    ticket            text        NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    epoch             bigint      NOT NULL,
    agent             text        NOT NULL DEFAULT '',
    host              text        NOT NULL DEFAULT '',
    state             text        NOT NULL CHECK (state IN ('held', 'released', 'completed', 'lapsed')),
    claimed_at        bigint      NOT NULL,
    last_heartbeat_at bigint      NOT NULL,
    last_activity_at  bigint      NOT NULL,
    -- progress_at = warp.ProgressAt(lease), written with every row so the
    -- verdict filters are plain comparisons.
    progress_at       bigint      NOT NULL,
    schema_version    integer     NOT NULL DEFAULT 0,
    in_flight         text        NOT NULL DEFAULT '',
    first_v2_at       bigint      NOT NULL DEFAULT 0,
    refreshed_at      bigint      NOT NULL,
    expires_at        bigint      NOT NULL,
    exit              text        NOT NULL DEFAULT '',
    exited_at         bigint      NOT NULL DEFAULT 0,
    ended_at          bigint      NOT NULL DEFAULT 0,
    end_reason        text        NOT NULL DEFAULT '',
    fallback_extended boolean     NOT NULL DEFAULT false,
    pr_url            text        NOT NULL DEFAULT '',
    -- What the loop last said about the activity hook ('', 'no', 'yes'),
    -- the hook events it reported, and the verdict last recorded as an event.
    hook_seen         text        NOT NULL DEFAULT '',
    hook_events       bigint      NOT NULL DEFAULT 0,
    recorded_verdict  text        NOT NULL DEFAULT '',
    PRIMARY KEY (ticket, epoch)
);

-- The sweep reads only due held leases: O(due), not O(all).
CREATE INDEX leases_held_expires ON leases (expires_at) WHERE state = 'held';
-- Recomputing expiry after a mode change walks held leases in ticket order.
CREATE INDEX leases_held_ticket ON leases (ticket) WHERE state = 'held';

CREATE TABLE events (
    id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ticket text        NOT NULL DEFAULT '', -- '' for global events (mode changes)
    epoch  bigint      NOT NULL DEFAULT 0,
    kind   text        NOT NULL,
    at     bigint      NOT NULL,
    data   jsonb       NOT NULL DEFAULT '{}'
);

CREATE INDEX events_ticket_id ON events (ticket, id);
CREATE INDEX events_kind_id ON events (kind, id);

-- Heartbeat counts per host, schema version and 1-second bucket for the
-- adoption query.
CREATE TABLE heartbeat_counts (
    host           text        NOT NULL,
    schema_version integer     NOT NULL,
    bucket         bigint      NOT NULL, -- unix seconds
    count          bigint      NOT NULL,
    PRIMARY KEY (host, schema_version, bucket)
);

-- Pruning drops old buckets by time.
CREATE INDEX heartbeat_counts_bucket ON heartbeat_counts (bucket);

CREATE TABLE hosts (
    host                text        PRIMARY KEY,
    last_schema_version integer     NOT NULL,
    last_seen           bigint      NOT NULL
);

CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
