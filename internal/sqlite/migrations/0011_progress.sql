-- 0011: progress evidence beside activity evidence (issue 44). A lease
-- keeps when its agent's work last progressed (unix nanoseconds, 0 for a
-- lease from before progress reports) and the loop its latest heartbeat
-- reported (count 0: none).
ALTER TABLE leases ADD COLUMN last_progress_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE leases ADD COLUMN loop_label TEXT NOT NULL DEFAULT '';
ALTER TABLE leases ADD COLUMN loop_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE leases ADD COLUMN loop_error TEXT NOT NULL DEFAULT '';
