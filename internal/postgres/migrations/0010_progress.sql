-- 0010: progress evidence beside activity evidence (issue 44). A lease
-- keeps when its agent's work last progressed (unix nanoseconds, 0 for a
-- lease from before progress reports) and the loop its latest heartbeat
-- reported (count 0: none).
ALTER TABLE leases ADD COLUMN IF NOT EXISTS last_progress_at bigint NOT NULL DEFAULT 0;
ALTER TABLE leases ADD COLUMN IF NOT EXISTS loop_label text NOT NULL DEFAULT '';
ALTER TABLE leases ADD COLUMN IF NOT EXISTS loop_count integer NOT NULL DEFAULT 0;
ALTER TABLE leases ADD COLUMN IF NOT EXISTS loop_error text NOT NULL DEFAULT '';
