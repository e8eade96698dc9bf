-- 0003: who may write to a lease. claimant is the claiming token's
-- identity (sha256 of the bearer token, '' without tokens); secret_hash the
-- sha256 of the per-lease secret the claim returned ('' when the client did
-- not ask for one: an unmigrated client, bound to its token instead).
ALTER TABLE leases ADD COLUMN claimant TEXT NOT NULL DEFAULT '';
ALTER TABLE leases ADD COLUMN secret_hash TEXT NOT NULL DEFAULT '';
-- The token identity that first reported each host: warp bounds how many
-- hosts one agent token may report (warp serve --max-hosts-per-token).
ALTER TABLE hosts ADD COLUMN token TEXT NOT NULL DEFAULT '';
CREATE INDEX hosts_token_seen ON hosts (token, last_seen);
