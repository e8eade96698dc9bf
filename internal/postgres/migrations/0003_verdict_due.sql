-- 0003: when the verdict pass must next look at a held lease. verdict_due_at
-- is warp.Policy.VerdictDue of the lease as last written: the time its
-- derived verdict next differs from the recorded one (unix ns), 0 when it
-- never will on its own (exited, silent, ended). The pass reads only the
-- leases that are due, through the partial index, so its cost follows what
-- changes, not the fleet. Leases held before this migration are due at once
-- (1): the first pass computes their time.
ALTER TABLE leases ADD COLUMN verdict_due_at bigint NOT NULL DEFAULT 0;
UPDATE leases SET verdict_due_at = 1 WHERE state = 'held';
CREATE INDEX leases_held_verdict_due ON leases (verdict_due_at) WHERE state = 'held' AND verdict_due_at > 0;
-- One host's held leases, in ticket order: the fleet alarm tallies only the
-- hosts whose leases changed verdict.
CREATE INDEX leases_held_host ON leases (host, ticket) WHERE state = 'held';
-- Leases by end time: the fleet alarm also tallies the hosts whose leases
-- ended since its last pass (fewer held leases can raise an alarm).
CREATE INDEX leases_ended_at ON leases (ended_at) WHERE state <> 'held';
-- Held leases per host and recorded verdict, kept by every write that
-- claims, ends or re-records a lease: the verdict gauges and the hosts
-- overview read these rows and correct them by the leases that are due,
-- instead of counting the fleet, and the fleet alarm skips the hosts whose
-- counts cannot reach it. The same leases are counted again by hook health
-- under the keys 'hook-seen:' || hook_seen (warp.HookCountKey), which no
-- verdict equals.
CREATE TABLE verdict_counts (
    host    text   NOT NULL,
    verdict text   NOT NULL,
    n       bigint NOT NULL,
    PRIMARY KEY (host, verdict)
);
INSERT INTO verdict_counts (host, verdict, n)
    SELECT host, CASE recorded_verdict WHEN '' THEN 'active' ELSE recorded_verdict END, count(*)
    FROM leases WHERE state = 'held'
    GROUP BY 1, 2;
INSERT INTO verdict_counts (host, verdict, n)
    SELECT host, 'hook-seen:' || hook_seen, count(*)
    FROM leases WHERE state = 'held'
    GROUP BY 1, 2;
