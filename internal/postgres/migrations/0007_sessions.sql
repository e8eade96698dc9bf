-- 0007: dashboard sign-ins. A browser holds a random session id in a
-- cookie; the row keeps only its SHA-256 (hex), the identity of the admin
-- token that signed in, and the times (unix nanoseconds, as elsewhere).
-- Stored in the database so that every replica accepts a session and a
-- restart keeps it.
CREATE TABLE IF NOT EXISTS sessions (
    id_hash    text   PRIMARY KEY,
    token_id   text   NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_expires ON sessions (expires_at);
