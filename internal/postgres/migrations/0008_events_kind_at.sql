-- 0008: the dashboard's charts. They count events of some kinds over the
-- last hours or days (warp.Tx.EventTallies): a range read of (kind, at)
-- instead of every event of those kinds. And they count hosts per hour
-- from the hour rows of heartbeat_counts (warp.Tx.HostsBySchemaPerHour):
-- a range read of (span, bucket) instead of the minute rows too.
CREATE INDEX IF NOT EXISTS events_kind_at ON events (kind, at);
CREATE INDEX IF NOT EXISTS heartbeat_counts_span_bucket ON heartbeat_counts (span, bucket) INCLUDE (host, schema_version);
