-- 0005: adoption counts in minute and hour buckets (warp.CountRows) instead
-- of one-second ones. A second's row per busy host made the table and every
-- adoption read grow with time × hosts (86 M rows a day at 1,000 hosts); a
-- window's counts are now its whole hours' rows plus the minute rows of its
-- first, partial hour (warp.CountWindow). The one-second rows are folded
-- into both spans.
CREATE TABLE heartbeat_counts_spans (
    host           TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    span           INTEGER NOT NULL, -- seconds: 60 or 3600
    bucket         INTEGER NOT NULL, -- unix seconds, a multiple of span
    count          INTEGER NOT NULL,
    PRIMARY KEY (host, schema_version, span, bucket)
) WITHOUT ROWID;
INSERT INTO heartbeat_counts_spans (host, schema_version, span, bucket, count)
    SELECT host, schema_version, 60, bucket - bucket % 60, sum(count)
    FROM heartbeat_counts GROUP BY host, schema_version, bucket - bucket % 60;
INSERT INTO heartbeat_counts_spans (host, schema_version, span, bucket, count)
    SELECT host, schema_version, 3600, bucket - bucket % 3600, sum(count)
    FROM heartbeat_counts GROUP BY host, schema_version, bucket - bucket % 3600;
DROP TABLE heartbeat_counts;
ALTER TABLE heartbeat_counts_spans RENAME TO heartbeat_counts;
-- Pruning drops old buckets by time.
CREATE INDEX heartbeat_counts_bucket ON heartbeat_counts (bucket);
