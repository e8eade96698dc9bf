-- 0007: dashboard sign-ins. A browser holds a random session id in a
-- cookie; the row keeps only its SHA-256 (hex), the identity of the admin
-- token that signed in, and the times. Stored in the database so that
-- every replica accepts a session and a restart keeps it.
CREATE TABLE IF NOT EXISTS sessions (
    id_hash    TEXT    PRIMARY KEY,
    token_id   TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_expires ON sessions (expires_at);
