-- 0002: hook health reported by the loop and the verdict last recorded
-- by the sweep-time verdict pass.
ALTER TABLE leases ADD COLUMN hook_seen TEXT NOT NULL DEFAULT '';
ALTER TABLE leases ADD COLUMN hook_events INTEGER NOT NULL DEFAULT 0;
ALTER TABLE leases ADD COLUMN recorded_verdict TEXT NOT NULL DEFAULT '';
